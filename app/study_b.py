"""Study B, the researcher side (paper appendix F.3): set up a live-human transfer audit, edit
its assignment plan while it is a draft, launch it (participants with unguessable invitation
tokens and their planned sessions), monitor it, and compute Table 10 against frozen-simulator
campaigns.

The plan itself (Latin-square counterbalancing, anchors, checks, Table 10 statistics) lives in
:mod:`study_protocols.study_b`; this module binds it to the database and the run directories.
Run data never enters the database: a session's outcome is graded from its run directory.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import ColumnElement, CursorResult, update
from sqlmodel import Session, col, select

from app.db import releasing
from app.demo import AgentChoice, agent_choices
from app.models_study_b import LiveSession, Participant, StudyB
from app.runindex import grade_cached
from app.security import public_text
from grading.gates import RunGrade
from runtime.core.rundir import RunDir, RunDirError
from runtime.core.spec import TaskSpec
from runtime.session.campaign import AgentSpecError, parse_agent_spec
from study_protocols.study_b import (
    PlanError,
    SessionOutcome,
    StudyBPlan,
    check_plan,
    make_plan,
    swap_sessions,
    synthetic_from_campaign,
    table10,
)

RUNS_SUBDIR = "study-b"
"""Participant sessions run under ``<runs_dir>/study-b/<study id>/<label>/<position>-<task>/``."""
TOKEN_BYTES = 24
"""``secrets.token_urlsafe(24)``: 32 URL-safe characters, 192 bits."""
ON_DISCONNECT = ("rejoin", "incomplete")
FINISHED_STATES = frozenset({"complete", "incomplete", "failed"})
PROLIFIC_QUERY = ("PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                  "&SESSION_ID={{%SESSION_ID%}}")
"""Prolific replaces each ``{{%NAME%}}`` with the participant's ids when it opens the link."""

DEFAULT_CONSENT = """\
You are invited to take part in a research study on voice assistants at work.

What you will do: in a few short sessions you will talk out loud with a voice assistant to get a \
workplace task done (for example, booking a room or filing a request). A private role card tells \
you who you are and what you know; short private cues tell you when to correct, approve or \
cancel something. Speak naturally; there is no script to read.

What we record: the audio of both sides of each conversation, its transcript, the times of the \
cues, and what the assistant did. We do not ask for your name. Recordings are stored on the \
research group's servers and used only for research on how well voice assistants work.

You will not be told which assistant you are talking to, and you are not asked to judge it.

Taking part is voluntary. You may stop at any time by closing the page; sessions you finished \
are kept unless you ask us to delete them (quote the link you were given).

By choosing "I agree" you confirm that you are 18 or older and agree to take part."""


