"""The extractive synthesizer copies evidence sentences verbatim and cites where each came from."""

from __future__ import annotations

from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.validate import validate
from citesum.tasks.text import normalize_space
from tests.summary_fixtures import evidence

TERMINATION = (
    "12.1 Either party may terminate this Agreement for convenience on ninety days' written notice. "
    "Termination does not relieve the Customer of fees already due."
)
FEES = "The Customer shall pay each invoice within thirty days of receipt. Late payments accrue interest at 1% a month."
WEATHER = "The office kitchen is cleaned every Friday afternoon by the facilities team of the building."


def test_sentences_are_verbatim_cited_and_relevant(embedder):
    ev = evidence(TERMINATION, FEES, WEATHER)
    synth = ExtractiveSynthesizer(embedder)
    draft = synth.synthesize(SynthesisRequest("How can the agreement be terminated?", tuple(ev), max_sentences=2))

    assert draft.sentences, draft.raw
    texts = {e.label: e.candidate.chunk.text for e in ev}
    assert validate(draft, texts, verbatim=True).ok
    for sentence in draft.sentences:
        (label,) = sentence.citations
        assert normalize_space(sentence.text) in normalize_space(texts[label])
    assert "c1" in {c for s in draft.sentences for c in s.citations}
    assert "c3" not in {c for s in draft.sentences for c in s.citations}


def test_merge_keeps_points_and_their_citations(embedder):
    synth = ExtractiveSynthesizer(embedder)
    first = synth.synthesize(SynthesisRequest("termination and payment", tuple(evidence(TERMINATION, FEES)), 4))
    merged = synth.merge(MergeRequest("termination and payment", first.sentences, max_sentences=2))
    assert 0 < len(merged.sentences) <= 2
    assert set(merged.sentences) <= set(first.sentences)
