"""Semantic-act observer (paper §3.3, appendix B.3).

Maps one agent turn's transcript to the compact semantic-act ontology the user simulator
reacts to: ``greet``, ``ask``, ``confirm``, ``read_back``, ``summarize``,
``request_approval``, ``inform`` and ``close``.

It is rule-based and deterministic: the lexicon is compiled once per task from the artifact
fields' names, labels and synonyms and from the authorization rules' verbs, and every agent
turn is then split into sentences and each sentence classified with precompiled patterns.
No I/O, no models.

Precedence inside one sentence (first that applies wins, except that ``summarize`` may
precede ``request_approval``/``close``/``confirm`` from the same sentence, and a leading
greeting ("Hi Jamie, what's your ...?") yields ``greet`` before the rest of the sentence):

    request_approval > close > confirm > summarize > greet > ask > read_back > inform
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from runtime.spec import AuthorizationRule, TaskSpec

ActName = Literal[
    "greet", "ask", "confirm", "read_back", "summarize", "request_approval", "inform", "close",
]


class Act(BaseModel):
    """One semantic act observed in an agent turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    act: ActName
    field: str | None = None
    """For ask / read_back / confirm: the artifact field name (``FieldSpec.name``)."""
    artifact: str | None = None
    """The artifact of ``field``, or of the approval-gated ``action``."""
    action: str | None = None
    """For request_approval: ``AuthorizationRule.action`` (e.g. ``commit:enr_1``)."""
    text: str
    """The sentence the act came from."""


# --------------------------------------------------------------------------- sentences

_TITLES = frozenset({
    "dr", "mr", "mrs", "ms", "mx", "prof", "st", "sr", "jr", "rev", "hon", "gen", "capt",
    "lt", "sgt", "col", "fr", "mt", "ft",
})
"""Never end a sentence: "Dr. Alvarez"."""

_ABBREVIATIONS = frozenset({
    "etc", "inc", "ltd", "co", "corp", "dept", "apt", "ave", "blvd", "rd", "no", "nos", "vs",
    "approx", "est", "ext", "fig", "min", "max", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "tues", "wed", "thu", "thur",
    "thurs", "fri", "sat", "sun",
})
"""End a sentence only when the next word is capitalized ("9 a.m. Is that right?")."""

_TERMINATOR = re.compile(r"[.?!]+[\"'”’)\]]*(?=\s|$)|\n+")
_PREV_TOKEN = re.compile(r"([A-Za-z][A-Za-z.]*)$")
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")


def _is_break(text: str, start: int, end: int) -> bool:
    mark = text[start:end]
    if mark.startswith("\n") or "?" in mark or "!" in mark:
        return True
    rest = text[end:].lstrip()
    if not rest:
        return True
    next_upper = rest[0].isupper() or rest[0] in "\"“'‘("
    if mark.rstrip("\"'”’)]").count(".") > 1:  # an ellipsis ends a sentence only before a capital
        return next_upper
    m = _PREV_TOKEN.search(text[:start])
    if m is None:
        return True
    token = m.group(1)
    low = token.lower().rstrip(".")
    if low in _TITLES:
        return False
    if len(token) == 1 and token.isupper() and token != "I":  # an initial: "Jamie R. Reyes"
        return False
    if low in _ABBREVIATIONS or _DOTTED.fullmatch(token.rstrip(".")):
        return next_upper
    return True


def split_sentences(text: str) -> list[str]:
    """Split a transcript on ``.``, ``?``, ``!`` and newlines, keeping abbreviations
    ("Dr. Alvarez", "9 a.m. tomorrow", "d.o.b. is") inside their sentence."""
    text = text.replace("…", "...")
    out: list[str] = []
    begin = 0
    for m in _TERMINATOR.finditer(text):
        if _is_break(text, m.start(), m.end()):
            piece = text[begin:m.end()].strip()
            if piece:
                out.append(piece)
            begin = m.end()
    tail = text[begin:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if re.search(r"[A-Za-z0-9]", s)]


# --------------------------------------------------------------------------- normalization

