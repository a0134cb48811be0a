"""Route modules of the web app."""
