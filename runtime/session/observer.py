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

import functools
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from rapidfuzz.distance import Levenshtein

from runtime.core.memo import remember
from runtime.core.spec import AuthorizationRule, FieldSpec, TaskSpec, TriggerProposal
from runtime.core.text import stem
from runtime.core.values import (
    EMAIL_SAID,
    canonical_identifier,
    canonical_phone,
    canonical_text,
    dates_in_text,
    numbers_in_text,
    value_in_text,
    without_dates,
    without_times,
)
from runtime.core.values import spelled_out as _words_to_digits_text
from runtime.session.act_model import APPROVAL_MARGIN
from runtime.session.act_model import load_model as load_act_model

ActName = Literal[
    "greet", "ask", "confirm", "read_back", "summarize", "request_approval", "offer", "inform",
    "close",
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
    out = [q for s in out for p in _run_on_tag(s) for q in _run_on_questions(p)]
    return [s for s in out if re.search(r"[A-Za-z0-9]", s)]


_RUN_ON_TAG = re.compile(
    r"\s+((?:is|would) (?:that|this|it) (?:be )?(?:ok|okay|alright|all right|fine|good)"
    r"(?: with you| by you| for you)?|(?:are )?you (?:ok|okay|good|fine|alright|happy) with "
    r"(?:that|this|it)|(?:does )?(?:that|this) (?:sound|work) (?:ok|okay|good|alright|all right)"
    r"(?: with you| for you)?|(?:ok|okay|alright|all right) with you|right|yeah|yes|correct)"
    r"\s*[?.!]?$",
    re.IGNORECASE)


_RUN_ON_QUESTION = re.compile(
    r"(?:^|\b(?:um|uh|so|and|ok|okay|right|alright|thanks|first|now|then)\s+)"
    r"(?=(?:what|whats|what's|who|whos|who's|when|where|which|how|can i|could i|may i|can you|"
    r"could you|would you|will you|do you|did you|did the|did it|did he|did she|did they|is "
    r"there|are there|was there|were there|was anyone|was anybody|were you|are you|is it|is "
    r"that|is your|are they|have you|has the)\b)", re.IGNORECASE)
"""Where a question starts in an unpunctuated transcript: at its start or after a filler."""
_RUN_ON_PROPOSAL = re.compile(
    r"\b(?=(?:would you like me to|do you want me to|(?<!you )want me to|shall i|shall we|"
    r"should i|may i|can i go ahead|would it be (?:ok|okay|alright|all right) if)\b)",
    re.IGNORECASE)
"""Question openers that start a question wherever they stand ("mr jensen would you like me
to book you in")."""
_RUN_ON_CAN_I = re.compile(r"\b(?:can|could|may) (?:i|we)\b", re.IGNORECASE)
_NOT_BEFORE_CAN_I = frozenset({
    "what", "whats", "how", "where", "when", "who", "which", "why", "if", "whether", "that",
    "than", "you", "i", "we", "they", "he", "she", "it", "anything", "something", "all",
    "sorry", "mean",  # a self-repair: "can i esca- sorry can i submit the timeline"
})
"""Words after which "can I" does not start a question ("what can I do", "all we can")."""


def _can_i_starts(sentence: str) -> set[int]:
    """Where an inverted "can I" starts a question after a statement in an unpunctuated
    transcript ("so thats the whole form can i send it in now")."""
    out = set()
    for m in _RUN_ON_CAN_I.finditer(sentence):
        before = sentence[:m.start()].split()
        if len(before) >= 3 and before[-1].lower() not in _NOT_BEFORE_CAN_I:
            out.add(m.start())
    return out


def _run_on_questions(sentence: str) -> list[str]:
    """An unpunctuated transcript ("hi grace thanks for holding um can i grab your account ID
    first", "whats the tag number and uh did the try-start show zero energy") split where
    its questions start, each question with its question mark."""
    if re.search(r"[,;:.?!]", sentence):
        return [sentence]
    starts = sorted({m.end() for m in _RUN_ON_QUESTION.finditer(sentence)}
                    | {m.start() for m in _RUN_ON_PROPOSAL.finditer(sentence)}
                    | _can_i_starts(sentence))
    if not starts:
        return [sentence]
    cuts = sorted({0, *starts})
    pieces = [sentence[a:b].strip() for a, b in zip(cuts, [*cuts[1:], len(sentence)],
                                                           strict=True)]
    out = []
    lead = ""
    for k, piece in enumerate(pieces):
        piece = _TRAILING_FILLER.sub("", piece).strip()
        asks = cuts[k] in starts
        if piece and not asks and len(piece.split()) <= 2 and k + 1 < len(pieces):
            lead = piece + ", "  # a vocative before the question: "morgan, would you ..."
        elif piece:
            out.append(lead + piece + ("?" if asks else "."))
            lead = ""
    return out


_TRAILING_FILLER = re.compile(
    r"(?:\s*\b(?:um|uh|so|and|ok|okay|right|alright|then|now|first)\b)+\s*$", re.IGNORECASE)


def _run_on_tag(sentence: str) -> list[str]:
    """An unpunctuated transcript's closing tag ("... lodge this now is that okay", "...
    filing it you okay with that", "... for a family trip right") is the question it asks.
    Only in a sentence with no punctuation before the tag and no full stop after it: a tag
    after a comma is already the sentence's, and "... until you said yes." asks nothing."""
    m = _RUN_ON_TAG.search(sentence)
    if m is None or re.search(r"[,;:.?!]", sentence[:m.start()]) or len(
            sentence[:m.start()].split()) < 3 or sentence.rstrip().endswith((".", "!")):
        return [sentence]
    body, tag = sentence[:m.start()].strip(), m.group(1)
    if tag.lower() in ("right", "yeah", "yes", "correct"):
        if re.search(r"\b(all|turn|on the|to the)$", body, re.IGNORECASE):
            return [sentence]  # "that's all right", "turn right"
        return [f"{body}, {tag}?"]  # "... for a family trip right": a tag question
    return [body + ".", tag + "?"]


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
        # an ASR transcript's contractions without their apostrophe: "whats", "youre"
        (r"\b(what|that|there|where|who|how)s\b", r"\1 is"),
        (r"\b(you|they)re\b", r"\1 are"),
        (r"\b(do|does|did|is|are|was|could|would|should)nt\b", r"\1 not"),
        (r"\bcant\b", "can not"),
        (r"\bgonna\b", "going to"),
        (r"\bwanna\b", "want to"),
        (r"\bgotta\b", "got to"),
        (r"\blemme\b", "let me"),
        (r"\bgimme\b", "give me"),
        (r"\b(off|with|for|to) ya\b", r"\1 you"),
        (r"'s\b", ""),        # possessive: "beneficiary's name" -> "beneficiary name"
        (r"s'(?=\s|$)", "s"),  # plural possessive: "dependents' names"
        (r"'", ""),
        (r"\bokay\b", "ok"),
        (r"\b(finali|authori|organi|priori)s(e|ed|es|ing)\b", r"\1z\2"),  # "finalise"
        (r"\balright\b", "all right"),
        (r"\bgood-?bye\b", "goodbye"),
    ]
]


def _words(text: str) -> list[str]:
    """Lower-cased word tokens with contractions expanded, possessives dropped and dotted
    acronyms joined ("D.O.B." -> "dob")."""
    return list(_word_tuple(text))


_MEMO_MAX = 2048
"""Texts remembered per observer, in each of its memos (:func:`runtime.core.memo.remember`)."""


@functools.lru_cache(maxsize=4096)
def _word_tuple(text: str) -> tuple[str, ...]:
    """:func:`_words`, kept for the most recent texts (the rules tokenize a clause several
    times)."""
    t = text.lower().replace("’", "'").replace("‘", "'").replace("`", "'")
    t = re.sub(r"\b(?:[a-z]\.){2,}|\b(?:[a-z]\.)+[a-z]\b", lambda m: m.group(0).replace(".", ""), t)
    for pattern, repl in _CONTRACTIONS:
        t = pattern.sub(repl, t)
    return tuple(re.sub(r"[^a-z0-9]+", " ", t).split())


_stem = stem
"""The plural folder shared with the knowledge base, applied identically to lexicon phrases and
transcripts."""


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

_REQUEST_BY_LEAD = re.compile(
    r"^(next|now|then|and|lastly|finally)( up)?,? (is |for |on to |onto )?(your|the)\b")
""""Next, your member ID." / "And for the priority: ..." (a request unless it states values)."""
_REQUEST_NOT_BY_LEAD = _rx(
    r"^(could|can|would|will) you (please )?(tell|give|spell|provide|share|say|state|read|confirm"
    r"|let me know|send|repeat|verify)\b",
    r"^(may|can|could) i (please )?(have|get|ask|grab|take|know|confirm|check|see)\b",
    r"^please (give|tell|provide|spell|state|say|share|enter|read|send|let me know|confirm"
    r"|repeat|verify)\b",
    r"^(tell|give) me\b",
    # "Before I dig in, give me your name", "Read me the tag number"
    r"\b(tell|give|read) me (your|the|a|an|what|whether|if|how|who|when|where|which)\b",
    r"^(let me|let us) (get|grab|have|take|start with|move on to|turn to|go to|do)\b",
    r"(?<!\beverything )(?<!\ball )(?<!\bwhat )"
    r"\b(i|we) (will |would |also |just |still |now |then |first |next )*(need|require)\b",
    r"\bi would (like|love) (to (get|have|know|ask|take) )?your\b",
    r"^(moving|turning) on to\b",
    r"^what about\b",
    r"^how about\b(?! (i|we)\b)",  # "How about I send ...?" offers
    r"\b(could|can|would|will) you (please )?(tell|give|spell|provide|share|say|state|read|"
    r"let me know|repeat|walk me through|describe)\b",
    r"\bi would (love|like) to (hear|know|understand|learn)\b",
    r"^it would help (me |us )?(to know|if you (could|can) (tell|give|share))\b",
    r"\bif you (can|could|do not mind|would not mind) (share|tell|give|say|read|walk)",
    r"^(tell|walk) me (about|what|how|through|a bit|a little)\b",
)
_WONDER = _rx(
    r"\bi would (also )?(like|love) to know\b",
    # "I'd also like to note a reason for the leave"
    r"\bi would (also )?like to (note|jot down|record|write down|get) (what|a|an|the|your|how|"
    r"when|which|who)\b",
    r"\bi (was|am) (also |just )?wondering (whether|if|what|how|when|where|who|which|about)\b",
    r"\bi am (also |just )?curious (whether|if|what|how|when|where|who|which|about)\b",
    r"\bit would help (me|us|the \w+) to know\b",
    r"\b(kindly|please) tell me\b(?! how (i|we) (can|may|could|might) (help|assist))",
    r"^((so|and|uh|um) )*tell me (what|how|which|when|where|who|whether|if)\b",
)
"""A question put as a statement ("I was also wondering whether you get a code", "kindly tell
me since which day"): it asks, with or without a field."""
_REQUEST = _rx(_REQUEST_NOT_BY_LEAD.pattern, _REQUEST_BY_LEAD.pattern)
"""Request forms that make a statement ask for a field ("I'll need your employee ID.")."""

_HOW_CAN_I_HELP = _rx(
    r"\bhow (can|may|could|might|shall) (i|we) (help|assist|be of (help|service|assistance))\b",
    r"\bwhat can (i|we) (do|help)( you)? (for|with)\b",
    r"\bwhat (have you got|do you have) for (me|us)( today)?$",  # "..., what have you got for me?"
)
"""The desk's opening question: it asks what the caller needs, never leave to act."""
_GREET = _rx(
    r"^(hello|hi|hey|hiya|howdy|greetings|good (morning|afternoon|evening|day)|welcome)\b",
    r"^(thanks|thank you) (so much |very much )?for (calling|reaching out|contacting|"
    r"holding|joining|getting in touch)\b",
    _HOW_CAN_I_HELP.pattern,
    r"\bhow are you( doing)?( today| this (morning|afternoon|evening))?$",
    # small talk about the caller's time: "How's your week been?", "How's the rest of the
    # planning coming along?", "How did you like the webinar?"
    r"\bhow (is|has|was|are|have) (the rest of )?(your|the) (\w+ )?(day|"
    r"morning|afternoon|evening|week|weekend|shift|month|season|trip|holiday|planning)( been| "
    r"going| looking| treating you| coming along| so far)?( \w+)?$",
    r"^((and|so|oh|well) )*how did you (like|enjoy|find) the \w+\b",
    # the desk's opening question, "how can I help?" in other words
    r"^(so |and )?(what (have|has) (you|we) got for (me|us)|what seems to be the (problem|"
    r"trouble|issue)|what is going on|what is up|what brings you (in|here|to us))( today)?$",
    # pleasantries: "It is a pleasure to assist you today.", "I appreciate you making time."
    r"^it is (a|such a|always a) (pleasure|delight) to (assist|help|serve|speak with|talk (to|"
    r"with)|hear from|meet)\b",
    r"^(i )?(really |do )?appreciate you (making|taking|finding) (the )?time\b",
    # small talk about the caller's day: "Busy morning in the shop?", "Long drive out to the
    # site?", "Busy time of year for budgets, isn't it?", "How have you been feeling, by the
    # way?", "..., isn't that always the way?"
    r"^((oh|so|and|well) )*(busy|long|warm|hot|cold|rough|hectic|quiet|crazy|early|late|chilly|"
    r"wet|sunny) (one|day|morning|afternoon|evening|week|shift|drive|time of year|monday|"
    r"tuesday|wednesday|thursday|friday)( \w+){0,5}?( is not it| i would imagine| i imagine| "
    r"i bet)?$",
    r"^((oh|so|and|well) )*how (have|are) you (been )?(feeling|finding (\w+ ){0,3}|holding up|"
    r"keeping)( by the way| so far| today)*$",
    r"\bis not that always the way$",
)
_IF_AGREED = re.compile(
    r"(^|\b(and|so|then|but) )if (so|yes|it is|it all is|they are|that is (all )?(right|correct|ok|"
    r"good|fine|accurate)|everything is (right|correct|ok|good|in order|accurate)|that (all )?"
    r"(looks|sounds|seems) (good|right|correct|ok|fine)|(all )?(that|of that) is (right|"
    r"correct)|you are (happy|ok|good|fine|comfortable)( with (that|it|this|everything|all "
    r"(of )?that|it all|that all|how (it|that) reads|everything (i|we) (just )?(read|went over)"
    r"( back)?))?|i have your (agreement|approval|ok|permission|go ahead|consent)|"
    r"you agree|that works( for you)?|you say so|you say yes|you give me the go ahead|"
    r"(it|that) is (all right|alright|ok|okay|fine)( (with|by) you)?|"
    r"(it|that|everything|all of that) (all )?matches( your notes| what you have( got)?)?)"
    r"( then)? (i will|i can|i shall|we will|we can|i am going to|i would|i could|we could)\b"
    # "Unless you've spotted anything to change, I'll send it through to issuing now."
    r"|^unless you (have |would )?(spotted|spot|see|seen|want|like|need) (\w+ ){0,4}"
    r"(i will|i am going to|we will|i can)\b")
""""If so, I'll submit it.": an action announced on the caller's agreement asks for it."""
_IF_LEAVE = re.compile(
    r"\bif (you are|you would be|you would like|you want) (happy |ok |okay |fine |comfortable |"
    r"good |all right |alright )?(for |with )?(me|us) (to )?(?P<act>.*)$")
""""If you're happy for me to book the order, I'll go ahead": leave asked in a statement for
what the condition names."""
_WILL_PROCEED = re.compile(r"\b(i|we) (will|can) (go ahead|proceed|do (it|that|so))\b")
""""..., I'll go ahead": the condition before it is what the agent proposes to do."""
_BOUND = re.compile(r"\b(up to|at most|a maximum of|maximum of|no more than|as much as|"
                    r"limit of|limit is|cap of|capped at|max(imum)? is)\b", re.IGNORECASE)
"""An amount said as a limit ("up to eighty-three hundred a year"), not a value given."""
_BOUND_FIELD = re.compile(r"cap|limit|max|ceiling|threshold|allowance", re.IGNORECASE)
_PURPOSE_CHECK = re.compile(r"(just |i just want |i want |i would like |i need )?to (confirm|"
                            r"double check|verify|make sure)\b")
""""To verify the policy, ...": why the agent asks, not a check of what was said."""
_NEXT_FIELD = re.compile(r"^(and |and then |then |next |now |lastly |finally |also |and also |"
                         r"and finally )+(the |your )")
_AFTER_NEXT_FIELD = frozenset({"please", "whenever", "when", "if", "and", "just", "it", "too",
                               "as", "for", "number"})
_DAY_WORD = re.compile(r"^(\d{1,2}(st|nd|rd|th)?|first|second|third|\w+(th|teenth)|twenty|"
                      r"thirty)$")
"""A day of the month after "the" ("the eleventh", "the 3rd", "the twenty first")."""
_HEAD_TAG = re.compile(r",\s*(yes|right|correct|yeah|yep)\s*$", re.IGNORECASE)
"""A restatement's tag before the next question in one sentence."""
_EXTRA_SENT = re.compile(r"\b(a copy|copies|sent|emailed|texted|mailed|forwarded)\b.*\b(as well|"
                         r"too|also)$|\ba copy of\b|\b(sent|emailed|texted|mailed|forwarded) "
                         r"(to|over to) (you|your (inbox|email|phone))\b")
"""Something sent to the caller besides the work: an extra offered."""
_DECISION_AFTER = frozenset({
    "with", "to", "for", "from", "at", "on", "in", "by", "as", "so", "and", "or", "too",
    "now", "today", "then", "first", "again", "also", "please", "if", "before", "after",
    "while", "this", "that", "the", "a", "an", "your", "my", "our", "their", "his", "her",
    "it", "them", "him", "you", "me", "us", "out", "up", "over", "publicly", "yet", "right",
})
"""What may follow a field's words when they name the field itself, not a modifier: a
preposition, a conjunction, an adverb or the start of another phrase."""
_SENT_TO_CALLER = re.compile(r"\b(send|email|e mail|text|forward|mail|give|get) (you|me)\b")
"""A thing for the caller ("send you the status page template"), not what the work holds."""
_NEWS_CLAUSE = _rx(
    r"^(i have |i|we have |we )(just )?(marked|set|flagged) (it|this|the \w+|your \w+)( as)? "
    r"(ready|complete|done)\b",
    r"^(let me|i will|i am going to|i will just|i will quickly) (just |quickly )?(check|look|pull|"
    r"search|run|verify|read (it|everything|the \w+) back|go over)\b",
    r"^(the|your) \w+ (check|lookup|search) (came back|is clear|shows)\b",
)
"""A clause beside a restated value that tells the caller a status or the next step ("...,
and I've marked the form ready", "..., let me check the policy")."""
_AGENT_LOOKUP = re.compile(
    r"\b(i|we) (will |am going to |need to |have to |just |quickly |now )*(look up|look into|"
    r"check|pull up|search|find|verify|calculate|work out|look at)\b")
"""The agent announcing its own lookup ("while I look up ..."): no request unless another
request is made ("Before I look at the policy, give me your employee ID.")."""
_MOMENT_ASKED = re.compile(
    r"\b(give|bear with) me (just )?(one |a )?(second|sec|moment|minute|mo)\b")
_HOLD_THANKS = re.compile(r"^(ok |okay |right |alright )?(thanks|thank you) (so much |very much )?"
                          r"for (holding|waiting|your patience|bearing with me)")
"""Thanks for waiting, mid-call: a pleasantry before the news it introduces."""
_LAST_FOUR = re.compile(r"\blast (four|4|two|2)( digits| numbers)?\b", re.IGNORECASE)
""""the last four of the card": a field's name, no value."""
_PREPOSITIONS = frozenset({"on", "by", "in", "at", "for", "from", "to", "until", "since"})
_GREET_STATEMENT = _rx(
    r"^(you have reached|this is|my name is|i am \w+ (from|with|at|on))\b",
    r"\b(welcome to|thanks for calling|thank you for calling)\b",
    r"\b(i will|i am going to|i can) be (helping|assisting) you\b",
)
_DESK_HELLO = re.compile(r"^(\w+ ){1,4}(hi|hello|hey)( there| \w+)?$")
"""The desk's name and a hello ("Expense advice line, hi Ravi."): a greeting."""
_GREET_PREFIX = re.compile(
    r"^(hello|hi|hey|hiya|howdy|greetings|(good )?(morning|afternoon|evening))( and welcome)?"
    r"( (there|again|everyone|all))?\b"
)

_CLOSE_ANY = _rx(r"\b(goodbye|bye|bye bye|farewell)\b")
_CLOSE = _rx(
    r"\btake (good )?care\b(?! of (?!your(self|selves)\b))",  # not "take care of it"
    r"\bstay safe\b",
    r"^(ok |okay |alright |all right |right )?(that is|that) (all|it) from (me|my end|my side)$",
    r"\b(speak|talk|chat) (to you )?soon\b",
    r"\ball the (very )?best (to you|with|for)\b",
    r"\b(we are|that is us|i think we are|looks like we are) (all )?(wrapped up|done here|done "
    r"for (today|now)|finished( for (today|now))?|all done)\b",
    r"\bthat (about |just about )?covers (it|everything)( on my end| from my side| for today)?$",
    r"\bbest of luck with\b",
    r"\benjoy (the|your) (time off|time away|break|trip|holiday|vacation|leave|weekend|evening)\b",
    r"\bgood luck with\b",
    r"\bhave an? (very |really )?(great|good|nice|wonderful|lovely|fantastic|pleasant|blessed|"
    r"terrific|excellent|awesome|super|safe|quiet) (\w+ )?(day|one|afternoon|evening|weekend|"
    r"night|rest|"
    r"week|time|shift|trip|flight|holiday|break|quarter)\b",  # "have a great partner day"
    r"\b(good|nice|great|a pleasure) (doing business|working|talking|speaking) with you\b",
    r"\byou are (all )?(set|good to go|done|sorted)\b",
    r"\benjoy (the rest of )?your (day|afternoon|evening|weekend|week)\b",
    r"(?<=\w )good day to you$", r"\bmind how you go\b",
    r"\b(a pleasure|pleasure|nice|good|great) doing business\b", r"\btake it easy\b",
    r"\bhope the rest of your (day|shift|week|afternoon|evening|weekend)\b",
    # "..., and enjoy the rest of your first week!", "I hope the partner day is a huge success!"
    r"\benjoy the rest of (your|the) (\w+ )?(day|week|weekend|afternoon|evening|shift|trip)\b",
    r"\bhope (the|your) \w+( \w+)? (is|goes) (a )?(huge |great |big |real )?(success|well|"
    r"smoothly)\b",
    r"\bcatch you (later|next time|on the (next|flip) (one|side))\b",
    r"\btalk (to you )?(soon|later)\b",
    # at the end of what is said: "Thank you for your patience, three one two ..." is no close
    r"\b(thanks|thank you) (so much |very much )?for your (time|patience)( \w+){0,2}$",
    r"\bthat is (all|everything) for (today|now)\b",
    r"\b(we are|that is) all (done|set)\b",
    r"\buntil next time\b",
    r"\bthis concludes\b",
    r"\bdrive (safe|safely|carefully)\b",
    r"\bi wish you an? (good|great|nice|pleasant|productive|lovely|wonderful|safe|quiet) \w+",
    r"\band (a )?good (evening|night|day|afternoon)$",  # "Thank you, Denise, and good evening."
    r"\b(i will|i will just|i am going to) let you go\b",
    r"\ball the (very )?best( and cheers)?$",
    r"\b(give (me|us) a )?shout if (anything|you need|something)\b",
)

