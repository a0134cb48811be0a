"""One run and many: the media-clock orchestrator, the Voice Workbench, the semantic-act observer,
campaigns and crash recovery.
"""