_CONTRACTIONS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p), r) for p, r in [
        (r"\bwon't\b", "will not"),
        (r"\bcan't\b", "can not"),
        (r"\bcannot\b", "can not"),
        (r"\bshan't\b", "shall not"),
        (r"n't\b", " not"),
        (r"\bi'm\b", "i am"),
        (r"\blet's\b", "let us"),
        (r"\b(what|that|it|here|there|who|where|how|he|she|this|which|when|why)'s\b", r"\1 is"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"'d\b", " would"),
        (r"\bgonna\b", "going to"),
        (r"\bwanna\b", "want to"),
        (r"\bgotta\b", "got to"),
        (r"'s\b", ""),        # possessive: "beneficiary's name" -> "beneficiary name"
        (r"s'(?=\s|$)", "s"),  # plural possessive: "dependents' names"
        (r"'", ""),
        (r"\bokay\b", "ok"),
        (r"\balright\b", "all right"),
        (r"\bgood-?bye\b", "goodbye"),
    ]
]


def _words(text: str) -> list[str]:
    """Lower-cased word tokens with contractions expanded, possessives dropped and dotted
    acronyms joined ("D.O.B." -> "dob")."""
    t = text.lower().replace("’", "'").replace("‘", "'").replace("`", "'")
    t = re.sub(r"\b(?:[a-z]\.){2,}|\b(?:[a-z]\.)+[a-z]\b", lambda m: m.group(0).replace(".", ""), t)
    for pattern, repl in _CONTRACTIONS:
        t = pattern.sub(repl, t)
    return re.sub(r"[^a-z0-9]+", " ", t).split()


