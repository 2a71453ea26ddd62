"""Summary quality: the metric formulas on hand-built summaries, the two baselines on real evidence,
the cut to citesum's sentence count, and `citesum eval --summaries --json` on the sample agreement."""

from __future__ import annotations

import pytest

from citesum.tasks.records import Chunk, DocumentRecord
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.evaluate import Question
from citesum.tasks.summarize.evidence import Citation
from citesum.tasks.summarize.quality import (
    METHODS,
    Claim,
    MethodSummary,
    QualityResult,
    figures,
    hits_gold,
    is_short_answer,
    lead,
    lexrank,
    repeated_sentences,
    run_question,
    says_not_stated,
)
from citesum.tasks.summarize.rerank import load_reranker
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.synthesizers.prompts import NOT_STATED
from tests.summary_fixtures import evidence, evidence_of

# -- metric formulas on hand-built summaries -------------------------------------------------


def cite(document: str, start: int, end: int | None = None) -> Citation:
    return Citation("c1", f"{document}-{start}", document, f"/corpus/{document}", start, start if end is None else end)


def claim(text: str, *citations: Citation) -> Claim:
    return Claim(text, citations)


def result(summaries: dict[str, tuple[Claim, ...]], *, gold=(("a.pdf", 4),), answer="x", short=False, hit=True):
    return QualityResult(
        id="q",
        source="s",
        answerable=bool(gold),
        unanswerable=not gold and answer is None,
        short_answer=short,
        evidence_hit=hit,
        selection_seconds=0.1,
        summaries={m: MethodSummary(m, summaries.get(m, ()), 0.2) for m in METHODS},
        gold=frozenset(gold),
        answer=answer,
    )


def test_a_citation_hits_gold_when_its_document_matches_and_its_page_span_includes_a_gold_page():
    gold = frozenset({("a.pdf", 4)})
    assert hits_gold(cite("a.pdf", 4), gold)
    assert hits_gold(cite("a.pdf", 3, 5), gold)  # a chunk spanning pages: the span counts
    assert hits_gold(cite("a.pdf", 2, 4), gold) and hits_gold(cite("a.pdf", 4, 6), gold)
    assert not hits_gold(cite("a.pdf", 5, 6), gold)
    assert not hits_gold(cite("b.pdf", 4), gold)  # the right page of another document


def test_precision_pools_citations_and_recall_counts_questions_with_a_gold_citation():
    first = result(
        {
            "citesum": (claim("One.", cite("a.pdf", 3, 5)), claim("Two.", cite("a.pdf", 7))),
            "lexrank": (claim("One.", cite("b.pdf", 4)),),
            "lead": (claim("One.", cite("a.pdf", 7)), claim("Two.", cite("a.pdf", 4), cite("a.pdf", 9))),
        }
    )
    second = result(
        {"citesum": (claim("Three.", cite("a.pdf", 1)),), "lead": (claim("Three.", cite("a.pdf", 4)),)}, hit=False
    )
    unanswerable = result({"citesum": (claim("Four.", cite("a.pdf", 4)),)}, gold=(), answer=None, hit=False)

    report = figures([first, second, unanswerable], evidence_k=8)
    ours, lex, led = (report["methods"][m] for m in METHODS)
    assert report["questions"] == 3 and report["answerable"] == 2
    assert report["evidence_hit@8"] == 0.5
    assert ours["citations"] == 3 and ours["cited_page_precision"] == pytest.approx(1 / 3)
    assert ours["gold_page_recall"] == 0.5
    assert lex["cited_page_precision"] == 0.0 and lex["gold_page_recall"] == 0.0  # page 4, wrong document
    assert led["citations"] == 4 and led["cited_page_precision"] == 0.5 and led["gold_page_recall"] == 1.0
    assert ours["sentences_per_summary"] == 1.5 and lex["sentences_per_summary"] == 0.5
    assert report["unanswerable"] == {"questions": 1, "not_stated": 0.0}
    assert ours["latency_s"]["median"] == pytest.approx(0.3)  # shared selection + the method's own step


def test_repeated_sentences_count_repeats_within_a_summary_case_and_spacing_aside():
    claims = [claim("Fees are due monthly."), claim("fees are  due monthly."), claim("Fees rise yearly.")]
    assert repeated_sentences(claims) == 1
    assert repeated_sentences(claims[1:]) == 0
    summary = result({"lead": tuple(claims + [claims[0]])})
    assert figures([summary, summary], 8)["methods"]["lead"]["repeated_sentences"] == 4


def test_an_unanswerable_question_answered_not_stated_counts_as_abstaining():
    abstains = result({"citesum": (Claim(NOT_STATED, (), not_stated=True),)}, gold=(), answer=None)
    answers = result({"citesum": (claim("Ulaanbaatar.", cite("a.pdf", 1)),)}, gold=(), answer=None)
    silent = result({}, gold=(), answer=None)  # no sentence at all is not an answer "not stated"
    no_page = result({"citesum": abstains.summaries["citesum"].claims}, gold=(), answer="2007")  # neither group
    assert figures([abstains, answers, silent, no_page], 8)["unanswerable"] == {
        "questions": 3,
        "not_stated": pytest.approx(1 / 3),
    }


def test_short_answers_are_every_mmlongbench_answer_and_any_figure():
    def q(answer, source):
        row = {"id": "q", "question": "?", "answer": answer, "source": source, "kind": "k"}
        return Question.from_json(row | {"evidence": [{"document": "a.pdf", "pages": [1]}]})

    assert is_short_answer(q("Pre-training", "mmlongbench-doc"))
    assert is_short_answer(q("$1577.00", "financebench")) and is_short_answer(q("24.3%", "financebench"))
    assert not is_short_answer(q("The Real Growth was flat in FY 2023 vs FY 2022.", "financebench"))
    assert not is_short_answer(q(None, "mmlongbench-doc"))


