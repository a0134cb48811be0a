"""Recorded sessions: run one task against a provider through a loopback recording proxy.

``apex-voice adapters record`` (and the fixture regenerator in ``tests/fixtures/wire/``) call
:func:`record_session`: it starts a :class:`RecordingProxy` on 127.0.0.1, points the adapter's
endpoint variable (``APEX_OPENAI_REALTIME_URL``, ``APEX_GEMINI_LIVE_URL``, …) at it, and runs
one repeat of the task with the frozen simulator exactly as ``apex-voice run`` does. The proxy
opens the real upstream connection with the adapter's own handshake (its headers and query
string, which stay in memory), forwards every frame both ways unchanged, and logs each one
(audio replaced by digests, :mod:`runtime.agents.wire_format`). No adapter code is involved:
the recording is of exactly what the adapter sent and received.

Gemini Live is reached through google-genai, which always speaks TLS: for it the proxy serves
TLS with a throw-away certificate for 127.0.0.1 (``APEX_GEMINI_LIVE_CA_FILE`` points the SDK
at it) and connects upstream with the trust the environment configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import importlib
import importlib.metadata
import ipaddress
import json
import re
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from runtime.agents.base import AgentAdapter
from runtime.agents.errors import ProviderConfigError
from runtime.agents.providers._transport import LOOPBACK_HOSTS, LockstepSync
from runtime.agents.registry import PROVIDER_MODULES, available
from runtime.agents.wire_format import (
    AgentInfo,
    Direction,
    Expectation,
    Frame,
    RecordedToolCall,
    WireHeader,
    digest,
    redact,
    scrub,
    write_fixture,
)
from runtime.core.events import (
    AgentErrorEvent,
    AgentProtocolUnknown,
    AgentTranscript,
    ClockMode,
    SessionEnd,
    ToolCall,
    read_events,
)
from runtime.core.spec import TaskSpec
from runtime.session.orchestrator import RunResult

GEMINI_DEFAULT_ORIGIN = "https://generativelanguage.googleapis.com"

HANDSHAKE_HEADERS = frozenset({
    "host", "connection", "upgrade", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-accept", "sec-websocket-protocol",
    "content-length",
})
"""Request headers the proxy's own upstream handshake sets (subprotocols are negotiated
upstream and the upstream's choice is answered); every other header is forwarded."""

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-goog-api-key", "api-key", "x-api-key",
    "openai-api-key", "cookie",
})
"""Headers whose values are treated as secrets (scrubbed wherever they appear)."""

SECRET_WORDS = ("key", "token", "secret", "auth", "sig", "password", "credential")
"""A query parameter or header whose name contains one of these carries a secret."""

_CREDENTIAL_VARIABLE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
"""Environment variables whose values are scrubbed from every frame (``OPENAI_API_KEY``, …)."""


class RecordError(Exception):
    """The session could not be recorded (the upstream refused it, …)."""


def _is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


# --------------------------------------------------------------------------- providers


@dataclass(frozen=True)
class ProviderWire:
    """Where one provider spec connects and what must never be written, from ``env``."""

    spec: str
    kind: str
    model: str
    url_env: str
    upstream: str = field(repr=False)
    """The effective endpoint URL (may carry a key in its query: memory only)."""
    key_envs: tuple[str, ...]
    tls: bool
    """The client insists on TLS (Gemini through google-genai): the proxy serves TLS."""
    ca_env: str | None = None
    ca_file: str | None = None
    """The bundle the environment trusts for the upstream (Gemini's CA variable)."""
    settings: dict[str, str] = field(default_factory=dict)
    secrets: frozenset[str] = field(default_factory=frozenset, repr=False)

    @property
    def upstream_display(self) -> str:
        """``scheme://host[:port]/path``: no credentials, no query string."""
        parts = urlsplit(self.upstream)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"

    @property
    def upstream_origin(self) -> str:
        """``scheme://netloc`` of the upstream; the proxy appends each request's path."""
        parts = urlsplit(self.upstream)
        return f"{parts.scheme}://{parts.netloc}"

    def proxied_env(self, env: Mapping[str, str], proxy_origin: str,
                    proxy_ca: Path | None) -> dict[str, str]:
        """``env`` with the endpoint pointed at the proxy (path and query kept, so the
        request the proxy relays is the one the adapter would have sent upstream)."""
        parts = urlsplit(self.upstream)
        # google-genai appends "/ws/…" to its base URL: no trailing slash there.
        target = proxy_origin + (parts.path.rstrip("/") if self.tls else parts.path)
        if parts.query:
            target += f"?{parts.query}"
        out = {**env, self.url_env: target}
        if self.ca_env is not None and proxy_ca is not None:
            out[self.ca_env] = str(proxy_ca)
        return out

    def upstream_ssl(self) -> ssl.SSLContext | None:
        if urlsplit(self.upstream).scheme not in ("wss", "https"):
            return None
        if self.ca_file:
            return ssl.create_default_context(cafile=self.ca_file)
        return ssl.create_default_context()


