"""Who speaks on the user channel: the frozen simulator, a live participant, the robot participant,
authorization from speech.
"""
