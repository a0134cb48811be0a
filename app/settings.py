"""One settings object for the web app (environment variables prefixed ``APEX_``)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import AliasChoices, Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from runtime.core.spec import default_tasks_dir


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
    session_idle_minutes: float = Field(default=120.0, gt=0)
    """A researcher's session ends after this long without a request (checked on the server)."""
    session_max_hours: float = Field(default=12.0, gt=0)
    """A researcher's session ends this long after login, however active."""
    login_account_limit: str = "10/15 minutes"
    """Failed logins allowed per account (any client) in the window; then the account's logins
    are refused (429) until the window has room again."""
    login_client_limit: str = "30/15 minutes"
    """Failed logins allowed per client address (any account) in the window."""
    join_claim_expiry_minutes: float = Field(default=60.0, gt=0)
    """A Study B place claimed through the shared join link is handed on to the next newcomer
    when its participant has not answered the consent page within this time."""
    join_link_limit: str = "60/minute"
    """New places a study's shared join link may hand out in the window (all clients)."""
    join_client_limit: str = "3/hour"
    """New places one client address may claim through shared join links in the window."""
    init_db: bool = False
    """Start with an empty database in place of an empty, missing or damaged one (the damaged
    file is kept aside); refused when the database is healthy. ``apex-voice serve --init-db``."""

    @field_validator("login_account_limit", "login_client_limit", "join_link_limit",
                     "join_client_limit")
    @classmethod
    def _rate(cls, value: str, info: ValidationInfo) -> str:
        from limits import parse

        try:
            parse(value)
        except ValueError:
            raise ValueError(
                f"{info.field_name} = {value!r} is not a rate limit; write it as COUNT/PERIOD, "
                "e.g. '10/15 minutes', '3/hour' or '60/minute'") from None
        return value

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
