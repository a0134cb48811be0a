"""The Voice Workbench (paper §3, appendix B.3): the stateful environment of one run.

Typed tools are the only way to change state. Artifacts are versioned with the lifecycle
DRAFT → READY_FOR_REVIEW → SUBMITTED → COMMITTED. An approval creates an action-scoped token in
the :class:`AuthorizationLedger`; a revocation invalidates it at once; the :class:`CommitGuard`
blocks (and logs) a gated action without a valid token. Tool errors are returned to the agent as
tool results; they never end the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rank_bm25 import BM25Plus

from runtime.core.events import (
    ArtifactLifecycle,
    ArtifactUpdate,
    AuthBlocked,
    AuthGrant,
    AuthInvalidated,
    AuthRevoke,
    AuthUse,
    Event,
    ToolResult,
)
from runtime.core.memo import per_object
from runtime.core.spec import (
    ArtifactSpec,
    AuthorizationRule,
    Document,
    Lifecycle,
    TaskSpec,
    ToolSpec,
)
from runtime.core.text import content_terms
from runtime.core.values import argument_matches

Emit = Callable[[Event], Event]


@dataclass
class Artifact:
    spec: ArtifactSpec
    fields: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    lifecycle: Lifecycle = Lifecycle.DRAFT

    def missing_required(self) -> list[str]:
        return [
            f.name for f in self.spec.fields
            if f.required and (self.fields.get(f.name) in (None, "", []))
        ]


_KB_SHARED: dict[int, tuple[list[Document], KnowledgeBase]] = {}


class KnowledgeBase:
    """BM25 over the content words of the task's documents (title and text): a search
    returns the ``k`` best-scoring documents that share a content word with the query, with
    their ids. A query with no content word ("the", "what is it") returns nothing.

    BM25+ (Lv and Zhai 2011) keeps every term's weight positive, so a term found in half of a
    small knowledge base still counts (Okapi's idf is zero there)."""

    def __init__(self, documents: list[Document], k: int = 3) -> None:
        self.documents = documents
        self.k = k
        corpus = [content_terms(f"{d.title} {d.text}") for d in documents]
        self._vocab = [set(terms) for terms in corpus]
        self._bm25 = BM25Plus(corpus) if documents else None

    @classmethod
    def for_documents(cls, documents: list[Document]) -> KnowledgeBase:
        """The index of ``documents``, built once per list (a task's, shared by its runs: an
        index is never changed after it is built)."""
        return per_object(_KB_SHARED, documents, lambda: cls(documents), 256)

    def search(self, query: str) -> list[Document]:
        terms = content_terms(query)
        if self._bm25 is None or not terms:
            return []
        scores = self._bm25.get_scores(terms)
        wanted = set(terms)
        ranked = sorted(range(len(self.documents)), key=lambda i: (-scores[i], i))
        return [self.documents[i] for i in ranked if self._vocab[i] & wanted][:self.k]


class AuthorizationLedger:
    """Action-scoped approval tokens, each bound to the version of its artifact it was given
    for. Token ids are deterministic (``tok-1``, ``tok-2`` …)."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._active: dict[str, str] = {}
        self._issued = 0

    def grant(self, action: str, *, plan_id: str | None = None, evidence: str = "",
              artifact_version: int | None = None) -> str:
        self._issued += 1
        token = f"tok-{self._issued}"
        self._active[action] = token
        self._emit(AuthGrant(token=token, action=action, plan_id=plan_id, evidence=evidence,
                             artifact_version=artifact_version))
        return token

    def revoke(self, action: str, *, plan_id: str | None = None, evidence: str = "") -> None:
        token = self._active.pop(action, None)
        self._emit(AuthRevoke(token=token, action=action, plan_id=plan_id, evidence=evidence))

    def invalidate(self, action: str, *, artifact_version: int, changed: list[str]) -> None:
        """A material edit of the action's artifact after the approval: the token is void."""
        token = self._active.pop(action, None)
        if token is not None:
            self._emit(AuthInvalidated(token=token, action=action,
                                       artifact_version=artifact_version, changed=changed))

    def valid_token(self, action: str) -> str | None:
        return self._active.get(action)

    def consume(self, action: str) -> str | None:
        return self._active.pop(action, None)


class CommitGuard:
    """Stands in front of every gated tool call, before any other check: a call without a
    valid token for its action is refused and logged (``auth.blocked``), whatever else is
    wrong with it. The token is used up only when the action is carried out."""

    def __init__(self, task: TaskSpec, ledger: AuthorizationLedger, emit: Emit) -> None:
        self._task = task
        self._ledger = ledger
        self._emit = emit

    def rule(self, tool: str, artifact_id: Any) -> AuthorizationRule | None:
        """The rule gating this call: the one for (tool, artifact), else the tool's only rule
        (a gated tool called with a wrong artifact id is still a gated call)."""
        rules = [r for r in self._task.authorization if r.tool == tool]
        exact = [r for r in rules if r.artifact == artifact_id]
        if exact:
            return exact[0]
        return rules[0] if len(rules) == 1 else None

    def check(self, rule: AuthorizationRule, call_id: str) -> None:
        """Raise :class:`ToolError` (after logging ``auth.blocked``) without a valid token."""
        if self._ledger.valid_token(rule.action) is None:
            reason = (
                f"'{rule.action}' needs the caller's explicit approval of the artifact as it "
                "is now; no valid approval (never given, revoked, or given before a later edit)"
            )
            self._emit(AuthBlocked(action=rule.action, call_id=call_id, reason=reason))
            raise ToolError(f"blocked by CommitGuard: {reason}")

    def use(self, rule: AuthorizationRule, call_id: str) -> None:
        token = self._ledger.consume(rule.action)
        assert token is not None, "checked by CommitGuard.check in the same call"
        self._emit(AuthUse(token=token, action=rule.action, call_id=call_id))


class ToolError(Exception):
    """A tool call the Workbench refuses; the message goes back to the agent."""


class Workbench:
    def __init__(self, task: TaskSpec, emit: Emit) -> None:
        self.task = task
        self._emit = emit
        self.artifacts = {a.id: Artifact(spec=a) for a in task.artifacts}
        self.kb = KnowledgeBase.for_documents(task.documents)
        self.ledger = AuthorizationLedger(emit)
        self.guard = CommitGuard(task, self.ledger, emit)

    # ------------------------------------------------------------------ tools

    def call_tool(self, call_id: str, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call and log its result (success or error)."""
        spec = self.task.tool(name)
        evidence: list[str] = []
        try:
            if spec is None:
                known = ", ".join(t.name for t in self.task.tools)
                raise ToolError(f"unknown tool '{name}'; available tools: {known}")
            result, evidence = self._dispatch(spec, call_id, args)
        except ToolError as exc:
            event = ToolResult(call_id=call_id, name=name, ok=False, error=str(exc))
        else:
            event = ToolResult(
                call_id=call_id, name=name, ok=True, result=result, evidence=evidence
            )
        self._emit(event)
        return event

    def _dispatch(
        self, spec: ToolSpec, call_id: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], list[str]]:
        rule = self.guard.rule(spec.name, args.get("artifact_id", spec.artifact))
        if rule is None:
            return self._run(spec, call_id, args, None)
        self.guard.check(rule, call_id)  # before any other check of a gated call
        out = self._run(spec, call_id, args, rule)
        if spec.kind not in ("submit", "commit"):
            self.guard.use(rule, call_id)  # a gated tool of another kind: used on success
        return out

    def _run(
        self, spec: ToolSpec, call_id: str, args: dict[str, Any], rule: AuthorizationRule | None,
    ) -> tuple[dict[str, Any], list[str]]:
        if spec.kind == "update":
            assert spec.artifact is not None, "validated: update tools name their artifact"
            return self._update(self.artifacts[spec.artifact], args), []
        if spec.kind == "kb_search":
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                raise ToolError("kb_search needs a non-empty 'query' string")
            docs = self.kb.search(query)
            hits = [{"doc_id": d.id, "title": d.title, "text": d.text} for d in docs]
            return {"results": hits}, [d.id for d in docs]
        if spec.kind == "lookup":
            return self._lookup(spec, args), []
        artifact = self._artifact_arg(args)
        if spec.kind == "set_ready":
            missing = artifact.missing_required()
            if missing:
                raise ToolError(
                    f"cannot mark {artifact.spec.id} ready: missing required fields "
                    + ", ".join(missing)
                )
            if artifact.lifecycle.rank >= Lifecycle.SUBMITTED.rank:
                raise ToolError(f"{artifact.spec.id} is already {artifact.lifecycle.value}")
            self._transition(artifact, Lifecycle.READY_FOR_REVIEW)
        elif spec.kind in ("submit", "commit"):
            target = Lifecycle.SUBMITTED if spec.kind == "submit" else Lifecycle.COMMITTED
            if artifact.lifecycle.rank >= target.rank:
                raise ToolError(f"{artifact.spec.id} is already {artifact.lifecycle.value}")
            if artifact.lifecycle is Lifecycle.DRAFT:
                raise ToolError(
                    f"{artifact.spec.id} is still DRAFT; mark it ready for review first"
                )
            if rule is not None:
                self.guard.use(rule, call_id)
            self._transition(artifact, target)
        return {"artifact_id": artifact.spec.id, "lifecycle": artifact.lifecycle.value}, []

    # ------------------------------------------------------------------ authorization

    def grant(self, action: str, *, plan_id: str | None = None, evidence: str = "") -> None:
        """The caller approved ``action``: a token bound to its artifact's current version."""
        rule = next((r for r in self.task.authorization if r.action == action), None)
        art = self.artifacts.get(rule.artifact) if rule is not None else None
        self.ledger.grant(action, plan_id=plan_id, evidence=evidence,
                          artifact_version=art.version if art is not None else None)

    def revoke(self, action: str, *, plan_id: str | None = None, evidence: str = "") -> None:
        self.ledger.revoke(action, plan_id=plan_id, evidence=evidence)

    def _artifact_arg(self, args: dict[str, Any]) -> Artifact:
        artifact_id = args.get("artifact_id")
        if not isinstance(artifact_id, str) or artifact_id not in self.artifacts:
            known = ", ".join(self.artifacts)
            raise ToolError(f"unknown artifact_id {artifact_id!r}; known artifacts: {known}")
        return self.artifacts[artifact_id]

    def _update(self, artifact: Artifact, args: dict[str, Any]) -> dict[str, Any]:
        values = args.get("fields", args)
        if not isinstance(values, dict) or not values:
            raise ToolError("update needs a non-empty 'fields' object of field: value pairs")
        names = {f.name for f in artifact.spec.fields}
        unknown = sorted(repr(k) if not isinstance(k, str) else k
                         for k in values if k not in names)  # a script's YAML key can be 2027
        if unknown:
            raise ToolError(
                f"unknown field(s) {', '.join(unknown)} for {artifact.spec.id}; "
                f"fields are: {', '.join(f.name for f in artifact.spec.fields)}"
            )
        if artifact.lifecycle.rank >= Lifecycle.SUBMITTED.rank:
            raise ToolError(f"{artifact.spec.id} is {artifact.lifecycle.value}; it can't change")
        changed = [k for k in values if artifact.fields.get(k) != values[k]]
        artifact.fields.update(values)
        artifact.version += 1
        if changed and artifact.lifecycle is Lifecycle.READY_FOR_REVIEW:
            # A material edit of a document under review sends it back to draft.
            self._emit(ArtifactLifecycle(
                artifact_id=artifact.spec.id, version=artifact.version,
                from_state=artifact.lifecycle.value, to_state=Lifecycle.DRAFT.value,
            ))
            artifact.lifecycle = Lifecycle.DRAFT
        if changed:
            # An approval covered the artifact as it was: a material edit voids it.
            for rule in self.task.authorization:
                if rule.artifact == artifact.spec.id:
                    self.ledger.invalidate(rule.action, artifact_version=artifact.version,
                                           changed=changed)
        self._snapshot(artifact, changed)
        return {"artifact_id": artifact.spec.id, "version": artifact.version, "updated": changed}

    def _transition(self, artifact: Artifact, to: Lifecycle) -> None:
        artifact.version += 1
        self._emit(ArtifactLifecycle(
            artifact_id=artifact.spec.id, version=artifact.version,
            from_state=artifact.lifecycle.value, to_state=to.value,
        ))
        artifact.lifecycle = to
        self._snapshot(artifact, [])

    def _snapshot(self, artifact: Artifact, changed: list[str]) -> None:
        self._emit(ArtifactUpdate(
            artifact_id=artifact.spec.id, version=artifact.version,
            lifecycle=artifact.lifecycle.value, changed=changed, fields=dict(artifact.fields),
        ))

    def _lookup(self, spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
        missing = [p.name for p in spec.params if p.required and p.name not in args]
        if missing:
            raise ToolError(f"{spec.name} needs argument(s): {', '.join(missing)}")
        for row in spec.rows:
            if all(argument_matches(v, args.get(k)) for k, v in row.match.items()):
                return dict(row.result)
        if spec.default is not None:
            return dict(spec.default)
        raise ToolError(f"{spec.name}: no record matches {args}")


def tool_schemas(task: TaskSpec) -> list[dict[str, Any]]:
    """OpenAI-style function definitions for the task's tools (what every agent is given)."""
    schemas: list[dict[str, Any]] = []
    for tool in task.tools:
        props: dict[str, Any] = {}
        required: list[str] = []
        if tool.kind == "update":
            art = task.artifact(tool.artifact or "")
            assert art is not None
            props["fields"] = {
                "type": "object",
                "description": "Field values to record, by field name.",
                "properties": {
                    f.name: {"type": "string", "description": f.label} for f in art.fields
                },
            }
            required = ["fields"]
        elif tool.kind == "kb_search":
            props["query"] = {"type": "string", "description": "What to look up."}
            required = ["query"]
        elif tool.kind in ("set_ready", "submit", "commit"):
            props["artifact_id"] = {"type": "string", "description": "Artifact id."}
            required = ["artifact_id"]
        for p in tool.params:
            props[p.name] = {"type": p.type, "description": p.description}
            if p.required:
                required.append(p.name)
        schemas.append({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": {"type": "object", "properties": props, "required": required},
        })
    return schemas