def _stem(word: str) -> str:
    """A tiny plural folder, applied identically to lexicon phrases and transcripts."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if len(word) >= 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# --------------------------------------------------------------------------- patterns

def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


_FILLER_START = frozenset({
    "and", "so", "now", "next", "ok", "great", "also", "then", "lastly", "finally", "first",
    "all", "right", "perfect", "thanks", "thank", "you", "got", "it", "sure", "well", "oh",
    "um", "uh", "umm", "excellent", "wonderful", "lovely", "cool", "good", "fine", "yes",
    "yep", "understood", "noted", "nice", "awesome", "alright", "secondly", "one", "more",
    "last", "thing", "question", "just", "quickly", "but", "very", "much",
})
"""Acknowledgements and connectives skipped before looking for a question form."""

_WH = frozenset({"what", "which", "who", "whose", "whom", "when", "where", "why", "how"})
_AUX = frozenset({
    "is", "are", "was", "were", "do", "does", "did", "can", "could", "would", "will", "shall",
    "should", "may", "might", "have", "has", "had", "am",
})

_REQUEST = _rx(
    r"^(could|can|would|will) you (please )?(tell|give|spell|provide|share|say|state|read|confirm"
    r"|let me know|send|repeat|verify)\b",
    r"^(may|can|could) i (please )?(have|get|ask|grab|take|know|confirm|check|see)\b",
    r"^please (give|tell|provide|spell|state|say|share|enter|read|send|let me know|confirm"
    r"|repeat|verify)\b",
    r"^(tell|give) me\b",
    r"^(let me|let us) (get|grab|have|take|start with|move on to|turn to|go to|do)\b",
    r"\b(i|we) (will |would |also |just |still |now |then |first |next )*(need|require)\b",
    r"\bi would (like|love) (to (get|have|know|ask|take) )?your\b",
    r"^(next|now|then|and|lastly|finally)( up)?,? (is |for |on to |onto )?(your|the)\b",
    r"^(moving|turning) on to\b",
    r"^what about\b",
    r"^how about\b",
)
"""Request forms that make a statement ask for a field ("I'll need your employee ID.")."""

_GREET = _rx(
    r"^(hello|hi|hey|hiya|howdy|greetings|good (morning|afternoon|evening|day)|welcome)\b",
    r"^(thanks|thank you) (so much |very much )?for (calling|reaching out|contacting|"
    r"holding|joining|getting in touch)\b",
    r"\bhow (can|may|could|might|shall) (i|we) (help|assist|be of (help|service|assistance))\b",
    r"\bwhat can (i|we) (do|help)( you)? (for|with)\b",
    r"\bhow are you( doing)?( today| this (morning|afternoon|evening))?$",
)
_GREET_STATEMENT = _rx(
    r"^(you have reached|this is|my name is|i am \w+ (from|with|at|on))\b",
    r"\b(welcome to|thanks for calling|thank you for calling)\b",
    r"\b(i will|i am going to|i can) be (helping|assisting) you\b",
)
_GREET_PREFIX = re.compile(
    r"^(hello|hi|hey|hiya|howdy|greetings|good (morning|afternoon|evening))( and welcome)?"
    r"( (there|again|everyone|all))?\b"
)

_CLOSE_ANY = _rx(r"\b(goodbye|bye|bye bye|farewell)\b")
_CLOSE = _rx(
    r"\btake care\b",
    r"\bhave an? (great|good|nice|wonderful|lovely|fantastic|pleasant|blessed|terrific|"
    r"excellent|awesome|super) (day|one|afternoon|evening|weekend|night|rest|week|time)\b",
    r"\byou are (all )?(set|good to go|done|sorted)\b",
    r"\benjoy (the rest of )?your (day|afternoon|evening|weekend)\b",
    r"\btalk (to you )?(soon|later)\b",
    r"\b(thanks|thank you) (so much |very much )?for your (time|patience)\b",
    r"\bthat is (all|everything) (for (today|now)|we need|i need)\b",
    r"\b(we are|that is) all (done|set)\b",
    r"\buntil next time\b",
    r"\bthis concludes\b",
)

_SUMMARIZE = _rx(
    r"\b(to|let me|let us|i will|quickly|just to|so to|i would like to|i want to) "
    r"(summarize|summarise|recap|sum up|sum it up|sum things up|go over everything|"
    r"run through everything|review everything|read (it|that|this|everything) back|"
    r"read back everything|go over what|run through what)\b",
    r"\bhere is (what i (have|got|recorded|have got)|what we have|a (quick |brief |short )?"
    r"(summary|recap|rundown)|the (summary|recap|rundown)|everything i have)\b",
    r"\b(in summary|to recap|quick recap|quick summary|in short)\b",
    r"\b(so far|altogether|all together|in total) i have\b",
    r"^(summary|recap)\b",
)

_CONFIRM = _rx(
    r"\b(is|was|are) (that|this|it|everything|all of that|all that|those|these|all) "
    r"(all |still |both )?(right|correct|accurate|ok|true)\b",
    r"\bdid i (get|hear|catch|capture|understand|record|write|note|take|spell|have)\b"
    r".*\b(right|correct|correctly|properly|accurately)\b",
    r"\b(have|do) i (got|have|get) (that|it|this|everything|all of that|your \w+) "
    r"(right|correct|correctly)\b",
    r"\b(just |i just want |i want |i would like |i need )?to (confirm|double check|verify|"
    r"make sure)\b",
    r"\blet me (just )?(confirm|double check|verify|make sure)\b",
    r"\b(can|could|would|will) you (please )?(confirm|verify|double check)\b",
    r"\bplease (confirm|verify)\b",
    r"\b(can|could|may) i (quickly |just )?(confirm|verify|double check)\b",
    r"\b(does|do) (that|this|it|everything|all of that|all that) (all )?(sound|look|seem) "
    r"(right|correct|good|accurate|ok)\b",
    r"\b(am i|is that) (right|correct)\b",
    r"^(correct|right|is that correct|is that right)$",
    r"\b(that is|those are) (right|correct)\b.*$",
)
_CONFIRM_TAG = re.compile(r",\s*(right|correct|yes|yeah|ok|okay|is that right|is that correct)"
                          r"\s*\?+\s*$", re.IGNORECASE)

_APPROVAL_EXPLICIT_Q = _rx(
    r"\b(do|can|could|will|would) you (please )?(approve|authorize|authorise|consent|sign off)\b",
    r"\byour (approval|permission|authorization|authorisation|consent|go ahead|ok|blessing|"
    r"sign off)\b",
    r"\b(you|you are) (ok|fine|happy|good|comfortable) (with|for) (me|us) (to )?"
    r"(go ahead|proceed|move forward)\b",
)
_APPROVAL_EXPLICIT_S = _rx(
    r"\b(need|require|want|get|have|like) your (approval|permission|authorization|"
    r"authorisation|consent|go ahead|ok|sign off)\b",
    r"\bwith your (approval|permission|authorization|authorisation|consent|ok)\b",
    r"\bplease (approve|authorize|authorise)\b",
    r"\blet me know if (i can|i may|i should|it is ok to|you approve)\b",
)

_APPROVAL_FRAMES: tuple[tuple[str, ...], ...] = (
    ("shall", "i"), ("should", "i"), ("can", "i"), ("may", "i"), ("could", "i"),
    ("shall", "we"), ("should", "we"), ("can", "we"), ("may", "we"), ("could", "we"),
    ("me", "to"), ("us", "to"), ("with", "me"), ("ok", "to"), ("all", "right", "to"),
    ("fine", "to"), ("ready", "to"), ("ok", "if", "i"), ("all", "right", "if", "i"),
    ("mind", "if", "i"), ("fine", "if", "i"), ("you", "like", "to"), ("you", "want", "to"),
    ("permission", "to"), ("approval", "to"), ("go", "ahead", "and"), ("want", "me", "to"),
)
"""'Shall I' / 'would you like me to' / 'is it OK to' ... followed by a gated verb."""

_FRAME_FILLER = frozenset({
    "now", "please", "just", "then", "also", "actually", "officially", "formally", "quickly",
    "right", "away", "get", "have", "it", "that", "this", "these", "them", "everything",
    "all", "to", "for", "you", "go", "ahead", "and", "of", "today", "finally", "really",
})
_PROCEED = frozenset({"proceed", "continue"})
_USER_ACTS_FRAMES = frozenset({("you", "like", "to"), ("you", "want", "to")})
"""Frames where the caller would act: the object must be the gated artifact or a pronoun."""
_OBJECT_FILLER = frozenset({
    "it", "this", "that", "these", "those", "them", "now", "then", "everything", "today",
    "right", "away", "please", "for", "me", "you", "all", "as", "is", "go", "ahead", "officially",
})
_PERMISSION_TAG = re.compile(
    r"\b(is that|would that be|if that is|that|is it|are you) (ok|all right|fine|good)"
    r"( with you| by you| for you)?$"
)
_PERMISSION_TAG_RAW = re.compile(r",\s*(ok|okay|alright|all right)\s*\?+\s*$", re.IGNORECASE)
_BARE_PERMISSION = frozenset({
    "should i", "shall i", "may i", "can i", "should we", "shall we", "is that ok", "ok",
    "is that all right", "all right", "sound good", "does that sound good", "does that work",
    "is that fine", "yes", "ready", "are you ready", "would that be ok", "go ahead",
})

_DEFAULT_GATED_VERBS = ("submit", "commit", "finalize")

_NOT_A_VALUE = frozenset({
    "required", "needed", "missing", "optional", "important", "necessary", "blank", "empty",
    "unknown", "incomplete", "invalid", "pending", "usually", "typically", "normally", "used",
    "also", "on", "in", "printed", "located", "found", "what", "where", "how",
    "mandatory", "not", "still", "next", "due", "going", "something", "the", "a", "an",
    "asked", "listed", "shown",
})
_DETERMINERS = frozenset({"your", "the", "his", "her", "their", "my", "our", "down", "so"})


def _is_value(word: str) -> bool:
    """Could start a restated value ("July", "Jamie", "three"); not "required"/"covered"."""
    return word not in _NOT_A_VALUE and not (word.endswith("ed") and len(word) > 4)


_COPULA = frozenset({"is", "are", "was", "as", "to", "will"})
_READBACK_LEAD = _rx(
    r"\b(i|we) (have |will |just )?(have|got|recorded|noted|entered|updated|changed|"
    r"corrected|put|saved|set|logged|captured|listed|marked|wrote|written|took|taken|"
    r"registered|filled)\b",
)
"""Before a field, with a value after it: "I have your date of birth as ..."."""
_YOU_SAID = _rx(
    r"\byou (said|mentioned|told me|gave|provided|stated|indicated)\b",
    r"\byou (are|were) (down|listed|registered) (as|for)\b",
    r"\bi (have )?(got )?you (down|listed|registered)\b",
)
_SO_LEAD = re.compile(
    r"^(and |ok |all right |great |perfect |got it |thanks |thank you )?so,? "
    r"(your|the|you|that is|that|this is|we have)\b"
)
_IS_YOUR = re.compile(r"^(is|was|are|were) (your|the) ")

_ADJACENT_GAPS = (
    ["of"], ["of", "your"], ["of", "the"], ["of", "my"], ["as"], ["as", "your"], ["as", "the"],
    ["as", "my"],
)
"""Between two field mentions that name one thing ("name of your beneficiary")."""

_STOPWORDS = frozenset({
    "the", "a", "an", "of", "for", "and", "to", "in", "on", "your", "my", "our", "with", "or",
})


# --------------------------------------------------------------------------- lexicon

FieldKey = tuple[str, str]
"""(artifact id, field name)."""


@dataclass(frozen=True)
class _Phrase:
    tokens: tuple[str, ...]
    fields: tuple[FieldKey, ...]
    primary: bool
    """From the field's name or label rather than a synonym."""


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    phrase: _Phrase

    @property
    def score(self) -> tuple[bool, int]:
        return (self.phrase.primary, len(self.phrase.tokens))


