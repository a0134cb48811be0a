"""A fake OpenAI-compatible chat completions server on 127.0.0.1.

``FakeChatServer`` serves ``POST /v1/chat/completions`` with a real ``chat.completion``
body, records every request body, and answers from a scripted ``rule`` that maps the
request body to the assistant's reply text.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Rule = Callable[[dict[str, Any]], str]


def prompt_of(body: dict[str, Any]) -> str:
    """The text of the last message of a recorded request body."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def gold_pred_of(body: dict[str, Any]) -> tuple[Any, Any]:
    """Gold and pred as written (repr) in the E.2 prompt of a request body."""
    prompt = prompt_of(body)
    gold = re.search(r"^Reference \(gold\): (.*)$", prompt, re.MULTILINE)
    pred = re.search(r"^Agent wrote: (.*)$", prompt, re.MULTILINE)
    if gold is None or pred is None:
        raise ValueError(f"no gold/pred in prompt: {prompt!r}")
    return ast.literal_eval(gold.group(1)), ast.literal_eval(pred.group(1))


def accept_pairs(pairs: Iterable[tuple[Any, Any]]) -> Rule:
    """A rule that passes exactly the (gold, pred) pairs given and fails everything else."""
    accepted = set(pairs)

    def rule(body: dict[str, Any]) -> str:
        ok = gold_pred_of(body) in accepted
        return json.dumps({"pass": ok, "why": "scripted accept" if ok else "scripted reject"})

    return rule


class FakeChatServer:
    """Threading HTTP server; use as a context manager. ``base_url`` ends in ``/v1``."""

    def __init__(self, rule: Rule, *, model_reply: str | None = None) -> None:
        self.rule = rule
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._model_reply = model_reply
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> FakeChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    fake.paths.append(self.path)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = fake.rule(body)
                n = len(fake.requests)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-fake-{n}",
                        "object": "chat.completion",
                        "created": 1_700_000_000,
                        "model": fake._model_reply or body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                                "logprobs": None,
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

        return Handler
