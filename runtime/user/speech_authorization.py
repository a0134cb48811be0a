"""Authorization from a live participant's speech (Study B, DESIGN §3 "Live participant").

In a frozen-simulator run an approval or revocation is an authored property of the plan that
was spoken. With a live participant it has to be read from what they said: the transcript of
one utterance is classified as a grant, a revocation or neither, *with the active private cue
as context*. A cue whose plan carries an authorization (``approve`` or ``revoke``) is the only
context in which a decision other than ``none`` is possible: an unprompted "yes" while the
agent asks for a phone number never grants anything.

:class:`RuleAuthorizer` is the default: transparent phrase rules anyone can read and dispute.

* The transcript is normalized (lower case, contractions expanded: "don't" → "do not") and
  scanned for *affirmative* phrases ("yes", "go ahead", "please submit", "that's fine", the
  action's own verbs used as a request: "submit it") and *stop* phrases ("no", "wait", "hold
  on", "cancel", "never mind", "do not submit", "not yet", "I changed my mind", …).
* *Neutral* phrases are removed first, so that their words do not count: "no problem", "no
  worries", "do not worry", "not sure", "I do not know", "let me think".
* A negated request is a stop: "do not go ahead", "please don't send it". A stop phrase wins
  over an affirmative phrase it overlaps.
* The **last** stance in the utterance decides (people correct themselves: "yes — actually
  cancel that" is a stop; "no wait, yes, go ahead" is affirmative).
* With an approve cue: affirmative → ``grant`` of the cue plan's action; anything else →
  ``none`` (a refusal or a hesitation grants nothing; the cue stays open). With a revoke cue:
  stop → ``revoke``; anything else → ``none``.
* ``confidence`` is the share of the utterance's stance phrases that agree with the deciding
  one (1.0 when unanimous, lower when the speaker changed their mind); 0.0 when no stance
  phrase was found. ``rationale`` names the deciding phrase.

Every decision is logged (``auth.decision``) and a researcher can correct it afterwards
(grading/corrections.py); the classifier never has to be perfect, only inspectable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from runtime.core.spec import TaskSpec

if TYPE_CHECKING:
    from runtime.user.live_user import Cue

Decision = Literal["grant", "revoke", "none"]


class AuthDecision(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Decision
    action: str | None
    """The authorization rule's action (``commit:lr_1``): the active cue plan's; with no
    cue, the task's only gated action when there is exactly one (context for a later
    correction), else None."""
    confidence: float
    evidence: str
    """The transcript the decision rests on."""
    classifier: str
    rationale: str = ""


class SpeechAuthorizer(Protocol):
    """Reads a grant / revocation / neither from one utterance's transcript."""

    def classify(self, transcript: str, cue: Cue | None, task: TaskSpec) -> AuthDecision: ...


# --------------------------------------------------------------------------- normalization

_CONTRACTIONS = (
    (r"\bdon'?t\b", "do not"), (r"\bdoesn'?t\b", "does not"), (r"\bdidn'?t\b", "did not"),
    (r"\bcan'?t\b", "cannot"), (r"\bwon'?t\b", "will not"), (r"\bshouldn'?t\b", "should not"),
    (r"\bisn'?t\b", "is not"), (r"\baren'?t\b", "are not"), (r"\bwasn'?t\b", "was not"),
    (r"\bhaven'?t\b", "have not"), (r"\bhasn'?t\b", "has not"), (r"\bi'?m\b", "i am"),
    (r"\bthat'?s\b", "that is"), (r"\bit'?s\b", "it is"), (r"\blet'?s\b", "let us"),
    (r"\bwe'?re\b", "we are"), (r"\byou'?re\b", "you are"), (r"\bi'?ve\b", "i have"),
    (r"\bi'?d\b", "i would"), (r"\bi'?ll\b", "i will"), (r"\bwhat'?s\b", "what is"),
    (r"\bok\b", "okay"), (r"\bo\.k\.?", "okay"), (r"\ball right\b", "alright"),
)


def normalize(text: str) -> str:
    """Lower case, typographic apostrophes straightened, contractions expanded, punctuation
    turned into spaces (clause order is kept; only word positions matter)."""
    out = text.lower().replace("’", "'").replace("‘", "'")
    for pattern, repl in _CONTRACTIONS:
        out = re.sub(pattern, repl, out)
    out = re.sub(r"[^a-z0-9' ]+", " ", out)
    out = out.replace("'", "")
    return " ".join(out.split())


# --------------------------------------------------------------------------- the phrase rules

_NEUTRAL = (
    r"no problem", r"no worries", r"no rush", r"do not worry", r"not sure", r"i do not know",
    r"let me (?:think|check|see)", r"not a problem",
)
"""Phrases whose words would otherwise read as a stance; they are blanked out first."""

_GENERIC_VERBS = (
    r"go ahead", r"proceed", r"do it", r"do that", r"send it", r"submit it", r"file it",
    r"book it", r"commit it", r"put it (?:in|through)", r"process it", r"finali[sz]e it",
    r"confirm it", r"go for it", r"push it through",
)

_AFFIRMATIVE = (
    r"yes", r"yeah", r"yep", r"yup", r"yea", r"sure", r"okay", r"alright", r"absolutely",
    r"definitely", r"of course", r"certainly", r"correct", r"right", r"exactly", r"perfect",
    r"fine", r"great", r"good", r"sounds good", r"please do", r"approved?", r"i approve",
    r"confirmed?", r"i confirm", r"agreed?", r"i agree", r"that works", r"works for me",
    r"why not", r"i do not see why not", r"no objections?", r"no doubt", r"mhm", r"uh huh",
    r"you (?:can|may)", r"you have my (?:approval|permission|okay|go ahead)",
    r"let us do it", r"let us go", r"do it", r"please",
)

