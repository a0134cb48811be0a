"""Provider errors in categories that do not depend on the provider (STYLE: Pipecat).

Every adapter maps what its provider reports (an HTTP status at the websocket handshake, an
``error`` event with a ``type``/``code``, a dropped socket, an event it cannot parse) onto one
:class:`ErrorCategory`. Two rules decide what the run does with it:

* **A lost connection is an infrastructure drop.** ``connectivity`` (refused or dropped socket,
  handshake timeout, the provider closing the session mid-run) is raised as
  :class:`~runtime.agents.base.InfrastructureError`, so the orchestrator ends the run with
  ``infrastructure_error`` and ``failure_class: infrastructure``, never as an agent failure.
* **Everything else reaches the event log** as an :class:`~runtime.agents.base.AgentErrorSignal`
  (logged as ``agent.error`` with its category). It is *fatal* when the session cannot go on
  (authentication, quota, a protocol the adapter does not understand, any failure of the
  handshake itself); a rate limit or a transient server error on one response is not, the
  session continues and the agent may recover.

Configuration mistakes found before any I/O (a missing API key, a malformed endpoint URL)
raise :class:`ProviderConfigError`, whose message names the environment variable to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from runtime.agents.base import AgentErrorSignal, InfrastructureError


class ErrorCategory(StrEnum):
    AUTHENTICATION = "authentication"
    """Bad, missing or revoked credentials (HTTP 401/403, ``invalid_api_key``)."""
    RATE_LIMIT = "rate_limit"
    """Too many requests or tokens per minute (HTTP 429, ``rate_limit_exceeded``)."""
    QUOTA = "quota"
    """The account is out of credit or over its hard limit (``insufficient_quota``)."""
    CONNECTIVITY = "connectivity"
    """The socket could not be opened or was lost: an infrastructure drop."""
    SERVER = "server"
    """The provider failed on its side (HTTP 5xx, ``server_error``)."""
    PROTOCOL = "protocol"
    """The two sides do not understand each other: an unknown or malformed event, a rejected
    request (``invalid_request_error``), a handshake answer the adapter cannot use."""


FATAL_CATEGORIES: frozenset[ErrorCategory] = frozenset({
    ErrorCategory.AUTHENTICATION, ErrorCategory.QUOTA, ErrorCategory.PROTOCOL,
})
"""Categories after which the session cannot continue."""


class ProviderConfigError(Exception):
    """A provider adapter is misconfigured (missing key, malformed URL); raised by ``connect``
    before any network I/O. The message names the environment variable at fault."""


class WireProtocolError(Exception):
    """The provider sent something the adapter's wire models do not describe (an unknown event
    ``type``, a malformed payload, a non-JSON frame). The adapter turns it into a fatal
    ``protocol`` error, except an :class:`UnknownWireEvent` outside strict mode."""


class UnknownWireEvent(WireProtocolError):
    """A well-formed server message of a type this adapter does not model. Outside strict mode
    (:func:`strict_protocol`) it is logged (``agent.protocol_unknown``) and ignored: a provider
    that adds an event must not end runs and have our parser blamed on the agent. In strict mode
    (tests, ``--strict-protocol``) it is a fatal ``protocol`` error, so the fakes stay honest."""

    def __init__(self, event_type: str, message: str) -> None:
        super().__init__(message)
        self.event_type = event_type


STRICT_PROTOCOL_ENV = "APEX_STRICT_PROTOCOL"


def strict_protocol() -> bool:
    """Strict mode: ``APEX_STRICT_PROTOCOL=1`` (set by the test suite and by
    ``apex-voice run --strict-protocol``)."""
    import os

    return os.environ.get(STRICT_PROTOCOL_ENV, "").strip() in ("1", "true", "yes")


@dataclass(frozen=True)
class ProviderError(Exception):
    """One categorized provider error, as reported by the provider."""

    category: ErrorCategory
    message: str
    code: str = ""
    fatal: bool = False

    def __str__(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return f"{self.category.value}{code}: {self.message}"

    def signal(self) -> AgentErrorSignal:
        """The normalized event the orchestrator logs (and stops on when fatal)."""
        code = f" [{self.code}]" if self.code else ""
        return AgentErrorSignal(
            category=self.category.value, message=f"{self.message}{code}", fatal=self.fatal,
        )


_CODE_HINTS: tuple[tuple[str, ErrorCategory], ...] = (
    ("insufficient_quota", ErrorCategory.QUOTA),
    ("quota", ErrorCategory.QUOTA),
    ("billing", ErrorCategory.QUOTA),
    ("rate_limit", ErrorCategory.RATE_LIMIT),
    ("resource_exhausted", ErrorCategory.RATE_LIMIT),
    ("too_many_requests", ErrorCategory.RATE_LIMIT),
    ("invalid_api_key", ErrorCategory.AUTHENTICATION),
    ("authentication", ErrorCategory.AUTHENTICATION),
    ("unauthorized", ErrorCategory.AUTHENTICATION),
    ("unauthenticated", ErrorCategory.AUTHENTICATION),
    ("permission", ErrorCategory.AUTHENTICATION),
    ("forbidden", ErrorCategory.AUTHENTICATION),
    ("server_error", ErrorCategory.SERVER),
    ("internal", ErrorCategory.SERVER),
    ("unavailable", ErrorCategory.SERVER),
    ("overloaded", ErrorCategory.SERVER),
    ("timeout", ErrorCategory.SERVER),
)


def categorize(
    *, status: int | None = None, error_type: str | None = None, code: str | None = None,
) -> ErrorCategory:
    """The category of a provider error from whatever the provider told us.

    ``status`` is an HTTP status (a rejected websocket handshake); ``error_type`` and ``code``
    come from an ``error`` event (OpenAI-style ``error.type`` / ``error.code``, or a gRPC-style
    status name). The code wins over the type (``invalid_request_error`` with code
    ``insufficient_quota`` is a quota problem); anything unrecognised is ``protocol``.
    """
    for text in (code, error_type):
        if text:
            low = text.lower()
            for hint, category in _CODE_HINTS:
                if hint in low:
                    return category
    if status is not None:
        by_status = category_for_http_status(status)
        if by_status is not None:
            return by_status
    return ErrorCategory.PROTOCOL


def category_for_http_status(status: int) -> ErrorCategory | None:
    """The category an HTTP status names (401/403, 402, 429, 5xx), or None."""
    if status in (401, 403):
        return ErrorCategory.AUTHENTICATION
    if status == 402:
        return ErrorCategory.QUOTA
    if status == 429:
        return ErrorCategory.RATE_LIMIT
    if status >= 500:
        return ErrorCategory.SERVER
    return None


def provider_error(
    message: str, *, status: int | None = None, error_type: str | None = None,
    code: str | None = None, during_handshake: bool = False,
) -> ProviderError:
    """A categorized :class:`ProviderError`; fatal for :data:`FATAL_CATEGORIES` and for any
    failure of the handshake (without a session there is nothing to continue)."""
    category = categorize(status=status, error_type=error_type, code=code)
    return ProviderError(
        category=category, message=message, code=code or (str(status) if status else ""),
        fatal=during_handshake or category in FATAL_CATEGORIES,
    )


def connection_lost(detail: str) -> InfrastructureError:
    """The exception every adapter raises when its connection fails or drops mid-run."""
    return InfrastructureError(f"{ErrorCategory.CONNECTIVITY.value}: {detail}")
