"""Mode choice: what `auto` picks and why, and what a mode refuses."""

from __future__ import annotations

import pytest

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.summarize.tasks import choose_mode


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (None, "topics"),
        ("   ", "topics"),
        ("Summarize every material risk", "exhaustive"),
        ("List all payment obligations", "exhaustive"),
        ("What are the termination obligations?", "query"),
    ],
)
def test_auto_picks_a_mode_and_says_why(question, expected):
    mode, reason = choose_mode(question, "auto")
    assert mode == expected and reason


def test_chosen_mode_is_kept_and_query_needs_a_question():
    assert choose_mode("What is the fee?", "topics") == ("topics", "chosen")
    with pytest.raises(ConfigurationError, match="needs a question"):
        choose_mode(None, "query")
    with pytest.raises(ConfigurationError, match="unknown mode"):
        choose_mode("x", "everything")
