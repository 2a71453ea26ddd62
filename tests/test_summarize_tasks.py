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


def test_a_topic_takes_evidence_from_its_own_chunks_first(embedder):
    from citesum.tasks.summarize.rerank import LocalReranker
    from citesum.tasks.summarize.tasks import own_first_evidence
    from tests.summary_fixtures import candidate

    texts = [
        "Either party may terminate this agreement on thirty days notice.",
        "Termination for breach takes effect on the date of the notice.",
        "Fees are invoiced monthly and due within thirty days.",
        "Termination fees are payable within thirty days of termination.",
        "On termination each party returns the other's confidential information.",
    ]
    candidates = [candidate(t, pages=(i, i)) for i, t in enumerate(texts, 1)]  # ranked 1..5
    own = (candidates[1].chunk.chunk_id, candidates[2].chunk.chunk_id)
    chosen = own_first_evidence("termination", candidates, LocalReranker(embedder), 4, own)
    assert [e.label for e in chosen] == ["c1", "c2", "c3", "c4"]
    assert {e.chunk_id for e in chosen[:2]} == set(own)  # its own chunks first, however they rank
    assert not {e.chunk_id for e in chosen[2:]} & set(own)
    assert len(own_first_evidence("termination", candidates, LocalReranker(embedder), 4)) == 4
