"""The detector's screens change no result: ``patterns_in`` and ``hits`` with ``SCREENS`` against the same
functions with every screen admitting every text, over the examples of the detector's tests and docstring and
a seeded set made from the patterns themselves (strings sampled from each pattern, its words, real document
text), disguised as the normaliser undoes.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from re import _constants as sre
from re import _parser

import pymupdf
import pytest

from citesum.tasks import injection
from tests.test_injection import HITS, ISSUE, NEAR_MISSES, NOTICES

CORPUS = Path(__file__).parent.parent / "data" / "corpus"
SEPARATORS = [" ", " ", " ", "", "  ", "\n", "\n\n", "\t", ", ", ". ", ": ", "; ", "? ", "-", "'", "\u200b", "\u00ad"]
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,:;!?'-_|<>[]#/()"


def sample(parsed, rng: random.Random) -> str:
    """A string the parsed expression could match, context assertions (``\\b``, lookarounds, ``^``) aside."""
    out = []
    for op, av in parsed:
        if op is sre.LITERAL:
            out.append(chr(av))
        elif op is sre.NOT_LITERAL:
            out.append(rng.choice([c for c in ALPHABET if ord(c) != av]))
        elif op is sre.IN:
            out.append(rng.choice([c for c in ALPHABET + "\n\t" if _in(av, c)]))
        elif op is sre.BRANCH:
            out.append(sample(rng.choice(av[1]), rng))
        elif op is sre.SUBPATTERN:
            out.append(sample(av[3], rng))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            low, high, item = av
            out.extend(sample(item, rng) for _ in range(rng.randint(low, min(high, low + 2))))
        elif op not in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            raise NotImplementedError(op)
    return "".join(out)


def _in(items, char: str) -> bool:
    """Whether ``char`` is in a parsed character class."""
    found = False
    for op, av in items:
        if op is sre.NEGATE:
            return not _in(items[1:], char)
        if op is sre.LITERAL:
            found |= ord(char) == av
        elif op is sre.RANGE:
            found |= av[0] <= ord(char) <= av[1]
        elif op is sre.CATEGORY:
            found |= bool(re.fullmatch({sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_SPACE: r"\s"}.get(av, r"\w"), char))
        else:
            raise NotImplementedError(op)
    return found


def words(parsed) -> set[str]:
    """Every run of literal characters in a parsed expression: each alternative word of each group."""
    found, run = set(), []
    for op, av in [*parsed, (None, None)]:
        if op is sre.LITERAL:
            run.append(chr(av))
            continue
        if run:
            found.add("".join(run))
            run = []
        if op is sre.BRANCH:
            found.update(*(words(item) for item in av[1]))
        elif op is sre.SUBPATTERN:
            found |= words(av[3])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            found |= words(av[2])
    return found


def top_branches(pattern: re.Pattern[str]) -> list:
    """The parsed alternatives of ``pattern`` (one, if it is no alternation), so each is sampled as often."""
    parsed = _parser.parse(pattern.pattern)
    return parsed[0][1][1] if len(parsed) == 1 and parsed[0][0] is sre.BRANCH else [parsed]


def disguised(text: str, rng: random.Random) -> str:
    """``text`` with some characters upper case, full width, or followed by an invisible one."""
    out = []
    for char in text:
        roll = rng.random()
        if roll < 0.1:
            char = char.upper()
        elif roll < 0.13 and "!" <= char <= "~":
            char = chr(ord(char) - 0x21 + 0xFF01)
        out.append(char + ("\u200b" if rng.random() < 0.02 else ""))
    return "".join(out)


def cases(texts: list[str], seed: int, count: int) -> list[str]:
    """Seeded inputs: pattern samples in context, shuffled pattern words, real ``texts`` with either spliced in."""
    rng = random.Random(seed)
    branches = [branch for pattern in injection.PATTERNS.values() for branch in top_branches(pattern)]
    vocabulary = sorted(set().union(*(words(_parser.parse(p.pattern)) for p in injection.PATTERNS.values())))
    made = []
    for _ in range(count):
        kind = rng.random()
        pieces = [sample(rng.choice(branches), rng)] if kind < 0.6 else []
        pieces += [rng.choice(vocabulary) for _ in range(rng.randint(0, 2) if pieces else rng.randint(1, 6))]
        rng.shuffle(pieces)
        text = "".join(piece + rng.choice(SEPARATORS) for piece in pieces)
        if kind > 0.3:
            source = rng.choice(texts)
            start = rng.randrange(len(source))
            window = source[start : start + rng.randint(0, 400)]
            cut = rng.randint(0, len(window))
            text = window[:cut] + rng.choice(["", " ", ". "]) + text + window[cut:]
        made.append(disguised(text, rng) if rng.random() < 0.5 else text)
    return made


def differences(texts: list[str]) -> list[tuple[str, object, object]]:
    """The texts whose ``patterns_in`` or ``hits`` change when every screen admits every text."""
    screened = [(injection.patterns_in(t), injection.hits(t)) for t in texts]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(injection, "SCREENS", {name: injection.Screen(("",)) for name in injection.PATTERNS})
        unscreened = [(injection.patterns_in(t), injection.hits(t)) for t in texts]
    return [(t, a, b) for t, a, b in zip(texts, screened, unscreened, strict=True) if a != b]


def corpus_text() -> list[str]:
    texts = []
    for name in ("services_agreement.pdf", "technical_report.pdf"):
        with pymupdf.open(CORPUS / name) as pdf:
            texts += [page.get_text() for page in pdf]
    return texts


def test_screens_change_nothing_on_the_detector_examples():
    quoted = re.findall(r'"([^"]+)"', injection.__doc__)
    examples = [text for text, _ in HITS] + NEAR_MISSES + quoted + [ISSUE, NOTICES]
    assert differences(examples) == []


def test_screens_change_nothing_on_generated_text():
    texts = cases(corpus_text(), seed=20240607, count=8_000)
    assert sum(bool(injection.patterns_in(t)) for t in texts) > len(texts) // 10  # the set holds hits of every kind
    assert {name for t in texts for name in injection.patterns_in(t)} == set(injection.PATTERNS)
    assert differences(texts) == []