_SUMMARIZE = _rx(
    r"\b(to|let me|let us|i will|quickly|just to|so to|i would like to|i want to) "
    r"(summarize|summarise|recap|sum up|sum it up|sum things up|go over everything|"
    r"run through everything|review everything|read (it|that|this|everything) back|"
    r"read back everything|go over what|run through what)\b",
    r"\bhere is (what i (have|got|recorded|have got)|what we have|a (quick |brief |short )?"
    r"(summary|recap|rundown)|the (summary|recap|rundown)|everything i have)\b",
    r"\b(in summary|to recap|quick recap|quick summary)\b",
    r"\bin short\b(?! (what|which|who|why|how|when|where|can|could|would|is|are|do|does)\b)",
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
    # "Have I written that down correctly?" / "Did I read that back properly?"
    r"\b(did|have|do) i (\w+ )?(got|get|written|write|read|taken|take|noted|note|put|put "
    r"down|heard|hear|understood|understand) (that|it|this|everything|all of that|all that|"
    r"those|them|you)( \w+){0,3} (right|correctly|properly|accurately|the right way (round|"
    r"around))\b",
    # "Did I capture that the way you meant it?" / "Was everything I read out accurate?" /
    # "Anything in there I've gotten wrong?"
    r"^(and |so |sorry )?(did|have|was|were|is|are|could you check|can you check|anything)\b.*"
    r"\b(i (have )?(got|gotten|get|written|write|wrote|read|read out|caught|catch|captured|"
    r"capture|noted|note|put|said|say|entered|enter|typed|type|heard|hear|took|take|taken)|what "
    r"i|everything|in there|those numbers|they all|the rest)\b.*\b("
    r"right|correct|correctly|accurate|accurately|wrong|the way you meant( it)?|sound right|"
    r"match|matches)$",
    # "Does that match what you told me?" / "Does everything I've got look right to you?"
    r"\b(does|do) (that|this|it|everything|all of that|all that|those|these)( \w+){0,5} "
    r"(match|line up with|look right|sound right|look correct|sound correct)\b",
    r"\b(that is|those are) (right|correct)\b.*$",
    # "Sound right?", "Anything off?", "Does the rest of the memo match your notes?",
    # "I went through those quickly, did they all sound right?"
    r"^(does |do |did )?(that |this |it |everything |all that |all of that )?(all )?(sound|sounds"
    r"|look|looks) (right|correct|good|ok|accurate)( to you)?$",
    r"^(anything|something) (off|wrong|missing|i missed|i got wrong|to fix)( there| here| in "
    r"there)?$",
    # "Anything else look off to you?", "Everything else look okay so far?"
    r"^(and |so )?(anything|everything|something) else (look|looks|seem|seems|sound|sounds) "
    r"(off|wrong|right|ok|okay|good|correct|fine)\b",
    r"^(is )?(that |it )?all (correct|good|right|ok|okay|accurate)$",  # "All correct?"
    # "Did I catch all the names?", "Everything line up with what you've got?"
    r"^(and |so )?did i (catch|get|miss) (all|everything|every|both|any)( \w+){0,3}$",
    r"^(does )?(everything|it all|that all|all of that) (line|lines) up\b",
    r"^(is that|that is|is this) (everything|the lot|all of (it|them))$",
    r"\bsound(s)? right to you$",
    r"\b(does|do|did) (what|the rest|everything|any of)\b.*\b(match|matches|look right|sound "
    r"right)\b",
    r"\b(was|is|were|did) (everything|all of (it|that)|they all|those all|it all)\b.*\b(right|"
    r"correct|accurate|sound right|match)$",
    # "Does everything I've noted down so far sound accurate to you?", "Have I captured
    # everything correctly so far?", "Have I got it all?", "Anything to change?"
    r"^(and |so )?(does|do) (everything|all of (it|that)|that all|it all)( \w+){0,6} (sound|look|"
    r"seem) (right|correct|accurate|good|ok)( to you)?$",
    r"^(and |so )?(have|did) i (\w+ )?(got|get|gotten|caught|catch|captured|capture|noted|taken) "
    r"(it|that|them|everything|all of (it|that)|all that)( all)?( down)?( right| correctly| "
    r"accurately)?( so far)?$",
    r"^(and |so )?(anything|something) (i have|i) (missed|got wrong|gotten wrong|left out)$",
    r"^(and |so )?(anything|something) (you would like |you want |you need )?to (change|correct|"
    r"fix)( there| in there| so far)?$",
    # "Have I got everyone?", "Is that the full list?", "Is that the right number?", "Does
    # that all check out?"
    r"^(and |so |ok |okay )?(have|did) i (got|get|gotten) (everyone|everybody|it now|that now|"
    r"that straight|it straight|them all|all of them|all the names)$",
    r"^(and |so |ok |okay )?is (that|this) the (full|whole|complete|entire|right|correct) "
    r"(list|lot|number|one|address|spelling|name|date|amount|time|email)$",
    r"^(and |so |ok |okay )?(does|do) (that|this|it|everything|all that|all of that) (all )?check "
    r"out$",
)
_EITHER_VALUE = _rx(r"^(sorry |so )?(was|is|did you say|were) (that|it|they) \w+.* or \w+")
"""'Was that four sites or five?': a value asked back as a choice."""
_CONFIRM_REQUEST = _rx(
    r"\b(can|could|would|will) you (please |just |quickly )?(confirm|verify|double check)\b",
    r"\bplease (confirm|verify)\b",
    r"\b(can|could|may) i (please |just |quickly )?(get you to )?(confirm|verify)\b",
)
"""Asking the caller to confirm a field: with no value said, the caller must say it."""
_WH_QUESTION = _rx(r"\b(what|which|who|when|where|how) (is|are|was|were|would|should|do|does|"
                   r"did|will|can|could)\b")
"""A question that asks for a value: with a field and no value said, an ask even after "to
verify" ("First I need to verify you, what's the policy number?")."""
_CONFIRM_TAG = re.compile(
    r",\s*(then,?\s*)?(right|correct|yes|yeah|ok|okay|is that right|is that correct|did you say"
    r"|did i (hear|get|catch) (that|it) (right|correctly)|is that (the one|it|the right one|the "
    r"exact \w+|what you \w+ing|what you (said|meant|have))|or (was it|did you say) .+)"
    r"\s*\?+\s*$", re.IGNORECASE)

_APPROVAL_EXPLICIT_Q = _rx(
    r"\b(do|can|could|will|would) you (please )?(approve|authorize|authorise|consent|sign off)\b",
    r"\byour (approval|permission|authorization|authorisation|consent|go ahead|ok|blessing|"
    r"sign off)\b",
    r"\b(you|you are) (ok|fine|happy|good|comfortable) (with|for) (me|us) (to )?"
    r"(go ahead|proceed|move forward)\b",
)
_LEAVE_IN_SO_MANY_WORDS = _rx(
    r"^((so|and|ok|then) )*(do|would|will) you (please )?(approve|authorize|authorise|consent)\b",
    r"\b(do i have|may i have|can i have|can i get|could i get|i need|i would need) your "
    r"(approval|permission|authorization|authorisation|consent|go ahead|ok|blessing)\b",
)
"""A request for leave the act model never takes away: the caller's approval asked for by name
("Do you approve the enrollment as described?", "Do I have your approval to submit?")."""
_APPROVAL_EXPLICIT_S = _rx(
    r"\b(need|require|want|get|have|like) your (approval|permission|authorization|"
    r"authorisation|consent|go ahead|ok|sign off)\b",
    r"\bwith your (approval|permission|authorization|authorisation|consent|ok)\b",
    r"\bplease (approve|authorize|authorise)\b",
    r"\blet me know if (i can|i may|i should|it is ok to|you approve)\b",
    r"\ba (yes|go ahead|ok) from you\b",  # "All I need now is a yes from you and I'll ..."
    r"\b(need|want|wait for|get) (a|your|the) (clear |quick |final |explicit |firm )?(yes|ok|"
    r"go ahead|nod|green light|say so|thumbs up)\b",
    r"\b(you )?give me the (go ahead|nod|green light|ok|thumbs up|word)\b",
    # "the last step is your go-ahead for me to process it"
    r"\b(last|final|only|next) (step|thing)( left| needed| i need)? is your (go ahead|approval|"
    r"permission|ok|okay|say so|sign off|green light)\b",
)

_LEAVE_FOR_STEP = re.compile(
    r"\b((approval|permission|authorization|authorisation|consent) (to|for)|(consent|agree) to)"
    r" (?P<rest>.+)$")
"""Leave asked by name, followed by the step it is for ("OK to ..." and "go-ahead to ..." are
the generic frames of the gated action: not here)."""
_LEAVE_STEP_SUBJECT = frozenset({"me", "us", "i", "we", "my", "our", "the", "them"})
"""Who takes the step ("consent to us sharing ...")."""
_STEP_END = frozenset({"with", "to", "for", "from", "at", "on", "in", "by", "so", "and", "before"})
"""Where the step's own words end ("sharing your records | with the specialist")."""

_SUGGESTION = re.compile(
    r"^(how about (i|we|me|us)|why do not (i|we)|what if (i|we)|how would you feel about (me|us|"
    r"my|our))\b")
"""A proposal put as a question-word suggestion ("Why don't I send it in now?")."""
_WH_THING = re.compile(
    r"^(which|what|whose) \w+( \w+)? (are|is|was|were|did|do|does|will) (we|you|they|he|she|i) ")
"""A question for the thing the gated verb acts on ("which incident are we escalating"), not
for leave."""
_APPROVAL_FRAMES: tuple[tuple[str, ...], ...] = (
    ("shall", "i"), ("should", "i"), ("can", "i"), ("may", "i"), ("could", "i"),
    ("shall", "we"), ("should", "we"), ("can", "we"), ("may", "we"), ("could", "we"),
    ("me", "to"), ("us", "to"), ("with", "me"), ("ok", "to"), ("all", "right", "to"),
    ("fine", "to"), ("ready", "to"), ("ok", "if", "i"), ("all", "right", "if", "i"),
    ("mind", "if", "i"), ("fine", "if", "i"), ("you", "like", "to"), ("you", "want", "to"),
    ("permission", "to"), ("approval", "to"), ("go", "ahead", "and"), ("want", "me", "to"),
    ("why", "do", "not", "i"), ("why", "do", "not", "we"), ("what", "if", "i"),
    ("what", "if", "we"), ("how", "about", "i"), ("how", "about", "we"), ("feel", "about", "me"),
    ("feel", "about", "us"),
)
"""'Shall I' / 'would you like me to' / 'is it OK to' ... followed by a gated verb."""

_FRAME_FILLER = frozenset({
    "now", "please", "just", "then", "also", "actually", "officially", "formally", "quickly",
    "right", "away", "get", "have", "it", "that", "this", "these", "them", "everything",
    "all", "to", "for", "you", "go", "ahead", "and", "of", "today", "finally", "really",
    "try",  # "would you like me to try submitting again?"
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
    "sound ok", "sounds ok", "sound all right", "does that sound ok", "that ok", "that all right",
    "is that fine", "yes", "ready", "are you ready", "would that be ok", "go ahead",
    # the previous sentence's proposal, asked about without repeating it
    "would you like me to", "do you want me to", "want me to", "you want me to",
    "would you like me to go ahead", "do you want me to go ahead", "want me to go ahead",
})

_COMFORTABLE_WITH_ME = (r"\b(would|will|are) you (be )?(comfortable|happy|ok|fine|all right) "
                        r"(with|for) (me|us) (to |\w+ing\b)")
"""Leave asked as the caller's comfort ("Would you be comfortable with me flagging the memo
ready?"): an offer, or a request for leave when the step is the gated action."""
_OFFER = _rx(
    r"^(are you )?(happy|ok|ready|fine|good) for (me|us) to\b",
    r"\b(would|do|did) you (also |maybe )?(like|want|need) (me|us) to\b",
    r"^(you )?want me to\b",
    r"(?<!\bwhat )(?<!\bwho )(?<!\bwhich )(?<!\bhow )(?<!\bwhere )(?<!\bwhen )"
    r"\b(shall|should|can|could|may) (i|we) "
    # the verb after an optional adverb ("Can I just verify ...?" asks no leave)
    r"(?!(also |just |quickly |maybe )?(get|have|ask|request|grab|take|know|confirm|verify|"
    r"double|start|go over|run through|read|repeat|clarify|put you down|note|jot|write down|"
    r"record|just confirm|also get|check that|check your|check if i|see your|help|assist|serve|"
    r"be of)\b)(also |just |quickly |go ahead and |maybe )?[a-z]+",
    # "Should I grab QP-9 for you?"
    r"\b(shall|should|can|could) (i|we) (just |quickly )?(grab|pull|get|fetch|dig out|find) "
    r"(that|it|this|them|those|a copy|the \w+|\w+ \w+) for you\b",
    r"\b(would|do) you (also )?(like|want) (a|an|the|some|any|us|them|me|to (get|have|receive))"
    r"\b",
    r"\b(would|do) you (also )?(like|want) to (add|include|get|have|book|set up|schedule)\b.*"
    r"\b(as well|too|while (we|i|you) (are|am) at it)$",
    r"^how about (i|we) (\w+ )?(send|email|set up|add|call|text|draft|forward|arrange)\b",
    # "How about I send Rosa a heads-up?" (not "How about we book Tuesday?": a slot)
    r"\b(would|do) you (also )?(like|want) (pricing|a quote|quotes|details|information|more "
    r"information|more details|info) (on|for|about)\b",
    r"^((so|and|now) )*(ok|all right|fine|cool) (if|for) (i|me|we|us) (to )?(just )?"
    r"(?!(ask|get|have|grab|take|confirm|check|verify|double|read|note|record|put you)\b)[a-z]+",
    r"\b(ok|all right|fine|cool)( with you| by you)? if (i|we) (just |go ahead and )?(?!(ask|get|"
    r"have|grab|take|confirm|check|verify|double|read|note|record|put you|can|could|do|did|am|was|"
    r"have|had|need|miss)\b)[a-z]+",
    r"\b(i|we) would (just |then |now )?[a-z]+ .*\b(ok|all right|shall i|alright)$",
    # "..., so I'm gonna mark the memo ready for finance review, that cool?"
    r"\b(i|we) (will|am going to|are going to) (just |then |now |go ahead and )?[a-z]+ .*\b(that "
    r"cool|is that cool|cool|sound good|sounds good|that all right with you|that ok with you|that "
    r"all right|that ok)$",
    r"\b(i|we) can (just |now |go ahead and )?(?!(confirm|check|verify|read|note|see|hear|help|"
    r"assist|tell|say|get|ask)\b)[a-z]+ .*\b(if that suits|if that works|yeah|ok|all right)$",
    r"\bwould it be worth (me|us|my|our)\b",
    r"\b(i|we) (can|could) (also |even |easily )?[a-z]+ .*\bif (that is|it is|that would be|it "
    r"would be|that will be) (useful|helpful|handy)\b",
    r"\bi can (also |even )?[a-z]+ .*\bif you (would like|like|want|need|prefer)\b",
    r"^(and |so |but |also )?i (can|could) (also |even )?[a-z]+ .*\bif (you|that|it)\b",
    r"^if you (will |would |do )?(need|want|like|prefer)\b.* i (can|could)\b",
    r"^(if you (would like|like|want|need)|if (that|it) (helps|is useful|is helpful|works)),"
    r" i (can|could)\b",
    r"\bif you (would like|like|want), i can\b",
    r"^if (so|not|you are|you do|none|that|it|there)\b[^,]*,? i (can|could)\b",
    r"\b(would|do) you (like|want) (our|my|to (hear|see|try|take a look)\b)",
    r"\bhappy to [a-z]+ .*\bif (you|that (helps|would help|is useful|works)|it helps)\b",
    r"\bdo you want (a|an) (copy|confirmation|reminder|email|text|receipt)\b",
    r"\bwould it (help|be (useful|helpful|handy|easier)) (if|for) (i|me|us|we)\b",
    r"\bwould it be (ok|all right|alright|fine) (if|for) (i|me|us|we)\b",
    r"\bwould (a|an|the|some) .+ be (useful|helpful|handy)\b",
    r"\b(do you )?want me to$",
    r"^(you )?want (a|an|the|some|any|me|us|my|our)\b",  # "Want an email confirmation?"
    r"\bwant me to\b",
    r"^if you (would )?like,? i (can|could)\b",
    r"^i (can|could) (also |even )?[a-z]+ .*\bif (so|needed|you like|you want)$",
    r"^(and )?i can also (send|text|email|book|set up|arrange|schedule|call|forward|add|mail|"
    r"put|reserve|draft)\b",  # an extra, said as a statement
    r"\bdo you want (the|a|an|it|them|those|these) .* (sent|emailed|mailed|texted|forwarded)\b",
    r"\b(would|do) you (like|want) .* (sent|emailed|mailed|texted|forwarded) (to you|over)\b",
    r"\bwould you like (details|information|info|directions|a list|the details|a link|some "
    r"(details|information|tips))\b",
    r"\bwould you like (also )?(that|for) (i|me)\b",  # "Would you like also that I email you"
    # an extra said as a statement: "I could also send Sam a handover note."
    r"(?<!\bwhat )(?<!\bthat )\b(i|we) (can|could) also (?!(see|tell|hear|confirm|note|find|"
    r"say|mention|only|not|never)\b)[a-z]+",
    # a step proposed as a statement with a hedge: "I'd like to mark this record ready for Dev
    # now, if that works for you.", "..., so I'll go ahead and send the package, if that's
    # alright."
    r"\b(i|we) (would like to|would love to|will|am going to|are going to|want to|can|could) "
    r"((just|go ahead and|now|then|also) )*(?!(ask|get|have|confirm|check|verify|note|read|need|"
    r"take|grab|double|make sure|be|hear|see|tell)\b)[a-z]+ .*\b(if (that is|it is) (all right|"
    r"ok|fine)( with you| by you)?|if that works( for you)?|if you do not mind|does that work for "
    r"you|if that suits( you)?|if you are (happy|ok|fine|comfortable)( with that)?)$",
    _COMFORTABLE_WITH_ME,  # "would you be comfortable with me flagging the memo ready ...?"
    # "File it?", "Mark it ready for tier two?": a step proposed in a word or two
    r"^(mark|file|send|submit|book|route|forward|email|escalate|process|finalize|flag|log|"
    r"schedule) (it|that|this|them|the \w+)( \w+){0,4}$",
    # "Mind if I pull that one up ...?" (not "Mind if I ask ...?": a question comes)
    r"\b(do you |would you )?mind if (i|we) ((just|quickly|go ahead and) )?(?!(ask|get|have|grab|"
    r"take|confirm|check|verify|double|read|note|record|put you down|go over|run through|"
    r"clarify|repeat|jump)\b)[a-z]+",
)
"""An offer: the agent proposes to do something (the caller decides)."""
_AGENT_ACTS = _rx(
    r"\b(me|us) to\b", r"\b(shall|should|can|could|may) (i|we)\b", r"^i (can|could)\b",
    r"\b(and|so|but) i (can|could) (also )?\b",
    r"\bif (i|we)\b",
    r"\bi (can|could) (also |even )?[a-z]+ you\b",  # "If not, I can call you back later."
    r"\b(like|want|wish) that (i|we)\b",  # "Would you like that I look up also ..."
    r"(?<!\bbefore )(?<!\buntil )(?<!\bonce )(?<!\bwhen )(?<!\bafter )(?<!\bso )"
    r"\b(i|we) (can|could) (also |even |quickly )?[a-z]+\b",  # "..., I can set up a call"
)
"""The agent would do it: "want me to", "shall I", "I could also …", "would it help if I"."""
_HELP_TAG = _rx(
    r"^(and |so )?(would|will|does|do) (that|this|it|you) (help|be (useful|helpful|handy|good|"
    r"ok|okay|alright|all right)|like that|want that|work for you|sound (good|helpful|useful))"
    r"( at all)?$",
    r"^(any use|want that|helpful)$",
)
"""A question that only asks whether the agent's suggestion would help ("Would that help?")."""
_I_CAN = _rx(r"\b(i|we) (can|could) (also |even |quickly )?[a-z]+\b")
_SOURCE_REPORT = _rx(
    r"\b(the|our|your|this|that) (current |new |old |\d+ )?((?!(is|are|was|were) )\w+ ){0,3}"
    r"(policy|policies|guide|spec|specification|rules?|catalogue|catalog|price book|standard|"
    r"procedures?|handbook|checklist|routing guide|rate card|register|scorecard)( \w+)? (says|"
    r"say|gives|give|has|have|lists|list|sets|set|states|allows|allow|puts|put|shows|show|recommends|recommend|requires|"
    r"require|is|are|points to|point to|puts it|rates it)\b",
    r"\b(according to|per|under|in|from|by|going by) (the|our|your) (current |\d+ )?(\w+ ){0,2}"
    r"(policy|guide|spec|specification|rules?|catalogue|catalog|price book|standard|procedures?|"
    r"handbook|checklist|routing guide|rate card)\b",
    r"^((thanks|thank you) (so much )?for (holding|waiting|your patience) )?((ok|okay|right|"
    r"all right|alright|so|great) )*(i|we) (have )?found (it|that|the|this)\b",
    r"^((ok|okay|right|all right|alright|so|great) )*found (it|them)\b",  # "Okay, found it: ..."
    # "I've checked our routing guide, and ...", "I looked it up in the known-issues guide"
    r"\b(i|we) (have |just )?(checked|looked at|looked in|looked it up in|pulled up|consulted|"
    r"searched|went through|ran|looked up) (the|our|your|in the|in our) (\w+ ){0,3}(policy|guide|"
    r"spec|specification|rules|catalogue|catalog|price book|standard|procedures|handbook|"
    r"checklist|rate card|register|scorecard|records|system|knowledge base|calendar|invoice|"
    r"shipments|shipping|diary|schedule|account)\b",
    r"^(i|we) (have |just )?checked (shipments|shipping|the calendar|the invoice)\b",
    # "Let me check the price book.", "I'm looking at the cardiology calendar now", "I've got
    # the travel and meals policy up", "Shipment check's back: ..."
    r"\b(let me|i will|i am going to|i am|we are) (just |quickly )?(check|checking|look at|looking "
    r"at|look in|looking in|pull up|pulling up|open|opening|consult) (the|our|your) (\w+ ){0,3}("
    r"policy|guide|spec|specification|rules|catalogue|catalog|price book|standard|procedures|"
    r"handbook|checklist|rate card|register|scorecard|records|knowledge base|calendar|diary|"
    r"schedule)\b",
    r"\b(i|we) (have )?got (the|your|our) (\w+ ){0,4}(up|open)\b(?= \w)",  # a report follows
    r"\b(the|our|your) (\w+ ){0,3}(policy|guide|rules|catalogue|catalog|price book|handbook|"
    r"checklist|rate card|calendar|account|file|record|statement) (is )?(open|up|loaded)( now)?"
    r"\b(?= \w)",  # "Okay, the policy's open now: ..."
    r"\b(check|search|lookup|results?|query) (is |are |has |have )?(come |came )?back\b",
    r"^(okay |ok |right |alright )?(found it|here it is|here we go|it came back)$",
    r"^(okay |ok |right |so |alright )*here it is\b",
)
"""A statement that reports what a document says ("the policy gives ...", "according to
the price book ..."), or a lookup's announcement before the report ("Found it.")."""
_ANNOUNCEMENT_END = re.compile(r"\b(found (it|them)|up|open)$")
"""A lookup's announcement ("found it", "I've got the account up"), not a document's report."""
_NOT_HYPOTHETICAL = (r"(?<!\bif )(?<!\bwhen )(?<!\bonce )(?<!\bshall )(?<!\bshould )"
                     r"(?<!\bcould )(?<!\bcan )(?<!\bmay )(?<!\bwould )(?<!\bbefore )")
