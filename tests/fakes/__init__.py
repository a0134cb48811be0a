"""Local fakes of external services for tests (no network beyond 127.0.0.1)."""