def _phrase_variants(text: str) -> Iterable[tuple[str, ...]]:
    toks = tuple(_stem(w) for w in _words(text))
    if not toks or all(t in _STOPWORDS for t in toks):
        return
    yield toks
    if len(toks) == 2:  # "birth date" ~ "birthdate", "e mail" ~ "email"
        yield (_stem(toks[0] + toks[1]),)


def _verb_forms(verb: str) -> set[str]:
    v = verb.lower().strip()
    forms = {v, v + "s", v + "es", v + "ed", v + "d", v + "ing", v + "ment", v + "ments"}
    if v.endswith("e"):
        forms |= {v[:-1] + "ing", v[:-1] + "ion", v[:-1] + "ation"}
    if (
        len(v) >= 3 and v[-1] not in "aeiouwxy" and v[-2] in "aeiou" and v[-3] not in "aeiou"
    ):
        forms |= {v + v[-1] + "ed", v + v[-1] + "ing"}  # submit -> submitted
    if v.endswith("mit"):
        forms.add(v[:-1] + "ssion")  # submit -> submission
    if v.endswith("y") and len(v) > 2 and v[-2] not in "aeiou":
        forms |= {v[:-1] + "ied", v[:-1] + "ies"}
    return forms


def _verb_sequences(verb: str) -> set[tuple[str, ...]]:
    """Every inflected token sequence of a (possibly multi-word) verb ("sign off")."""
    parts = _words(verb)
    if not parts:
        return set()
    return {(form, *parts[1:]) for form in _verb_forms(parts[0])}


