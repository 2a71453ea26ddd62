"""What a question names that its documents never mention: a premise the evidence cannot answer.

A question that names a year, a code or a name its evidence's documents never mention is about something else:
"how many adults rated Trump's government ethical standards as poor in the survey of April 25 - May 1 2022?"
asked of the 2018 survey, "the geographic market name for EPS Code AR03" of a list whose codes stop short of
it, "What score did LLaVa + Step-Back achieve?" of a paper that never ran LLaVa. Retrieval still finds the
closest passages, and an extractive summary quotes them; instead, both synthesizers' parts say "Not stated in
the evidence." and name what no document mentions (``compose.write_section``).

What a question names, in each of its sentences after the first word, outside quotes (a
format's example, "like ['2006', '2007']"), and none in a question written in capitals:

- a year, alone or in a fiscal or quarter label ("2022", "FY2022", "Q22023" name 2022 or 2023);
- a code: a word of two letters or more and two digits or more ("AR03", "CA15");
- a name: a capitalised word ("Biden", "LLaVa") that the store never writes in lower case. Checked against
  the whole store, not a dictionary: "Email", "Platform" or "Highest" in a question are words a corpus writes in
  lower case somewhere, "Oxford" and "Biden" are names. A name the store once writes in lower case is taken for
  a word (MMLongBench-Doc's "Chinese", from a reference's "a medical benchmark in chinese"). The store is asked
  (``unmentioned``'s ``is_word``) only about the capitalised words the evidence's documents do not mention, so a
  check reads those documents' words and makes a scan or two, whatever the size of the store.

A document mentions a term when one of its words (or two adjacent ones joined: "Table 1-1" for "Table1")
equals it, case aside, or is one edit from it for a term of five letters or more: "Neflix", "Netfilx",
"Demoncratic" are the documents' words misspelt (Damerau-Levenshtein, ``rapidfuzz``).

Measured on the development sets (2026-12-03, README, Summary quality): 8 of MMLongBench-Doc's 46 unanswerable
questions name such a term, and 1 of its 162 answerable ones (it asks about the survey of "April 25- May 1,
2019", the document's is 2018's); none of FinanceBench's 59. The other unanswerable questions ask about things
the documents do mention ("the bankers' names associated with Apple Inc?" of a store that mentions Apple):
telling those apart needs a reading model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from citesum.tasks.text import sentences, words

TYPO_LENGTH = 5  # a term this long or longer may be a document's word misspelt by one edit
_YEAR = re.compile(r"(?:FY|CY|Q[1-4])?((?:19|20)\d\d)(?:Q[1-4])?", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“‘'][^\"“”‘’']{1,60}[\"”’']")


def _named(question: str) -> list[tuple[str, bool]]:
    """The years, codes and names the question names (see the module), once each, as written, each with whether it
    is a name (to be checked against the store)."""
    text = _QUOTED.sub(" ", question)
    letters = [c for c in text if c.isalpha()]
    if sum(c.isupper() for c in letters) > len(letters) / 2:
        return []  # "WHAT IS ITC LIMITED LOGO COLOR?": capitals say nothing of names
    found: dict[str, bool] = {}
    for sentence in sentences(text) or [text]:
        for word in words(sentence)[1:]:
            if (year := _YEAR.fullmatch(word)) is not None:
                found.setdefault(year.group(1), False)
            elif sum(c.isdigit() for c in word) >= 2 and sum(c.isalpha() for c in word) >= 2:
                found.setdefault(word, False)
            elif _is_name(word):
                found.setdefault(word, True)
    return list(found.items())


def _is_name(word: str) -> bool:
    """Capitalised with a lower-case letter after ("Biden", "LLaVa", "SoC"); no digits, not all capitals ("EBITDA",
    "COGS": a question's acronyms are mostly terms of art the documents spell out)."""
    return word[0].isupper() and any(c.islower() for c in word[1:]) and word.isalpha()


def document_words(rows: Iterable[dict]) -> frozenset[str]:
    """The words of chunk rows (``heading``, ``text``): lower case, adjacent pairs joined too ("table1" for "Table
    1-1"); what ``unmentioned`` checks a question against."""
    held: set[str] = set()
    for row in rows:
        folded = [w.lower() for w in words(f"{row['heading']} {row['text']}")]
        held.update(folded, map("".join, zip(folded, folded[1:], strict=False)))
    return frozenset(held)


def unmentioned(question: str, held: frozenset[str], is_word: Callable[[str], bool]) -> list[str]:
    """The terms the question names that ``held``, its documents' words (``document_words``), does not mention, or
    []. ``is_word``: whether the store writes a word (given in lower case) in lower case, a capitalised one it does
    being no name; asked only about the capitalised words not mentioned."""
    return [
        term
        for term, name in _named(question)
        if not _mentioned(term.lower(), held) and not (name and is_word(term.lower()))
    ]


def _mentioned(term: str, held: frozenset[str]) -> bool:
    if term in held:
        return True
    if len(term) < TYPO_LENGTH or not term.isalpha():
        return False  # a year or a code one character off is another one
    near = (w for w in held if abs(len(w) - len(term)) <= 1)
    return process.extractOne(term, near, scorer=DamerauLevenshtein.distance, score_cutoff=1) is not None