def _settings_of(env: Mapping[str, str], url_env: str) -> dict[str, str]:
    """The provider's other ``APEX_<PROVIDER>_*`` variables: what replay must set alike."""
    prefix = url_env.removesuffix("URL")
    return {
        k: v for k, v in sorted(env.items())
        if k.startswith(prefix) and k != url_env and v.strip()
        and not k.endswith("_CA_FILE") and not _is_secret_name(k.removeprefix(prefix))
    }


def provider_wire(spec: str, env: Mapping[str, str], *, require_key: bool = True) -> ProviderWire:
    """The networked provider behind ``spec``; :class:`ProviderConfigError` (naming the
    variable) for a spec that is not a provider, a malformed endpoint or (``require_key``) a
    missing key."""
    kind, _, model_arg = spec.partition(":")
    if kind not in PROVIDER_MODULES:
        raise ProviderConfigError(
            f"agent spec '{spec}' is not a networked provider; recording needs one of "
            + ", ".join(f"{k}[:MODEL]" for k in PROVIDER_MODULES)
        )
    if not available(kind):
        raise ProviderConfigError(f"agent '{kind}' is not available in this version")
    adapter: Any = importlib.import_module(PROVIDER_MODULES[kind]).make_adapter(
        model_arg or None, env,
    )
    # Other credentials in the environment (a judge key, another provider's): long values of
    # key-like variables; the provider's own key is added below whatever its length.
    all_key_values = {v for k, v in env.items() if _CREDENTIAL_VARIABLE.search(k) and len(v) >= 16}
    if kind == "gemini-live":
        from runtime.agents.providers.gemini_live._adapter import KEY_VARIABLES, URL_VARIABLE

        gs = adapter.settings
        if require_key and not gs.api_key:
            raise ProviderConfigError(
                f"{kind}: no API key; set the environment variable {' or '.join(KEY_VARIABLES)}"
            )
        origin = (gs.base_url or GEMINI_DEFAULT_ORIGIN).rstrip("/")
        upstream = "wss" + origin[origin.index(":"):] if origin.startswith("https:") else origin
        return ProviderWire(
            spec=spec, kind=kind, model=gs.model, url_env=URL_VARIABLE, upstream=upstream,
            key_envs=KEY_VARIABLES, tls=True, ca_env="APEX_GEMINI_LIVE_CA_FILE",
            ca_file=gs.ca_file, settings=_settings_of(env, URL_VARIABLE),
            secrets=frozenset(all_key_values | ({gs.api_key} if gs.api_key else set())),
        )
    ps = adapter.settings
    key = ps.require_key() if require_key else ps.api_key
    parts = urlsplit(ps.url)
    query_secrets = {v for k, v in parse_qsl(parts.query) if _is_secret_name(k) and v}
    if parts.password:
        query_secrets.add(parts.password)
    return ProviderWire(
        spec=spec, kind=kind, model=ps.model, url_env=ps.url_env, upstream=ps.url,
        key_envs=(ps.key_env,), tls=False, settings=_settings_of(env, ps.url_env),
        secrets=frozenset(all_key_values | query_secrets | ({key} if key else set())),
    )


