"""One settings object for the web app (environment variables prefixed ``APEX_``)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from runtime.spec import default_tasks_dir


class Settings(BaseSettings):
    """Every setting of the web app; documented in docs/webapp.md (a test checks that)."""

    model_config = SettingsConfigDict(env_prefix="APEX_", extra="ignore")

    data_dir: Path = Path("data")
    """Where the database (SQLite), run directories and the session secret live."""
    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "APEX_DATABASE_URL")
    )
    """SQLAlchemy URL; default ``sqlite:///<data_dir>/apex.db``. PostgreSQL:
    ``postgresql+psycopg://user:pass@host/db``."""
    tasks_dir: Path = Field(default_factory=default_tasks_dir)
    """The task suite the app serves."""
    secret_key: str | None = None
    """Signs session cookies; default: generated once into ``<data_dir>/secret_key``."""
    host: str = "127.0.0.1"
    port: int = 8000
    secure_cookies: bool = False
    """Set true behind HTTPS so session cookies are never sent in clear text."""

    @property
    def runs_dir(self) -> Path:
        return self.data_dir / "runs"

    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'apex.db').resolve()}"

    def session_secret(self) -> str:
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if not path.is_file():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(48))
        return path.read_text().strip()
