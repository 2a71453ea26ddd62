"""Reranking with the real embedding model: subset guarantee, near-duplicates, diversity, loading."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from citesum.tasks.embed import resolve_model_path
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.records import Chunk
from citesum.tasks.settings import DEFAULT_EMBED_MODEL
from citesum.tasks.summarize.evidence import Candidate
from citesum.tasks.summarize.rerank import (
    CrossEncoderReranker,
    LocalReranker,
    LocalWeights,
    RerankError,
    check_subset,
    label,
    load_reranker,
)

QUESTION = "How much did the company spend on capital expenditure in 2018?"
TEXTS = [
    "Capital expenditure in 2018 was 1,577 million dollars, mostly for new plants.",
    "The company spent 1,577 million on property, plant and equipment in 2018.",
    "Revenue grew in every segment as demand for industrial adhesives recovered.",
    "The board approved a quarterly dividend and a new share repurchase programme.",
    "Operating expenses rose because of higher freight and wage costs.",
    "Goodwill is tested for impairment every year in the fourth quarter.",
    "Litigation about product liability is described in the notes.",
    "Inventories are valued at the lower of cost and net realisable value.",
]


def candidates_of(embedder, texts: list[str], doc: str = "a.pdf") -> list[Candidate]:
    vectors = embedder.embed(texts)
    return [
        Candidate(Chunk(doc, "v1", doc, i + 1, i + 1, "Notes", t, i), i + 1, 1 / (i + 1), i + 1, None, v)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]


@pytest.fixture
def reranker(embedder):
    return LocalReranker(embedder)


def test_evidence_is_a_labelled_subset_of_the_candidates(reranker, embedder):
    candidates = candidates_of(embedder, TEXTS)
    evidence = reranker.rerank(QUESTION, candidates, 3)
    assert [e.label for e in evidence] == ["c1", "c2", "c3"]
    assert all(e.candidate in candidates for e in evidence)
    assert len({e.chunk_id for e in evidence}) == 3
    assert {e.candidate.chunk.text for e in evidence[:2]} == set(TEXTS[:2])  # the two about capital expenditure
    # sentence is off by default; the question asks for a quantity ("how much"), so the table signal is on
    assert set(evidence[0].signals) == {"dense", "lexical", "heading", "fusion", "table"}


def test_fewer_candidates_than_asked_and_none(reranker, embedder):
    candidates = candidates_of(embedder, TEXTS[:2])
    assert len(reranker.rerank(QUESTION, candidates, 8)) == 2
    assert reranker.rerank(QUESTION, [], 8) == []


class Smuggler(LocalReranker):
    """A reranker that slips in a chunk it was not given."""

    def __init__(self, embedder, foreign: Candidate):
        super().__init__(embedder)
        self.foreign = foreign

    def choose(self, question, candidates, k):
        return [*super().choose(question, candidates, k - 1), (self.foreign, 9.0, {})]


def test_evidence_from_outside_the_candidates_raises(embedder):
    candidates = candidates_of(embedder, TEXTS)
    foreign = candidates_of(embedder, ["An unrelated chunk of another document."], doc="b.pdf")[0]
    with pytest.raises(RerankError, match="not one of the candidates"):
        Smuggler(embedder, foreign).rerank(QUESTION, candidates, 3)
    # the same chunk id with other content is foreign too
    forged = replace(candidates[5], chunk=replace(candidates[5].chunk, text="forged text"))
    with pytest.raises(RerankError, match="not one of the candidates"):
        check_subset(label([(forged, 1.0, {})]), candidates, 3)


def test_check_subset_rejects_repeats_bad_labels_and_too_many(embedder):
    candidates = candidates_of(embedder, TEXTS[:3])
    with pytest.raises(RerankError, match="repeats"):
        check_subset(label([(candidates[0], 1.0, {}), (candidates[0], 0.5, {})]), candidates, 3)
    with pytest.raises(RerankError, match="at most 2"):
        check_subset(label([(c, 1.0, {}) for c in candidates]), candidates, 2)
    evidence = label([(candidates[0], 1.0, {}), (candidates[1], 0.5, {})])
    with pytest.raises(RerankError, match="label"):
        check_subset([evidence[1], evidence[0]], candidates, 3)


def test_a_question_asking_for_a_quantity_prefers_a_table_chunk(embedder):
    # Candidate 1 is off topic, 2 says it in prose, 3 is the table holding the figure: their keywords tie.
    prose = "Total debt rose in 2018 as the company issued new notes to fund acquisitions."
    table = "(Millions) | 2018 | 2017\nTotal debt | 14,622 | 13,949\nLess: cash | 3,270 | 4,156"
    candidates = candidates_of(embedder, [TEXTS[3], prose, table, *TEXTS[4:]])
    reranker = LocalReranker(embedder)

    def first(question: str, rr: LocalReranker = reranker) -> str:
        return rr.rerank(question, candidates, 3)[0].candidate.chunk.text

    assert first("What was the total debt in 2018?") == table
    assert first("What was the total debt in 2018?", LocalReranker(embedder, LocalWeights(table=0.0))) == prose
    assert first("Why did debt change in 2018?") == prose  # no quantity asked: no table signal
    assert "table" not in reranker.rerank("Why did debt change in 2018?", candidates, 1)[0].signals


def test_a_page_mate_holding_what_was_asked_is_quoted_in_its_pages_place(reranker, embedder):
    """Best Buy's balance sheet is set over a page in several chunks; retrieval kept the one of its property rows,
    and "the total amount of inventories" sits in another: that one is quoted, for the same page and score."""
    question = "What is the total amount of merchandise inventories at year end?"
    candidates = candidates_of(embedder, TEXTS)
    page = candidates[5].chunk  # a page the reranker keeps, for its goodwill sentence
    mate_text = "Merchandise inventories | 5,409 | 5,209\nOther current assets | 466 | 438"
    mate = Candidate(
        replace(page, text=mate_text, ordinal=99), 40, 0.01, 40, None, embedder.embed([mate_text])[0], page_mate=True
    )
    stray_text = "Merchandise inventories are counted at every store at year end."
    stray = Candidate(  # a mate of a page not kept: it brings no page of its own
        Chunk("a.pdf", "v1", "a.pdf", 50, 50, "Notes", stray_text, 100),
        41,
        0.01,
        41,
        None,
        embedder.embed([stray_text])[0],
        page_mate=True,
    )
    kept = reranker.rerank(question, candidates, 4)
    evidence = reranker.rerank(question, [*candidates, mate, stray], 4)
    assert {e.candidate.chunk.page_start for e in evidence} == {e.candidate.chunk.page_start for e in kept}
    assert page.page_start in {e.candidate.chunk.page_start for e in kept}
    by_page = {e.candidate.chunk.page_start: e for e in evidence}
    assert by_page[page.page_start].candidate is mate
    assert by_page[page.page_start].score == next(e.score for e in kept if e.candidate.chunk == page)
    assert by_page[page.page_start].signals["mate_gain"] > 0
    assert stray not in [e.candidate for e in evidence]


def test_near_duplicates_are_dropped(reranker, embedder):
    near_copy = TEXTS[0].replace("mostly", "largely")  # the overlap of neighbouring chunks, say
    candidates = candidates_of(embedder, [TEXTS[0], near_copy, *TEXTS[1:]])
    texts = [e.candidate.chunk.text for e in reranker.rerank(QUESTION, candidates, 4)]
    assert (TEXTS[0] in texts) != (near_copy in texts)  # one of the pair, never both
    allow = LocalReranker(embedder, LocalWeights(duplicate_jaccard=1.01, mmr_lambda=1.0))
    texts = [e.candidate.chunk.text for e in allow.rerank(QUESTION, candidates, 2)]
    assert set(texts) == {TEXTS[0], near_copy}  # without the check both are chosen: the test can fail


def test_mmr_prefers_a_different_relevant_chunk_over_a_paraphrase(embedder):
    paraphrases = [
        "Capital expenditure in 2018 was 1,577 million dollars.",
        "In 2018 capital expenditures amounted to 1,577 million dollars.",
        "Capital spending for 2018 came to 1,577 million dollars.",
    ]
    other = "Capital expenditure is expected to be lower in 2019 as the plant programme ends."
    candidates = candidates_of(embedder, [*paraphrases, other, *TEXTS[2:]])
    relevance = np.array([1.0, 0.95, 0.9, 0.85] + [0.1] * len(TEXTS[2:]))  # as if scored so
    plain = LocalReranker(embedder, LocalWeights(mmr_lambda=1.0, duplicate_jaccard=1.01))
    diverse = LocalReranker(embedder, LocalWeights(mmr_lambda=0.5, duplicate_jaccard=1.01))
    assert plain.select(candidates, relevance, 2) == [0, 1]
    assert diverse.select(candidates, relevance, 2) == [0, 3]  # the paraphrase is redundant with the first


def test_sentence_embedding_is_bounded_to_the_pool(embedder):
    calls: list[int] = []

    class Counting:
        name, dimension, max_tokens = embedder.name, embedder.dimension, embedder.max_tokens

        def count_tokens(self, text):
            return embedder.count_tokens(text)

        def embed(self, texts):
            calls.append(len(texts))
            return embedder.embed(texts)

    reranker = LocalReranker(Counting(), LocalWeights(sentence=1.0, sentence_pool=3))
    candidates = candidates_of(embedder, TEXTS)
    evidence = reranker.rerank(QUESTION, candidates, 4)
    assert "sentence" in evidence[0].signals
    assert calls[0] == 1 and len(calls) == 1 + 3  # the question, then three chunks' sentences
    reranker.rerank(QUESTION, candidates, 4)
    assert len(calls) == 4  # question and sentence vectors are remembered: no model call at all


def test_load_reranker_local_and_missing_cross_encoder(embedder, tmp_path):
    assert isinstance(load_reranker("local", embedder), LocalReranker)
    with pytest.raises(ConfigurationError, match="could not be loaded from disk"):
        load_reranker(str(tmp_path / "no-such-model"), embedder)


def test_cross_encoder_from_a_local_folder(embedder):
    # The packaged bi-encoder loads as a cross-encoder with an untrained head: enough to run
    # the real loading and scoring path offline; its order means nothing.
    reranker = CrossEncoderReranker(str(resolve_model_path(DEFAULT_EMBED_MODEL)))
    candidates = candidates_of(embedder, TEXTS)
    evidence = reranker.rerank(QUESTION, candidates, 4)
    assert [e.label for e in evidence] == ["c1", "c2", "c3", "c4"]
    assert all(e.candidate in candidates for e in evidence)
    assert [e.score for e in evidence] == sorted((e.score for e in evidence), reverse=True)
