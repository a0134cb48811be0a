"""The frozen speech bank, built offline: realizations to Ogg/Opus with the pinned Kokoro-82M
engine, its assets and manifest.
"""