@dataclass(frozen=True)
class _Rule:
    rule: AuthorizationRule
    verbs: frozenset[tuple[str, ...]]
    artifact_words: frozenset[str]


def _contains_seq(words: list[str], seq: tuple[str, ...]) -> bool:
    n = len(seq)
    return any(tuple(words[i:i + n]) == seq for i in range(len(words) - n + 1))


def _starts_with_seq(words: list[str], i: int, seqs: Iterable[tuple[str, ...]]) -> bool:
    return any(tuple(words[i:i + len(s)]) == s for s in seqs)


# --------------------------------------------------------------------------- clause

@dataclass
class _Clause:
    text: str
    words: list[str]
    stems: list[str]
    joined: str
    question: bool
    previous: list[str]
    """Words of the turn's previous sentence ("I can submit it now. Shall I?")."""

    @classmethod
    def of(cls, text: str, words: list[str], question: bool, previous: list[str]) -> _Clause:
        return cls(text, words, [_stem(w) for w in words], " ".join(words), question, previous)

    def lead(self) -> int:
        """Index of the first word after leading acknowledgements ("Got it, so ...")."""
        i = 0
        while i < len(self.words) and self.words[i] in _FILLER_START:
            i += 1
        return i if i < len(self.words) else 0

    @property
    def led(self) -> str:
        """The clause from :meth:`lead` on."""
        return " ".join(self.words[self.lead():])


# --------------------------------------------------------------------------- observer

