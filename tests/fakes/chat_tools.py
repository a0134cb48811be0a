"""A fake OpenAI-compatible chat server that answers with tool calls.

Extends :class:`tests.fakes.openai_chat.FakeChatServer` (same socket, recording and
``chat.completion`` body) with a richer rule: a :data:`ToolRule` maps the request body to an
assistant *message*, text and/or tool calls, so a chat model driving tools (the baseline's
LLM policy) can be tested against the real wire protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.openai_chat import FakeChatServer


@dataclass(frozen=True)
class Reply:
    """One assistant message: ``content`` and/or ``tool_calls`` as ``(name, arguments)``;
    arguments may be a dict (sent as JSON) or a raw string (to send garbled JSON)."""

    content: str | None = None
    tool_calls: Sequence[tuple[str, dict[str, Any] | str]] = field(default_factory=tuple)


ToolRule = Callable[[dict[str, Any]], Reply]


def sequence(*replies: Reply, then: Reply | None = None) -> ToolRule:
    """A rule that answers with ``replies`` in order, then ``then`` (default: "Okay.")."""
    queue = list(replies)
    last = then or Reply(content="Okay.")

    def rule(body: dict[str, Any]) -> Reply:
        del body
        return queue.pop(0) if queue else last

    return rule


def last_role(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["role"])


class FakeToolChatServer(FakeChatServer):
    """``POST /v1/chat/completions`` answered by a :data:`ToolRule`."""

    def __init__(self, rule: ToolRule, *, model_reply: str | None = None) -> None:
        self.tool_rule = rule
        super().__init__(lambda body: "", model_reply=model_reply)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        base = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    fake.paths.append(self.path)
                    fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                    n = len(fake.requests)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                reply = fake.tool_rule(body)
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if reply.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": f"call_{n}_{i}",
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": args if isinstance(args, str) else json.dumps(args),
                            },
                        }
                        for i, (name, args) in enumerate(reply.tool_calls)
                    ]
                self._send(200, {
                    "id": f"chatcmpl-fake-{n}",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": fake._model_reply or body.get("model", "fake"),
                    "choices": [{
                        "index": 0, "message": message, "logprobs": None,
                        "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    }],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                })

        return Handler