"""Not after "if", "when", "shall", ...: "Would it help if I put a hold in for the next
review?" records nothing."""
_RECORDED = _rx(
    _NOT_HYPOTHETICAL + r"\b(i|we) (have |will |just |am |are )?(recorded|noted|entered|"
    r"updated|changed|corrected|put|saved|set|logged|captured|listed|marked|wrote|written|"
    r"registered|filled|putting|listing|logging|marking|noting|recording|entering|updating|"
    r"setting|adding|added)\b",
    r"\b(i|we) (have )?(got|have) you (down|listed)\b",  # "I've got you down as Gloria Haynes"
)
"""The agent says it wrote a value into the record ("I've put sixteen weeks on the memo")."""
_RECORDED_AS = _rx(
    r"\b(i|we) (have )?(got )?(the|your|it|that|this)( \w+){0,3} (down |set |listed )?as\b",
    r"\bdown as\b",
    r"\b(is|are|was) (now )?(set|marked|down|noted|recorded|logged|showing) (to|as|at)\b",
    r"\b(i|we) (will|shall|would) (just )?(note|record|mark|put|log|apply|set)\b",
    r"\b(it is|that is) (fixed|corrected|updated|changed)\b",
    r"\b(i|we) (have )?(moved|switched|recommended|applied)\b",
    r"\b(on|in) the (memo|record|form|ticket|work order|file|order|request|plan|checklist|"
    r"draft|proposal)\b",
    r"\b(status|it) shows\b",
    r"\b(i|we) (have )?(got )?(the|your|it|that|this)( \w+){0,3} set to\b",
    r"\bit should (be|have been)\b",
    r"\b(it is|then)$",
)
"""More ways of saying a value is recorded ("I've got the status as submitted", "I'll note the
ten percent", "twenty percent at four thirty-two it is")."""
_OFFER_NOT = _rx(
    r"\b(would|do) you (like|want) to (add|change|update|keep|go with|use|stay|enroll|"
    r"include|list|name|put|make|cover|choose|pick|select)\b",
)
"""'Would you like to add dental?' asks the caller's choice (a field), not an offer."""
_MESSAGE_OFFER = _rx(
    r"\b(like|want) (me|us) to (email|e mail|call|phone|text|ping|message|drop|send|forward|cc|"
    r"copy in|notify|loop in|reach out to|contact|remind|let)\b",
    r"\b(would|do) you (also )?(like|want) (a|an) (copy|confirmation|reminder|email|text|"
    r"receipt|summary)\b",
)
"""An offer to contact someone, or of something sent: a value named in it ("Would you like me to
email Rachel Kim?", "... a confirmation email with both invoice numbers?") is its addressee or
content, not a field asked or restated."""
_FOREIGN_OBJECT = frozenset({
    "another", "second", "separate", "new", "additional", "extra", "copy", "email",
    "text", "reminder", "confirmation", "summary", "receipt", "note", "message", "link",
    "invite", "invitation", "room", "pass", "permit", "survey", "feedback", "callback",
    "call", "appointment", "referral", "transcript", "recording", "brochure", "guide",
    "quote", "card", "voucher",
})
"""Words that make a gated verb's object something other than the gated artifact."""
_ADDITIONAL = _rx(
    r"\bas well\b", r"\btoo$", r"\bwhile (we|i|you) (are|am) at it\b",
    r"\bin addition\b", r"\badditionally\b",
    r"\b(i|we) (can|could) also\b", r"\b(shall|should|can|could) (i|we) also\b",
    r"\bfor your (own )?(records|files|reference)\b", r"\bas an? (pdf|attachment)\b",
)
"""A proposal of one more thing besides the task's own ("… as well?", "… too?")."""
_OTHER_VERSION = frozenset({"last", "previous", "old", "prior", "other", "earlier"})
"""Words that make an object named like the artifact another one of its kind."""
_WANT_IT_DONE = re.compile(
    r"(^|\b(do|would) you (still )?)(want|like) (?P<obj>(it|this|that|them|the \w+|your \w+)"
    r"( \w+)?) (submitted|sent|filed|booked|processed|committed|finalized|placed|scheduled|lodged|"
    r"issued|escalated|forwarded)\b")
"""The action offered as what the caller wants done ("Want it submitted?", "Would you like the
request sent to issuing?"); not "you want the letter sent, yes?" (the caller's choice)."""
_GENERIC_PROCEED = _rx(
    r"\bget (it|this|that|things|everything|(the|this|that|your) \w+) (moving|going|rolling|"
    r"underway|started)\b",
    _WANT_IT_DONE.pattern,
    # "I'd like to get it off to finance", "getting this over to finance"
    r"\bget(ting)? (it|this|that|the \w+|your \w+)( \w+)? (off|over|across|through) to\b",
    # "Are you happy for this to go off to badge issuing?", "Is it alright with you if this
    # goes through to the attorneys now?"
    r"\bfor (it|this|that|the \w+|your \w+)( \w+)? to go (off|through|over|out|across)( to\b|$)",
    r"\b(all right|ok|fine)( with you| by you)? if (it|this|that|the \w+|your \w+)( \w+)? goes "
    r"(off|through|over|out|across|in) to\b",
    # the causative: "Shall we get your enrollment submitted?"
    r"\b(i|we|us|me) (just |quickly |now )?get (it|this|that|everything|the \w+|your \w+) "
    r"(submitted|sent|filed|booked|processed|committed|finalized|placed|scheduled|lodged|"
    r"put through|sent off|sent in)\b",
    r"\b(fire|shoot|pop)(s|ing)? (it|this|that|everything|them) (off|over|across|through)\b",
    r"\bpop(s|ping)? (it|this|that|the \w+|your \w+)( \w+)? in\b",  # "I'll pop the request in"
    r"(?<!\brather )(?<!\bto )\b(proceed|go ahead) with (it|this|that|the \w+|your \w+)\b",
    r"\bmak(e|ing) (it|this|that|everything|the \w+|your \w+)( \w+)? official\b",
    r"\block(ing)? (it|this|that|everything|them|these)( all)? in\b",
    r"\block(ing)? in (the|your|this|these|that)\b",
    r"\b(put|push)(ting|ing|es|ed)? (it|this|that|everything|them|the \w+|your \w+)( \w+)? "
    r"(through|in)\b",
    r"\b(put|push)(ting|ing|es)? (the|your) \w+( \w+)? and (the |your )?\w+( \w+)? "
    r"through\b",
    r"\b(hand|send|put)(ing|s)? (the|your|this) \w+( \w+)? (in|off|through)\b",
    r"\bhand(ing|s)? (it|this|that|everything|the \w+|your \w+)( \w+)? over\b",
    r"\block(ing)? (that|this|the|your) (\w+ )?in\b",
    r"\bsend(ing)? (it|this|that|everything|the \w+|your \w+) (in|off|over|through|along)\b",
    r"\bpass(ing)? (it|this|that|everything|the \w+|your \w+) (along|on|over) to\b",
    r"\b(give|get|have) (me |us )?(the |your )?(go ahead|green light|ok|okay|thumbs up)\b",
    r"\bsay the word\b",
    r"\bsign off on (it|this|that|the \w+)\b",
    r"\bpull the trigger\b",
    r"\b(good|ok|okay|fine|clear|happy|set) (for me |for us )?to (go|proceed|submit|send|"
    r"file|do that|do it)\b",
)
"""Asking for the go-ahead without the rule's own verb ("Shall we make it official?")."""


def _generic_proceed(joined: str) -> re.Match[str] | None:
    """The first :data:`_GENERIC_PROCEED` phrase of a clause's joined words that is not
    someone else's act ("Will your managing partner need to sign off on the budget?")."""
    for m in _GENERIC_PROCEED.finditer(joined):
        if not _someone_else_does(joined.split(), len(joined[:m.start()].split())):
            return m
    return None


_ASKS_PERMISSION = _rx(
    r"\b(is|would) (that|this|it) (be )?(all right|ok|fine|good|alright)( with you| by you| for "
    r"you)?$",
    r"^(that|is that) (all right|ok|fine|good)( with you| by you)?$",
    r"^(ok|all right|fine|good) (with|by|for) you$",
    r"\b(if|provided|as long as) (you are|that is) (happy|ok|fine|good|comfortable|all right|"
    r"cool)( with (that|it|you)| for me to| for me to do that| for (me|us) to)?$",
    r"\bif (that|this|it) (works|suits)( for you| you)?$",  # "I'll file it now, if that works"
    # "I'll place the order, if you confirm.", "..., if you'll let me."
    r"\bif you (confirm|agree|approve|say so|say yes|will let me|would let me|let me)$",
    r"\bis that acceptable( to you)?$",
    r"\bassuming (that is|it is|you are) (all right|ok|fine|good|happy)( (with|by) (you|that|"
    r"it))?$",
    r"\bunless you would rather (i did not|i not|not|hold off|wait|i held off|i waited)$",
    r"\b(would|will|is) it (be )?(all right|ok|fine|good)( with you| by you)? (if|for) (i|me|we|"
    r"us)\b",
    _COMFORTABLE_WITH_ME,
    r"^((all right|ok|so|right) )*(am i |are we )?(good|clear) to\b",
    r"^(are )?you (ok|happy|good|fine|all right) with (that|this|it)$",
    r"\b(am|are) (i|we) (good|ok|clear|all right|fine|set) to\b",
    # casual: "We good for me to put the refund and credit through now?"
    r"^((so|and|ok|cool|alright|all right) )*(are )?we (all )?(good|ok|set|cool) (for (me|us) )?"
    r"to\b",
    r"\b(are )?you (happy|ok|fine|good|comfortable|all right) (for|with) (me|us) to\b",
    r"\b(ok|all right|fine|cool) (if|for) (i|me|us|we)\b",
    r"\b(ok|all right|fine|cool) (with|by) you if (i|we)\b",  # "Okay with you if I do that now?"
    r"\bdo (i|we) have (your|the) (go ahead|ok|approval|permission|green light)\b",
    r"\bsay the word\b",
    r"\b(can|may|shall|should) (i|we) (go ahead|proceed)\b",
    r"\bgo ahead and\b.*$",
    r"\bshall (i|we)\b",
    r"\bwant me to\b",
    r"\b(are|is) (you|everyone) (ok|fine|good|happy|comfortable|all right) with (that|this|it|"
    r"me|us)\b",
    r"\byou are (ok|fine|happy|good|comfortable|all right) with (me|us|that|this)\b",
    r"\bis (that|it) a go\b",
    r"\bdoes that work for you\b",
    r"\b(need|want|get|have) (a|your) (yes|ok|go ahead|say so|green light)\b",
    r"\byour (ok|go ahead|approval|permission|blessing|green light|say so|sign off|consent|"
    r"yes) (to|and|before)\b",
)
_CLOSE_QUESTION = _rx(
    r"\b(was there|is there|do you have|have you got|got) anything else\b",
    r"^(ok |okay |and |so )?anything else\b(?! (look|looks|seem|seems|sound|sounds|stand|"
    r"stands|jump|jumps|strike|strikes) )",  # "Anything else look off?" checks the record
    r"\bwhat else can (i|we) (do|help)\b",
    r"\b(help|assist) (you )?with anything else\b",
    r"\b(is there )?anything else (i|we) can (help|do|assist)\b",
    r"\b(is there )?anything else (you need|for you|for today|today|at all)\b",
    r"^(anything else|is there anything else|something else)$",
    r"^is that (everything|all) for (today|now)$",
    r"\banything else (i|we) (can|could) (do|help)\b",
    r"\b(do you )?need anything else\b",
    r"\bcan i let you go\b",
)
_THAT_IS_ALL = re.compile(r"^that is (everything|the lot|all of (it|them))$")
_APART_FROM = re.compile(r"\b(apart from|aside from|other than|except( for)?|besides)\b")
_SMALL_TALK = _rx(
    r"\b(lovely|nice|good|great) to (hear from|see|have) you\b",
    r"\bhow (is|are|has|have) (your|the|things|you)( \w+){0,4}( been)? (going|treating you|"
    r"doing)\b",
    r"\bhow are (you|things)( doing)?\b",
    r"\b(nice|good|great|lovely|pleasure) (to|talking to|speaking with|speaking to) (meet|"
    r"talk|speak|you|chat)\b",
    r"\b(busy|long|good|rough|hectic) (day|week|morning|afternoon)\b",
    r"\bhope (you are|your|you have|things|it is|it has|the)\b",
    r"\bweather\b",
    r"\bhow (fun|exciting|lovely|nice|wonderful|exciting)\b",
    r"\b(congratulations|congrats)\b",
    r"^(oh |ah )?(no worries |no rush )?,? ?sounds like (a|you|the|quite)\b",
    r"\bmust be (chaos|busy|hectic|crazy|a lot|fun|nice|exciting)\b",
    r"^(so |and )?how is [a-z ]{1,20} going\b",
    # "How was the trip overall?" / "How did the meeting go?": asking after the caller
    r"^(so |and )?how (was|did) (the|your) (trip|meeting|flight|drive|weekend|holiday|"
    r"vacation|day|morning|conference|visit|event|journey)( \w+)?( go| going)?( overall)?\b",
    r"^(so |and )?how (was|is|did) (the|your) (\w+ )?(workshop|shop|site|team|office|plant|"
    r"shift|week|quarter|move|launch|practice|clinic|bay|warehouse|floor|store)\b",
    r"\b(going|heading|off) (anywhere|somewhere) (nice|fun|special|exciting|warm)\b",
    r"^(busy|long|big|hectic|quiet|crazy|rough|early|late) (day|week|quarter|month|shift|morning"
    r"|night|season|one|start)\b",
    r"\bare you (feeling|doing|holding up|keeping) (ok|okay|well|alright|all right|cool|"
    r"hydrated)\b",
    r"^(that )?sounds? (lovely|fun|wonderful|amazing|exciting|like fun|like a lovely)\b",
    r"\bsounds like a (lively|busy|full|fun|lovely|big|long) (house|day|week|morning|trip)\b",
    # "Anywhere fun?", "Hot one out there today?", "you keeping hydrated?"
    r"^(and |so )?(going )?(anywhere|somewhere) (nice|fun|special|exciting|warm)\b",
    r"\b(hot|cold|warm|wet|long) one (out there )?today\b",
    r"\b(you|are you) keeping (cool|warm|hydrated|dry)\b",
    r"^(so |and )?how was [a-z]+( \w+)?(, apart from| apart from|$)",
    r"^(so |and )?how did it go\b",
    # "Oh nice, sounds like a big job", "Oh wow, sounds like a crazy week at the warehouse,
    # huh?", "you guys busy this time of year?", "Is the shop busy as always this week?", "Are
    # the little ones alright back there?", "how has your week started so far?", "How did the
    # last audit season treat your team?", "Did you enjoy the webinar, by the way?", "A
    # partner day sounds lovely.", "Exciting times with the new site, I imagine."
    r"^((oh|ah|wow|nice|great|lovely|right|okay|ok|no worries|that|no|oh no) )*sounds like "
    r"(a|it|you|the|your)\b",
    r"\bhow is (\w+ ){1,4}(shaping up|treating you)\b",
    r"\bkeeping you (busy|on your toes)\b",
    r"^((oh|so|and) )*(the )?\w+( \w+)? doing (alright|all right|ok|okay|well)( back there| "
    r"today)?$",
    r"\b(crazy|busy|long|big|rough|hectic) (week|day|shift|job|morning|season|quarter|night|"
    r"month|year)\b",
    r"\bbusy (this time of year|as always|as ever)\b",
    r"^((oh|so|and) )?(is|are) (the|your) (little )?\w+ (busy|alright|all right|ok|okay|keeping "
    r"busy|doing ok|doing okay)(( as always| as ever)( this week| today)?|( as always| as ever)?"
    r"( back there| this week| today| at the \w+))$",
    r"^((so|and|lovely|great|oh|nice|okay|ok|perfect) )*how (has|did) (your|the) (\w+ ){0,3}(week|"
    r"day|season|morning|shift|month) (started|treat|treated|begun|been)\b",
    r"^((oh|so|and) )?(did you|how did you) (enjoy|like|find) (the|your) \w+( \w+)?,? by the way$",
    r"^((oh|ah|a|an|the|your) )*(\w+ ){1,3}sounds (lovely|great|fun|exciting|wonderful|like fun)$",
    r"^exciting (times|stuff|news)\b",
    r"\bhow was \w+,? by the way\b",
    r"^((oh|wow|man|ooh|ugh) )*sounds (hectic|busy|stressful|rough|crazy|intense|lively|fun|like "
    r"a day)\b",
    r"^((and|so|you) )?keeping (warm|cool|dry|busy|hydrated)\b",  # "Keeping warm out there?"
    # "Busy bay today?", "Flat out in the shop today?", "Tough meeting?", "June's a great time to
    # get away."
    r"^((oh|ah|ugh|oof|man|so) )*(busy|flat out|noisy|quiet|hot|cold|windy|tough|rough|long|"
    r"hectic|crazy) (?!.* or )[a-z ]{0,30}$",
    r"^((oh|ah|ooh|nice|lovely|so) )*(\w+ ){1,4}(is|are) (a |the )?(great|lovely|gorgeous|best|"
    r"beautiful|wonderful|nice|perfect) time (to|of|for)\b",
)
_PRO_FORM = _rx(r"\b(do|go ahead with|proceed with|go ahead and do) (that|it|this)\b")
"""Leave asked for what the previous sentence said: "Is it alright if I do that now?"."""
_SUBORDINATE = re.compile(
    r"(?:^|(?<=[,;]))\s*(?:and |so |but |just )?(?:before|once|after|when|until|while|ahead of|"
    r"as soon as)\b[^,;?]*"
    r"|(?:^|(?<=[,;]))\s*(?:just so|so that|just so that) (?:i|we)\b[^,;?]*(?=,)"
    r"|\b(?:before|once|after|when|until|ahead of|as soon as)\b[^,;?]*[?.!]*\s*$"
    r"|\bahead of \w+ing\b",
    re.IGNORECASE)


def _main_clauses(text: str) -> str:
    """The text without its time clauses ("before I submit", "when I send it", "ahead of
    booking"): what a gated verb in them says is not proposed."""
    return _SUBORDINATE.sub(" ", text).strip()


_ACK = _rx(r"\b(got it|noted|understood|perfect|thank you|thanks|okay|ok|great|i have (noted|"
          r"got|updated|fixed|changed|ticked|corrected) (it|that|this)|nice|lovely|wonderful|"
          r"cool|gotcha|fixed|corrected|sorry about that|my mistake|my apologies)\b")
_IT_IS = _rx(r"\b(it is|that is it|then)$")
_ANNOUNCE_STEP = _rx(
    r"^(let me|i will|i am going to|i am just going to|i will just|i will quickly|let us) "
    r"(just |quickly )?(check|look|pull|see|find|search|run|grab|open|verify|calculate|price|"
    r"work out|figure out)\b",
)
_ACK_WORDS = frozenset({
    "got", "it", "noted", "understood", "perfect", "thank", "thanks", "you", "ok", "okay",
    "great", "so", "then", "is", "that", "i", "have", "updated", "fixed", "changed", "ticked",
    "box", "corrected", "no", "problem", "at", "all", "right", "sure", "the", "a", "and",
})


def _value_words(words: list[str]) -> list[str]:
    """What an acknowledgement says besides the acknowledging ("Got it, vacation")."""
    return [w for w in words if w not in _ACK_WORDS and w not in _FILLER_START]


_RECAP_VERB = _rx(
    r"\b(let me|let us|i will|i am going to|i will just|here is) (just |quickly )?"
    r"(read|play|run|go|read out|recap|review)\b( \w+){0,4}? (back|through|over)\b",
    r"^(reading|playing) (it|that|this|the \w+|everything|what i have)( \w+)? back\b",
    r"^(recapping|summing up|to sum up|so to recap)\b",
)
_PLEASANTRY = _rx(
    r"^(oh |ok |okay |great |perfect |wonderful |brilliant |lovely |right |alright |well )*"
    r"(thanks|thank you|you are (very |so )?welcome|my pleasure|no problem|no worries|happy to "
    r"help|glad (i|we) could help|of course|sure|absolutely|i am \w+|my name is|this is|oh no|"
    r"glad|oh,? a |ooh)\b",
    r"\b(that is|that was) (everything|all)( from me| then| for now| for today)?\b",
    r"\b(you have reached|you are through to|you are speaking (with|to)|this is) \w+|"
    r"\w+ speaking\b|\bthanks (so much )?for (holding|waiting|calling|your patience)\b",
    r"\byou are (all )?(sorted|finished|done)\b",
)
"""What a greeting or closing turn says besides its greeting or goodbye that is part of it:
thanks, "you're welcome", the agent introducing itself."""
_WHO_IS_CALLING = _rx(
    r"\bwho (am i|do i have|have i got|is this|is calling|am i talking|am i speaking|do i have "
    r"the pleasure)\b",
    r"\b(can|could|may) i (get|have|take|ask) (who is calling|who i am speaking with|your name)\b",
)
"""Asking the caller who they are: their own name's field."""
_YOUR_SURNAME = _rx(
    r"\b(spell|have|get|give me|take|grab|know) your (last |first |family |full |sur)?name\b",
    r"\byour (last name|surname|family name)\b",
)
"""Asking the caller for (part of) their own name."""
_READY_LEAD_IN = _rx(
    r"^(ok |okay |so |alright |all right |right |great |perfect |yeah |so yeah |well )*(i think )?"
    r"(that is|that should be|that covers|that is the lot|that is all|that is everything|"
    r"everything is|we are|i am|you are|we have|i have)( all| now| pretty much)?( (everything|"
    r"it|all set|set|done|ready|in place|filled in|complete|covered|the lot|all i need|what we "
    r"need|everything (we|i) need|we need))\b",
    # "That's every field filled in.", "The memo's all filled in.", "Every field's in."
    r"^(ok |okay |so |alright |all right |right |great |perfect |and |cool )*"
    r"(that is |that is now |it is |it is now )?"
    r"((every (\w+ ){1,4}|everything |all (the )?\w+ )(is |are )?(all |now )?in|(every (\w+ ){1,4}|"
    r"everything |the (whole |full )?(\w+ ){1,2}|all (the )?\w+ |all )(is |are )?"
    r"(all |now |fully )?(filled in|filled out|done|captured|complete|completed|covered|"
    r"finished|recorded|in place|entered|lined up|sorted))( and (ready( to go)?|good to go|"
    r"all set))?( now| then| on my (side|end)| at my end)?"
    r"( (mr|mrs|ms|miss|dr) \w+| \w+)?$",
    # "Everything's ready on my end." (not "The record's marked ready": news)
    r"^(ok |okay |so |alright |all right |right |great |perfect |and |cool )*(everything is |"
    r"everything |it is all |all )(now )?ready( to go)?( now| on my (side|end)| at my end)?$",
    # "alright so that's the whole form", "ok so um that's the record"
    r"^(ok |okay |so |alright |all right |right |great |perfect |and |cool |um |uh )*(that is|"
    r"there is|here is|this is) (the|your) (whole |full |complete |entire |finished |final )?"
    r"(form|record|draft|request|application|submission|file|package|lot)$",
)
"""A sentence that only says the record is complete, before the proposal that follows it."""
_RECAP_WORDS = _rx(
    r"\b(summar\w*|recap\w*|sum(ming)? (it |that |this |everything )?up)\b",
)
"""A recap said in so many words ("To summarize, ...", "Quick recap:"): the act model never
takes it away."""
_RECAP_INTRO = _rx(
    r"^(ok |okay |right |so |alright |all right |great |perfect )*(here is|here are|this is|"
    r"let me (just )?(run|go|read|recap|walk)|from the top|(let us|let me) (recap|review)|"
    r"reading (it|that|this|everything) back|to recap|quick recap|recapping)\b"
    r"( \w+){0,9}$",
)
"""A sentence that only introduces the recap after it ("Here's where we've landed.")."""
_RECORD_WORDS = frozenset({"draft", "detail", "everything", "record", "form", "have", "got",
                           "summary", "recap", "order", "ticket", "memo", "plan", "request"})