class SemanticActObserver:
    """Rule-based mapping of an agent turn to semantic acts, compiled for one task."""

    def __init__(self, task: TaskSpec) -> None:
        phrases: dict[tuple[str, ...], tuple[list[FieldKey], bool]] = {}
        for artifact in task.artifacts:
            for f in artifact.fields:
                key = (artifact.id, f.name)
                sources = [(f.name.replace("_", " "), True), (f.label, True)]
                sources += [(s, False) for s in f.synonyms]
                for text, primary in sources:
                    for toks in _phrase_variants(text):
                        keys, was_primary = phrases.get(toks, ([], False))
                        if key not in keys:
                            keys.append(key)
                        phrases[toks] = (keys, was_primary or primary)
        self._phrases: dict[tuple[str, ...], _Phrase] = {
            toks: _Phrase(toks, tuple(keys), primary) for toks, (keys, primary) in phrases.items()
        }
        self._lengths = sorted({len(t) for t in self._phrases}, reverse=True)

        rules: list[_Rule] = []
        gated: set[tuple[str, ...]] = set()
        for default in _DEFAULT_GATED_VERBS:
            gated |= _verb_sequences(default)
        for rule in task.authorization:
            verbs: set[tuple[str, ...]] = set()
            for v in [*rule.verbs, rule.action.split(":", 1)[0] if ":" in rule.action else ""]:
                if v.strip():
                    verbs |= _verb_sequences(v)
            gated |= verbs
            art = task.artifact(rule.artifact)
            art_text = " ".join(
                [rule.artifact.replace("_", " ")] + ([art.title, art.kind] if art else [])
            )
            art_words = {
                _stem(w) for w in _words(art_text)
                if w not in _STOPWORDS and not w.isdigit() and len(w) > 1
            }
            rules.append(_Rule(rule, frozenset(verbs), frozenset(art_words)))
        self._rules = rules
        self._artifact_words = frozenset().union(*(r.artifact_words for r in rules))
        by_first: dict[str, list[tuple[str, ...]]] = {}
        for seq in gated:
            by_first.setdefault(seq[0], []).append(seq)
        self._gated: dict[str, tuple[tuple[str, ...], ...]] = {
            k: tuple(v) for k, v in by_first.items()
        }

    # ------------------------------------------------------------------ public

    def observe(self, transcript: str) -> list[Act]:
        """The semantic acts of one agent turn, in sentence order."""
        acts: list[Act] = []
        previous: list[str] = []
        for sentence in split_sentences(transcript):
            acts.extend(self._sentence(sentence, previous))
            previous = _words(sentence)
        return acts

    # ------------------------------------------------------------------ sentence level

    def _sentence(self, sentence: str, previous: list[str]) -> list[Act]:
        words = _words(sentence)
        if not words:
            return []
        question = sentence.rstrip(" \"'”’)]").endswith("?")
        clause = _Clause.of(sentence, words, question, previous)

        acts: list[Act] = []
        m = _GREET_PREFIX.match(clause.joined)
        if m is not None:
            n_prefix = len(m.group(0).split())
            rest_words = words[n_prefix:]
            acts.append(Act(act="greet", text=sentence))
            if rest_words:
                rest = _Clause.of(sentence, rest_words, question, previous)
                rest_acts = self._classify(rest)
                if not (len(rest_acts) == 1 and rest_acts[0].act == "inform"):
                    acts.extend(rest_acts)
        else:
            acts = self._classify(clause)
        unique: list[Act] = []
        for act in acts:
            if act not in unique:
                unique.append(act)
        return unique

    def _classify(self, c: _Clause) -> list[Act]:
        question = c.question or self._question_form(c)
        summary = [Act(act="summarize", text=c.text)] if _SUMMARIZE.search(c.joined) else []

        if self._is_approval_request(c, question):
            rule = self._resolve_rule(c) or (
                self._resolve_rule(_Clause.of(c.text, c.previous, False, []))
                if c.previous and c.joined in _BARE_PERMISSION else None
            )
            return [*summary, Act(
                act="request_approval",
                action=rule.action if rule else None,
                artifact=rule.artifact if rule else None,
                text=c.text,
            )]

        if _CLOSE_ANY.search(c.joined) or (not question and _CLOSE.search(c.joined)):
            return [*summary, Act(act="close", text=c.text)]

        fields = self._fields(c)
        if self._is_confirm(c, fields):
            # a summary's closing "is that all correct?" confirms the whole summary
            return [*summary, *self._field_acts("confirm", [] if summary else fields, c.text)]

        if summary:
            return summary

        if _GREET.search(c.led) or _GREET.search(c.joined) or (
            not question and _GREET_STATEMENT.search(c.joined)
        ):
            return [Act(act="greet", text=c.text)]

        if question or _REQUEST.search(c.led) or _REQUEST.search(c.joined):
            if fields:
                return self._field_acts("ask", fields, c.text)
            if question:
                return [Act(act="ask", text=c.text)]

        readback = self._readback_fields(c, fields)
        if readback:
            return self._field_acts("read_back", readback, c.text)
        return [Act(act="inform", text=c.text)]

    # ------------------------------------------------------------------ predicates

    @staticmethod
    def _question_form(c: _Clause) -> bool:
        """Question word order without a question mark ("what is your date of birth")."""
        i = c.lead()
        if i >= len(c.words):
            return False
        first = c.words[i]
        nxt = c.words[i + 1] if i + 1 < len(c.words) else ""
        if first in _WH:
            return nxt in _AUX or nxt in {"many", "much", "long", "old", "often", "about"}
        if first in {"shall", "should", "can", "could", "may", "would", "will"}:
            return nxt in {"i", "we", "you"}
        if first in {"do", "did", "does", "are", "have", "has", "is", "were", "was"}:
            return nxt in {"you", "i", "we", "it", "that", "this", "there", "your", "they"}
        return False

    def _is_approval_request(self, c: _Clause, question: bool) -> bool:
        if question and _APPROVAL_EXPLICIT_Q.search(c.joined):
            return True
        if _APPROVAL_EXPLICIT_S.search(c.joined):
            return True
        if not question:
            return False
        w = c.words
        for i in range(len(w)):
            for frame in _APPROVAL_FRAMES:
                if tuple(w[i:i + len(frame)]) != frame:
                    continue
                end = self._gated_after(w, i + len(frame))
                if end < 0:
                    continue
                if frame not in _USER_ACTS_FRAMES:
                    return True
                # "Would you like to submit (it / the enrollment)?", not "... to file a claim?"
                rest = w[end:]
                if all(x in _OBJECT_FILLER for x in rest) or self._artifact_words & {
                    _stem(x) for x in rest
                }:
                    return True
        # "Ready to submit?" / "OK to go ahead?" / "Go ahead and file it?"
        if c.lead() == 0 and len(w) <= 6 and self._gated_after(w, 0) >= 0:
            return True
        # "I'm going to submit it now, is that OK?"
        if (
            _PERMISSION_TAG.search(c.joined) or _PERMISSION_TAG_RAW.search(c.text)
        ) and self._has_gated(w):
            return True
        # "I can submit it now. Should I?"
        return c.joined in _BARE_PERMISSION and self._has_gated(c.previous)

    def _has_gated(self, w: list[str]) -> bool:
        return any(_starts_with_seq(w, i, self._gated.get(x, ())) for i, x in enumerate(w))

    def _gated_after(self, w: list[str], j: int) -> int:
        """Where a gated verb (or a bare "go ahead"/"proceed") right after an approval frame
        ends, or -1."""
        n = len(w)
        go_ahead = False
        while j < n:
            seqs = self._gated.get(w[j], ())
            if _starts_with_seq(w, j, seqs):
                return j + max(len(s) for s in seqs if tuple(w[j:j + len(s)]) == s)
            if w[j] == "go" and j + 1 < n and w[j + 1] == "ahead":
                go_ahead = True
                j += 2
                continue
            if w[j] in _PROCEED or (w[j] == "move" and j + 1 < n and w[j + 1] == "forward"):
                go_ahead = True
                j += 2 if w[j] == "move" else 1
                continue
            if w[j] == "and" and go_ahead:
                go_ahead = False  # "go ahead and <verb>": the verb decides
                j += 1
                continue
            if w[j] in _FRAME_FILLER:
                j += 1
                continue
            break
        return j if go_ahead else -1

    def _resolve_rule(self, c: _Clause) -> AuthorizationRule | None:
        if not self._rules:
            return None
        with_verb = [r for r in self._rules if any(_contains_seq(c.words, v) for v in r.verbs)]
        candidates = with_verb or self._rules
        if len(candidates) == 1:
            return candidates[0].rule
        stems = set(c.stems)
        scored = [(len(r.artifact_words & stems), r) for r in candidates]
        best = max(s for s, _ in scored)
        top = [r for s, r in scored if s == best]
        if best == 0 and not with_verb:
            return None
        if len({r.rule.action for r in top}) == 1:
            return top[0].rule
        return None

    def _is_confirm(self, c: _Clause, fields: list[FieldKey]) -> bool:
        if _CONFIRM.search(c.joined) or _CONFIRM_TAG.search(c.text):
            return True
        if not c.question or not fields or any(w in _WH for w in c.words):
            return False
        # A restatement asked as a question: "So your beneficiary is Jamie Reyes?",
        # "You said three dependents?", "Is your date of birth July ninth?"
        if _YOU_SAID.search(c.joined) or _SO_LEAD.match(c.joined):
            return True
        matches = self._matches(c)
        if any(self._valued(c, m) for m in matches):
            return True
        if _IS_YOUR.match(c.led) and matches:
            last = matches[-1].end
            return last < len(c.words) and _is_value(c.words[last])
        return False

    # ------------------------------------------------------------------ fields

    def _matches(self, c: _Clause) -> list[_Match]:
        stems = c.stems
        found: list[_Match] = []
        for i in range(len(stems)):
            for length in self._lengths:
                phrase = self._phrases.get(tuple(stems[i:i + length]))
                if phrase is not None:
                    found.append(_Match(i, i + length, phrase))
        # "who would you like to name as ...": a one-word synonym used as a verb
        found = [
            m for m in found
            if m.phrase.primary or len(m.phrase.tokens) > 1 or m.start == 0
            or stems[m.start - 1] not in {"to", "will", "can", "would", "could", "should"}
        ]
        found.sort(key=lambda m: (-(m.end - m.start), m.start))
        chosen: list[_Match] = []
        for m in found:
            if all(m.end <= o.start or m.start >= o.end for o in chosen):
                chosen.append(m)
        chosen.sort(key=lambda m: m.start)
        # Adjacent mentions name one thing: "beneficiary name", "name of your beneficiary".
        # Keep the more specific (label over synonym, then longer); keep both on a tie.
        changed = True
        while changed:
            changed = False
            for a, b in itertools.pairwise(chosen):
                gap = stems[a.end:b.start]
                if gap and gap not in _ADJACENT_GAPS:
                    continue
                if a.score == b.score:
                    continue
                chosen.remove(a if a.score < b.score else b)
                changed = True
                break
        return chosen

    def _fields(self, c: _Clause) -> list[FieldKey]:
        out: list[FieldKey] = []
        for m in self._matches(c):
            for key in m.phrase.fields:
                if key not in out:
                    out.append(key)
        return out

    @staticmethod
    def _valued(c: _Clause, m: _Match) -> bool:
        """A value follows a determined field mention: "your date of birth is July ninth",
        "the beneficiary as Jamie Reyes", "your dependents to three" (not "... is required",
        not "dependents are covered until 26")."""
        words = c.words
        if not (m.start in (0, c.lead()) or words[m.start - 1] in _DETERMINERS):
            return False
        j = m.end
        while j < len(words) and words[j] in {"you", "gave", "provided", "down", "now", "still",
                                              "currently", "that"}:
            j += 1
        return j + 1 < len(words) and words[j] in _COPULA and _is_value(words[j + 1])

    def _readback_fields(self, c: _Clause, fields: list[FieldKey]) -> list[FieldKey]:
        """Fields a statement restates a value for: "I have your date of birth as July ninth",
        "So your beneficiary is Jamie Reyes.", "You said three dependents."."""
        if not fields:
            return []
        words = c.words
        restating = bool(_SO_LEAD.match(c.joined))
        out: list[FieldKey] = []
        for m in self._matches(c):
            before = " ".join(words[:m.start])
            lead = _READBACK_LEAD.search(before)
            between = set(before[lead.end():].split()) - _DETERMINERS if lead else set()
            after = words[m.end] if m.end < len(words) else None
            restated = (
                restating
                or self._valued(c, m)
                or bool(_YOU_SAID.search(before))
                # "I have your DOB as July ninth" / "I've noted July ninth as your birthday"
                or (lead is not None and (bool(between) or (after is not None
                                                           and _is_value(after))))
            )
            if restated:
                out.extend(k for k in m.phrase.fields if k not in out)
        return out

    @staticmethod
    def _field_acts(kind: ActName, fields: list[FieldKey], text: str) -> list[Act]:
        if not fields:
            return [Act(act=kind, text=text)]
        return [Act(act=kind, artifact=a, field=f, text=text) for a, f in fields]
