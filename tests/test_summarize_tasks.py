"""Summarization choices: mode and synthesizer (what `auto` picks and why, what a choice refuses), a topic's evidence."""

from __future__ import annotations

import socket

import pytest

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import Settings
from citesum.tasks.summarize.choices import choose_mode
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.synthesizers.ollama import OllamaSynthesizer
from citesum.tasks.summarize.tasks import choose_synthesizer
from tests.fake_ollama import MODEL, FakeOllama


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


def test_a_topic_of_several_sections_takes_the_best_of_each_first(embedder):
    """A topic "6 Confidentiality; 7 Data Protection" had all its evidence from the section whose chunks matched
    its query best, so its brief said nothing of the other."""
    from citesum.tasks.summarize.rerank import LocalReranker
    from citesum.tasks.summarize.tasks import own_first_evidence
    from tests.summary_fixtures import candidate

    confidentiality = "AGREEMENT > 6 Confidentiality"
    texts = [
        (confidentiality, "Each party keeps the other's confidential information confidential and protected."),
        (confidentiality, "Confidential information excludes information that is public or already known."),
        (confidentiality, "The confidentiality obligations continue for five years after the agreement ends."),
        ("AGREEMENT > 7 Data Protection", "Supplier processes personal data only on the documented instructions."),
    ]
    candidates = [candidate(t, pages=(i, i), heading=h) for i, (h, t) in enumerate(texts, 1)]
    own = tuple(c.chunk.chunk_id for c in candidates)
    # The query matches the confidentiality chunks best: ranked alone, they fill the evidence.
    chosen = own_first_evidence("confidential information", candidates, LocalReranker(embedder), 3, own)
    sections = [e.candidate.chunk.heading for e in chosen]
    assert sections[:2] == [confidentiality, "AGREEMENT > 7 Data Protection"], sections
    assert [e.label for e in chosen] == ["c1", "c2", "c3"]


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_auto_synthesizer_is_ollama_when_it_answers_with_the_model(fake_ollama: FakeOllama, embedder):
    settings = Settings(ollama_host=fake_ollama.url, ollama_model=MODEL)
    synthesizer, reason = choose_synthesizer("auto", settings, embedder)
    assert isinstance(synthesizer, OllamaSynthesizer) and synthesizer.name == f"ollama:{MODEL}"
    assert synthesizer.host == fake_ollama.url and reason == f"Ollama at {fake_ollama.url}"
    assert [r.path for r in fake_ollama.requests] == ["/api/tags"]  # it asked the server, nothing else


def test_auto_synthesizer_is_extractive_when_ollama_does_not_answer_or_lacks_the_model(fake_ollama, embedder):
    closed = closed_port_url()
    synthesizer, reason = choose_synthesizer("auto", Settings(ollama_host=closed, ollama_model=MODEL), embedder)
    assert isinstance(synthesizer, ExtractiveSynthesizer)
    assert reason == f"Ollama not reachable at {closed}: extractive synthesis"

    missing = Settings(ollama_host=fake_ollama.url, ollama_model="mistral")
    synthesizer, reason = choose_synthesizer("auto", missing, embedder)
    assert isinstance(synthesizer, ExtractiveSynthesizer) and "model 'mistral' is not installed" in reason


def test_chosen_synthesizers_are_kept_or_refused(fake_ollama, embedder):
    closed = closed_port_url()
    synthesizer, reason = choose_synthesizer("extractive", Settings(ollama_host=fake_ollama.url), embedder)
    assert isinstance(synthesizer, ExtractiveSynthesizer) and reason == "chosen"
    assert fake_ollama.requests == []  # extractive when chosen: Ollama is not even asked
    with pytest.raises(ConfigurationError, match="not reachable.*use --synth extractive"):
        choose_synthesizer("ollama", Settings(ollama_host=closed), embedder)