_STOP = (
    r"no", r"nope", r"nah", r"wait", r"hold on", r"hold off", r"hang on", r"stop", r"cancel",
    r"cancel (?:it|that|this)", r"never mind", r"nevermind", r"scratch that",
    r"take (?:it|that) back", r"i take (?:it|that) back", r"withdraw", r"revoke", r"abort",
    r"undo", r"call (?:it|that) off", r"not yet", r"not now", r"not so fast", r"pause",
    r"i (?:have )?changed my mind", r"on second thought", r"rather (?:you )?(?:did not|not)",
    r"let us not", r"i would rather not", r"i do not want", r"do not", r"please do not",
    r"not (?:approved|okay|correct|right)", r"that is wrong", r"that is not right",
    r"hold it", r"stop it", r"stop that", r"actually no",
)

_NEGATORS = r"(?:do not|please do not|did not|not|never|cannot|should not|will not)"


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    stance: Literal["affirm", "stop"]
    phrase: str


def _alternation(phrases: tuple[str, ...] | list[str]) -> str:
    return "|".join(sorted(phrases, key=len, reverse=True))


def _verb_phrases(task: TaskSpec, action: str | None) -> list[str]:
    """Request phrases built from the rule's verbs ("submit", "put in"): "submit it",
    "submit the request", "please submit", plain "submit"."""
    verbs: list[str] = []
    for rule in task.authorization:
        if action is None or rule.action == action:
            verbs.extend(re.escape(normalize(v)) for v in rule.verbs if normalize(v))
    phrases = list(_GENERIC_VERBS)
    for verb in verbs:
        phrases += [rf"{verb}(?: (?:it|that|this|the \w+(?: \w+)?))?(?: now)?"]
    return phrases


def stance_matches(transcript: str, task: TaskSpec, action: str | None) -> list[_Match]:
    """Every stance phrase in the normalized transcript, in order, after the neutral
    phrases are blanked out and overlaps resolved (a stop phrase wins over an affirmative
    one it overlaps; a negated request is a stop)."""
    text = normalize(transcript)
    for phrase in _NEUTRAL:
        text = re.sub(rf"\b(?:{phrase})\b", lambda m: "_" * len(m.group(0)), text)
    verbs = _verb_phrases(task, action)
    found: list[_Match] = []
    negated = rf"\b{_NEGATORS} (?:(?:you )?(?:please )?)(?:{_alternation(verbs)})\b"
    for m in re.finditer(negated, text):
        found.append(_Match(m.start(), m.end(), "stop", m.group(0)))
    for m in re.finditer(rf"\b(?:{_alternation(list(_AFFIRMATIVE) + verbs)})\b", text):
        found.append(_Match(m.start(), m.end(), "affirm", m.group(0)))
    for m in re.finditer(rf"\b(?:{_alternation(_STOP)})\b", text):
        found.append(_Match(m.start(), m.end(), "stop", m.group(0)))
    # Whole agreement phrases that contain a stop word ("why not", "no objection").
    agree = [f for f in found if f.stance == "affirm" and " " in f.phrase
             and re.search(r"\b(?:no|not)\b", f.phrase)]

    def overlaps(a: _Match, b: _Match) -> bool:
        return a.start < b.end and b.start < a.end

    kept: list[_Match] = []
    for f in found:
        if f.stance == "stop" and any(overlaps(f, a) for a in agree):
            continue
        if f.stance == "affirm" and f not in agree and any(
            g.stance == "stop" and overlaps(f, g) for g in found
        ):
            continue
        # Among same-stance overlaps keep the longest (one phrase, one vote).
        if any(
            g is not f and g.stance == f.stance and overlaps(f, g)
            and (g.end - g.start, -g.start) > (f.end - f.start, -f.start)
            for g in found
        ):
            continue
        kept.append(f)
    return sorted(kept, key=lambda f: f.start)


class RuleAuthorizer:
    """The default :class:`SpeechAuthorizer`: phrase rules, see the module docstring."""

    name = "rules-v1"

    def classify(self, transcript: str, cue: Cue | None, task: TaskSpec) -> AuthDecision:
        plan = task.plan(cue.plan_id) if cue is not None else None
        auth = plan.authorization if plan is not None else None
        if auth is None or not (auth.grant or auth.revoke):
            only = [r.action for r in task.authorization]
            return AuthDecision(
                decision="none", action=only[0] if len(only) == 1 else None, confidence=1.0,
                evidence=transcript, classifier=self.name,
                rationale="the active cue (if any) asks for no approval or revocation: speech "
                          "alone never authorizes",
            )
        want: Literal["grant", "revoke"] = "grant" if auth.grant else "revoke"
        action = auth.grant or auth.revoke
        matches = stance_matches(transcript, task, action)
        if not matches:
            return AuthDecision(
                decision="none", action=action, confidence=0.0, evidence=transcript,
                classifier=self.name, rationale=f"no affirmative or stop phrase ({want} cue)",
            )
        last = matches[-1]
        agreeing = sum(m.stance == last.stance for m in matches) / len(matches)
        if want == "grant" and last.stance == "affirm":
            decision: Decision = "grant"
            why = f"approve cue; last stance affirmative: '{last.phrase}'"
        elif want == "revoke" and last.stance == "stop":
            decision = "revoke"
            why = f"revoke cue; last stance is a stop: '{last.phrase}'"
        else:
            decision = "none"
            why = (f"{want} cue but the last stance is "
                   f"{'affirmative' if last.stance == 'affirm' else 'a stop'}: '{last.phrase}'")
        return AuthDecision(
            decision=decision, action=action, confidence=round(agreeing, 3),
            evidence=transcript, classifier=self.name, rationale=why,
        )
