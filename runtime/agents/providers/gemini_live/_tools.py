"""OpenAI-style function definitions → Gemini ``FunctionDeclaration`` objects.

The runtime hands every agent the same OpenAI-style tools (``{"type": "function", "name", …,
"parameters": <JSON Schema>}``; the chat-completions nesting under ``"function"`` is accepted
too). Gemini takes an OpenAPI-subset ``Schema`` with upper-case type names. Keywords that only
annotate a schema are dropped; a keyword that changes what is valid and has no Gemini
equivalent is refused with a message naming the tool and the keyword, never silently lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.genai import types


class ToolSchemaError(ValueError):
    """A tool definition cannot be expressed for Gemini; the message names tool and keyword."""


_TYPES: dict[str, types.Type] = {
    "string": types.Type.STRING,
    "number": types.Type.NUMBER,
    "integer": types.Type.INTEGER,
    "boolean": types.Type.BOOLEAN,
    "array": types.Type.ARRAY,
    "object": types.Type.OBJECT,
}
_ANNOTATIONS = frozenset({"title", "$schema", "examples", "default", "additionalProperties",
                          "$comment", "strict"})


def _schema(node: Mapping[str, Any], where: str) -> types.Schema:
    kwargs: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            names = [value] if isinstance(value, str) else list(value)
            nullable = "null" in names
            names = [n for n in names if n != "null"]
            if len(names) != 1 or names[0] not in _TYPES:
                raise ToolSchemaError(f"{where}: unsupported type {value!r}")
            kwargs["type"] = _TYPES[names[0]]
            if nullable:
                kwargs["nullable"] = True
        elif key == "description":
            kwargs["description"] = str(value)
        elif key == "properties":
            kwargs["properties"] = {
                name: _schema(sub, f"{where}.{name}") for name, sub in dict(value).items()
            }
        elif key == "required":
            kwargs["required"] = [str(v) for v in value]
        elif key == "items":
            kwargs["items"] = _schema(value, f"{where}[]")
        elif key == "enum":
            kwargs["enum"] = [str(v) for v in value]
        elif key == "format":
            kwargs["format"] = str(value)
        elif key == "nullable":
            kwargs["nullable"] = bool(value)
        elif key in ("minimum", "maximum"):
            kwargs[key] = float(value)
        elif key in ("minItems", "maxItems"):
            kwargs["min_items" if key == "minItems" else "max_items"] = int(value)
        elif key in _ANNOTATIONS:
            continue
        else:
            raise ToolSchemaError(f"{where}: JSON Schema keyword {key!r} has no Gemini equivalent")
    return types.Schema(**kwargs)


def function_declarations(tools: Sequence[Mapping[str, Any]]) -> list[types.FunctionDeclaration]:
    """Convert the session's OpenAI-style tools; order is kept."""
    out: list[types.FunctionDeclaration] = []
    for i, raw in enumerate(tools):
        spec: Mapping[str, Any] = raw.get("function", raw) if raw.get("type") == "function" else raw
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ToolSchemaError(f"tools[{i}]: a function definition needs a 'name'")
        params = spec.get("parameters")
        decl = types.FunctionDeclaration(
            name=name,
            description=str(spec.get("description") or ""),
            parameters=_schema(params, f"tool {name}: parameters") if params else None,
        )
        out.append(decl)
    return out
