"""Whether an answer is in a text: the one rule behind "answer in evidence" and "answer found"."""

from __future__ import annotations

import pytest

from citesum.tasks.summarize.answers import answer_found


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("$1577.00", "Purchases of property, plant and equipment were $1,577 million."),
        ("$8.70", "Net PP&E was 8.7 billion dollars."),
        ("24.26", "The ratio works out at 24.2587 for the year."),  # rounds to the answer's precision
        ("2.0", "Diluted net income per share was 1.95."),  # half up
        ("0.3", "A margin of 0.25 points."),
        ("29%", "Some 29 percent of West Germans agree."),
        ("-3.7", "Organic sales changed by (3.7) percent."),
        ("Pre-training", "The branch named pre training has the fewest leaves."),
        ("Copy is all you need. ", 'The method comes from "Copy Is All You Need", a 2023 paper.'),
        ("['POPQA', 'MS MARCO', 'SST-2']", "Datasets: PopQA, MS MARCO and SST-2 each have three methods."),
    ],
)
def test_answer_found_ignores_formatting_case_and_rounding(answer, text):
    assert answer_found(answer, text)


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("$1577.00", "Purchases were $15,770 million."),
        ("29%", "Some 290 people, 2.9 percent, agree."),
        ("24.26", "The ratio was 24.3."),  # less precise than the answer: not the answer
        ("1.9%", "Diluted net income per share was 1.95."),  # 1.95 rounds to 2.0 (a float rounds it to 1.9)
        ("1.1", "Up 1.15 points."),
        ("Yes", "Yesterday's results."),  # whole words only
        ("PKG", "The PKGS method."),
        ("['POPQA', 'MS MARCO', 'SST-2']", "PopQA and SST-2 have three methods."),  # one item missing
        (None, "anything"),
        ("", "anything"),
    ],
)
def test_answer_not_found(answer, text):
    assert not answer_found(answer, text)
