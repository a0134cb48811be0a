"""The baseline's optional LLM dialogue policy: an OpenAI-compatible chat model with tools.

Selected by the agent spec ``baseline:llm`` (or ``apex-voice run --agent baseline --llm-url URL
--llm-model NAME``). Settings come from ``APEX_BASELINE_LLM_URL`` (the ``/v1`` base URL),
``APEX_BASELINE_LLM_MODEL`` and, if the server wants one, ``APEX_BASELINE_LLM_KEY``.

The model gets exactly what every agent gets: the shared instruction with the task context as
the system message, the task's tool schemas as chat-completions functions, and the caller's
transcribed words as user messages; plus one pseudo-tool, ``end_call``, to hang up. Each tool
call goes through the Workbench (the turn resumes with its result, which goes back to the
model as a ``tool`` message) until the model answers with text, which is spoken. Decoding is
at temperature 0. The greeting is fixed (the rule policy's), so no request precedes the
caller's first words.

A server that cannot be reached or answers with an error is an infrastructure fault (the run
ends as such); garbled tool-call arguments go back to the model as a tool error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.agents.base import AgentSessionConfig, InfrastructureError
from runtime.agents.baseline_policy import CallTool, HangUp, Say, TaskView, Turn

END_CALL = {
    "type": "function",
    "function": {
        "name": "end_call",
        "description": "Hang up once the call is over (after saying goodbye).",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}


@dataclass(frozen=True)
class LLMSettings:
    url: str
    model: str
    key: str
    max_rounds: int = 8
    """Model calls per caller utterance before the turn gives up."""
    timeout_s: float = 60.0


def llm_settings(env: Mapping[str, str]) -> LLMSettings:
    from runtime.agents.baseline import BaselineConfigError

    url = (env.get("APEX_BASELINE_LLM_URL") or "").strip()
    model = (env.get("APEX_BASELINE_LLM_MODEL") or "").strip()
    if not url or not model:
        missing = [n for n, v in (("APEX_BASELINE_LLM_URL", url),
                                  ("APEX_BASELINE_LLM_MODEL", model)) if not v]
        raise BaselineConfigError(
            f"baseline:llm needs {' and '.join(missing)} (or `apex-voice run --agent baseline "
            "--llm-url URL --llm-model NAME`)"
        )
    return LLMSettings(url=url, model=model, key=env.get("APEX_BASELINE_LLM_KEY") or "none")


def chat_tools(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Workbench's tool schemas as chat-completions ``tools`` entries, plus ``end_call``."""
    out: list[dict[str, Any]] = []
    for schema in schemas:
        fn = schema.get("function", schema)
        out.append({"type": "function", "function": {
            "name": fn["name"], "description": fn.get("description", ""),
            "parameters": fn.get("parameters", {"type": "object", "properties": {}}),
        }})
    return [*out, END_CALL]


class LLMPolicy:
    """A chat model decides every turn (see the module docstring)."""

    def __init__(self, config: AgentSessionConfig, settings: LLMSettings,
                 client: Any = None) -> None:
        self.settings = settings
        self.tools = chat_tools(config.tools)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": config.instructions}]
        self._greeting = TaskView.from_config(config).greeting()
        self._client = client

    def _chat(self) -> Any:
        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.settings.url, api_key=self.settings.key,
                                  timeout=self.settings.timeout_s, max_retries=1)
        return self._client

    def _complete(self) -> Any:
        from openai import OpenAIError

        try:
            response = self._chat().chat.completions.create(
                model=self.settings.model, messages=self.messages, tools=self.tools,
                temperature=0,
            )
        except OpenAIError as exc:
            raise InfrastructureError(
                f"LLM policy: {self.settings.url} ({self.settings.model}): {exc}"
            ) from None
        if not response.choices:
            raise InfrastructureError(f"LLM policy: {self.settings.url} returned no choices")
        return response.choices[0].message

    # ------------------------------------------------------------------ protocol

    def opening(self) -> Turn:
        self.messages.append({"role": "assistant", "content": self._greeting})
        yield Say(self._greeting)

    def on_interrupted(self, heard_ms: int) -> None:
        self.messages.append({
            "role": "system",
            "content": f"(The caller interrupted you after {heard_ms} ms of your last reply.)",
        })

    def on_silence(self, silent_ms: int) -> Turn | None:
        del silent_ms
        return None  # the model speaks only when spoken to

    def on_user(self, transcript: str) -> Turn:
        text = transcript.strip() or "(inaudible)"
        self.messages.append({"role": "user", "content": text})
        return self._turn()

    def _turn(self) -> Turn:
        hang_up = False
        for _ in range(self.settings.max_rounds):
            message = self._complete()
            tool_calls = list(getattr(message, "tool_calls", None) or [])
            content = (getattr(message, "content", None) or "").strip()
            entry: dict[str, Any] = {"role": "assistant", "content": content or None}
            if tool_calls:
                entry["tool_calls"] = [
                    {"id": tc.id, "type": "function",
                     "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
                    for tc in tool_calls
                ]
            self.messages.append(entry)
            for tc in tool_calls:
                name = tc.function.name
                try:
                    args = json.loads(tc.function.arguments or "{}")
                    if not isinstance(args, dict):
                        raise ValueError("arguments are not a JSON object")
                except (json.JSONDecodeError, ValueError) as exc:
                    output: dict[str, Any] = {"error": f"garbled arguments for {name}: {exc}"}
                else:
                    if name == "end_call":
                        hang_up = True
                        output = {"ok": True}
                    else:
                        result = yield CallTool(name, args)
                        output = result if isinstance(result, dict) else {"result": result}
                self.messages.append({"role": "tool", "tool_call_id": tc.id,
                                      "content": json.dumps(output, default=str)})
            if content:
                yield Say(content)
            if hang_up:
                yield HangUp()
                return
            if content or not tool_calls:
                return
