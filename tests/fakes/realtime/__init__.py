"""Local fakes of the realtime voice providers' websocket protocols (127.0.0.1 only)."""
