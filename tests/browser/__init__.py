"""Real-browser end-to-end tests (Debian Chromium, loopback-only network namespace)."""