# -- the baselines on real evidence -----------------------------------------------------------

CLAUSES = (
    "Either party may terminate this Agreement for convenience on 30 days' written notice. "
    "Termination does not affect rights accrued before the termination date. "
    "On termination the Supplier shall return all Confidential Information.",
    "Notices must be in writing and delivered by hand or by registered post. "
    "A notice is effective when received at the address in Schedule 1.",
    "Invoices are issued monthly in arrears. "
    "Payment is due within 30 days of the invoice date. "
    "Late payment bears interest at 2% above the base rate.",
)


def test_lead_takes_the_first_sentence_of_each_chunk_in_rank_order_citing_its_page_span():
    chunks = [
        evidence_of("c1", CLAUSES[2], pages=(7, 8)),
        evidence_of("c2", CLAUSES[0], pages=(3, 3)),
        evidence_of("c3", CLAUSES[1], pages=(5, 5)),
    ]
    claims = lead(chunks, 5)
    assert [c.text for c in claims] == [
        "Invoices are issued monthly in arrears.",
        "Either party may terminate this Agreement for convenience on 30 days' written notice.",
        "Notices must be in writing and delivered by hand or by registered post.",
    ]
    assert [(c.citations[0].page_start, c.citations[0].page_end) for c in claims] == [(7, 8), (3, 3), (5, 5)]
    assert [c.text for c in lead(chunks, 2)] == [c.text for c in claims[:2]]  # the cut
    assert lead(chunks, 0) == ()


def test_lexrank_picks_verbatim_evidence_sentences_each_citing_its_own_chunk():
    chunks = evidence(*CLAUSES)
    claims = lexrank(chunks, 3)
    assert len(claims) == 3
    by_label = {e.label: e for e in chunks}
    for c in claims:
        (citation,) = c.citations
        assert c.text in by_label[citation.label].candidate.chunk.text
        assert (citation.page_start, citation.page_end) == (by_label[citation.label].candidate.chunk.page_start,) * 2
    pool = [s for text in CLAUSES for s in text.split(". ")]
    positions = [next(i for i, s in enumerate(pool) if c.text.startswith(s.rstrip("."))) for c in claims]
    assert positions == sorted(positions)  # in evidence order
    assert len(lexrank(chunks, 2)) == 2 and lexrank(chunks, 0) == ()  # the cut


def test_lexrank_takes_a_sentence_repeated_by_overlapping_chunks_once():
    shared = "Termination does not affect rights accrued before the termination date."
    chunks = evidence(CLAUSES[0], shared + " " + CLAUSES[1], shared + " " + CLAUSES[2])
    claims = lexrank(chunks, 8)
    assert repeated_sentences(claims) == 0
    assert [c.citations[0].label for c in claims if c.text == shared] == ["c1"]


# -- the cut to citesum's sentence count, through the pipeline's own steps --------------------


@pytest.fixture
def store(tmp_path, embedder):
    s = LanceStore.open_or_create(str(tmp_path / "db"), embedder.name, embedder.dimension)
    chunks = [Chunk("a.pdf", "v1", "/corpus/a.pdf", p, p, "", t, p - 1) for p, t in enumerate(CLAUSES * 2, 1)]
    record = DocumentRecord("a.pdf", "v1", "/corpus/a.pdf", len(chunks), len(chunks), "ok", embed_model="m")
    s.supersede(record, chunks, embedder.embed([c.embedding_text for c in chunks]))
    return s


def test_baselines_are_cut_to_as_many_sentences_as_the_citesum_summary(store, embedder):
    row = {"id": "q1", "question": "When can the agreement be terminated and what notice is needed?"}
    row |= {"answer": "30", "evidence": [{"document": "a.pdf", "pages": [1]}], "source": "s", "kind": "k"}
    question = Question.from_json(row)
    settings = Settings(candidates=6, evidence=3)
    synthesizer = ExtractiveSynthesizer(embedder)

    for limit in (1, 2):
        synthesizer_with_cap = _Capped(synthesizer, limit)
        outcome = run_question(
            question, store, embedder, load_reranker("local", embedder), synthesizer_with_cap, settings
        )
        counts = {m: len(s.claims) for m, s in outcome.summaries.items()}
        assert counts == {"citesum": limit, "lexrank": limit, "lead": limit}
    assert outcome.evidence_hit and outcome.short_answer
    assert all(c.citations for s in outcome.summaries.values() for c in s.claims)


def test_an_unanswerable_question_naming_a_year_no_document_mentions_abstains(store, embedder):
    row = {"id": "q2", "question": "When can the agreement be terminated under its 2031 renewal terms?"}
    row |= {"answer": None, "evidence": [], "source": "s", "kind": "k"}
    synthesizer, reranker = ExtractiveSynthesizer(embedder), load_reranker("local", embedder)
    settings = Settings(candidates=6, evidence=3)

    outcome = run_question(Question.from_json(row), store, embedder, reranker, synthesizer, settings)
    assert outcome.unanswerable and says_not_stated(outcome.summaries["citesum"])
    # The baselines still quote the evidence: what citesum abstains from is measured against them.
    assert all(c.citations for c in outcome.summaries["lead"].claims)


class _Capped:
    """The extractive synthesizer held to ``limit`` sentences: citesum's count is known to the test."""

    def __init__(self, inner: ExtractiveSynthesizer, limit: int):
        self._inner, self._limit = inner, limit
        self.name, self.verbatim, self.context_tokens = inner.name, inner.verbatim, inner.context_tokens

    def synthesize(self, request):
        from dataclasses import replace

        return self._inner.synthesize(replace(request, max_sentences=self._limit))

    def merge(self, request):
        return self._inner.merge(request)