# --------------------------------------------------------------------------- TLS on loopback


def loopback_tls(directory: Path) -> tuple[Path, Path]:
    """A throw-away self-signed certificate for 127.0.0.1 in ``directory``: (cert, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "loopback-cert.pem", directory / "loopback-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ))
    key_path.chmod(0o600)
    return cert_path, key_path


def server_tls(cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


# --------------------------------------------------------------------------- the proxy


def _sendable_close(code: int | None) -> int:
    """A close code one may put on the wire (1005/1006/1015 are reserved for reporting)."""
    if code is None or code in (1005, 1006, 1015) or not (1000 <= code <= 4999):
        return 1000
    return code


class RecordingProxy:
    """A websocket server on 127.0.0.1 that relays one session to ``upstream_origin`` (the
    client's request path and query appended) and logs every frame both ways.

    ``frames`` holds the log; ``secrets`` every credential seen (key values given, credential
    header values, key-like query parameters), for :func:`~runtime.agents.wire_format.scrub`.
    ``refused`` is set when the upstream turned the handshake down (HTTP status, body).
    """

    def __init__(self, upstream_origin: str, *, upstream_ssl: ssl.SSLContext | None = None,
                 tls: ssl.SSLContext | None = None, secrets: Iterable[str] = (),
                 open_timeout_s: float = 15.0) -> None:
        self.upstream_origin = upstream_origin.rstrip("/")
        self.upstream_ssl = upstream_ssl
        self.tls = tls
        self.open_timeout_s = open_timeout_s
        self.secrets: set[str] = {s for s in secrets if s}
        self.frames: list[Frame] = []
        self.refused: tuple[int, str] | None = None
        self.sessions = 0
        self._t0: float | None = None
        self._upstream: ClientConnection | None = None
        self._server: Server | None = None

    async def start(self) -> RecordingProxy:
        self._server = await serve(
            self._relay, "127.0.0.1", 0, process_request=self._open_upstream, ssl=self.tls,
            select_subprotocol=self._upstream_subprotocol,
            compression=None, max_size=16 * 1024 * 1024, ping_interval=None,
            open_timeout=self.open_timeout_s + 5,
        )
        return self

    async def stop(self) -> None:
        if self._upstream is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._upstream.close(), 2.0)
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 5.0)
            self._server = None

    async def __aenter__(self) -> RecordingProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def origin(self) -> str:
        """``ws://127.0.0.1:PORT`` (``https://`` when serving TLS, as google-genai wants)."""
        assert self._server is not None, "proxy not started"
        port = int(next(iter(self._server.sockets)).getsockname()[1])
        return f"{'https' if self.tls else 'ws'}://127.0.0.1:{port}"

    # ------------------------------------------------------------------ handshake

    def _remember_secrets(self, request: Request) -> list[tuple[str, str]]:
        """Note every credential of the request; the headers to forward upstream."""
        forwarded = []
        for name, value in request.headers.raw_items():
            lowered = name.lower()
            if lowered == "sec-websocket-protocol":  # browser-style key subprotocols
                self.secrets.update(p.strip() for p in value.split(",")
                                    if _is_secret_name(p))
            elif lowered in CREDENTIAL_HEADERS or _is_secret_name(lowered):
                self.secrets.add(value)
                scheme, _, token = value.partition(" ")
                if token.strip() and scheme.isalpha():
                    self.secrets.add(token.strip())
            if lowered not in HANDSHAKE_HEADERS:
                forwarded.append((name, value))
        for name, value in parse_qsl(urlsplit(request.path).query):
            if _is_secret_name(name) and value:
                self.secrets.add(value)
        return forwarded

    async def _open_upstream(self, connection: ServerConnection,
                             request: Request) -> Response | None:
        if self.sessions:
            return connection.respond(HTTPStatus.CONFLICT,
                                      "the recording proxy relays one session per run\n")
        self.sessions += 1
        headers = self._remember_secrets(request)
        url = self.upstream_origin + request.path
        host = urlsplit(url).hostname or ""
        offered = [p.strip() for v in request.headers.get_all("Sec-WebSocket-Protocol")
                   for p in v.split(",") if p.strip()]
        self._t0 = time.monotonic()
        try:
            self._upstream = await connect(
                url, additional_headers=headers, user_agent_header=None, compression=None,
                subprotocols=[Subprotocol(p) for p in offered] or None,
                max_size=16 * 1024 * 1024, open_timeout=self.open_timeout_s,
                ssl=self.upstream_ssl, proxy=None if host in LOOPBACK_HOSTS else True,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            body = exc.response.body.decode("utf-8", "replace") if exc.response.body else ""
            self.refused = (status, body)
            return connection.respond(status, body)
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            self.refused = (HTTPStatus.BAD_GATEWAY, f"{type(exc).__name__}: {exc}")
            return connection.respond(
                HTTPStatus.BAD_GATEWAY,
                f"the recording proxy could not reach the provider: {type(exc).__name__}\n",
            )
        return None

    def _upstream_subprotocol(self, connection: ServerConnection,
                              offered: Sequence[Subprotocol]) -> Subprotocol | None:
        del connection, offered
        return self._upstream.subprotocol if self._upstream is not None else None

    # ------------------------------------------------------------------ relay

    def _now_ms(self) -> int:
        return round((time.monotonic() - (self._t0 or time.monotonic())) * 1000)

    def _log(self, direction: Direction, message: str | bytes) -> None:
        binary = isinstance(message, bytes)
        try:
            parsed = json.loads(message)
        except (UnicodeDecodeError, json.JSONDecodeError):
            if isinstance(message, bytes):  # opaque bytes: keep only their digest
                self.frames.append(Frame(self._now_ms(), direction, blob=digest(message),
                                         binary=True))
            else:
                self.frames.append(Frame(self._now_ms(), direction, text=message))
            return
        msg, _ = redact(parsed)
        self.frames.append(Frame(self._now_ms(), direction, msg=msg, binary=binary))

    def _log_close(self, direction: Direction, code: int | None, reason: str) -> None:
        self.frames.append(Frame(self._now_ms(), direction,
                                 close={"code": code, "reason": reason}))

    async def _relay(self, client: ServerConnection) -> None:
        upstream = self._upstream
        assert upstream is not None
        closing: set[str] = set()
        """Which side the proxy itself closed (its echo is not a close to record)."""

        async def client_to_upstream() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for message in client:
                    self._log("client", message)
                    await upstream.send(message)
            if "client" in closing:
                return
            rcvd = client.protocol.close_rcvd
            self._log_close("client", rcvd.code if rcvd else None, rcvd.reason if rcvd else "")
            closing.add("server")
            with contextlib.suppress(Exception):
                await upstream.close(_sendable_close(rcvd.code if rcvd else None),
                                     rcvd.reason if rcvd else "")

        async def upstream_to_client() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for message in upstream:
                    self._log("server", message)
                    await client.send(message)
            if "server" in closing:
                return
            rcvd = upstream.protocol.close_rcvd
            self._log_close("server", rcvd.code if rcvd else None, rcvd.reason if rcvd else "")
            closing.add("client")
            if rcvd is None:  # the provider dropped TCP: so does the client's side
                client.transport.abort()
            else:
                with contextlib.suppress(Exception):
                    await client.close(_sendable_close(rcvd.code), rcvd.reason)

        await asyncio.gather(client_to_upstream(), upstream_to_client())


# --------------------------------------------------------------------------- a session


@dataclass
class Recording:
    path: Path
    header: WireHeader
    run: RunResult


def expectation_of(run_dir: Path) -> Expectation:
    """What the run's adapter produced, from its event log."""
    log = read_events(run_dir / "events.jsonl")
    calls: list[RecordedToolCall] = []
    transcripts: list[str] = []
    errors: list[str] = []
    unknown: list[str] = []
    end_reason, failure_class = "missing", "none"
    for event in log.events:
        if isinstance(event, ToolCall):
            calls.append(RecordedToolCall(name=event.name, args=event.args))
        elif isinstance(event, AgentTranscript):
            transcripts.append(event.text)
        elif isinstance(event, AgentErrorEvent):
            errors.append(event.category)
        elif isinstance(event, AgentProtocolUnknown):
            unknown.append(event.event_type)
        elif isinstance(event, SessionEnd):
            end_reason, failure_class = event.reason, event.failure_class
    return Expectation(tool_calls=calls, transcripts=transcripts, errors=errors,
                       protocol_unknown=unknown, end_reason=end_reason,
                       failure_class=failure_class)


def apex_voice_version() -> dict[str, str | None]:
    """The installed package version and, in a git checkout, the commit (read-only git)."""
    try:
        version: str | None = importlib.metadata.version("apex-voice-studio")
    except importlib.metadata.PackageNotFoundError:
        version = None
    commit = None
    root = Path(__file__).resolve().parents[2]
    if (root / ".git").exists():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                  capture_output=True, text=True, timeout=5, check=False)
            if done.returncode == 0:
                commit = done.stdout.strip() or None
    return {"version": version, "commit": commit}


async def record_session(
    task: TaskSpec, agent_spec: str, out: Path, *, run_dir: Path,
    env: Mapping[str, str], seed: int = 0, clock: ClockMode = "realtime",
    lockstep: LockstepSync | None = None,
) -> Recording:
    """Run one repeat of ``task`` against ``agent_spec`` through a recording proxy and write
    the session's wire to ``out``.

    ``env`` supplies the provider's key and settings as for ``apex-voice run``. Real services
    need ``clock="realtime"``; against a local fake, ``lockstep`` (its sync hook) allows the
    virtual clock, which the proxy's one-to-one relay preserves.
    """
    from runtime.session.campaign import AgentFactory, run_one

    wire = provider_wire(agent_spec, env)
    with tempfile.TemporaryDirectory(prefix="apex-wire-tls-") as tls_dir:
        proxy_tls, proxy_ca = None, None
        if wire.tls:
            proxy_ca, proxy_key = loopback_tls(Path(tls_dir))
            proxy_tls = server_tls(proxy_ca, proxy_key)
        proxy = RecordingProxy(wire.upstream_origin, upstream_ssl=wire.upstream_ssl(),
                               tls=proxy_tls, secrets=wire.secrets)
        async with proxy:
            adapter_env = wire.proxied_env(env, proxy.origin, proxy_ca)
            module = importlib.import_module(PROVIDER_MODULES[wire.kind])
            model = agent_spec.partition(":")[2] or None

            def make(_task: TaskSpec) -> AgentAdapter:
                adapter: Any = module.make_adapter(model, adapter_env)
                if lockstep is not None:
                    adapter.attach_lockstep(lockstep)
                made: AgentAdapter = adapter
                return made

            result = await run_one(task, AgentFactory(agent_spec, make), run_dir, seed=seed,
                                   repeat=0, clock=clock)
    if proxy.refused is not None and not proxy.frames:
        status, body = proxy.refused
        raise RecordError(
            f"{wire.kind} refused the session (HTTP {status})"
            + (f": {scrub(body.strip(), proxy.secrets)[:300]}" if body.strip() else "")
        )
    if not proxy.frames:
        raise RecordError(f"{wire.kind}: the adapter never opened a session "
                          f"(run ended with {result.end_reason})")
    frames = proxy.frames
    counts = {
        "client": sum(1 for f in frames if f.dir == "client" and not f.is_close),
        "server": sum(1 for f in frames if f.dir == "server" and not f.is_close),
        "client_audio": sum(1 for f in frames if f.dir == "client" and f.audio),
        "server_audio": sum(1 for f in frames if f.dir == "server" and f.audio),
    }
    header = WireHeader(
        agent=AgentInfo(spec=agent_spec, kind=wire.kind, model=wire.model),
        task_id=task.id, seed=seed, clock=clock,
        recorded_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        upstream=wire.upstream_display, settings=wire.settings,
        apex_voice=apex_voice_version(), frames=counts,
        expect=expectation_of(result.run_dir),
    )
    write_fixture(out, header, frames, proxy.secrets | wire.secrets)
    return Recording(out, header, result)
