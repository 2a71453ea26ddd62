"""The evaluation harness on a tiny hand-made question set whose figures are worked out by hand."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from citesum.tasks.records import Chunk, DocumentRecord
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.evaluate import (
    EvalReport,
    Question,
    QuestionResult,
    answer_in,
    evaluate,
    final_order,
    first_correct,
    load_questions,
    metrics,
    page_recall,
)
from citesum.tasks.summarize.evidence import Candidate, Evidence
from citesum.tasks.summarize.rerank import label

PAGES = {
    1: "Revenue grew in every segment as demand for industrial adhesives recovered.",
    2: "The board approved a quarterly dividend and a new share repurchase programme.",
    3: "Operating expenses rose because of higher freight and wage costs.",
    4: "Purchases of property, plant and equipment were 1,577 million dollars.",
    5: "The company is exposed to currency risk from its European sales.",
    6: "Litigation about product liability is described in the notes.",
    7: "Inventories are valued at the lower of cost and net realisable value.",
    8: "Goodwill is tested for impairment every year in the fourth quarter.",
}


def candidate(doc: str, pages: tuple[int, int], rank: int, text: str = "") -> Candidate:
    return Candidate(Chunk(doc, "v1", doc, pages[0], pages[1], "", text, rank), rank, 1.0 / rank)


def question(pages: dict[str, list[int]], answer: str | None = "x", kind: str = "k", source: str = "s") -> Question:
    row = {"id": "q", "question": "?", "answer": answer, "source": source, "kind": kind}
    row["evidence"] = [{"document": d, "pages": p} for d, p in pages.items()]
    return Question.from_json(row)


# -- metric functions on hand-made candidates ---------------------------------------------


def test_first_correct_needs_the_right_document_and_a_covering_span():
    q = question({"a.pdf": [5]})
    ranked = [candidate("b.pdf", (5, 5), 1), candidate("a.pdf", (1, 4), 2), candidate("a.pdf", (4, 6), 3)]
    assert first_correct(q, ranked) == 3
    assert first_correct(q, ranked[:2]) is None


def test_page_recall_is_the_share_of_evidence_pages_covered():
    q = question({"a.pdf": [2, 9], "b.pdf": [1, 3]})
    ranked = [candidate("a.pdf", (1, 2), 1), candidate("b.pdf", (3, 4), 2), candidate("c.pdf", (9, 9), 3)]
    assert page_recall(q, ranked) == pytest.approx(2 / 4)
    assert page_recall(q, ranked[:1]) == pytest.approx(1 / 4)


def test_final_order_is_the_evidence_then_the_other_candidates_in_fused_order():
    cands = [candidate("a.pdf", (p, p), p) for p in (1, 2, 3, 4)]
    evidence = label([(cands[2], 1.0, {}), (cands[0], 0.5, {})])
    assert [c.chunk.page_start for c in final_order(evidence, cands)] == [3, 1, 2, 4]


def test_answer_in_evidence_matches_figures_without_formatting():
    evidence = label([(candidate("a.pdf", (4, 4), 1, PAGES[4]), 1.0, {})])
    assert answer_in("$1577.00", evidence)
    assert answer_in("1,577", evidence)
    assert answer_in("Purchases of  PROPERTY", evidence)
    assert not answer_in("$1578.00", evidence)
    assert not answer_in(None, evidence)


def test_answer_in_evidence_takes_whole_numbers_and_words_only():
    # A substring test found the answer "5" in "2015" and "15", and "Yes" in "Yesterday".
    text = "Yesterday the 2015 plan listed 15 sites and 1,577 machines."
    evidence = label([(candidate("a.pdf", (4, 4), 1, text), 1.0, {})])
    assert not answer_in("5", evidence)
    assert not answer_in("Yes", evidence)
    assert answer_in("15", evidence)
    assert answer_in("1577", evidence)


def result(first: int | None, recall: float, evidence_hit: bool, dense: int | None, **kw) -> QuestionResult:
    fields = dict(id="q", source="s", kind="k", answerable=True, first_final=first, answer_in_evidence=False)
    fields |= kw
    return QuestionResult(
        first_candidate=first,
        page_recall={k: recall for k in (5, 10, 20, 50)},
        evidence_hit=evidence_hit,
        dense_first=dense,
        seconds=0.1,
        **fields,
    )


def test_metrics_over_answerable_results_only():
    results = [
        result(1, 1.0, True, 9),
        result(7, 0.5, False, 2),
        result(30, 0.5, False, None),
        result(None, 0.0, False, None),
        result(None, 0.0, False, None, answerable=False),
    ]
    figures = metrics(results, evidence_k=8)
    assert figures["questions"] == 5 and figures["unanswerable"] == 1
    assert figures["candidates"]["hit@5"] == pytest.approx(1 / 4)
    assert figures["candidates"]["hit@10"] == pytest.approx(2 / 4)
    assert figures["candidates"]["hit@20"] == pytest.approx(2 / 4)
    assert figures["candidates"]["hit@50"] == pytest.approx(3 / 4)
    assert figures["candidates"]["page_recall@50"] == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert figures["evidence"] == {"hit@8": pytest.approx(1 / 4)}
    assert figures["mrr"] == pytest.approx((1 + 1 / 7 + 1 / 30 + 0) / 4)
    assert figures["dense_baseline"] == {"hit@8": pytest.approx(1 / 4), "hit@50": pytest.approx(2 / 4)}


# -- evaluate end to end on a tiny store ------------------------------------------------------


class ReversedFirstK:
    """Deterministic fake: the first k candidates in reverse order (so final order differs from fused)."""

    name = "reversed-first-k"

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def rerank(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Evidence]:
        self.calls.append((question, k))
        return label([(c, 1.0, {}) for c in reversed(candidates[:k])])


@pytest.fixture
def store(tmp_path, embedder):
    s = LanceStore.open_or_create(str(tmp_path / "db"), embedder.name, embedder.dimension)
    chunks = [Chunk("a.pdf", "v1", "/corpus/a.pdf", p, p, "", t, p - 1) for p, t in PAGES.items()]
    record = DocumentRecord("a.pdf", "v1", "/corpus/a.pdf", len(chunks), len(chunks), "ok", embed_model="m")
    s.supersede(record, chunks, embedder.embed([c.embedding_text for c in chunks]))
    return s


def write_questions(path, rows: list[dict]) -> list[Question]:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return load_questions(path)


def ask(qid: str, text: str, pages: list[int] | None, answer: str | None = None, kind: str = "metric") -> dict:
    evidence = [{"document": "a.pdf", "pages": pages}] if pages is not None else []
    return {"id": qid, "question": text, "answer": answer, "evidence": evidence, "source": "fb", "kind": kind}


def test_evaluate_on_a_hand_made_question_set(tmp_path, store, embedder):
    questions = write_questions(
        tmp_path / "q.jsonl",
        [
            # the question is the page's own sentence: its chunk is ranked first by both searches
            ask("q1", PAGES[4], [4], answer="$1577.00"),
            ask("q2", PAGES[8], [8, 99]),  # page 99 has no chunk: half the pages can be covered
            ask("q3", "Where is the head office?", [99], kind="place"),  # nothing can be correct
            ask("q4", "Unanswerable?", None, kind="place"),
            ask("q5", "When was it published?", [], answer="2007", kind="place"),  # a document but no page
        ],
    )
    assert [q.answerable for q in questions] == [True, True, True, False, False]
    assert questions[4].documents == ("a.pdf",) and questions[3].documents == ()
    reranker = ReversedFirstK()
    settings = Settings(candidates=5, evidence=2)

    report = evaluate(questions, store, embedder, reranker, settings)
    figures = report.to_json()

    assert reranker.calls == [(q.question, 2) for q in questions]
    assert figures["questions"] == 5 and figures["unanswerable"] == 2
    # q1 and q2 are hit at fused rank 1; q3 never: 2 of 3 at every cutoff
    assert figures["candidates"] == {
        **{f"hit@{k}": pytest.approx(2 / 3) for k in (5, 10, 20, 50)},
        **{f"page_recall@{k}": pytest.approx((1 + 0.5 + 0) / 3) for k in (5, 10, 20, 50)},
    }
    assert figures["evidence"] == {"hit@2": pytest.approx(2 / 3)}
    # the fake puts fused rank 1 second: reciprocal rank 1/2 for q1 and q2, 0 for q3
    assert figures["mrr"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert figures["dense_baseline"] == {"hit@2": pytest.approx(2 / 3), "hit@50": pytest.approx(2 / 3)}
    assert figures["answer_in_evidence"] == pytest.approx(1 / 3)  # q1's "$1577.00" is "1,577" on page 4
    assert figures["by_kind"]["place"]["questions"] == 3 and figures["by_kind"]["place"]["unanswerable"] == 2
    assert figures["by_kind"]["place"]["candidates"]["hit@5"] == 0.0
    assert figures["by_kind"]["metric"]["candidates"]["hit@5"] == 1.0
    assert set(figures["by_source"]) == {"fb"} and figures["by_source"]["fb"]["questions"] == 5
    assert figures["latency_s"]["median"] > 0 and figures["latency_s"]["p90"] >= figures["latency_s"]["median"]
    json.dumps(figures)  # serialisable as it is


def test_report_json_shape_and_table(tmp_path, store, embedder):
    questions = write_questions(tmp_path / "q.jsonl", [ask("q1", PAGES[4], [4]), ask("q2", PAGES[2], [2], kind="x")])
    report = evaluate(questions, store, embedder, ReversedFirstK(), Settings(candidates=5, evidence=8))
    assert isinstance(report, EvalReport)
    figures = report.to_json()
    assert {"questions", "candidates", "evidence", "mrr", "dense_baseline", "by_source", "by_kind"} <= set(figures)
    assert list(figures["candidates"]) == [
        *(f"hit@{k}" for k in (5, 10, 20, 50)),
        *(f"page_recall@{k}" for k in (5, 10, 20, 50)),
    ]
    assert list(figures["evidence"]) == ["hit@8"] and list(figures["dense_baseline"]) == ["hit@8", "hit@50"]
    columns = report.table_columns()
    assert columns == ["metric", "all", "source: fb", "kind: metric", "kind: x"]
    rows = report.table_rows()
    assert all(len(row) == len(columns) for row in rows[:-1])
    assert ["candidates hit@5", "1.000"] == rows[[r[0] for r in rows].index("candidates hit@5")][:2]
