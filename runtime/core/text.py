"""Small text helpers shared by the knowledge-base search and the semantic-act observer."""

from __future__ import annotations

import re

_STOPWORD_TEXT = """
a about above after again against all also am an and any are aren as at be because been before
being below between both but by can cannot could couldn did didn do does doesn doing don down
during each else ever few for from further get gets got had hadn has hasn have haven having he
her here hers herself him himself his how i if in into is isn it its itself just let lets me
might more most much must mustn my myself no nor not now of off on once only or other ought our
ours ourselves out over own please same shall shan she should shouldn so some such than that
the their theirs them themselves then there these they this those through to too under until
up us very was wasn we were weren what when where which while who whom why will with won would
wouldn you your yours yourself yourselves
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""Function words that carry no content for search: a query made only of these finds
nothing."""

_TOKEN = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A tiny plural folder ("policies" → "policy", "premiums" → "premium"), applied the
    same way to what is indexed and what is looked up."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zzes")):
        return word[:-2]
    if len(word) >= 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_terms(text: str) -> list[str]:
    """Lower-cased, stemmed word tokens of ``text`` without stopwords (apostrophes joined:
    "employee's" → "employee")."""
    folded = re.sub(r"['’]s\b", "", text.lower())
    folded = folded.replace("'", "").replace("’", "")
    return [stem(t) for t in _TOKEN.findall(folded) if t not in STOPWORDS]