_STATUS_NEWS = _rx(
    r"\b(it|this|that|your \w+|the \w+) (is|has been|was) (now )?(in|routed|marked|logged|"
    r"filed|through|done|complete|recorded|saved|on its way)\b",
    r"\b(that is|that was) (everything|all) (i|we) need\b",
    r"\b(will|is going to) (follow up|call|contact|reach out|get back|be in touch)\b",
    r"\b(is|are) (confidential|private|recorded)\b",
)
"""Information in a greeting or closing turn: a status, what happens next, a policy."""
_LOOK = (r"(look (it |them |that |this |the \w+ )?(up|into|at)|pull (it |them |that )?up|search|"
         r"dig out|run (a|an|our|the|your) (\w+ ){0,2}(check|search|lookup)|"
         r"check (the|our|whether|if|both|for)|check (that|it|this|them) (against|with|in))")
"""The agent's own lookup after a request for leave."""
_LOOKUP_LEAVE = _rx(
    r"^((so|and|now|ok|great|very good|alright|all right|right) )*(may|can|could|shall|should|"
    r"might) (i|we) (just |quickly |also |go ahead and )?(take a (moment|minute|second) to )?"
    + _LOOK,
    r"\bwould you mind (holding|waiting|bearing with me)\b",
    # ("alright" reads "all right": _words)
    r"\b(mind|is it (all right|ok|fine)( with you)?) if (i|we) (just |quickly )?(take a (moment|"
    r"minute|second) to )?(put you on (a )?(short |brief |quick )?hold|" + _LOOK + ")",
    r"\bwould you allow (me|us)( a (moment|minute|second))? to (just |quickly )?" + _LOOK,
    # a hold, a read-back of the draft, carrying on, a remote session: steps that need no
    # approval ("Mind if I pop you on a short hold?", "Is it alright if I read the whole draft
    # back to you?", "Mind a quick hold while I pull the price book?")
    r"\b(mind|is it (all right|ok|fine)( with you)?|would it be (all right|ok|fine)) (if (i|we) |"
    r"for (me|us) to |to )(just |quickly |first )?((pop|put|place|hold) you( on (a )?(short |brief "
    r"|quick )?hold)?|read (it|this|that|everything|the (whole )?\w+|it all)( \w+)? back|"
    r"(carry|keep|go) on|keep going|continue|connect to your \w+)\b",
    r"\bmind (a|a quick|a short|a brief) (hold|moment|second)\b|\bmind (holding|hanging on)\b"
    r"|^((do|would) you )?mind (a|an) (\w+ ){0,3}(hold|sec|second|moment|minute|pause)\b",
    # "Can you hold for a few seconds while I check ...?", "Mind if I keep you on the line a
    # moment while I save these readings?", "Mind if I take a quick look at whether ...?"
    r"^((and|so|ok) )*(can|could|would) you (hold|hang on|bear with me)( on)?( for)? (a|a few|"
    r"just a|one)\b",
    r"\bmind if (i|we) (just )?(keep you on the line|take a (quick |short )?look|pulled up|"
    r"looked up|checked)\b",
    r"\b(would|do) you (like|want) (me|us) to (just |quickly |also )?" + _LOOK,
    r"^(with your (permission|ok)|if it is (alright|all right|ok|fine) with you),? (i|we) will "
    r"(just |quickly |now )?" + _LOOK,
)
"""Leave asked for the agent's own lookup ("May I take a moment to look up the policy?",
"Would you mind holding while I check?"): an offer of a step that needs no approval, even when
what is looked up is a field."""
_WAITS_FOR_LEAVE = re.compile(
    r"\b(nothing|none of it|no one|it|this|that) (\w+ ){0,3}(goes|gets|will go|will get|is|will be)"
    r" (\w+ ){0,4}until you\b|\b(nothing|none of it) (\w+ ){0,4}until you\b"
    # "Please be informed that I will not commit anything until you give me the word again.",
    # "I'll keep it in draft and won't escalate until you give me the word."
    r"|\b(i|we|and) (will not|would not|shall not|cannot|am not going to|do not|are not going to) "
    r"(\w+ ){1,4}until you\b"
    # "I'm holding off on sending anything until you give me the word.", "..., but it stays
    # uncommitted until you give me the go-ahead."
    r"|\b(hold|holds|holding|held|wait|waits|waiting|keep|keeping|kept|leave|leaving|stay|stays|"
    r"remain|remains|sit|sits) (\w+ ){0,4}until you\b"
    # "I'll wait for your go-ahead before anything gets booked.", "the commit itself will wait
    # for your say-so"
    r"|\b(wait|waits|waiting|hold off|holding off) (\w+ ){0,2}(for|on) (your|the caller) (\w+ )?"
    r"(ok|go ahead|say so|word|green light|approval|confirmation|consent|yes|sign off|"
    r"permission|nod|thumbs up)\b")
"""A statement that the action waits for the caller's word: it asks nothing."""
_CLAUSE_BREAK = frozenset({"or", "but", "so", "because", "and"})
"""Where the words after a gated verb stop belonging to its object ("..., or do you need
another minute")."""
_ANOTHER_ONE = re.compile(r"\b(another|a second|a separate|the same kind of|a similar|"
                          r"(any|some|every)(one|body) else)\b")
"""A proposal for one more of a kind ("the same kind of request for another one of your crew",
"file one for anyone else on your crew")."""
_SUBORDINATORS = frozenset({"before", "once", "after", "when", "until", "while", "as", "if"})
_TIME_CLAUSE = _SUBORDINATORS - {"while", "as", "if"}
"""Words that put a gated verb after them in a time clause, not a proposal."""
_NEGATION = frozenset({"nothing", "not", "never", "no", "nobody"})
_DETERMINER_BEFORE_NOUN = frozenset({
    "your", "the", "a", "an", "my", "our", "their", "his", "her", "its",
})
_AGENT_MARKERS = frozenset({
    "i", "we", "me", "us", "let", "ok", "ready", "good", "fine", "happy", "clear", "and",
    "set", "allowed", "to", "is", "be",
})
"""Words before a gated verb that make the agent its doer ("shall I", "want me to")."""
_THIRD_PERSON = frozenset({"he", "she", "they", "someone", "somebody", "nobody", "anyone",
                           "anybody", "everyone", "everybody", "else"})
"""Subjects that are not the agent ("else": "will anyone else need to sign off")."""
_THIRD_PARTY = frozenset({
    "doctor", "physician", "gp", "manager", "supervisor", "insurer", "employer", "landlord",
    "lawyer", "attorney", "specialist", "referrer", "dentist", "surgeon", "boss", "partner",
    "partners", "director", "lender", "bank", "accountant", "cfo", "ceo", "colleague",
})
"""Nouns naming another person as the subject of a gated verb ("your doctor sent you")."""
_OTHER_SUBJECTS = _THIRD_PERSON | _THIRD_PARTY
_TITLES = frozenset({"dr", "doctor", "mr", "mrs", "ms", "miss", "prof", "professor"})
"""Titles before a name: the name is the subject ("why Dr. Singh sent you")."""
_AUXILIARIES = frozenset({"is", "are", "was", "were", "will", "has", "have", "had", "would",
                          "could", "can", "did", "does", "do", "already", "just", "also"})


_MODAL_FILLER = frozenset({"need", "needs", "want", "wants", "to", "going", "be", "able",
                           "may", "might", "must", "should", "usually", "normally", "still",
                           "perhaps", "maybe", "probably", "actually", "ever", "really"})
"""Words between a subject and its verb that say nothing of who acts ("will your partner need
to sign off", "will anyone else, one of the partners perhaps, need to sign off")."""


def _someone_else_does(w: list[str], i: int) -> bool:
    """The verb at ``i`` has a third person for subject ("why she is sending you", "they
    will submit it"): not the agent's act."""
    if i > 0 and w[i - 1] in ("being", "been"):
        return True  # a passive: "or is that still being finalized?"
    window = w[max(0, i - 6):i]
    others = [k for k, x in enumerate(window) if x in _THIRD_PERSON]
    if others and not set(window[others[-1]:]) & {"i", "we", "me", "us", "you"}:
        return True  # "Does anyone else at Whitmore need to sign off on the venue?"
    before = [x for x in window if x not in _AUXILIARIES and x not in _MODAL_FILLER]
    if not before:
        return False
    # "why Dr. Singh sent you": a title before the subject's name
    return before[-1] in _OTHER_SUBJECTS or (
        len(before) > 1 and before[-2] in _TITLES)
_TRAILING_QUESTION = re.compile(
    r",\s*(?:(?:and|so|now|then|okay|ok|great|perfect|thanks|um|uh|erm|also)\s*,?\s*)*"
    r"(?:and|so|now|then|okay|ok|great|perfect|thanks|also)\s*,?\s*"
    r"(?:(?:um|uh|erm)\s*,?\s*)*"
    r"(?=(?:what|which|who|when|where|how|could|can|would|will|do|did|does|is|are|was|were|"
    r"should|shall|have you|has (?:he|she|it|the)|by when|by what|on what|in what)\b)"
    r"|,\s*or\s+(?=(?:is there|was there|do you have) anything else\b"
    r"|is that (?:everything|all)(?: for (?:today|now))?\s*\?)",
    re.IGNORECASE,
)
"""", and what ...?": a restatement followed by a new question in one sentence."""
_LATE_QUESTION = re.compile(
    r",\s*(?:and\s+|so\s+|but\s+)?(?:what|which|who|when|where|how|could you|can you|would you"
    r"|will you)\b"
    # not a relative clause: ", which lists at seven dollars", ", which I can't promise"
    r"(?<!which)(?<!who)(?<!where)(?<!when)[^,]*$"
    r"|,\s*(?:and\s+|so\s+|but\s+)?(?:which|who|where|when)\b(?!\s+(?:is|was|are|were|means|"
    r"lists|brings|comes|gives|covers|puts|makes|needs|has|had|have|would|will|should|can|could|"
    r"i|we|you|they|he|she|it|runs|goes|starts|applies|includes|sits|works)\b)[^,]*$",
    re.IGNORECASE,
)
"""A question after a lead-in clause, with or without its question mark ("Before I finalize,
what date should it start")."""
_NEWS_BEFORE_CLOSE = _rx(
    r"\b(will|is going to) (look|pick|reach|be in touch|receive|review|see|get|call|contact|"
    r"follow|place|process|send|come|go|have)\b",
    r"\b(is|are|has been|have been|was|is now) (submitted|committed|routed|escalated|sent|"
    r"booked|logged|marked|filed|processed|on its way|on their way|placed|confirmed|done)\b",
    r"\b(it is|that is|they are) (all )?(logged|recorded|in|through|done|sorted)\b",
)
"""News said before a send-off in the same sentence: what happens next, a status."""
_NEWS = re.compile(
    r"\b(submitted|booked|sent|filed|processed|scheduled|on its way|confirmation|email|will|"
    r"has been|have been|is (now )?(booked|done|in|ready|set)|refund|reference|ticket number|"
    r"policy|covered|fee|cost|price)\b", re.IGNORECASE,
)
"""Information in a greeting or closing turn that is news, not a pleasantry."""
_OBJECT_STOP = frozenset({
    "to", "for", "with", "by", "via", "on", "at", "in", "into", "if", "so", "and", "or",
    "before", "after", "once", "when", "because", "now", "today", "right", "yet", "then",
    "is", "ok", "all", "as", "from", "while", "unless", "until", "are", "was", "were", "not",
    "will", "would", "can", "could", "do", "does", "did", "should", "shall", "may", "might",
    "have", "has", "yeah", "yes", "correct", "please", "too", "whenever", "soon", "alongside",
    "along", "besides", "plus", "together", "next", "like", "straight", "immediately",
    "shortly", "first", "later",
})
_OBJECT_SKIP = frozenset({
    "it", "this", "that", "these", "those", "them", "the", "your", "my", "our", "a", "an",
    "everything", "over", "off", "through", "along", "up", "please", "you", "me", "us", "him",
    "her", "just", "all", "of", "whole", "entire", "final", "completed", "complete", "finished",
    "officially", "formally", "actually", "out", "away", "back", "here", "there", "again",
})
_PARTICLES = frozenset({"over", "through", "along", "back", "across", "up", "out", "off",
                        "away", "forward", "ahead", "too", "also", "anyway", "already"})
"""Words after an object that belong to its verb ("send the badge request over"), never the
object's head."""
_GENERIC_OBJECT = frozenset({
    "form", "request", "record", "detail", "info", "information", "paperwork",
    "application", "thing", "one", "lot", "case", "file", "submission", "change", "update",
    "draft", "version", "entry", "item", "package", "off",
})
"""Objects that name the artifact without its own words ("submit the form")."""
_PROCEED_WITH = re.compile(r"\b(go ahead|proceed|move forward|move ahead) with (?P<obj>.+)$")
"""Going ahead with something named: the thing decides which action it is."""
_PROCEED_ONLY = _rx(
    r"\b(go ahead|proceed|move forward|move ahead)\b",
)
_NOT_INTRO = frozenset({
    "is", "are", "was", "were", "will", "can", "has", "have", "every", "all", "need", "needs",
    "review", "reviews", "handle", "handles", "been", "be",
})
_DESK_INTRO = re.compile(
    r"^([a-z0-9&]+ ){0,3}(desk|line|team|support|services|service|office|department|"
    r"helpdesk|helpline|hotline|center|centre|reception|scheduling|intake|enrollment|billing|ops|"
    r"operations|events)( [a-z0-9&]+){0,5}$"
    r"|^([a-z0-9&]+ ){0,6}(desk|line|team|support|services|service|office|department|"
    r"helpdesk|helpline|hotline|center|centre|reception|scheduling|intake|enrollment|billing|"
    r"ops|operations|events)( (line|desk|team))?(,? (this is|[a-z]+ speaking|speaking))?( \w+)?$"
)

_DEFAULT_GATED_VERBS = (
    "submit", "commit", "finalize", "lodge", "put through", "send in", "hand in", "send",
    "forward", "pass along", "pass on",
)
_STEP_VERBS = frozenset({"check", "look", "search", "verify", "find", "pull", "run", "mark",
                         "ready", "lookup", "calculate", "price", "compute"})
"""Verbs of a task step that needs no approval: an offer of one is accepted."""

_NOT_A_VALUE = frozenset({
    "required", "needed", "missing", "optional", "important", "necessary", "blank", "empty",
    "unknown", "incomplete", "invalid", "pending", "usually", "typically", "normally", "used",
    "also", "on", "in", "printed", "located", "found", "what", "where", "how",
    "mandatory", "not", "still", "next", "due", "going", "something", "the", "a", "an",
    "asked", "listed", "shown",
    # verbs after "to" ("your full name to start"): a purpose, not a value
    "start", "begin", "confirm", "verify", "check", "make", "get", "go", "be", "put", "keep",
    # prepositions ending a clause ("the company you are with", "the one you work for")
    "with", "from", "about", "working", "calling",
})
_DETERMINERS = frozenset({"your", "the", "his", "her", "their", "my", "our", "down", "so"})


def _is_value(word: str) -> bool:
    """Could start a restated value ("July", "Jamie", "three"); not "required"/"covered"."""
    return word not in _NOT_A_VALUE and not (word.endswith("ed") and len(word) > 4)


_COPULA = frozenset({"is", "are", "was", "as", "to", "will", "at"})
_READBACK_LEAD = _rx(
    _NOT_HYPOTHETICAL + r"\b(i|we) (have |will |just |am |are )?(have|got|recorded|noted|"
    r"entered|updated|changed|corrected|put|saved|set|logged|captured|listed|marked|wrote|"
    r"written|took|taken|registered|filled|putting|listing|logging|marking|noting|recording|"
    r"entering|updating|changing|setting|adding|added)\b",
)
"""Before a field, with a value after it: "I have your date of birth as ..."."""
_YOU_SAID = _rx(
    r"\byou (said|mentioned|told me|gave|provided|stated|indicated)\b",
    r"\byou (are|were) (down|listed|registered) (as|for)\b",
    r"\bi (have )?(got )?you (down|listed|registered)\b",
)
_SO_LEAD = re.compile(
    r"^(and |ok |all right |great |perfect |got it |thanks |thank you )?so,? "
    r"(your|the|you|that is|that(?! (i|we|you|they|he|she) )|this is|we have)\b"
)  # not "so that I can open a case" (a purpose)
_PURPOSE = re.compile(r"\bso (that )?(i|we) (can|could|will|have)\b")
"""A purpose clause: the verb in it is why the agent asks, not what it proposes."""
_WHAT_I_WILL = re.compile(
    r"\b(is|are|that is|this is) (what|everything|all|exactly what) (i|we) (will|am going to|are "
    r"going to|would|plan to|intend to) (\w+ ){1,4}")
"""What the agent will put in or send, stated ("that's what I'll put in, right?"): a check of
the content, not leave for the action."""
_STRANDED = re.compile(
    r"\b(?P<clause>(i|we|you) (are|were|will be|will|would|am) (\w+ ){1,4}(for|by|with|about|from))"
    r"( (yes|right|correct|is that right|is that correct|yeah))?$")
"""A relative clause whose preposition is left at the end ("the date we're sending this out
for, yes?"): the gated verb in it says what a value is for, it proposes nothing."""
_LEAD_PURPOSE = re.compile(
    r"^\W*(?:(?:and|just|ok|okay|now|right) )*(?:so|so that|in order that) (?:i|we) (?:can|could)\b"
    r"[^,;?]*,\s*(?P<rest>.+)$", re.IGNORECASE)
"""A purpose clause before the question: "And so I can process the cancellation, can you
confirm the zip code?"."""
_CALLER_DID = re.compile(
    r"\b(did|have|had|has) (you|he|she|they|your \w+|someone|anyone|anybody) (already |ever |"
    r"just |also |yet |maybe )?(\w+ed|sent|put|filed|submitted|lodged|booked|done|made|got|"
    r"gone|taken|handed|given|send|submit|file|lodge|book|put|hand|give)\b"
    r"|\b(you|he|she|they) (have |had |already |just )*(sent|filed|submitted|lodged|booked|"
    r"emailed|forwarded)\b"
    # "Has Rachel already lodged a request?", "Will the rest of your crew be putting in their
    # own requests?", "do you know if Dr. Singh's office already sent over your records"
    r"|^((and|so|also|now) )*((do you know )?(if|whether) )?(has|have|did|will|does|do|is|are) "
    r"(?!(i|we|you (like|want|mind|need))\b)(\w+ ){1,5}(already|yet|their own|his own|her own)\b"
    r"|\bdo you know (if|whether) (\w+ ){1,5}already\b"
    # "or are you sending it in yourself?", "Are you planning to submit it on your own?",
    # "Will Tom be sending the improvement plan to Crestline himself?"
    r"|\b(are|were|will|is|was) (?!(that|this|it|there|what|which|who)\b)\w+ (be )?(still |"
    r"already |also |just )?(planning (on |to )?\w+|going to \w+|\w+ing)\b(?!.*\b(me|us)\b).*\b("
    r"yourself|himself|herself|themselves|on (your|his|her|their) own)\b")
"""A question about what the caller (or someone else) did, not a proposal of the agent's."""
_SOMEONE_DID_Q = re.compile(
    r"^(do you know (if|whether) )?(has|have|had|did|will|was|were|is|are) (?!(it|that|this|there|"
    r"those|these|i|we)\b)(\w+ ){1,10}?(already|yet|ever|planning (to|on))\b")
"""A yes/no question about what the caller or someone else did or plans to do."""
_NEED_LEAD = re.compile(
    r"^(i will|i would|i am going to|i am gonna|i|we will|we would|we) (just |also |still |then )?"
    r"need (to (know|get|take|have|note|grab|write down|record) )?(?=(a|an|the|your|some|roughly|"
    r"who|what|when|where|which|how|whether|if)\b)")
"""A value asked for as the agent's need ("I'll also need the date the meeting was held")."""
_IS_WAS = frozenset({"is", "was", "are", "were"})
_SUBJECTS = frozenset({"i", "you", "we", "it", "that", "this", "they", "she", "he"})
_FUNCTION_WORDS = _AUX | _WH | _SUBJECTS | _DETERMINERS | frozenset({
    "yours", "me", "them", "its", "from", "with", "for", "about", "there", "here", "else",
    "much", "many", "long", "need", "want", "like", "get", "give", "tell",
})
_ORDINAL_ONE = re.compile(
    r"(?<![-\w])(?<!twenty )(?<!thirty )(first|second|once|one more time|one last time)\b", re.I)
"""Counting words that say no value ("a first phase", "one more time"); not a date's
"twenty-first"."""
_A_MOMENT = re.compile(r"\b(a|one|just a) (second|sec|moment|minute|mo)\b", re.I)
"""A pause asked for ("you cut out for a second"), no number."""
_IS_YOUR = re.compile(r"^(is|was|are|were) (your|the) ")

_ADJACENT_GAPS = (
    ["of"], ["of", "your"], ["of", "the"], ["of", "my"], ["as"], ["as", "your"], ["as", "the"],
    ["as", "my"],
)
"""Between two field mentions that name one thing ("name of your beneficiary")."""

_STOPWORDS = frozenset({
    "the", "a", "an", "of", "for", "and", "to", "in", "on", "your", "my", "our", "with", "or",
})


def _distinctive(value: Any) -> bool:
    """A value that identifies its field when heard: not a lone lower-case word ("full",
    "low", "vacation"), which a sentence may say about anything."""
    text = str(value).strip()
    return not (re.fullmatch(r"[a-z]+", text) is not None)