class StudyBInputError(ValueError):
    """Bad input for a study; ``field`` names the form field, ``value`` the offending value."""

    def __init__(self, field: str, value: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.value = value


class PlanRejected(ValueError):
    """An edited plan breaks the design; ``problems`` lists every violation."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class StudyStateError(ValueError):
    """The action is not possible in the study's current status."""


@dataclass(frozen=True)
class NewStudy:
    """What the create form asks for."""

    name: str
    systems: tuple[str, ...]
    task_ids: tuple[str, ...]
    n_anchor: int = 6
    sessions_per_participant: int | None = None
    seed: int = 0
    consent_text: str = DEFAULT_CONSENT
    completion_code: str = ""
    completion_url: str = ""
    on_disconnect: str = "rejoin"
    captions: bool = False
    """Show participants the agent's words as captions during their calls."""


# --------------------------------------------------------------------------- systems


def system_choices(tasks: Sequence[TaskSpec], env: Mapping[str, str]) -> list[AgentChoice]:
    """The agent specs that can run *every* task of ``tasks`` here (a scripted agent only when
    each task has that script), in the order :func:`app.demo.agent_choices` gives them."""
    if not tasks:
        return []
    first = agent_choices(tasks[0], env)
    common = {c.spec for c in first}
    for task in tasks[1:]:
        common &= {c.spec for c in agent_choices(task, env)}
    return [c for c in first if c.spec in common]


def check_system(spec: str, tasks: Sequence[TaskSpec]) -> str:
    """``spec`` stripped, once it parses as an agent spec and (for ``scripted:NAME``) every task
    has that script; otherwise :class:`StudyBInputError` naming it."""
    spec = spec.strip()
    if not spec:
        raise StudyBInputError("systems", spec, "an agent spec is blank; give e.g. "
                               "scripted:oracle, baseline or openai-realtime:MODEL")
    try:
        parse_agent_spec(spec)
    except AgentSpecError as exc:
        raise StudyBInputError("systems", spec, f"agent spec '{spec}': {exc}") from None
    except ImportError as exc:
        raise StudyBInputError("systems", spec, f"agent spec '{spec}' cannot run here: "
                               f"{exc}") from None
    kind, _, arg = spec.partition(":")
    if kind == "scripted":
        if arg.endswith((".yaml", ".yml")):
            if not Path(arg).is_file():
                raise StudyBInputError("systems", spec,
                                       f"agent spec '{spec}': no script file '{arg}'")
        else:
            missing = [t.id for t in tasks if not (t.folder / "scripts" / f"{arg}.yaml").is_file()]
            if missing:
                raise StudyBInputError(
                    "systems", spec, f"agent spec '{spec}': tasks {', '.join(missing)} have no "
                    f"script '{arg}' (scripts/{arg}.yaml); choose other tasks or another agent")
    return spec


# --------------------------------------------------------------------------- create and edit


def _validate(new: NewStudy, tasks: Mapping[str, TaskSpec]) -> list[TaskSpec]:
    if not new.name.strip():
        raise StudyBInputError("name", new.name, "the study needs a name")
    if len(new.name.strip()) > 200:
        raise StudyBInputError("name", new.name[:40] + "…", "the name must be at most 200 "
                               "characters")
    if not new.task_ids:
        raise StudyBInputError("task_ids", "", "choose at least one task")
    unknown = [t for t in new.task_ids if t not in tasks]
    if unknown:
        raise StudyBInputError("task_ids", ", ".join(unknown),
                               f"unknown task ids: {', '.join(unknown)}")
    if len(set(new.task_ids)) != len(new.task_ids):
        raise StudyBInputError("task_ids", ", ".join(new.task_ids), "a task is listed twice")
    chosen = [tasks[t] for t in new.task_ids]
    if not new.systems:
        raise StudyBInputError("systems", "", "choose at least one system (agent spec)")
    seen: set[str] = set()
    for spec in new.systems:
        checked = check_system(spec, chosen)
        if checked in seen:
            raise StudyBInputError("systems", checked, f"system '{checked}' is listed twice")
        seen.add(checked)
    if new.on_disconnect not in ON_DISCONNECT:
        raise StudyBInputError("on_disconnect", new.on_disconnect,
                               f"on_disconnect must be one of {', '.join(ON_DISCONNECT)}")
    if new.completion_url:
        parts = urlsplit(new.completion_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise StudyBInputError("completion_url", new.completion_url,
                                   "the completion URL must be an absolute http(s) URL")
    if not new.consent_text.strip():
        raise StudyBInputError("consent_text", "", "the consent text is empty")
    return chosen


def _plan_or_error(
    task_ids: Sequence[str], systems: Sequence[str], *, seed: int, n_anchor: int,
    anchor_task_ids: Sequence[str] | None, sessions_per_participant: int | None,
) -> StudyBPlan:
    try:
        plan = make_plan(list(task_ids), list(systems), seed=seed, n_anchor=n_anchor,
                         anchor_task_ids=list(anchor_task_ids) if anchor_task_ids else None,
                         sessions_per_participant=sessions_per_participant)
    except PlanError as exc:
        message = str(exc)
        # put the error next to the form field it is about, with that field's value
        values = {"sessions_per_participant": str(sessions_per_participant or ""),
                  "n_anchor": str(n_anchor), "seed": str(seed)}
        field = next((f for f in values if message.startswith(f)), "plan")
        raise StudyBInputError(field, values.get(field, ""),
                               f"no plan for these settings: {message}") from None
    problems = check_plan(plan)
    if problems:  # make_plan should never produce one; say so rather than store it
        raise StudyBInputError("plan", "", "the generated plan breaks the design: "
                               + "; ".join(problems))
    return plan


def create_study(db: Session, new: NewStudy, *, tasks: Mapping[str, TaskSpec],
                 by: str) -> StudyB:
    """Validate the form, generate the plan from ``new.seed`` and store a draft study."""
    _validate(new, tasks)
    systems = [s.strip() for s in new.systems]
    plan = _plan_or_error(new.task_ids, systems, seed=new.seed, n_anchor=new.n_anchor,
                          anchor_task_ids=None,
                          sessions_per_participant=new.sessions_per_participant)
    study = StudyB(
        name=new.name.strip(), created_by=by, seed=new.seed, task_ids=list(new.task_ids),
        systems=systems, anchor_task_ids=list(plan.anchor_task_ids),
        sessions_per_participant=new.sessions_per_participant or 0,
        plan=plan.to_json(), consent_text=new.consent_text.strip(),
        completion_code=new.completion_code.strip(), completion_url=new.completion_url.strip(),
        on_disconnect=new.on_disconnect, captions=bool(new.captions),
    )
    db.add(study)
    db.commit()
    db.refresh(study)
    return study


def plan_of(study: StudyB) -> StudyBPlan:
    return StudyBPlan.from_json(study.plan)


def lock_study(db: Session, study: StudyB) -> None:
    """Re-read ``study`` and hold its row until the transaction ends. On PostgreSQL (SELECT …
    FOR NO KEY UPDATE) a plan edit, launch, close or join-link claim handled by another app
    process at the same moment waits for this one and then works on what it wrote: no edit
    is lost and a launched study's plan is never edited. SQLite has no row locks and ignores
    the clause; one app process serves it, and its writes take turns. The caller ends the
    transaction before it returns (commit, or :func:`app.db.releasing` on an error)."""
    db.get(StudyB, study.id, with_for_update={"key_share": True}, populate_existing=True)


def _require_draft(study: StudyB, what: str) -> None:
    if study.status != "draft":
        raise StudyStateError(f"cannot {what}: study {study.id} is {study.status}; the plan is "
                              "frozen once the study is launched")


def _store_plan(db: Session, study: StudyB, plan: StudyBPlan) -> StudyBPlan:
    study.plan = plan.to_json()
    study.seed = plan.seed
    study.anchor_task_ids = list(plan.anchor_task_ids)
    db.add(study)
    db.commit()
    db.refresh(study)
    return plan


@releasing
def swap(db: Session, study: StudyB, a: tuple[str, int], b: tuple[str, int]) -> StudyBPlan:
    """Exchange two planned sessions; refused (PlanRejected) when the result breaks the design."""
    lock_study(db, study)
    _require_draft(study, "edit the plan")
    try:
        plan = swap_sessions(plan_of(study), a, b)
    except PlanError as exc:
        raise PlanRejected([str(exc)]) from None
    problems = check_plan(plan)
    if problems:
        raise PlanRejected(problems)
    return _store_plan(db, study, plan)


@releasing
def import_plan_csv(db: Session, study: StudyB, text: str) -> StudyBPlan:
    """Replace the plan by an edited CSV export; every violation is listed when it is refused."""
    lock_study(db, study)
    _require_draft(study, "import a plan")
    if not text.strip():
        raise PlanRejected(["the uploaded plan CSV is empty"])
    current = plan_of(study)
    try:
        plan = StudyBPlan.from_csv(io.StringIO(text), seed=current.seed,
                                   task_ids=current.task_ids, systems=current.systems,
                                   anchor_task_ids=current.anchor_task_ids)
    except PlanError as exc:
        raise PlanRejected([str(exc)]) from None
    except (csv.Error, UnicodeDecodeError, ValueError, KeyError) as exc:
        raise PlanRejected([f"the plan CSV cannot be read: {exc}"]) from None
    problems = check_plan(plan)
    if problems:
        raise PlanRejected(problems)
    return _store_plan(db, study, plan)


@releasing
def regenerate(db: Session, study: StudyB, seed: int) -> StudyBPlan:
    """A fresh plan from ``seed`` with the study's tasks, systems and sizes."""
    lock_study(db, study)
    _require_draft(study, "regenerate the plan")
    current = plan_of(study)
    plan = _plan_or_error(study.task_ids, study.systems, seed=seed,
                          n_anchor=len(current.anchor_task_ids), anchor_task_ids=None,
                          sessions_per_participant=study.sessions_per_participant or None)
    return _store_plan(db, study, plan)


# --------------------------------------------------------------------------- launch


_PLAIN_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def path_part(text: str) -> str:
    """``text`` as one folder name that stays inside its parent: ``text`` itself when it is
    plain (letters, digits, ``_``, ``-``, ``.``, not starting with a dot, at most 64
    characters), otherwise its plain characters followed by a hash of the whole text (two
    different texts never share a folder). Participant labels and task ids go through this
    before they are ever part of a path."""
    if _PLAIN_PART.fullmatch(text):
        return text
    plain = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")[:40] or "x"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{plain}-{digest}"


def session_run_rel(study_id: int, label: str, position: int, task_id: str) -> str:
    """Where a participant session's run directory lives, relative to the runs directory:
    ``study-b/<study>/<label>/<position>-<task>``, each part made safe by :func:`path_part`
    (a label or task id is never trusted as a path)."""
    rel = (f"{RUNS_SUBDIR}/{int(study_id)}/{path_part(label)}/"
           f"{int(position)}-{path_part(task_id)}")
    parts = PurePosixPath(rel).parts
    if len(parts) != 4 or any(p in ("", ".", "..") or "\x00" in p for p in parts):
        raise ValueError(f"unsafe run directory {rel!r} for participant {label!r}")
    return rel


@releasing
def launch(db: Session, study: StudyB) -> list[Participant]:
    """Freeze the plan: one participant (with an unguessable token) per plan label and one
    pending session row per planned session."""
    lock_study(db, study)
    _require_draft(study, "launch")
    plan = plan_of(study)
    problems = check_plan(plan)
    if problems:
        raise PlanRejected(problems)
    assert study.id is not None
    people: list[Participant] = []
    for label in plan.participants():
        person = Participant(study_id=study.id, label=label,
                             token=secrets.token_urlsafe(TOKEN_BYTES))
        db.add(person)
        db.flush()
        assert person.id is not None
        for s in plan.for_participant(label):
            db.add(LiveSession(study_id=study.id, participant_id=person.id, position=s.position,
                               task_id=s.task_id, system=s.system, anchor=s.anchor))
        people.append(person)
    study.status = "launched"
    study.join_token = secrets.token_urlsafe(TOKEN_BYTES)
    db.add(study)
    db.commit()
    for person in people:
        db.refresh(person)
    return people


@releasing
def close(db: Session, study: StudyB) -> None:
    lock_study(db, study)
    if study.status != "launched":
        raise StudyStateError(f"cannot close study {study.id}: it is {study.status}")
    study.status = "closed"
    db.add(study)
    db.commit()


def invitation_link(base_url: str, token: str) -> str:
    return f"{base_url.rstrip('/')}/p/{token}"


def prolific_link(base_url: str, token: str) -> str:
    return f"{invitation_link(base_url, token)}?{PROLIFIC_QUERY}"


def join_link(base_url: str, join_token: str) -> str:
    """The study's one shared link for a recruitment platform (with Prolific's placeholders):
    each new participant id it carries claims the next unclaimed participant."""
    return f"{base_url.rstrip('/')}/p/join/{join_token}?{PROLIFIC_QUERY}"


class StudyFull(Exception):
    """Every participant of the study has been claimed."""


def _utc(moment: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def holder_of(db: Session, study: StudyB, external_pid: str) -> Participant | None:
    """The participant of ``study`` whose place ``external_pid`` holds, if any."""
    return db.exec(select(Participant).where(Participant.study_id == study.id,
                                             Participant.external_pid == external_pid)).first()


def _clock() -> datetime:
    """The time a claim is made and judged by (one name, so tests can step it)."""
    return datetime.now(UTC)


@releasing
def claim_participant(db: Session, study: StudyB, external_pid: str,
                      study_ref: str | None = None, session_ref: str | None = None, *,
                      expire_after: timedelta | None = None, now: datetime | None = None,
                      ) -> Participant:
    """The participant for ``external_pid`` in ``study``: the one it claimed before, or the
    next free one, claimed with a conditional update so two people arriving at once never get
    the same participant. Free: never claimed (lowest label first, no external id, consent
    still pending), then, with ``expire_after``, places the shared link handed out longer ago
    than that whose participant never answered the consent page (oldest claim first). An
    expired place gets a new token, so the link its previous claimant was sent opens nothing."""
    assert study.id is not None
    # Claims of one study take turns (the study's row is held until the first commit below):
    # two arrivals with the same id, in two app processes, must not claim two places.
    lock_study(db, study)
    known = holder_of(db, study, external_pid)
    if known is not None:
        db.rollback()  # nothing to write: free the study's row
        return known
    now = now or _clock()
    # A snapshot of the candidates as plain values: each update below commits, after which the
    # ORM objects would reload what other claimants wrote meanwhile.
    pending = [(p.id, p.external_pid, p.token, p.claimed_at) for p in db.exec(
        select(Participant).where(Participant.study_id == study.id,
                                  Participant.consent == "pending")
        .order_by(col(Participant.label))).all()]
    free = [c for c in pending if c[1] is None]
    if expire_after is not None:
        cutoff = now - expire_after
        free += sorted((c for c in pending if c[1] is not None and c[3] is not None
                        and _utc(c[3]) <= cutoff), key=lambda c: _utc(c[3] or now))
    for person_id, holder, token, _ in free:
        values: dict[str, Any] = {"external_pid": external_pid, "external_study_id": study_ref,
                                  "external_session_id": session_ref, "claimed_at": now}
        held = col(Participant.external_pid)
        still_free: ColumnElement[bool]
        if holder is None:
            still_free = held.is_(None)
        else:  # an expired claim: taken over only as it was (same claimant, same token)
            still_free = held == holder
            values["token"] = secrets.token_urlsafe(TOKEN_BYTES)
        claimed: CursorResult[Any] = db.execute(  # type: ignore[assignment]
            update(Participant)
            .where(col(Participant.id) == person_id, still_free,
                   col(Participant.token) == token, col(Participant.consent) == "pending")
            .values(**values).execution_options(synchronize_session=False))
        db.commit()
        if claimed.rowcount == 1:
            person = db.get(Participant, person_id)
            assert person is not None
            db.refresh(person)
            return person
        again = holder_of(db, study, external_pid)
        if again is not None:  # the same person, in another tab, won the race
            return again
    raise StudyFull("every participant of this study has been claimed")


def claim_proof(person: Participant) -> str:
    """What the claimant's browser keeps (in its session cookie) to come back through the
    shared link: a digest of the personal token, never the token itself."""
    return hashlib.sha256(f"claim:{person.token}".encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- monitoring


@dataclass
class SessionView:
    row: LiveSession
    run_rel: str | None
    """The run directory (relative to the runs directory) when it exists."""
    grade: RunGrade | None
    problem: str | None = None

    @property
    def ws(self) -> bool | None:
        return None if self.grade is None or self.grade.infrastructure_failure else self.grade.WS


@dataclass
class ParticipantView:
    person: Participant
    sessions: list[SessionView] = field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(s.row.state in FINISHED_STATES for s in self.sessions)


def _run_dir_of(row: LiveSession, person: Participant, runs_dir: Path) -> Path | None:
    try:
        rel = row.run_dir or session_run_rel(row.study_id, person.label, row.position,
                                             row.task_id)
        root = runs_dir.resolve()
        path = (root / rel).resolve()
        if root not in path.parents or not RunDir(path).exists():
            return None
    except (ValueError, OSError):  # a stored path an older version wrote (a NUL byte, say)
        return None
    return path


def monitor(db: Session, study: StudyB, runs_dir: Path,
            tasks: Mapping[str, TaskSpec]) -> list[ParticipantView]:
    """Every participant with their sessions; finished sessions graded from their run dirs."""
    people = db.exec(select(Participant).where(Participant.study_id == study.id)
                     .order_by(col(Participant.label))).all()
    rows = db.exec(select(LiveSession).where(LiveSession.study_id == study.id)
                   .order_by(col(LiveSession.position))).all()
    by_person: dict[int | None, list[LiveSession]] = {}
    for row in rows:
        by_person.setdefault(row.participant_id, []).append(row)
    out: list[ParticipantView] = []
    for person in people:
        view = ParticipantView(person)
        for row in by_person.get(person.id, []):
            run_dir = _run_dir_of(row, person, runs_dir)
            grade: RunGrade | None = None
            problem: str | None = None
            if run_dir is not None and row.state in FINISHED_STATES:
                try:
                    grade = grade_cached(run_dir, dict(tasks))
                except RunDirError as exc:
                    problem = public_text(str(exc), runs_dir)
            rel = str(run_dir.relative_to(runs_dir.resolve())) if run_dir else None
            view.sessions.append(SessionView(row, rel, grade, problem))
        out.append(view)
    return out


# --------------------------------------------------------------------------- Table 10


@dataclass
class HumanCounts:
    graded: int = 0
    incomplete: int = 0
    """Sessions that ended ``incomplete`` or ``failed``, or whose run could not be graded or
    ended in an infrastructure failure: counted apart, never as agent failures."""
    pending: int = 0
    """Sessions not finished yet (``pending`` or ``running``): left out."""
    notes: list[str] = field(default_factory=list)


def human_outcomes(views: Sequence[ParticipantView]) -> tuple[list[SessionOutcome], HumanCounts]:
    counts = HumanCounts()
    outcomes: list[SessionOutcome] = []
    for view in views:
        for s in view.sessions:
            row = s.row
            if row.state not in FINISHED_STATES:
                counts.pending += 1
                continue
            ws: bool | None = None
            if row.state == "complete":
                if s.grade is None:
                    counts.notes.append(f"{view.person.label} #{row.position} {row.task_id}: "
                                        f"finished but not gradable "
                                        f"({s.problem or 'no run directory'}); counted apart")
                elif s.grade.infrastructure_failure:
                    counts.notes.append(f"{view.person.label} #{row.position} {row.task_id}: "
                                        "infrastructure failure; counted apart")
                else:
                    ws = s.grade.WS
            if ws is None:
                counts.incomplete += 1
            else:
                counts.graded += 1
            outcomes.append(SessionOutcome(task_id=row.task_id, system=row.system,
                                           participant=view.person.label, anchor=row.anchor,
                                           ws=ws))
    return outcomes, counts


def campaign_choices(runs_dir: Path) -> list[str]:
    """Campaign directories (holding ``campaign.json``) under the runs directory, relative;
    Study B's own run directories are never offered as a synthetic condition."""
    if not runs_dir.is_dir():
        return []
    found = sorted(p.parent.relative_to(runs_dir).as_posix()
                   for p in runs_dir.rglob("campaign.json")
                   if ".incomplete" not in p.parts)
    return [c for c in found if c != "." and not c.startswith(f"{RUNS_SUBDIR}/")]


def _campaign_json(runs_dir: Path, rel: str) -> dict[str, Any]:
    try:
        data = json.loads((runs_dir / rel / "campaign.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def campaign_agent(runs_dir: Path, rel: str) -> str | None:
    agent = _campaign_json(runs_dir, rel).get("agent")
    return agent.strip() if isinstance(agent, str) else None


def campaign_tasks(runs_dir: Path, rel: str) -> list[str] | None:
    """The task ids ``campaign.json`` lists (``apex-voice run`` writes them), or None."""
    tasks = _campaign_json(runs_dir, rel).get("tasks")
    if not isinstance(tasks, list) or not all(isinstance(t, str) for t in tasks):
        return None
    return list(tasks)


def system_tasks(study: StudyB, system: str) -> list[str]:
    """The tasks ``system`` runs in the study's plan (every study task in a complete plan)."""
    found = sorted({s.task_id for s in plan_of(study).sessions if s.system == system})
    return found or sorted(study.task_ids)


def campaign_mismatch(runs_dir: Path, rel: str, system: str,
                      needed: Sequence[str]) -> str | None:
    """Why campaign ``rel`` cannot be ``system``'s synthetic condition, from its
    ``campaign.json``: it names another agent (or none), or its task list misses some of the
    study's tasks for the system. None when it fits (its runs are checked after grading)."""
    agent = campaign_agent(runs_dir, rel)
    if agent is None:
        return (f"campaign '{rel}' names no agent in its campaign.json, so it cannot be "
                f"checked to be system '{system}'")
    if agent != system.strip():
        return (f"campaign '{rel}' ran agent '{agent}', not system '{system}'; pick a "
                f"campaign of '{system}'")
    listed = campaign_tasks(runs_dir, rel)
    if listed is not None:
        missing = [t for t in needed if t not in listed]
        if missing:
            return _uncovered(rel, system, missing, needed, "its task list lacks")
    return None


def _uncovered(rel: str, system: str, missing: Sequence[str], needed: Sequence[str],
               how: str) -> str:
    return (f"campaign '{rel}' does not cover the study's tasks for system '{system}': "
            f"{how} {', '.join(missing)} ({len(missing)} of {len(needed)} tasks)")


@dataclass
class Table10Page:
    result: dict[str, Any]
    counts: HumanCounts
    chosen: dict[str, str]
    """System → campaign directory (relative) used as its synthetic condition."""
    problems: list[str]
    refused: dict[str, str] = field(default_factory=dict)
    """System → why the campaign picked for it was refused (another agent, missing tasks)."""


def results(views: Sequence[ParticipantView], study: StudyB, runs_dir: Path,
            tasks: Mapping[str, TaskSpec], chosen: Mapping[str, str], *, seed: int = 0,
            n_resamples: int = 2000) -> Table10Page:
    """Table 10 for ``study``: human sessions from ``views``, the synthetic condition of each
    system from the campaign directory ``chosen[system]`` (relative to ``runs_dir``)."""
    human, counts = human_outcomes(views)
    offered = set(campaign_choices(runs_dir))
    synthetic: dict[str, dict[str, list[bool]]] = {}
    used: dict[str, str] = {}
    refused: dict[str, str] = {}
    problems: list[str] = []
    for system in study.systems:
        synthetic[system] = {}  # every system gets a row, in the study's order
        rel = chosen.get(system, "")
        if not rel:
            continue
        if rel not in offered:
            problems.append(f"{system}: no campaign '{rel}' under the runs directory")
            continue
        needed = system_tasks(study, system)
        why = campaign_mismatch(runs_dir, rel, system, needed)
        if why is not None:
            refused[system] = why
            continue
        try:
            runs = synthetic_from_campaign(runs_dir / rel, tasks)
        except (ValueError, RunDirError, OSError) as exc:
            problems.append(f"{system}: campaign '{rel}' cannot be used: {exc}")
            continue
        missing = [t for t in needed if t not in runs]
        if missing:
            refused[system] = _uncovered(rel, system, missing, needed,
                                         "it has no graded run of")
            continue
        synthetic[system] = runs
        used[system] = rel
    for system, why in refused.items():
        problems.append(f"{system}: refused: {why}")
    try:
        result = table10(human, synthetic, seed=seed, n_resamples=n_resamples)
    except ValueError as exc:
        problems.append(f"Table 10 cannot be computed: {exc}")
        result = table10([], {s: {} for s in study.systems}, seed=seed,
                         n_resamples=n_resamples)
    rows = result["systems"]
    for system in study.systems:
        if system in refused and system in rows:
            rows[system]["notes"].insert(0, f"synthetic condition refused: {refused[system]}")
        elif system not in used and system in rows:
            rows[system]["notes"].insert(0, "synthetic condition not chosen: pick a campaign "
                                         "of this system")
    order = list(study.systems) + [s for s in rows if s not in study.systems]
    result["systems"] = {s: rows[s] for s in order if s in rows}
    return Table10Page(result, counts, used, problems, refused)
