"""Text helpers shared by every stage: one of each, so chunking, retrieval and synthesis agree."""

from __future__ import annotations

import re

_ABBREVIATIONS = frozenset(
    "inc corp co ltd llc plc no nos mr mrs ms dr prof st jr sr vs cf al approx dept est fig "
    "figs sec art ch para pp p vol rev ref op jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
# A sentence ends at ".", "!" or "?" (closing quotes and brackets included) followed by
# whitespace; ``word`` is the token the terminator closes, ``next`` the first character after.
_SENTENCE_END = re.compile(r"(?<!\S)(?P<word>\S*?)(?P<stop>[.!?]+)[\"'\u201d\u2019)\]]*(?=\s+(?P<next>\S))")
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+")  # initials and dotted abbreviations: "J.", "e.g.", "U.S."


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``text``, trimmed of whitespace.

    Together the spans hold every non-whitespace character. A period after an
    abbreviation ("Inc.", "No. 5"), an initial or a dotted abbreviation ("e.g.") or one
    followed by a lower-case word does not end a sentence; "12.2" has no space to split at.
    """
    cuts = [m.end() for m in _SENTENCE_END.finditer(text) if _ends_sentence(m)]
    bounds = zip([0, *cuts], [*cuts, len(text)], strict=True)
    return [span for start, end in bounds if (span := _trim(text, start, end))]


def _ends_sentence(match: re.Match[str]) -> bool:
    if match["next"].islower():
        return False
    if match["stop"] != ".":
        return True
    word = match["word"].lstrip("([{\"'\u201c\u2018")
    return word.lower() not in _ABBREVIATIONS and not _DOTTED.fullmatch(word + ".")


def _trim(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None