_SPOKEN_DIGIT = {"zero": "0", "oh": "0", "o": "0", "one": "1", "two": "2", "three": "3",
                 "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}


def _read_out_runs(text: str) -> list[str]:
    """Identifiers read out a character at a time ("C four zero nine seven one" -> C40971):
    runs of single letters, digits and digit words, joined."""
    out: list[str] = []
    run: list[str] = []
    for w in re.findall(r"[A-Za-z]+|\d+", text.replace("'s", " is")):
        low = w.lower()
        piece = _SPOKEN_DIGIT.get(low) or (w if w.isdigit() or (len(w) == 1 and w.isupper())
                                          else None)
        if piece is None:
            if len(run) >= 3:
                out.append("".join(run))
            run = []
        else:
            run.append(piece)
    if len(run) >= 3:
        out.append("".join(run))
    return out


def _near_identifier(value: Any, text: str) -> bool:
    """A token of ``text`` that is ``value`` (an identifier with digits) with one or two
    characters misheard or swapped: "VC-3381" for VC-3318, "P30852" for P30582."""
    return bool(_near_tokens(value, text))


def _near_tokens(value: Any, text: str) -> set[str]:
    """The tokens of ``text`` (canonical identifiers) that :func:`_near_identifier` finds."""
    target = canonical_identifier(value)
    if len(target) < 4 or not any(ch.isdigit() for ch in target):
        return set()
    tokens = re.findall(r"[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", _words_to_digits_text(text))
    tokens += _read_out_runs(text)
    digits = "".join(ch for ch in target if ch.isdigit())
    out: set[str] = set()
    for token in tokens:
        cand = canonical_identifier(token)
        if cand.isdigit() and len(cand) >= 4 and len(digits) >= 4 and digits != target and (
                Levenshtein.distance(cand, digits) <= 1):
            out.add(cand)  # the number of "RF-66120" said alone: "six six one two zero"
        elif abs(len(cand) - len(target)) <= 1 and Levenshtein.distance(cand, target) <= 2 and (
                sum(ch.isdigit() for ch in cand) >= 2):
            out.add(cand)
    return out


def _without_explained(out: list[FieldKey], near: dict[FieldKey, set[str]],
                       values: Sequence[tuple[FieldKey, FieldSpec, list[Any]]]) -> list[FieldKey]:
    """``out`` without the fields found only by tokens (``near``: a misheard identifier or
    amount) that another found field's value states exactly: "INV-20391", the duplicate
    invoice's first version, is not the original INV-20388 misheard; the 3,350 agreed in a
    recap is not the caller's ask of 3,600."""
    if not near:
        return out
    exact = {canonical_identifier(v) for key, _, vals in values
             if key in out and key not in near for v in vals}
    return [k for k in out if k not in near or not near[k] <= exact]


def _base(word: str) -> str:
    """A verb form without its -ing or -ed ("sponsoring", "referred" -> "sponsor",
    "referr"), for matching a question's words with a field's label."""
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) > len(suffix) + 3:
            return word[:-len(suffix)]
    return word


def _misheard_amount_named(key: FieldKey, spec: FieldSpec, text: str, named: list[FieldKey], *,
                           limits: bool) -> bool:
    """An amount a digit or two off a field's value is that field's, misheard, only with the
    field named ("two hundred and fourteen million in revenue"); unnamed it is another amount
    ("up to eighty-three hundred a year" is no HSA contribution of 1200). With ``limits``, a
    limit ("you can put up to eighty-three hundred into the HSA") is no restatement unless the
    field is itself a bound."""
    if key not in named:
        return False
    return not (limits and _BOUND.search(text)
                and not _BOUND_FIELD.search(f"{spec.name} {spec.label}"))


def _near_words(value: str | list[Any], said: str) -> float | None:
    """How far the nearest run of words in ``said`` (canonical text) is from the value or,
    for a list, from any one item ("Victor Hall" for [Laura Chen, Victor Hale]), scaled so that
    under 0.5 is near; a run may have one word more or fewer ("Rosa del Gardo" for Rosa
    Delgado). None when the value is too short to compare."""
    items = [str(x) for x in value] if isinstance(value, list) else [value]
    targets = [(" ".join(canonical_text(" ".join(items)).split()), 0.0)]
    if len(items) > 1:
        targets += [(canonical_text(x), 0.0) for x in items]
    if len(items) == 1 and len(targets[0][0].split()) == 2:
        # a surname said alone ("Is that Haines, H A I N E S?"), a little less near
        targets.append((targets[0][0].split()[1], 0.2))
    toks = [w for w in said.split() if w != "and"]
    best: float | None = None
    for target, penalty in targets:
        target = " ".join(w for w in target.split() if w != "and")
        n = len(target.split())
        if not n or len(target) < 5:
            continue
        for size in {max(1, n - 1), n, n + 1}:
            for i in range(len(toks) - size + 1):
                d = Levenshtein.normalized_distance(" ".join(toks[i:i + size]), target) * 1.5
                best = d + penalty if best is None else min(best, d + penalty)
    return best


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
    forms = {v, v + "s", v + "es", v + "ed", v + "d", v + "ing"}
    if v.endswith("e"):
        forms |= {v[:-1] + "ing"}
    if (
        len(v) >= 3 and v[-1] not in "aeiouwxy" and v[-2] in "aeiou" and v[-3] not in "aeiou"
    ):
        forms |= {v + v[-1] + "ed", v + v[-1] + "ing"}  # submit -> submitted
    if v.endswith("y") and len(v) > 2 and v[-2] not in "aeiou":
        forms |= {v[:-1] + "ied", v[:-1] + "ies"}
    forms |= _IRREGULAR_PAST.get(v, set())
    return forms


_IRREGULAR_PAST = {"send": {"sent"}}
"""Forms of the gated verbs that no suffix makes ("sent it off")."""


def _verb_sequences(verb: str) -> set[tuple[str, ...]]:
    """Every inflected token sequence of a (possibly multi-word) verb ("sign off")."""
    parts = _words(verb)
    if not parts:
        return set()
    out = {(form, *parts[1:]) for form in _verb_forms(parts[0])}
    if len(parts) == 2:  # a particle verb split by its object: "hand it in", "put this through"
        out |= {(form, obj, parts[1]) for form in _verb_forms(parts[0])
                for obj in ("it", "this", "that", "them", "everything")}
    return out


@dataclass(frozen=True)
class _Rule:
    rule: AuthorizationRule
    verbs: frozenset[tuple[str, ...]]
    artifact_words: frozenset[str]


_DIGIT_WORD = r"(?:zero|oh|o|one|two|three|four|five|six|seven|eight|nine)"
_PHONE_RUN = re.compile(
    rf"\b{_DIGIT_WORD}(?:(?:[\s,-]+|\.(?!\s)){_DIGIT_WORD}\b){{6,}}|\b\d{{3}}[\s.-]\d{{3}}[\s.-]\d{{4}}\b",
    re.IGNORECASE)


_CODE_OR_TIME = re.compile(
    r"\b(?:[A-Z][\s,.-]+){2,}[^,.?!;]*"  # "B, R, K, twenty-two oh seven": a code read out
    r"|\b(?:[\w-]+\s+){0,2}[\w-]+\s*(?:[ap]\.?m\b\.?|o'clock\b)",  # "two oh five PM"
    re.IGNORECASE)


def _mask_codes(text: str) -> str:
    """The text without codes read out letter by letter and times of day: their digits are
    no misheard count or amount."""
    return _CODE_OR_TIME.sub(" ", text)


def _mask_phones(text: str) -> str:
    """The text with phone numbers read digit by digit ("three one two, five five five, ...")
    and email addresses taken out, so that their digits do not read as other numbers nor
    their words as names ("laura dot chen at fenwickfoods dot com" names no contact)."""
    return EMAIL_SAID.sub(" ", _PHONE_RUN.sub(" ", text))


_RAW_TEXT_GRADERS = frozenset({"normalized_phone", "exact", "casefold_exact"})
"""Graders whose values are looked for in the text as said, phone numbers included."""
_IDENTIFIER_GRADERS = frozenset({"exact", "casefold_exact"})
"""Graders of identifiers, which a listener may mishear a character of."""


def _said_as_value(words: list[str], option: list[str]) -> bool:
    """An enum option said as words of the text, not as a noun after a possessive ("thanks
    for your business" names no Business edition)."""
    n = len(option)
    return any(words[i:i + n] == option and (i == 0 or words[i - 1] not in {
        "your", "my", "our", "their", "his", "her", "its"}) for i in range(len(words) - n + 1))


def _is_name(value: Any) -> bool:
    """A person's name: two to four capitalized words ("Rachel Kim", "Dr. Naomi Singh")."""
    words = re.findall(r"[A-Za-z][\w'-]*", str(value or ""))
    return 2 <= len(words) <= 4 and all(w[0].isupper() for w in words)


def _fold_into_next(acts: list[Act], k: int) -> None:
    """Act ``k`` is said as part of act ``k + 1``: one act, whose text is both sentences."""
    acts[k + 1] = acts[k + 1].model_copy(update={"text": f"{acts[k].text} {acts[k + 1].text}"})
    del acts[k]


def _says_an_option(words: list[str], spec: FieldSpec, vals: list[Any]) -> bool:
    """``words`` say one of a field's options or values as whole words (of 3 letters or
    more: "no" is said about anything; a code with a digit, "P4", is distinctive)."""
    return any(_said_as_value(words, _words(str(o))) for o in [*spec.options, *vals]
               if len("".join(_words(str(o)))) >= 3 or re.search(r"\d", str(o)))


def _option_forms(option: str, options: Iterable[str]) -> list[list[str]]:
    """An enum option as its words, and, for an option of several words, its last word when
    no other option ends with it ("the video call" offers "video call"; "parent" is none of
    "birth parent", "adoptive parent")."""
    words = _words(str(option).replace("_", " "))
    others = [_words(str(o).replace("_", " "))[-1:] for o in options if o != option]
    short = len(words) > 1 and len(words[-1]) > 4 and words[-1:] not in others
    return [words] + ([words[-1:]] if short else [])


def _days_apart(a: Any, b: Any) -> int:
    """Days between two dates' days of the year (July 9 and July 19 of any years: 10)."""
    d = abs(int(a.timetuple().tm_yday) - int(b.timetuple().tm_yday))
    return min(d, 365 - d)


def _small_number(value: Any) -> bool:
    """A count or a term ("three", "twelve"): a small whole number, which a sentence may say
    about anything; not a measurement ("eight point five eight")."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return abs(number) < 13 and number.is_integer()


_FORWARD_AS_ADVERB = frozenset({
    "look", "looks", "looking", "looked", "move", "moves", "moving", "moved", "step", "steps",
    "go", "goes", "going", "went", "come", "comes", "coming", "came", "bring", "brought",
    "carry", "carried", "put", "way", "fast", "straight", "plan", "planning",
    "date", "pay", "paying", "roll", "rolled", "rolling", "push", "pushing", "lean", "leaning",
})
"""Words before which "forward" is an adverb or a noun, not the verb (a gated verb by default)."""


_NOT_A_NOUN_BEFORE = _AGENT_MARKERS | {
    "you", "they", "he", "she", "not", "also", "just", "now", "then", "quickly"}


def _noun_use(w: list[str], i: int) -> bool:
    """The gated word at ``i`` is a noun: after a determiner ("your files"), or after a
    determiner and one adjective ("the right file", "the final submission")."""
    if w[i] == "forward" and i > 0 and w[i - 1] in _FORWARD_AS_ADVERB:
        return True  # "looking forward to it", "a step forward", not "I'll forward it"
    if i > 0 and (w[i - 1] in _DETERMINER_BEFORE_NOUN or (w[i - 1] in ("on", "in") and (
            i + 1 == len(w) or w[i + 1] not in ("it", "this", "that", "them")))):
        return True  # "your files", "the address on file", not "put it in"
    if i > 2 and w[i - 3] in _DETERMINER_BEFORE_NOUN and (w[i - 2].isdigit() or w[i - 2] in (
            "new", "old", "current", "latest")) and w[i - 1] not in _NOT_A_NOUN_BEFORE:
        return True  # "the 2027 price book", "the new order book"
    return i > 1 and w[i - 2] in _DETERMINER_BEFORE_NOUN and w[i - 1] not in _NOT_A_NOUN_BEFORE


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


# --------------------------------------------------------------------------- compiling a task

def _field_phrases(task: TaskSpec) -> dict[tuple[str, ...], _Phrase]:
    """Every phrase naming a field (its name, label or a synonym), with the fields it names."""
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
    return {
        toks: _Phrase(toks, tuple(keys), primary) for toks, (keys, primary) in phrases.items()
    }


def _authorization_rules(task: TaskSpec) -> tuple[list[_Rule], set[tuple[str, ...]]]:
    """The task's authorization rules with their verbs and object words, and every gated verb
    sequence (the default gated verbs' included)."""
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
            [rule.artifact.replace("_", " "), *rule.objects]
            + ([art.title, art.kind] if art else [])
        )
        art_words = {
            _stem(w) for w in _words(art_text)
            if w not in _STOPWORDS and not w.isdigit() and len(w) > 1
        }
        rules.append(_Rule(rule, frozenset(verbs), frozenset(art_words)))
    return rules, gated


def _ungated_step_words(task: TaskSpec) -> frozenset[str]:
    """Words of a step that needs no approval: the step verbs, and the first word of the
    description and the name of every tool that is neither gated nor an update."""
    gated_tools = {r.tool for r in task.authorization}
    step = set(_STEP_VERBS)
    for tool in task.tools:
        if tool.name in gated_tools or tool.kind == "update":
            continue
        first = _words(tool.description)[:1]
        step |= {_stem(w) for w in [*first, *_words(tool.name.replace("_", " "))]
                 if w not in _STOPWORDS and len(w) > 2}
    return frozenset(step)


def _caller_field_values(task: TaskSpec) -> list[tuple[FieldKey, FieldSpec, list[Any]]]:
    """Each field the caller's facts fill, with the distinctive values of the fact's versions."""
    values: list[tuple[FieldKey, FieldSpec, list[Any]]] = []
    for artifact in task.artifacts:
        for f in artifact.fields:
            fact = task.user.fact(f.source.fact) if f.source.fact else None
            if fact is None:
                continue
            vals = [v.value for v in fact.versions
                    if _distinctive(v.value)]
            if vals:
                values.append(((artifact.id, f.name), f, vals))
    return values


def _recap_field_values(task: TaskSpec) -> list[tuple[FieldKey, FieldSpec, list[Any]]]:
    """Each field a recap may restate, with every value that counts as stated in a recap."""
    # In a recap every stated value counts, whoever it came from: a caller's fact (any
    # version, the caller's own name included), or the task's value of a field the agent
    # fills from a document or an instruction; an enum field by any of its options.
    recap: list[tuple[FieldKey, FieldSpec, list[Any]]] = []
    for artifact in task.artifacts:
        for f in artifact.fields:
            fact = task.user.fact(f.source.fact) if f.source.fact else None
            vals = [v.value for v in fact.versions] if fact is not None else (
                [f.gold] if f.source.fact is None else [])
            vals = [v for v in vals if v is not None and str(v).strip()]
            if vals or (f.grader == "enum" and f.options):
                recap.append(((artifact.id, f.name), f, vals))
    return recap


def _gated_by_first_word(
        gated: set[tuple[str, ...]]) -> dict[str, tuple[tuple[str, ...], ...]]:
    """The gated verb sequences grouped by their first word."""
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for seq in gated:
        by_first.setdefault(seq[0], []).append(seq)
    return {k: tuple(v) for k, v in by_first.items()}


# --------------------------------------------------------------------------- observer

_SHARED: OrderedDict[int, tuple[TaskSpec, SemanticActObserver]] = OrderedDict()
_SHARED_LOCK = threading.Lock()
_SHARED_MAX = 256


class SemanticActObserver:
    """Rule-based mapping of an agent turn to semantic acts, compiled for one task."""

    def __init__(self, task: TaskSpec) -> None:
        self._negotiated = frozenset(p.when.field for p in task.plans
                                     if isinstance(p.when, TriggerProposal))
        """Fields the caller weighs proposals for (the act model keeps information naming
        them)."""
        self._phrases: dict[tuple[str, ...], _Phrase] = _field_phrases(task)
        self._lengths = sorted({len(t) for t in self._phrases}, reverse=True)

        rules, gated = _authorization_rules(task)
        self._rules = rules
        self._artifact_raw = frozenset(
            w for rule in task.authorization for o in rule.objects for w in _words(o))
        self._artifact_words = frozenset().union(*(r.artifact_words for r in rules))
        self._record_words = frozenset(
            _stem(w) for a in task.artifacts
            for w in _words(f"{a.title} {a.kind}".replace("_", " "))
            if w not in _STOPWORDS and len(w) > 2)
        self._step_words = _ungated_step_words(task)
        self._reference = task.reference_date
        values = _caller_field_values(task)
        self._values = values
        self._caller_fields = frozenset(key for key, _, _ in values)
        self._worked_out = frozenset((a.id, f.name) for a in task.artifacts for f in a.fields
                                     if f.source.fact is None)
        """Fields whose value the caller never gives: a document's or the instruction's."""
        # the field holding the caller's own name (asked by "Who am I speaking with?")
        persona = canonical_text(task.user.persona.name)
        self._caller_name = [key for key, _, vals in values
                             if any(canonical_text(v) == persona for v in vals)][:1]
        self._valued_memo: dict[str, tuple[FieldKey, ...]] = {}
        self._observed_memo: dict[str, tuple[Act, ...]] = {}
        self._fields_memo: dict[str, tuple[FieldKey, ...]] = {}
        recap = _recap_field_values(task)
        self._recap_values = recap
        # the last four digits of every caller version of each phone field (_phone_tail)
        self._phone_tails = [
            (key, tails) for key, spec, vals in recap if spec.grader == "normalized_phone"
            for tails in [[t for t in (re.sub(r"\D", "", str(canonical_phone(v) or ""))[-4:]
                                       for v in vals) if len(t) == 4]] if tails]
        self._specs = {(a.id, f.name): f for a in task.artifacts for f in a.fields}
        self._field_words = {
            key: frozenset(_stem(w) for w in _words(" ".join([spec.label, *spec.synonyms]))
                           if w not in _STOPWORDS and len(w) > 2)
            for key, spec in self._specs.items()}
        # the content words of a field's label and synonyms: no pronoun, auxiliary, question
        # word or verb form in -ing ("Where are you calling from?" names no field)
        self._vocab_words = {
            key: frozenset(
                _stem(_base(w)) for w in _words(spec.label) + [
                    w for w in _words(" ".join(spec.synonyms)) if not w.endswith("ing")]
                if w not in _STOPWORDS and w not in _FUNCTION_WORDS and len(w) > 2)
            for key, spec in self._specs.items()}
        # fields whose values are words a sentence may say about anything ("hybrid", "low"):
        # enums and one-word values, stated only beside another restated value
        self._word_valued = frozenset(
            key for key, spec, vals in recap
            if spec.grader == "enum" or (vals and not any(_distinctive(v) for v in vals)))
        self._instructed = frozenset((a.id, f.name) for a in task.artifacts for f in a.fields
                                     if f.source.instruction)
        self._gated: dict[str, tuple[tuple[str, ...], ...]] = _gated_by_first_word(gated)

    @classmethod
    def for_task(cls, task: TaskSpec) -> SemanticActObserver:
        """The observer compiled for ``task``, shared by every run of that task object in
        the process (an observer is never changed after it is built, and a task is frozen).
        Building one costs a few milliseconds, as much as a minute of media on the virtual
        clock; the simulated caller and the orchestrator each need one per run."""
        with _SHARED_LOCK:
            hit = _SHARED.get(id(task))
            if hit is not None and hit[0] is task:
                _SHARED.move_to_end(id(task))
                return hit[1]
        observer = cls(task)
        with _SHARED_LOCK:
            # The entry keeps the task alive, so its id() is not reused while cached.
            _SHARED[id(task)] = (task, observer)
            while len(_SHARED) > _SHARED_MAX:
                _SHARED.popitem(last=False)
        return observer

    # ------------------------------------------------------------------ public

    def observe(self, transcript: str) -> list[Act]:
        """The semantic acts of one agent turn, in sentence order. A turn that restates two
        or more fields is also a summary. A pure function of the transcript (acts are
        frozen): remembered per observer, so a script's repeats are read once."""
        acts: tuple[Act, ...] = remember(
            self._observed_memo, transcript,
            lambda: tuple(self._revised(transcript, self._observe(transcript))), _MEMO_MAX)
        return list(acts)

    def observe_rules(self, transcript: str) -> list[Act]:
        """The acts of the rules alone, before the act model's second opinion (what the model
        is trained on)."""
        return self._observe(transcript)

    def _revised(self, transcript: str, acts: list[Act]) -> list[Act]:
        """The act model's second opinion on recaps and information (runtime/session/act_model.py):
        it may take a recap away, and add or take away information, except information that
        names a negotiated field (the caller weighs the proposal in it)."""
        margins = load_act_model().margins(transcript, [(a.act, a.field) for a in acts])
        decision = {act: m > 0 for act, m in margins.items()}
        acts = self._approval_opinion(transcript, acts, margins["request_approval"])
        rules = acts
        if not decision["summarize"] and not any(
                _RECAP_WORDS.search(" ".join(_words(s))) for s in split_sentences(transcript)):
            acts = [a for a in acts if a.act != "summarize"]  # a recap it announces stays
        informs = [a for a in acts if a.act == "inform"]
        if not decision["inform"] and informs:
            acts = [a for a in acts if a.act != "inform" or any(
                name in self._negotiated for _art, name in self.fields_in(a.text))]
        elif decision["inform"] and not informs:
            sentences = split_sentences(transcript) or [transcript]

            def place(a: Act) -> int:  # the sentence an act came from
                return next((i for i, s in enumerate(sentences)
                             if a.text in s or s in a.text), len(sentences))

            spoken = {place(a) for a in acts}
            bare = next((i for i in range(len(sentences)) if i not in spoken), None)
            if bare is None and not any(a.act == "request_approval" for a in acts):
                bare = len(sentences) - 1  # information beside another act in one sentence
            if bare is not None:  # (never inside a request for leave: guide rule 2)
                at = next((k for k, a in enumerate(acts) if place(a) > bare), len(acts))
                acts = [*acts[:at], Act(act="inform", text=sentences[bare]), *acts[at:]]
        return acts or rules  # never a turn without acts

    def _approval_opinion(self, transcript: str, acts: list[Act], margin: float) -> list[Act]:
        """The act model's word on a request for leave, taken only when it is sure: a request
        the rules found becomes what its sentence otherwise is (a question the agent would act
        on: an offer; another question: an ask; a statement: information); a request the rules
        missed replaces the turn's last offer, else its last field-less question, else its last
        field-less information, bound to the task's one gated action."""
        asks = [k for k, a in enumerate(acts) if a.act == "request_approval"]
        if asks and margin < -APPROVAL_MARGIN:
            out = list(acts)
            model = load_act_model()
            for k in asks:
                if _LEAVE_IN_SO_MANY_WORDS.search(" ".join(_words(acts[k].text))):
                    continue  # "Do you approve the enrollment?": leave asked in so many words
                if self._action_in_so_many_words(acts[k].text):
                    continue  # "Shall I raise the ticket?": the task's verb and artifact
                own = [(a.act, a.field) for a in acts if a.text == acts[k].text]
                if model.margins(acts[k].text, own)["request_approval"] >= -APPROVAL_MARGIN:
                    continue  # its own sentence, read alone, may ask: the rules stand
                words = " ".join(_words(out[k].text))
                kind: ActName = ("inform" if not out[k].text.rstrip().endswith("?")
                                 else "offer" if _AGENT_ACTS.search(words) else "ask")
                out[k] = out[k].model_copy(update={"act": kind, "action": None, "artifact": None})
            return [a for k, a in enumerate(out) if a not in out[:k]]
        if asks or margin <= APPROVAL_MARGIN or len(self._rules) != 1:
            return acts
        rule = self._rules[0].rule
        for kinds in (("offer",), ("ask", "confirm"), ("inform",)):
            at = next((k for k in range(len(acts) - 1, -1, -1)
                       if acts[k].act in kinds and acts[k].field is None), None)
            if at is not None and self._names_another_object(acts[at].text):
                return acts  # "May I submit the leave request?": the rules' object stands
            if at is not None:
                return [*acts[:at], Act(act="request_approval", action=rule.action,
                                        artifact=rule.artifact, text=acts[at].text),
                        *acts[at + 1:]]
        sentences = split_sentences(transcript) or [transcript]
        return [*acts, Act(act="request_approval", action=rule.action, artifact=rule.artifact,
                           text=sentences[-1])]

    def _action_in_so_many_words(self, sentence: str) -> bool:
        """The sentence proposes the gated action by a verb the task declares for it, done by
        the agent, with the gated artifact's own noun as its object ("Shall I raise the
        ticket?", "Shall I lodge the upload ticket now?"): the act model, which learned its
        words on other tasks (where a ticket may be no gated thing), does not overrule it."""
        words = _words(sentence)
        for i in range(len(words)):
            for r in self._rules:
                verbs = [v for v in r.verbs if tuple(words[i:i + len(v)]) == v]
                if not verbs or _noun_use(words, i) or not self._agent_does(words, i):
                    continue
                end = i + max(len(v) for v in verbs)
                if end < len(words) and words[end] in ("you", "me", "us", "him", "her", "them"):
                    continue  # "Should I send you the cancellation form?": a copy for someone
                obj, head, after = self._object_phrase(words, end)
                if after < len(words) and words[after] in (
                        "to", "for", "with", "via", "from", "into", "on"):
                    continue  # "send the headcount plan to HR": where it goes is the model's call
                if head in r.artifact_words and not obj & (
                        _OTHER_VERSION | {"another"} | (_FOREIGN_OBJECT - self._artifact_words)):
                    return True  # the artifact's own noun heads the object
        return False

    def _names_another_object(self, sentence: str) -> bool:
        """The sentence has a gated verb whose object is not the gated artifact."""
        words = _words(sentence)
        return self._has_gated(words) and self._bind(
            _Clause.of(sentence, words, sentence.rstrip().endswith("?"), [])) is None

    def _observe(self, transcript: str) -> list[Act]:
        acts: list[Act] = []
        previous: list[str] = []
        for sentence in split_sentences(transcript):
            acts.extend(self._sentence(sentence, previous))
            previous = _words(sentence)
        acts = self._after_announcement(acts)
        if any(a.act in ("greet", "close") for a in acts):
            # An introduction or a send-off around the greeting or closing is part of it;
            # news ("It's been submitted") stays information.
            acts = [a for a in acts if not (
                a.act == "inform" and not _NEWS.search(a.text) and not self.fields_in(a.text)
                and not _STATUS_NEWS.search(" ".join(_words(a.text)))
                and (_PLEASANTRY.search(" ".join(_words(a.text)))
                     or (len(_words(a.text)) <= 3 and any(g.act == "greet" for g in acts))
                     or self._desk_intro(a.text, a.text)))]
        for k in range(1, len(acts)):
            if (acts[k].act in ("request_approval", "offer") and acts[k - 1].act == "inform"
                    and acts[k - 1].text != acts[k].text
                    and _READY_LEAD_IN.search(" ".join(_words(acts[k - 1].text)))
                    and not self.fields_in(acts[k - 1].text)):
                # "That should be everything we need. Shall I send it off?": the lead-in is
                # part of the proposal
                _fold_into_next(acts, k - 1)
                break
        for k in range(1, len(acts)):
            if (acts[k].act == "request_approval" and (acts[k - 1].act == "inform" or (
                    acts[k - 1].act == "offer" and not acts[k - 1].text.rstrip().endswith("?")))
                    and (self._proposed_gated(acts[k - 1].text)
                         or _generic_proceed(" ".join(_words(acts[k - 1].text))))
                    and not self._has_gated(_words(acts[k].text))):
                # "I can submit it now. Is that OK?" is one request, said in both sentences
                _fold_into_next(acts, k - 1)
                break
        for k in range(1, len(acts)):
            if (acts[k].act == "ask" and acts[k].field is None
                    and _HELP_TAG.search(" ".join(_words(acts[k].text)))
                    and acts[k - 1].act in ("inform", "offer")
                    and acts[k - 1].text != acts[k].text
                    and _I_CAN.search(" ".join(_words(acts[k - 1].text)))):
                # "I can text you a checklist. Would that help?": one offer in two sentences
                acts[k] = acts[k].model_copy(update={"act": "offer"})
                _fold_into_next(acts, k - 1)
                break
        for k in range(len(acts) - 1):
            nxt = acts[k + 1]
            if (acts[k].act == "inform" and nxt.text != acts[k].text and nxt.act in (
                    "summarize", "read_back", "confirm") and _RECAP_INTRO.search(
                    " ".join(_words(acts[k].text))) and not self.fields_in(acts[k].text)):
                del acts[k]  # "Here's where we've landed." introduces the recap that follows
                break
        acts = [a for k, a in enumerate(acts) if not (
            k > 0 and a.act == "request_approval" and acts[k - 1].act == "request_approval"
            and acts[k - 1].action == a.action)]  # "If that works, I'll commit it. A go?"
        acts = self._source_reports(acts)
        acts = self._reported_values(acts)
        restated = {(a.artifact, a.field) for a in acts
                    if a.act in ("read_back", "confirm") and a.field}
        if len(restated) >= 2 and not any(a.act == "summarize" for a in acts):
            first = next(i for i, a in enumerate(acts) if a.act in ("read_back", "confirm"))
            acts.insert(first, Act(act="summarize", text=acts[first].text))
        if len(restated) == 1 and any(
                a.act == "summarize" and ":" in a.text and any(
                    b.text == a.text and b.act in ("read_back", "confirm") and b.field
                    for b in acts)
                for a in acts):
            # "Let me read that back to you: M, two, zero, four, one, seven.": one value read
            # back is no recap
            acts = [a for a in acts if a.act != "summarize"]
        first_summary = next((i for i, a in enumerate(acts) if a.act == "summarize"), None)
        return [a for i, a in enumerate(acts)
                if a.act != "summarize" or i == first_summary]  # one recap per turn

    @staticmethod
    def _recap_part(text: str) -> str | None:
        """The list a recap sentence reads out: what follows its colon ("Here's the draft:
        Daniel Osei, contractor badge, ..."), or the whole sentence when it is a list of four
        or more comma-separated items."""
        head, colon, tail = text.partition(":")
        if colon and tail.count(",") >= 1 and len(_words(head)) <= 10:
            return tail
        if text.count(",") >= 3 and not text.rstrip().endswith("?"):
            return text
        return None

    def _announces_recap(self, c: _Clause) -> bool:
        """"Let me read the draft back." / "Let me run through the ticket." / "Let me go over
        the booking.": reading back the record (its own words, or the draft / what I have)."""
        m = _RECAP_VERB.search(c.joined)
        if m is None:
            return False
        rest = c.joined[m.start():].split()
        return "back" in rest or bool({_stem(w) for w in rest} & (
            self._artifact_words | self._record_words | _RECORD_WORDS))

    def _recap_list(self, text: str) -> bool:
        """A sentence that reads a list of the record's values: a colon-introduced or long
        comma list stating two or more fields (named or by value)."""
        listed = self._recap_part(text)
        if listed is None:
            return False
        head = _words(text.partition(":")[0]) if ":" in text else []
        if set(_words(listed)) & _WH or (head and (_REQUEST.search(" ".join(head)) or set(
                head) & {"tell", "need", "give", "ask", "questions", "things"})):
            return False  # "Tell me about it: what it did, its peak traffic, ...": a request
        if text.rstrip().endswith("?") and re.search(r"\bor\b", listed):
            return False  # "Three quick ones: is that a desktop or a laptop, is it Edge or ...?"
        found = self._recap_fields(listed)
        if not self._recap_fields(listed, named=False):
            return False  # a recap says values, not only field names
        if ":" in text:
            return len(found) >= 2
        items = [i for i in re.split(r",|;|\band\b", listed) if _words(i)]
        return len(found) >= 3 and len(found) * 2 >= len(items)

    def _after_announcement(self, acts: list[Act]) -> list[Act]:
        """"Let me read back what I have. Work order WO-55102, pump house two, …": the
        sentence after an announced recap restates values even without a lead-in."""
        out: list[Act] = []
        announced: str | None = None
        listed: str | None = None
        done: set[str] = set()
        for act in acts:
            if announced is not None and act.text != announced and act.act in (
                    "inform", "read_back") and all(a.act in ("inform", "read_back")
                                                    for a in acts if a.text == act.text):
                if act.text in done:
                    continue
                done.add(act.text)
                restated = [(a.artifact, a.field) for a in acts
                            if a.text == act.text and a.act == "read_back" and a.field
                            and a.artifact]
                restated += [k for k in self._recap_fields(act.text) if k not in restated]
                if restated:
                    out += [a for a in self._field_acts("read_back", restated, act.text)]
                    continue
                if act.text.count(",") >= 2:
                    continue  # the recap's list itself, nothing else
            elif listed is not None and act.text != listed and act.act == "inform" and len(
                    more := self._recap_fields(act.text)) >= 2:
                # the recap's list goes on in the next sentence ("… four years' service.
                # Sixteen weeks paid, then up to ten weeks unpaid, and sixty days' notice.")
                if act.text not in done:
                    done.add(act.text)
                    out += self._field_acts("read_back", more, act.text)
                continue
            out.append(act)
            if act.act == "summarize" and not any(
                    a.act in ("read_back", "confirm") and a.text == act.text for a in acts):
                announced = act.text
            elif act.text != announced:
                announced = None
            if act.act == "summarize":
                listed = act.text
            elif act.text != listed:
                listed = None
        return out

    def _source_reports(self, acts: list[Act]) -> list[Act]:
        """"The policy gives sixteen weeks of paid leave.", "I found it: the meal per diem is
        seventy dollars": a statement reporting what a document says tells the caller
        something; it restates no value from the document (unless the agent says it recorded
        it: "I've put sixteen weeks on the memo"). A value the caller gave, said before the
        report begins, is still restated ("Chicago, okay, so under the travel policy ...": the
        caller hears it and corrects it if it is wrong); one the report itself says is part of
        what the document says ("I checked the routing guide, and medical privacy cases go to
        ..."), as every writer of the corpus labels it."""
        out: list[Act] = []
        done: set[str] = set()
        announced: str | None = None  # "Found it." before the sentence that reports
        for i, act in enumerate(acts):
            words = _words(act.text)
            joined = " ".join(words)
            report = _SOURCE_REPORT.search(joined)
            if act.act == "inform" and report and (
                    len(words) <= 4 or not self._valued_fields(act.text)):
                announced = act.text  # "Found it.", "I've found the current leave policy."
            if act.act not in ("read_back", "summarize") or act.text.rstrip().endswith("?"):
                out.append(act)
                continue
            if (not report and announced is None) or _RECORDED.search(joined) or any(
                    a.text == act.text and a.act not in ("read_back", "summarize", "inform")
                    for a in acts):
                out.append(act)
                continue
            callers = self._said_before_report(act.text, joined, report)
            if act.act == "read_back" and (act.artifact, act.field) in callers:
                out.append(act)
                if act.text not in done and not any(
                        a.text == act.text and (a.act == "inform" or (
                            a.act == "read_back" and (a.artifact, a.field) in callers))
                        for a in acts[i + 1:]):
                    # "Birth parent, okay, so under the policy you get sixteen weeks": the
                    # restated value, then what the document says
                    done.add(act.text)
                    out.append(Act(act="inform", text=act.text))
            elif act.text not in done and not any(
                    a.text == act.text and a.act == "read_back"
                    and (a.artifact, a.field) in callers for a in acts):
                done.add(act.text)
                out.append(Act(act="inform", text=act.text))
        return out

    def _reported_values(self, acts: list[Act]) -> list[Act]:
        """"On terms, you qualify for net forty-five.", "So the disposition is rework.": a value
        the caller never gave (a lookup's result, a rule's outcome), stated outside a recap and
        without saying it was recorded, reports it; it restates nothing ("I've put the
        disposition down as rework" does)."""
        if any(a.act == "summarize" for a in acts):
            return acts
        out: list[Act] = []
        for text in dict.fromkeys(a.text for a in acts):
            mine = [a for a in acts if a.text == text]
            words = _words(text)
            joined = " ".join(words)
            if (text.rstrip().endswith("?") or _RECORDED.search(joined)
                    or _RECORDED_AS.search(joined) or _SO_LEAD.match(joined)
                    or len(words) <= 8):
                out += mine  # "I've got the status as submitted.", "So that's ...", "Great,
                continue     # one fifty in goodwill."
            kept = [a for a in mine if not (a.act == "read_back" and a.field
                                            and (a.artifact, a.field) in self._worked_out)]
            out += kept or [Act(act="inform", text=text)]
        return out

    def _said_before_report(self, text: str, joined: str,
                            m: re.Match[str] | None) -> set[FieldKey]:
        """The caller's fields whose value ``text`` says before its report of a document begins
        (``m``, the report's match in ``joined``; none when the report was announced in an
        earlier sentence): in the longest lead of the text up to a comma, colon, semicolon or
        dash that ends before the report's words, or in the words before the report."""
        if m is None:
            return set()
        before = len(joined[:m.start()].split())
        lead = ""
        for cut in re.finditer(r"[,;:\u2014\u2013]|\s-\s", text):
            if len(_words(text[:cut.start()])) > before:
                break
            lead = text[:cut.start()]
        said = set(self._valued_fields(lead)) if lead else set()
        if _ANNOUNCEMENT_END.search(m.group(0)):
            # "Found it, Kestrel Logistics.", "I've got your file open under E4471.": what was
            # found is named right after the announcement, before its report begins
            # (not after a colon: "Found it: on new MacBooks, ..." is the report)
            end = len(joined[:m.end()].split())
            cuts = [(_words(text[:c.start()]), c.group(0)) for c in re.finditer(
                r"[,;:.!?\u2014\u2013]|\s-\s", text)]
            colon = next((mark == ":" for w, mark in cuts if len(w) >= end), False)
            after = next((w for w, _ in cuts if len(w) > end), _words(text))[end:]
            if after and len(after) <= 5 and not colon:
                said |= set(self._valued_fields(" ".join(after)))
        if before:  # unpunctuated: "chicago okay so chicago is a tier one city under the ..."
            said |= set(self._valued_fields(joined[:m.start()]))
        return said & self._caller_fields

    def fields_in(self, text: str) -> list[FieldKey]:
        """The fields a text names (lexicon) or states a caller's value of (remembered per
        text, like :meth:`_valued_fields`)."""
        fields: tuple[FieldKey, ...] = remember(self._fields_memo, text,
                                                lambda: tuple(self._fields_in(text)), _MEMO_MAX)
        return list(fields)

    def _fields_in(self, text: str) -> list[FieldKey]:
        words = _words(text)
        clause = _Clause.of(text, words, False, [])
        out = self._fields(clause)
        out += [k for k in self._valued_fields(text) if k not in out]
        return out

    def names_object(self, text: str, artifact_id: str) -> bool:
        """Whether ``text`` names the artifact (its title, kind or a rule's object noun)."""
        stems = {_stem(w) for w in _words(text)}
        return any(r.rule.artifact == artifact_id and r.artifact_words & stems
                   for r in self._rules)

    def offers_task_step(self, text: str) -> bool:
        """Whether an offer proposes a step of the task's own (non-gated) tools: checking,
        looking up, marking ready, or what a task tool does ("Should I check the calendar?")
        rather than an extra ("a copy by email")."""
        stems = {_stem(w) for w in _words(text)}
        return bool(stems & self._step_words)

    # ------------------------------------------------------------------ sentence level

    def _desk_intro(self, head: str, sentence: str) -> bool:
        """"Halden IT service desk, Priya here": a desk's name, not a phrase about the task
        ("In a line or two, ...", "The Aurora distribution center, got it.", "And the team,
        that was five engineers, yes?")."""
        words = _words(head)
        if not words or not _DESK_INTRO.match(" ".join(words)) or set(words) & _NOT_INTRO:
            return False
        if words[0] in _STOPWORDS | {"so", "that", "this", "a", "standard", "sorry"}:
            return False
        if any(w.endswith("ed") or w in {"to", "there", "sent", "by", "our", "rules", "get"}
               for w in words):
            return False  # "Sorry, the line dropped for a second there.", "Sent to billing."
        if self._recap_fields(head, named=False):
            return False  # a value of the task's: "Crestline Courier Services, contract ..."
        sent = " ".join(_words(sentence))
        return not (_ACK.search(sent) or _CONFIRM_TAG.search(sentence)
                    or self._fields(_Clause.of(head, words, False, [])))

    def _sentence(self, sentence: str, previous: list[str]) -> list[Act]:
        head, comma, tail = sentence.partition(",")
        if comma and not previous and _words(tail) and self._desk_intro(head, sentence):
            # "Halden IT service desk, Priya here, what's going on?"
            return [Act(act="greet", text=sentence), *[
                a for a in self._sentence(tail.strip(), _words(head)) if a.act != "greet"]]
        m = _TRAILING_QUESTION.search(sentence)
        if m is not None and sentence.rstrip().endswith("?") and m.start() > 0:
            head, tail = sentence[:m.start()], sentence[m.end():]
            if _words(head) and _words(tail) and not _READY_LEAD_IN.search(
                    " ".join(_words(head))):  # "That covers everything, so, um, shall I ...?"
                asked_part = head.rsplit(":", 1)[-1]  # "Two quick ones: is it a desktop ..."
                head_clause = _Clause.of(asked_part, _words(asked_part), True, previous)
                asked = self._question_form(head_clause) or (  # "Which shift ran them, and ...?"
                    bool(head_clause.words) and head_clause.words[head_clause.lead()] in _WH
                ) or bool(_HEAD_TAG.search(head))  # "So you're with Orbital Freight, yes, and"
                first = [a for a in self._sentence(head.strip() + ("?" if asked else "."),
                                                   previous)
                         if a.act != "inform"]  # an acknowledgement inside a question
                return [*first, *self._sentence(tail.strip(), _words(head))]
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
            parts = sentence.split(",")
            if len(parts) > 2 and _words(parts[0]) == words[:n_prefix] and self._desk_intro(
                    parts[1], sentence):
                # "Good afternoon, Riverbend Heart and Vascular scheduling, this is Maria, ...":
                # the desk's name is part of the greeting
                rest_words = _words(",".join(parts[2:]))
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
        """The acts of one clause: the first of the steps below that decides it wins."""
        question = self._is_question(c)
        summary = self._summary_act(c)

        if _CLOSE_QUESTION.search(c.joined):
            return [*summary, Act(act="close", text=c.text)]
        if _LOOKUP_LEAVE.search(c.joined) and not self._has_gated(c.words):
            return [*summary, Act(act="offer", text=c.text)]

        proposal = self._proposes(c, question)
        if proposal:
            approval = self._approval_asked(c)
            if approval is not None:
                return [*summary, approval]
        choice = self._choice_offered(c) if question else []
        if question and _SOMEONE_DID_Q.match(c.led) and not choice:
            # "Has your manager already seen these dates?", "Is Tom planning to share the plan
            # with Crestline?": what someone did or plans, not a field's value (223 of 225
            # such questions in the read corpus ask no field)
            return [*summary, Act(act="ask", text=c.text)]
        fields = self._fields(c)
        if choice and not proposal:  # "Is it Vision Basic or Vision Plus?": the caller picks
            return [*summary, *self._field_acts("ask", choice, c.text)]
        if proposal and self._field_not_leave(c, fields):
            proposal = False
        stated = self._valued_fields(c.text)
        if question and self._decision_named(c) and not (
                _EXTRA_SENT.search(c.joined) or _SENT_TO_CALLER.search(c.joined)):
            proposal = False  # "Should I plan a public status page post?": the caller's yes
            #                   or no is the field's value, no offer to take or leave
        elif proposal or self._offers(c, fields, stated):
            return [*summary, Act(act="offer", text=c.text)]

        if _CLOSE_ANY.search(c.joined) or (not question and _CLOSE.search(c.joined)):
            return [*summary, *self._close_acts(c)]

        stated = self._owned_values(c, fields, stated)
        checked = self._confirmation_acts(c, question, summary, fields, stated)
        if checked is not None:
            return checked

        if summary:
            restated = self._summary_restated(c, question, fields, stated)
            return [*summary, *(self._field_acts("read_back", restated, c.text)
                                if restated else [])]

        if self._greets(c, question) and not (question and self._judged_in(c, fields)):
            return self._greeting_acts(c, question)

        if question or self._requests(c):
            asked = self._request_acts(c, question, fields)
            if asked is not None:
                return asked

        return self._statement_acts(c, question, fields, stated)

    def _is_question(self, c: _Clause) -> bool:
        """The clause asks: a question mark, a question's word order, a question after a comma
        or a wish to know ("I'd like to know ...")."""
        return (c.question or self._question_form(c) or bool(_LATE_QUESTION.search(c.text))
                or bool(_WONDER.search(c.joined)))

    def _summary_act(self, c: _Clause) -> list[Act]:
        """A summarize act if the clause sums up, lists a recap or announces one; else none."""
        return [Act(act="summarize", text=c.text)] if (
            _SUMMARIZE.search(c.joined) or self._recap_list(c.text)
            or self._announces_recap(c)) else []

    def _approval_asked(self, c: _Clause) -> Act | None:
        """The approval request of a proposal, bound to the rule of its action (for a bare
        "Shall I?", of the previous sentence's); None if no rule binds it."""
        rule = self._bind(c) or (
            self._bind(_Clause.of(c.text, c.previous, False, []))
            if c.previous and (self._bare_permission(c) or _PRO_FORM.search(c.joined))
            else None
        )
        if rule is None:
            return None
        return Act(
            act="request_approval", action=rule.action, artifact=rule.artifact,
            text=c.text,
        )

    def _decision_named(self, c: _Clause) -> bool:
        """The clause names a yes-or-no field as a thing of its own, not as the modifier of
        another ("a status page post", but not "the red tag procedure" for a red-tag field)."""
        for m in self._matches(c):
            if not any(self._is_yes_no(k) for k in m.phrase.fields):
                continue
            after = c.words[m.end] if m.end < len(c.words) else ""
            if not after or after in _DECISION_AFTER:
                return True
        return False

    def _is_yes_no(self, key: FieldKey) -> bool:
        """A field whose value is a yes or a no (a decision the caller makes)."""
        spec = self._specs.get(key)
        return spec is not None and spec.grader == "enum" and bool(spec.options) and {
            o.strip().lower() for o in spec.options} <= {"yes", "no"}

    def _field_not_leave(self, c: _Clause, fields: list[FieldKey]) -> bool:
        """A proposal that names a field asks that field, not leave for an action."""
        # "Could you confirm your date of birth?": a field, not an offer (no agent act named);
        # "Can I confirm your date of birth?" (bound to no action before)
        return bool(fields) and (not (_AGENT_ACTS.search(c.joined)
                                      or _AGENT_LOOKUP.search(c.joined))
                                 or bool(re.search(r"\b(confirm|verify|check)\b", c.joined)))

    def _offers(self, c: _Clause, fields: list[FieldKey], stated: list[FieldKey]) -> bool:
        """The clause offers the caller something (not a field asked, a greeting or a request)."""
        return bool(
            _OFFER.search(c.joined)
            # "Do you want to add a handover note while we're at it?": an extra, when no field
            # is named ("Would you like to add dental as well?" asks the dental plan)
            and not (_OFFER_NOT.search(c.joined) and (fields or not _ADDITIONAL.search(c.joined)))
            and not _GREET.search(c.joined)  # "What can I do for you?"
            and (c.words[c.lead()] not in _WH  # "Who should I list as the owner?" asks
                 or c.led.startswith(("how about i ", "how about we ")))
            and not _REQUEST.search(c.led)  # "Could you give me a date so I can put it in?"
            and (_MESSAGE_OFFER.search(c.joined) or (
                not stated and not self._readback_fields(c, fields)))
            # "Do you want the firm to send a letter?" asks the caller's choice of a field;
            # "... a copy emailed to your sponsor as well?" offers an extra
            and not (fields and not _AGENT_ACTS.search(c.joined)
                     and not _EXTRA_SENT.search(c.joined) and not _MESSAGE_OFFER.search(c.joined))
        )

    def _close_acts(self, c: _Clause) -> list[Act]:
        """A send-off, after an inform if news comes before it."""
        news = [Act(act="inform", text=c.text)] if any(
            _NEWS_BEFORE_CLOSE.search(" ".join(_words(part)))
            for part in re.split(r",|;|\bso\b", c.text)[:-1]) else []
        # "..., the hiring manager will look over the notes and we'll be in touch, so,
        # um, take care!": what happens next, then the send-off
        return [*news, Act(act="close", text=c.text)]

    def _owned_values(self, c: _Clause, fields: list[FieldKey],
                      stated: list[FieldKey]) -> list[FieldKey]:
        """The stated fields, without those stated only by a value another field owns."""
        if len(fields) == 1 and fields[0] in stated:
            # one field named with its value owns that value; another field stays stated only
            # by a value of its own ("240 million in revenue and 75 thousand for phase one")
            misheard = self._near_only(c.text) if len(stated) > 1 else {}
            stated = fields + [k for k in stated if k != fields[0]
                               and not self._same_value(k, fields[0])
                               # nor by a misheard value the named field's own misheard
                               # value is ("fourteen thousand requests" is no salary)
                               and not (k in misheard and fields[0] in misheard
                                        and misheard[k] <= misheard[fields[0]])]
        if len(stated) > 1:
            # a value held inside another stated field's value ("Jamie Reyes" among the
            # dependents "Jamie Reyes and Casey Reyes") restates that field, not its own, unless
            # named
            stated = [k for k in stated if k in fields or not any(
                o != k and self._same_value(k, o) and not self._same_value(o, k)
                for o in stated)]
        return stated

    def _confirmation_acts(self, c: _Clause, question: bool, summary: list[Act],
                           fields: list[FieldKey], stated: list[FieldKey]) -> list[Act] | None:
        """The acts of a clause that asks the caller to confirm values (or to say a value it
        must confirm); None if it asks none."""
        if question and not fields and not stated and not any(w in _WH for w in c.words) and (
                _CONFIRM_TAG.search(c.text) or _YOU_SAID.search(c.joined)
                or re.match(r"^(and |ok |okay )?(so,? )?(it is|that is|you are|is that|was that|"
                            r"was it)\b",
                            c.joined)
                or c.words[c.lead()] not in _AUX | {"can", "could", "would", "will", "may"}):
            near = self._near_value_field(c.text)
            if near:  # "Seven two zero, five five five, zero one four six?"
                return [*summary, *self._field_acts("confirm", near, c.text)]
        valued = [k for k in stated if k not in fields]
        if question and valued and self._restates(c, fields + valued):
            return [*summary, *self._field_acts("confirm", fields + valued, c.text)]
        if fields and not stated and not summary and (
                _CONFIRM_REQUEST.search(c.joined) or (
                    question and _WH_QUESTION.search(c.joined) and _CONFIRM.search(c.joined))
        ) and not self._readback_fields(c, fields):
            # "Can you confirm your employee ID?": the caller must say the value, an ask
            return self._field_acts("ask", fields, c.text)
        if self._is_confirm(c, fields) or (question and _EITHER_VALUE.search(c.joined)
                                           and not fields and self._near_value_field(c.text)):
            # a summary's closing "is that all correct?" confirms the whole summary; a value
            # asked back with no field named is about the field with the nearest value
            # ("Can you confirm it's E four four one seven?", "Was that four sites or five?")
            named = [] if summary else fields + [k for k in stated if k not in fields]
            if not named and not summary and not any(w in _WH for w in c.words) and (
                    not c.previous or _words(c.text) != c.previous):
                named = self._near_value_field(c.text)
            return [*summary, *self._field_acts("confirm", named, c.text)]
        return None

    def _summary_restated(self, c: _Clause, question: bool, fields: list[FieldKey],
                          stated: list[FieldKey]) -> list[FieldKey]:
        """The fields a summary restates: read back, stated, listed, and small values beside."""
        restated = self._readback_fields(c, fields)
        restated += [k for k in stated if k not in restated]
        listed = self._recap_part(c.text)
        if listed is not None:
            restated += [k for k in self._recap_fields(listed) if k not in restated]
        if restated and not question:
            restated += [k for k in self._small_values_said(c) if k not in restated]
        return restated

    def _greets(self, c: _Clause, question: bool) -> bool:
        """The clause greets, makes small talk or introduces the desk."""
        return bool(
            _GREET.search(c.led) or _GREET.search(c.joined) or _SMALL_TALK.search(c.joined) or (
                not question and (
                    _GREET_STATEMENT.search(c.joined) or _DESK_HELLO.search(c.joined) or (
                        not c.previous and self._desk_intro(c.text, c.text))))
        )

    def _judged_in(self, c: _Clause, fields: list[FieldKey]) -> bool:
        """A how-question in small talk's words asks after a field whose answer is a judgement
        (an option or a rating): "How was the workload?" with a workload rating, "How are you
        travelling up?" with a travel mode, "How did it go against the sprint goal?"; not a
        name or an amount ("How's the practice today, busy?", "So how was Milwaukee, apart
        from the hotel bill?"). A synonym of three or more words that takes in the small talk
        asks after its field whatever the field holds ("How are you getting by in the
        meantime?" with "how are you getting by" for the workaround)."""
        talk = _SMALL_TALK.search(c.joined)
        if talk is not None:
            first = len(c.joined[:talk.start()].split())
            last = first + len(talk.group(0).split())
            if any(len(m.phrase.tokens) >= 3 and m.start < last and first < m.end
                   for m in self._matches(c)):
                return True
        if _APART_FROM.search(c.joined):
            return False
        return any(
            spec.grader == "enum" or (spec.grader == "numeric_tolerance"
                                      and "rating" in f"{spec.name} {spec.label}".lower())
            for spec in (self._specs.get(k) for k in fields) if spec is not None)

    def _greeting_acts(self, c: _Clause, question: bool) -> list[Act]:
        """The acts of a greeting: the news after thanks for holding, or a greet (and the
        caller's name asked, if it is)."""
        held = _HOLD_THANKS.match(c.joined)
        if held and len(c.words) - len(held.group(0).split()) >= 4:
            # "Thanks for holding, the check came back with no matches.": the news after
            # the thanks is what the sentence says
            return self._classify(_Clause.of(
                c.text, c.words[len(held.group(0).split()):], question, c.previous))
        if self._caller_name and _WHO_IS_CALLING.search(c.joined):
            # "Thanks for calling ..., who do I have the pleasure of speaking with?"
            return [Act(act="greet", text=c.text),
                    *self._field_acts("ask", self._caller_name, c.text)]
        return [Act(act="greet", text=c.text)]

    def _requests(self, c: _Clause) -> bool:
        """The statement asks the caller for something (not a lookup announced, nor values
        stated after a request's lead)."""
        return bool((_REQUEST.search(c.led) or _REQUEST.search(c.joined)) and not (
            # "Give me a second while I look up your premium." / "And for the priority:
            # a brake complaint with low fluid is P one.": a statement, no request
            ((_AGENT_LOOKUP.search(c.joined) or _MOMENT_ASKED.search(c.joined))
             and not _REQUEST_NOT_BY_LEAD.search(_MOMENT_ASKED.sub(" ", c.joined)))
            or (_REQUEST_BY_LEAD.match(c.joined) and not _REQUEST_NOT_BY_LEAD.search(c.joined)
                and self._recap_fields(c.text, named=False)
                and not self._choice_offered(c))))

    def _request_acts(self, c: _Clause, question: bool,
                      fields: list[FieldKey]) -> list[Act] | None:
        """The acts of a question or request: a value asked back, or the fields asked; None if
        a request asks nothing this can name."""
        lead = c.words[c.lead()]
        declarative = c.lead() > 0 and c.words[c.lead() - 1] in _SUBJECTS  # "you have"
        if fields and c.text.rstrip().endswith("?") and "or" not in c.words and (
                lead in _IS_WAS or lead not in _AUX | _WH or declarative) and not (
                set(c.words) & _WH and not re.search(r"\bis that (what|who)\b", c.joined)
                ) and not re.search(r"\b(can|could|would|will) you\b", c.joined):
            said = [k for k in fields if self._says_a_value(k, c.text)]
            if said:  # "Was that four thousand at peak?": a value asked back
                return self._field_acts("confirm", said, c.text)
        if fields:
            if self._caller_name and _YOUR_SURNAME.search(c.joined) and (
                    self._caller_name[0] not in fields):
                fields = [*self._caller_name, *fields]  # "spell your last name, and ..."
            return self._field_acts("ask", fields, c.text)
        if question and self._caller_name and (_WHO_IS_CALLING.search(c.joined)
                                               or _YOUR_SURNAME.search(c.joined)):
            return self._field_acts("ask", self._caller_name, c.text)
        if question:
            return self._field_acts("ask", self._vocabulary_field(c), c.text)
        need = _NEED_LEAD.match(c.led)
        if need:  # "I'll need a number we can reach you on.": a request for a value
            rest = c.led[need.end():].split()
            wh = rest if rest and rest[0] in _WH else ["what", "is", *rest]
            return self._field_acts("ask", self._vocabulary_field(
                _Clause.of(" ".join(wh), wh, True, [])), c.text)
        return None

    def _statement_acts(self, c: _Clause, question: bool, fields: list[FieldKey],
                        stated: list[FieldKey]) -> list[Act]:
        """The acts of what is left: a step announced, an exclamation, a field named next,
        values read back (with any news after them), or an inform."""
        if _ANNOUNCE_STEP.search(c.led):
            return [Act(act="inform", text=c.text)]  # "Let me check the routing guide ..."
        if (not question and c.text.rstrip().endswith("!") and not fields and not stated
                and len(c.words) <= 14 and not _NEWS.search(c.text)
                and not _STATUS_NEWS.search(c.joined) and not _ACK.match(c.joined)
                and not self._recap_fields(c.text, named=False)):
            return [Act(act="greet", text=c.text)]  # "Glad the webinar was useful!"
        if fields and not stated and self._field_named_next(c):
            return self._field_acts("ask", fields, c.text)  # "And then the due date, ..."
        readback = self._statement_restated(c, question, fields, stated)
        if readback and not question and self._offers_alternatives(c):
            return [Act(act="inform", text=c.text)]
        if readback and not question:
            # "March first, twenty twenty-seven, and hybrid.": beside a restated value, an
            # option or a one-word value of another field is restated too
            readback += [k for k in self._word_values_said(c) if k not in readback]
            readback += [k for k in self._small_values_said(c) if k not in readback]
        if readback:
            news = [Act(act="inform", text=c.text)] if not question and any(
                _NEWS_CLAUSE.search(" ".join(_words(part)))
                for part in re.split(r",|;|\band\b|\bso\b|\bbut\b", c.text)[1:]) else []
            return [*self._field_acts("read_back", readback, c.text), *news]
        return [Act(act="inform", text=c.text)]

    def _statement_restated(self, c: _Clause, question: bool, fields: list[FieldKey],
                            stated: list[FieldKey]) -> list[FieldKey]:
        """The fields a statement restates: read back, stated, recorded or a phone's tail."""
        readback = self._readback_fields(c, fields)
        readback += [k for k in stated if k not in readback]
        if not readback and not question and (_READBACK_LEAD.search(c.joined) or _ACK.search(
                c.joined) or _IT_IS.search(c.joined) or _SO_LEAD.match(c.joined)):
            # "I've set the decision to go." / "Got it, vacation." / "May thirty-first it is."
            recorded = bool(_RECORDED.search(c.joined))  # "I've set it as a P4."
            readback = [k for k in self._recap_fields(c.text, named=False)
                        if k not in self._instructed or k in fields or recorded]
            # (not "It's booked": news)
            readback += [k for k in self._small_values_said(c) if k not in readback]  # "4 people"
            if not readback and (len(_value_words(c.words)) <= 6 or recorded):
                # "I'll put it down as one fifty-eight"
                readback = self._near_value_field(c.text, fields)
        if not readback and not question:
            readback = self._phone_tail(c.text)  # "Zero one eight six, fixed."
        return readback

    # ------------------------------------------------------------------ proposals

    def _bare_permission(self, c: _Clause) -> bool:
        return c.joined in _BARE_PERMISSION or bool(_ASKS_PERMISSION.fullmatch(c.joined))

    def _proposes(self, c: _Clause, question: bool) -> bool:
        """The sentence asks leave to carry out a gated verb or to go ahead. A subordinate
        clause does not count: "Before I submit it, what's your phone number?" asks a field."""
        if self._leave_in_condition(c):
            return True
        c = self._main_after_subordinate(c, question)
        if self._gated_only_subordinate(c) or self._no_leave_asked(c, question):
            return False
        return self._asks_leave(c, question)

    def _leave_in_condition(self, c: _Clause) -> bool:
        """A statement asks leave by a condition: "If so, I'll submit it", "If you're happy for
        me to book the order, ..."."""
        agreed = _IF_AGREED.search(c.joined)
        if agreed:  # "If it is, I'll put the request through.": leave asked in a statement
            rest = list(itertools.takewhile(lambda x: x not in _TIME_CLAUSE,
                                            c.joined[agreed.end():].split()))
            # not a gated verb in a time clause: "If so, we'll let your lender know once the
            # cancellation is processed."
            if self._has_gated(rest) or _generic_proceed(" ".join(rest)):
                return True
        leave = _IF_LEAVE.search(c.joined)
        if leave:
            named = leave.group("act").split()[:10]
            if (self._has_gated(named) or _generic_proceed(" ".join(named))
                    or _WILL_PROCEED.search(leave.group("act"))):
                return True
        return False

    def _main_after_subordinate(self, c: _Clause, question: bool) -> _Clause:
        """The main clause after a leading subordinate one ("If that's all correct, ..."), or
        the clause itself."""
        if c.words and c.words[0] in _SUBORDINATORS and "," in c.text:
            head, main = c.text.split(",", 1)
            main_words = _words(main)
            # "If that's all correct I can submit it now, is that alright?": the tag asks
            # leave for what the head says
            previous = _words(head) if (" ".join(main_words) in _BARE_PERMISSION or bool(
                _ASKS_PERMISSION.fullmatch(" ".join(main_words)))) else c.previous
            c = _Clause.of(main, main_words, question, previous)
        return c

    def _gated_only_subordinate(self, c: _Clause) -> bool:
        """A gated verb only in a subordinate clause, with no leave asked outright."""
        main_only = _main_clauses(c.text)
        kept = _words(main_only)
        gated_anywhere = self._has_gated(c.words) or bool(_generic_proceed(c.joined))
        # "..., so I've got them on the proposal when I send it", "just so I put the right
        # thing in, is that ten thousand dollars or ten percent?"
        return bool(main_only != c.text and gated_anywhere and not (
                self._has_gated(kept) or _generic_proceed(" ".join(kept))) and not (
                _APPROVAL_EXPLICIT_Q.search(c.joined) or _APPROVAL_EXPLICIT_S.search(c.joined)))

    def _no_leave_asked(self, c: _Clause, question: bool) -> bool:
        """The gated verb is not the agent's to ask leave for: leave waited for or denied, the
        caller's act, a greeting, or a question to the caller."""
        if not question and _WAITS_FOR_LEAVE.search(c.joined):
            return True  # "Just so you know, nothing goes to finance until you give me the okay."
        if c.words and any(x in _NEGATION for x in c.words[:3]) and not question:
            return True  # "Nothing gets submitted until you say so."
        if _CALLER_DID.search(c.joined):
            return True  # "Did you already send the budget over yourself?": the caller's act
        if _HOW_CAN_I_HELP.search(c.joined):
            return True  # "Clinic scheduling, this is Dana, how can I help you today?"
        purpose = _PURPOSE.search(c.joined)
        if purpose and purpose.start() > 0:
            before = c.joined[:purpose.start()].split()
            asks_caller = bool(_REQUEST.search(" ".join(before)) or set(before[:3]) & _WH)
            if asks_caller and not (self._has_gated(before)
                                    or _generic_proceed(" ".join(before))):
                return True  # "Could you give me the date so I can put it in?": a request
        content = _WHAT_I_WILL.search(c.joined)
        if content and self._has_gated(content.group(0).split()) and not _ASKS_PERMISSION.search(
                c.joined):
            return True  # "..., and that's what I'll put in, right?": what goes in, checked
        stranded = _STRANDED.search(c.joined)
        if stranded and self._has_gated(stranded.group("clause").split()):
            return True  # "it's still the fourteenth we're sending this out for, yes?"
        lead_purpose = _LEAD_PURPOSE.match(c.text)
        if lead_purpose:
            rest = _words(lead_purpose.group("rest"))
            if rest and (_REQUEST.match(" ".join(rest)) or rest[0] in _WH):
                return True  # the question after the purpose asks the caller
        lead = c.words[c.lead()] if c.words else ""
        explicit = bool(_APPROVAL_EXPLICIT_Q.search(c.joined)
                        or _APPROVAL_EXPLICIT_S.search(c.joined))
        if lead in _WH and not explicit and not (
                _SUGGESTION.match(c.led) and self._bind(c) is not None):
            return True  # "What happens after I submit?" (not "Why don't I submit it now?")
        tail = _words(c.text.rsplit(",", 1)[1]) if "," in c.text else []
        # "You're through to the desk, which incident are we escalating?"
        return bool(_WH_THING.match(" ".join(tail)) and self._has_gated(tail) and not explicit)

    def _asks_leave(self, c: _Clause, question: bool) -> bool:
        """The clause asks leave: an approval request, a gated verb asked about, or a bare "Is
        that okay?" after a sentence with a gated verb."""
        if self._is_approval_request(c, question):
            return True
        gated = self._has_gated(c.words) or bool(_generic_proceed(c.joined))
        if gated and (question or _ASKS_PERMISSION.search(c.joined)):
            return bool(question or _ASKS_PERMISSION.search(c.joined))
        if (question or c.text.rstrip().endswith("?")) and self._bare_permission(c) and (
                self._has_gated(c.previous)
                or bool(_generic_proceed(" ".join(c.previous)))):
            return True
        return question and bool(_ASKS_PERMISSION.search(c.joined)) and bool(
            _generic_proceed(" ".join(c.previous)) or self._has_gated(c.previous))

    def _object_stems(self, w: list[str], j: int) -> set[str]:
        """Content words of the phrase after a verb ending at ``j`` (up to a preposition)."""
        return self._object_phrase(w, j)[0]

    def _object_phrase(self, w: list[str], j: int) -> tuple[set[str], str | None, int]:
        """The object phrase after a verb ending at ``j``: its content stems (with "another"
        when it names something other than the artifact), the stem of its head noun (its last
        content word; None for "a …", a new thing) and the index of the word after it."""
        out: set[str] = set()
        k = j
        while k < len(w) and w[k] in ("you", "me", "us", "him", "her", "them"):
            k += 1  # an indirect object: "send you a copy"
            if k < len(w) and w[k] in ("in", "into", "on", "up", "for"):
                k += 1  # "enroll you in the wellness program", "sign you up for ..."
        if k < len(w) and w[k] in ("a", "an", "another"):
            return {"another"}, None, k  # "submit a request for your records": something new
        j = k
        head: str | None = None
        while k < len(w) and k < j + 7:
            x = w[k]
            if x in _OBJECT_STOP:
                break
            if x not in _OBJECT_SKIP:
                out.add(_stem(x))
                if x not in _PARTICLES:
                    head = _stem(x)
                if x != _stem(x) and x.endswith("s") and _stem(x) in self._artifact_words and (
                        x not in self._artifact_raw):
                    out.add("another")  # "put in badge requests for your crew": others
            k += 1
        if head is not None and out & self._artifact_words and head not in (
                self._artifact_words | _GENERIC_OBJECT):
            out.add("another")  # "the badge pickup instructions": the artifact's word, but
        return out, head, k     # another thing is the head of the phrase

    def _bind(self, c: _Clause) -> AuthorizationRule | None:
        """The gated action a proposal is for, or None when its object is something else."""
        if not self._rules:
            return None
        w = c.words
        if _ADDITIONAL.search(c.joined):
            return None  # "Should I book you in for a second opinion as well?": one more thing
        wanted = _WANT_IT_DONE.search(c.joined)
        if wanted:  # "Would you like the preservation letter sent?": the thing before the verb
            return self._pick(self._rules, self._object_stems(wanted.group("obj").split(), 0))
        stems = set(c.stems)
        foreign_anywhere = bool(stems & (_FOREIGN_OBJECT - {"note", "call", "card"}
                                         - self._artifact_words))
        refused = False  # a gated verb of the agent's with another thing as its object
        for i, x in enumerate(w):
            seqs = [q for q in self._gated.get(x, ()) if tuple(w[i:i + len(q)]) == q]
            if not seqs or _noun_use(w, i):
                continue  # "for your files", "the right file": a noun
            if not self._agent_does(w, i):
                continue  # "did the other insurer send over ...": someone else's act
            if set(w[max(0, i - 3):i]) & _TIME_CLAUSE:
                continue  # "... a confirmation by email once it's processed"
            end = i + max(len(q) for q in seqs)
            obj = self._object_stems(w, end)
            after = list(itertools.takewhile(lambda x: x not in _CLAUSE_BREAK, w[end:end + 10]))
            if obj & _OTHER_VERSION or _ANOTHER_ONE.search(" ".join(after)):
                obj.add("another")  # "last year's plan", "the old request"
            declared = [r for r in self._rules
                        if any(tuple(w[i:i + len(v)]) == v for v in r.verbs)]
            if not declared and re.search(r"\bto (you|your)\b", " ".join(after)):
                continue  # "send the order form to your AP team": a copy, by a verb the task
                #           does not declare for its action
            rule = self._pick(declared or self._rules, obj)
            if rule is not None:
                return rule
            refused = refused or bool(obj & (_FOREIGN_OBJECT - {"another"} - self._artifact_words))
        generic = _generic_proceed(c.joined)
        if (generic or _PROCEED_ONLY.search(c.joined)
                or _APPROVAL_EXPLICIT_Q.search(c.joined) or _APPROVAL_EXPLICIT_S.search(c.joined)):
            if refused:
                return None  # "Do I have your consent to send the notes to the specialist?":
                #              leave for sending the notes, not the referral
            if self._leave_for_a_field(c):
                return None
            if generic and foreign_anywhere:  # the verb itself is no object ("pass it along")
                verb = _stem(generic.group(0).split()[0])
                foreign_anywhere = bool((stems - {verb}) & (
                    _FOREIGN_OBJECT - {"note", "call", "card"} - self._artifact_words))
            if foreign_anywhere:
                return None
            with_obj = _PROCEED_WITH.search(c.joined)
            if with_obj and not self._has_gated(w):
                obj = self._object_stems(with_obj.group("obj").split(), 0)
                if obj - _GENERIC_OBJECT - self._artifact_words or "another" in obj:
                    return None  # "Shall I go ahead with the lookup?": another step
            if _AGENT_LOOKUP.search(c.joined) and not self._has_gated(w):
                return None  # "With your okay, I'll look up your premium": leave for a lookup
            mentioned = [r for r in self._rules if r.artifact_words & stems]
            if len(mentioned) == 1:
                return mentioned[0].rule
            if len(self._rules) == 1:
                return self._rules[0].rule
        return None

    def _leave_for_a_field(self, c: _Clause) -> bool:
        """Leave asked by name for a step of another verb that a field of the task is about
        ("Do you consent to sharing your records with the specialist?" asks the records
        consent field), not for the gated action; the artifact named keeps it an approval."""
        m = _LEAVE_FOR_STEP.search(c.joined)
        if m is None:
            return False
        w = m.group("rest").split()
        while w and w[0] in _LEAVE_STEP_SUBJECT:
            w = w[1:]
        if not w or w[0] in _FRAME_FILLER | _PROCEED | _OBJECT_SKIP | {"move"} or (
                self._has_gated(w)):
            return False  # "... to go ahead", "... to put the request in": the gated action
        step = list(itertools.takewhile(lambda x: x not in _STEP_END, w))
        # the field is named in the leave and its step, not elsewhere in the sentence ("Now
        # that the end date's fixed, ...")
        leave = _words(c.joined[m.start():])  # the leave word may name the field ("consent")
        return bool(self._fields(_Clause.of(" ".join(leave), leave, False, []))) and not (
            {_stem(x) for x in step} & (self._artifact_words - _GENERIC_OBJECT))

    @staticmethod
    def _agent_does(w: list[str], i: int) -> bool:
        """The verb at ``i`` is something the agent (I/we) would do, or is proposed bare."""
        before = w[max(0, i - 5):i]
        if not before or all(x in _FILLER_START or x in ("just", "to") for x in before):
            return True
        if _someone_else_does(w, i):
            return False  # "why she's sending you": the referring doctor sends
        return bool(set(before) & _AGENT_MARKERS)

    def _pick(self, rules: list[_Rule], obj: set[str]) -> AuthorizationRule | None:
        if obj & (_FOREIGN_OBJECT - self._artifact_words):
            return None  # "send you the timeline link": the link, not the timeline
        named = [r for r in rules if r.artifact_words & obj]
        if named and not obj & {"another"}:
            return named[0].rule
        if obj - _GENERIC_OBJECT:
            return None  # another thing: "enroll you in the wellness program"
        return rules[0].rule if len({r.rule.action for r in rules}) == 1 else None

    # ------------------------------------------------------------------ values

    def _recap_fields(self, text: str, *, named: bool = True) -> list[FieldKey]:
        """The fields a recap's list states: named (lexicon, unless ``named`` is false) or given
        a value of the task's (:attr:`_recap_values`; an enum field by any of its options, as
        whole words)."""
        words = _words(text)
        lexicon = functools.cache(lambda: self._fields(_Clause.of(text, words, False, [])))
        out = list(lexicon()) if named else []
        masked = _mask_phones(text)
        near: dict[FieldKey, set[str]] = {}
        for key, spec, vals in self._recap_values:
            if key in out:
                continue
            if spec.grader == "enum":
                if _says_an_option(words, spec, vals):
                    out.append(key)
                continue
            said = text if spec.grader in _RAW_TEXT_GRADERS else masked
            tokens = self._value_tokens(spec, vals, said, text)
            if tokens and spec.grader == "numeric_tolerance" and not _misheard_amount_named(
                    key, spec, text, lexicon(), limits=False):
                continue
            if tokens is not None:
                out.append(key)
                if tokens:
                    near[key] = tokens
        return _without_explained(out, near, self._recap_values)

    def _phone_tail(self, text: str) -> list[FieldKey]:
        """A phone number's last four digits said alone, as when a misheard number is fixed
        ("Zero one eight six, fixed.", "Got it, 0 1 8 7 at the end."): the phone field whose
        caller value ends in them, or in them with two digits swapped or one misheard, when
        exactly one field's does and the turn says no other digit."""
        if not self._phone_tails:
            return []
        digits = re.sub(r"\D", "", _words_to_digits_text(text))
        singles = [_SPOKEN_DIGIT.get(w, w) for w in re.findall(r"[a-z0-9]+", text.lower())]
        if len(digits) != 4 or digits not in "".join(
                d if len(d) == 1 and d.isdigit() else " " for d in singles).split():
            return []  # said digit by digit, not as an amount ("eighteen sixty")
        found = [key for key, tails in self._phone_tails if any(
            sorted(tail) == sorted(digits)
            or sum(a != b for a, b in zip(tail, digits, strict=True)) <= 1 for tail in tails)]
        return found if len(found) == 1 else []

    def _near_value_field(self, text: str,
                          named: Sequence[FieldKey] = ()) -> list[FieldKey]:
        """The one field a restatement asked as a question is about when it names no field
        and states no caller value exactly: a value of the task's (:meth:`_recap_fields`), else
        the field whose caller value is nearest to what is said (a misheard phone number, a
        date a month off, a name one sound off: "Rachel King, did you say?"); among the
        ``named`` fields first ("Due October eleventh" is the due date, whatever other date is
        nearer)."""
        exact = self._recap_fields(text, named=False)
        if exact:
            return exact[:1]
        near = self._value_distances(text)
        picked = [d for d in near if d[1] in named] or near
        return [min(picked, key=lambda d: d[0])[1]] if picked else []  # the first nearest

    def _value_distances(self, text: str) -> list[tuple[float, FieldKey]]:
        """For :meth:`_near_value_field`: how far what ``text`` says is from each caller value
        it comes near (under 0.5), in the task's order."""
        out: list[tuple[float, FieldKey]] = []
        digits = re.sub(r"\D", "", _words_to_digits_text(text))
        # a phone number's digits are no other number; "for a second" says no number
        masked = _A_MOMENT.sub(" ", _mask_phones(text))
        dates = dates_in_text(masked, self._reference)
        # "October eleventh" says no 11, "the 1:30 PM slot" no 30
        numbers = numbers_in_text(without_times(without_dates(masked)))
        said = canonical_text(text)
        for key, spec, vals in self._recap_values:
            for v in vals:
                score: float | None = None
                if spec.grader == "normalized_phone":
                    target = re.sub(r"\D", "", str(canonical_phone(v) or ""))[-10:]
                    if target and len(digits) >= 7:
                        score = Levenshtein.normalized_distance(digits[-10:], target)
                elif spec.grader == "normalized_date":
                    day = dates_in_text(str(v), self._reference)
                    if day and dates:  # by day of the year: a year-less date is the same
                        score = min(_days_apart(d, day[0]) for d in dates) / 400
                elif spec.grader == "numeric_tolerance":
                    try:
                        target_n = float(v)
                    except (TypeError, ValueError):
                        continue
                    if numbers and target_n:  # "one eighty-five" for 185,000 too
                        score = min(abs(m - target_n) / abs(target_n)
                                    for n in numbers for m in (n, n * 1000))
                elif spec.grader in ("exact", "casefold_exact") and re.search(r"\d", str(v)):
                    if _near_identifier(v, text):  # "C four zero nine seven one" for C40917
                        score = 0.1
                elif isinstance(v, str | list) and not re.search(r"\d", str(v)):
                    score = _near_words(v, said)
                if score is not None and score < 0.5:
                    out.append((score, key))
        return out

    def _word_values_said(self, c: _Clause) -> list[FieldKey]:
        """Fields of :attr:`_word_valued` whose option or one-word value the clause says
        outside another field's name ("Contractor ID C40917" names the ID, not the contractor
        badge)."""
        matches = self._matches(c)
        out: list[FieldKey] = []
        for key, spec, vals in self._recap_values:
            if key not in self._word_valued:
                continue
            covered = {i for m in matches if key not in m.phrase.fields
                       for i in range(m.start, m.end)}
            words = [w if i not in covered else "" for i, w in enumerate(c.words)]
            if _says_an_option(words, spec, vals):
                out.append(key)
        return out

    def _vocabulary_field(self, c: _Clause) -> list[FieldKey]:
        """The one field a wh-question names no phrase of but shares the most words of its
        label and synonyms with ("And the date?" for the event date, "What's the time off
        for?" for the reason); none on a tie, nor for a yes/no question ("Are you at the
        computer now?" asks no field)."""
        at = c.lead()
        if at + 1 < len(c.words) and c.words[at] in _PREPOSITIONS and c.words[at + 1] in _WH:
            at += 1  # "on what date was the meeting?", "by when?"
        lead = c.words[at] if c.words else ""
        embedded = next((i for i, w in enumerate(c.words[:8]) if w in _WH and i > 0 and set(
            c.words[:i]) & {"tell", "know", "ask", "say", "remember"}), None)
        if embedded is not None and lead not in _WH:
            at, lead = embedded, c.words[embedded]  # "Can you tell me who referred you?"
        after_comma = re.search(r",\s*(?:(?:and|so|then|now)\s+)?(what|which|who|when|where|how)\b",
                                c.text, re.IGNORECASE)
        if lead not in _WH and after_comma is not None and len(_words(
                c.text[:after_comma.start()])) <= 4:
            # "Given that, what's the earliest date you could start?"
            at = len(_words(c.text[:after_comma.start(1)]))
            lead = c.words[at] if at < len(c.words) else lead
        if lead not in _WH and lead not in {"and", "the"}:
            return []
        words = {_stem(_base(w)) for w in c.words  # "sponsoring", "referred"
                 if w not in _STOPWORDS and w not in _WH and len(w) > 2}
        words -= self._artifact_words | self._record_words
        kind = self._answer_kind(c.words[at:at + 2])
        scores = sorted(((len(v & words), k) for k, v in self._vocab_words.items()
                         if kind is None or self._kind_of(k) == kind), reverse=True)
        if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[1][0] == scores[0][0]):
            return []
        return [scores[0][1]]

    @staticmethod
    def _answer_kind(lead: list[str]) -> str | None:
        """The kind of answer a question word asks for: "when" a date, "how many / much" a
        number, "who" anything but those two; None when the word does not say."""
        first = lead[0] if lead else ""
        if first == "when":
            return "date"
        if first == "how" and lead[1:2] and lead[1] in {"many", "much"}:
            return "number"
        return "other" if first in {"who", "whom", "whose"} else None

    def _kind_of(self, key: FieldKey) -> str:
        spec = self._specs[key]
        if spec.grader == "normalized_date" or spec.type == "date":
            return "date"
        return "number" if spec.grader == "numeric_tolerance" else "other"

    def _small_values_said(self, c: _Clause) -> list[FieldKey]:
        """Fields holding a small number (a count, a term in years) whose value the clause says
        beside a word of the field's own vocabulary ("you led a team of five", "a three-year
        term"): restated beside another restated value, where the field goes unnamed."""
        stems = set(c.stems)
        masked = _mask_phones(c.text)
        return [key for key, spec, vals in self._values
                if spec.grader == "numeric_tolerance" and all(_small_number(v) for v in vals)
                and self._field_words.get(key, frozenset()) & stems
                and self._states_value(spec, vals, masked, c.text)]

    def _choice_offered(self, c: _Clause) -> list[FieldKey]:
        """Choice fields whose options a question offers, two or more joined by "or"."""
        if "or" not in c.words:
            return []
        out: list[FieldKey] = []
        for key, spec, _ in self._recap_values:
            if spec.grader != "enum":
                continue
            said = sum(any(_said_as_value(c.words, w) for w in _option_forms(o, spec.options))
                       for o in spec.options)
            if said >= 2:
                out.append(key)
        return out

    def _same_value(self, key: FieldKey, other: FieldKey) -> bool:
        """A caller value of ``other`` states a value of ``key`` too (both fields hold three, or
        the same date): said once, the value belongs to the field named."""
        mine = next(((spec, vals) for k, spec, vals in self._values if k == key), None)
        theirs = next((vals for k, _, vals in self._values if k == other), [])
        if mine is None:
            return True
        # the same value, not a near one: "2027-05-28" is no misheard "2027-03-08"
        return any(self._value_tokens(mine[0], mine[1], str(v), str(v)) == set() for v in theirs)

    def _says_a_value(self, key: FieldKey, text: str) -> bool:
        """``text`` says a value of the kind ``key`` holds, right or wrong: a phone number,
        a date, a number, an identifier's digits, a person's name (a capitalized word after
        the start); never a choice, which a question may offer to choose from."""
        spec = self._specs.get(key)
        if spec is None:
            return False
        masked = _LAST_FOUR.sub(" ", _ORDINAL_ONE.sub(" ", _mask_phones(text)))
        if spec.grader == "normalized_phone":
            return len(re.sub(r"\D", "", _words_to_digits_text(text))) >= 7
        if spec.grader == "normalized_date":
            return bool(dates_in_text(masked, self._reference))
        if spec.grader == "numeric_tolerance":
            return bool(numbers_in_text(masked))
        if spec.grader in ("exact", "casefold_exact", "set_f1") and re.search(
                r"\d", str(spec.gold)):  # an identifier, or a list of them ("lot 7731")
            return bool(re.search(r"\d", _words_to_digits_text(masked)))
        if _is_name(spec.gold):  # "And your sponsor is Rachel Kimball?"
            return bool(re.search(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-z]{2,}", text.strip()))
        return False

    def _field_named_next(self, c: _Clause) -> bool:
        """"And then the due date, whenever you're ready." / "Next, your member ID; it's on
        your card." / "And the pads": a field named after "and" or "next", with nothing said
        about it, asks for it."""
        m = _NEXT_FIELD.match(c.joined)
        if m is None:
            return False
        at = len(m.group(0).split())
        first = next((x for x in self._matches(c) if x.start >= at), None)
        if first is None or first.start != at or self._readback_fields(c, self._fields(c)):
            return False
        return first.end == len(c.words) or c.words[first.end] in _AFTER_NEXT_FIELD

    def _offers_alternatives(self, c: _Clause) -> bool:
        """"Tuesday the thirteenth at nine with Dr. Hale, or Wednesday the fourteenth at two
        thirty with Dr. Osei.": a statement listing two or more dates joined by "or" tells the
        caller the options; it restates none."""
        if "or" not in c.words:
            return False
        dates = set(dates_in_text(_ORDINAL_ONE.sub(" ", _mask_phones(c.text)), self._reference))
        return len(dates) >= 2

    def _holds_no_value(self, key: FieldKey, text: str) -> bool:
        """``text`` cannot restate ``key``: the field holds a phone number, a date, a number
        or an identifier, and the text says none."""
        spec = self._specs.get(key)
        if spec is None:
            return False
        if "@" in str(spec.gold):  # an email needs one said: "your email as well" is none
            return not (re.search(r"@|\bat\b.*\bdot\b", text, re.IGNORECASE))
        if not (spec.grader in ("normalized_phone", "normalized_date", "numeric_tolerance") or (
                spec.grader in ("exact", "casefold_exact", "set_f1")
                and re.search(r"\d", str(spec.gold))) or _is_name(spec.gold)):
            return False
        return not self._says_a_value(key, text)

    def _valued_fields(self, text: str) -> list[FieldKey]:
        """Fields whose caller value (any version) the text states. A phone number's digits
        state no other number. Remembered per text (the observer and the simulated caller
        both ask about each agent sentence, and a script's repeats say the same ones)."""
        fields: tuple[FieldKey, ...] = remember(
            self._valued_memo, text, lambda: tuple(self._valued_fields_uncached(text)),
            _MEMO_MAX)
        return list(fields)

    def _valued_fields_uncached(self, text: str) -> list[FieldKey]:
        out: list[FieldKey] = []
        masked = _mask_phones(text)
        named = functools.cache(lambda: self._fields(_Clause.of(text, _words(text), False, [])))
        near: dict[FieldKey, set[str]] = {}
        for key, spec, vals in self._values:
            said = text if spec.grader in _RAW_TEXT_GRADERS else masked
            if (spec.grader == "numeric_tolerance" and all(_small_number(v) for v in vals)
                    and key not in named()):
                # "two twenty-five a month" says no dependent count: a small number restates
                # a field only with the field named
                continue
            tokens = self._value_tokens(spec, vals, said, text)
            if tokens and spec.grader == "numeric_tolerance" and not _misheard_amount_named(
                    key, spec, text, named(), limits=True):
                continue
            if tokens is not None:
                out.append(key)
                if tokens:
                    near[key] = tokens
        return _without_explained(out, near, self._values)

    def _near_only(self, text: str) -> dict[FieldKey, set[str]]:
        """The fields :meth:`_valued_fields` finds in ``text`` only by an identifier or number
        misheard by a character or two, each with the tokens found."""
        masked = _mask_phones(text)
        out: dict[FieldKey, set[str]] = {}
        for key, spec, vals in self._values:
            said = text if spec.grader in _RAW_TEXT_GRADERS else masked
            tokens = self._value_tokens(spec, vals, said, text)
            if tokens:
                out[key] = tokens
        return out

    def _states_value(self, spec: FieldSpec, vals: list[Any], said: str, text: str) -> bool:
        """``said`` (the text, perhaps with phone numbers masked) states one of ``vals`` as
        the field's grader compares them, or an identifier misheard by a character."""
        return self._value_tokens(spec, vals, said, text) is not None

    def _value_tokens(self, spec: FieldSpec, vals: list[Any], said: str,
                      text: str) -> set[str] | None:
        """As :meth:`_states_value`: None when no value is stated, an empty set when one is
        stated as the grader compares it, else the tokens of a misheard identifier."""
        near: set[str] = set()
        for v in vals:
            try:
                found = value_in_text(spec.grader, v, said, tolerance=spec.tolerance,
                                      options=spec.options, reference=self._reference)
            except ValueError:
                continue
            if found == "match":
                return set()
            if found == "mismatch":
                # "+16175550186" is said as ten digits (a swap: "six one seven, ..., zero one
                # six eight")
                heard_as = re.sub(r"\D", "", str(canonical_phone(v) or v))[-10:] if (
                    spec.grader == "normalized_phone") else v
                near |= _near_tokens(heard_as, (
                    text if spec.grader in _IDENTIFIER_GRADERS else _mask_codes(text)))
        return near or None

    def _restates(self, c: _Clause, fields: list[FieldKey]) -> bool:
        """A field named with a value, or a caller value, in a restatement shape."""
        if not fields:
            return False
        if self._readback_fields(c, fields) or _CONFIRM.search(c.joined) or _CONFIRM_TAG.search(
                c.text):
            return True
        if not c.question:
            return False
        i = c.lead()
        first = c.words[i] if i < len(c.words) else ""
        return first not in _WH and first not in {"can", "could", "would", "will", "may"}

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
            return (first == "who" or nxt in _AUX  # "who signs off on it"
                    or nxt in {"many", "much", "long", "old", "often", "about"}
                    or any(x in _AUX for x in c.words[i + 2:i + 5]))  # "what sort of X did"
        if i + 1 < len(c.words) and c.words[i + 1] in _WH and first in {"roughly", "exactly",
                                                                          "so", "and", "but"}:
            return True
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

    def _proposed_gated(self, text: str) -> bool:
        """A statement that says the gated action as what the agent will do ("I can submit it
        now."), not as a consequence ("Committing it books the order.") or in a time clause
        ("The refund goes out when I commit it.")."""
        main = _words(_main_clauses(text))
        if not self._has_gated(main):
            return False
        w = _words(text)
        lead = w[_Clause.of(text, w, False, []).lead()] if w else ""
        return not (lead.endswith("ing") and self._has_gated([lead]))

    def _has_gated(self, w: list[str]) -> bool:
        return any(_starts_with_seq(w, i, self._gated.get(x, ())) and not _noun_use(w, i)
                   and not _someone_else_does(w, i) for i, x in enumerate(w))

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

    def _is_confirm(self, c: _Clause, fields: list[FieldKey]) -> bool:
        if _CONFIRM_TAG.search(c.text):
            return True
        if not c.question and _THAT_IS_ALL.match(c.joined):
            return False  # "That's everything." ends a list or the call; "That's everything?"
        check = _CONFIRM.search(c.joined)
        if check is not None:
            rest = c.joined[check.end():].split()
            # "To make sure the room fits, roughly how many people are you expecting?": the
            # purpose of a question that asks for a value, no value said back
            return not (_PURPOSE_CHECK.match(c.joined[check.start():]) and (
                set(rest) & _WH or _REQUEST.search(" ".join(rest))
                or re.search(r"\b(may|can|could) i (have|get)\b", " ".join(rest)))
                and not self._valued_fields(c.text))
        if not c.question or not fields or any(w in _WH for w in c.words):
            return False
        # A restatement asked as a question: "So your beneficiary is Jamie Reyes?",
        # "You said three dependents?", "Is your date of birth July ninth?"
        if _YOU_SAID.search(c.joined) or _SO_LEAD.match(c.joined):
            return True
        matches = self._matches(c)
        if any(self._valued(c, m) and not all(self._holds_no_value(k, c.text)
                                              for k in m.phrase.fields) for m in matches):
            return True  # not "Best number to reach you?": a phone number needs digits
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
        if not (j + 1 < len(words) and words[j] in _COPULA) or words[j:j + 2] == ["as", "well"]:
            return False
        k = j + 1
        while k + 1 < len(words) and words[k] in {"now", "still", "actually"}:
            k += 1  # "your end date's now June eleventh"
        if k + 1 < len(words) and words[k] == "the" and _DAY_WORD.match(words[k + 1]):
            return True  # "the end date is the eleventh"
        return _is_value(words[k])

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
