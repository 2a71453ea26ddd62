"""Evaluation harness: retrieval and reranking measured against questions with known evidence pages.

Each question is answered from its own document(s) only. What is measured:

- candidate hit@k (k = 5, 10, 20, 50): the question's fused candidate list, cut at k, holds at least
  one chunk whose page span covers an evidence page of the right document;
- page recall@k: the share of the question's evidence pages that some of those k chunks cover;
- evidence hit@N (N = ``settings.summarize.evidence``): the same as hit@k for the reranker's selection;
- MRR: reciprocal rank of the first correct chunk in the *final* order, which is the reranked
  evidence (c1..cN) followed by the remaining candidates in fused order; 0 when none is correct;
- answer in evidence: the share of questions whose answer is in the selected evidence's text, by
  the rule the summary evaluation's "answer found" uses (``answers.answer_found``: whole words,
  figures as numbers);
- the dense-only baseline in the same run: top N and top 50 of plain vector search within the
  document(s), scored as evidence hit@N and hit@50;
- latency per question: embedding the question, hybrid retrieval and reranking (median, p90).

Questions without evidence pages (unanswerable, or a rare row that names a document but no page) are
excluded from every hit metric and counted apart as ``unanswerable``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from citesum.tasks.embed import Embedder
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.answers import answer_found
from citesum.tasks.summarize.evidence import Candidate, Evidence
from citesum.tasks.summarize.rerank import Reranker
from citesum.tasks.summarize.retrieve import dense_candidates, retrieve

CUTOFFS = (5, 10, 20, 50)
DENSE_BASELINE_DEPTH = 50


@dataclass(frozen=True)
class EvidenceRef:
    """Where a question's answer is: a document and 1-based physical pages."""

    document: str
    pages: tuple[int, ...]


@dataclass(frozen=True)
class Question:
    """One line of questions.jsonl."""

    id: str
    question: str
    answer: str | None
    evidence: tuple[EvidenceRef, ...]
    source: str
    kind: str
    documents: tuple[str, ...] = ()  # where to search: the evidence documents; none named = the whole store

    @classmethod
    def from_json(cls, row: dict) -> Question:
        evidence = tuple(EvidenceRef(e["document"], tuple(e["pages"])) for e in row.get("evidence") or ())
        named = row.get("documents") or row.get("document") or [e.document for e in evidence]
        documents = (named,) if isinstance(named, str) else tuple(dict.fromkeys(named))
        return cls(row["id"], row["question"], row.get("answer"), evidence, row["source"], str(row["kind"]), documents)

    @property
    def answerable(self) -> bool:
        """Has evidence pages to score against (an MMLongBench row names a document but no page)."""
        return bool(self.pages)

    @property
    def pages(self) -> frozenset[tuple[str, int]]:
        return frozenset((e.document, p) for e in self.evidence for p in e.pages)

    def is_correct(self, candidate: Candidate) -> bool:
        return any(candidate.covers(document, page) for document, page in self.pages)


def load_questions(path: str | Path) -> list[Question]:
    """The questions of a JSONL file; a ConfigurationError names the file and line of the first bad one."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise ConfigurationError(f"{path}: no such questions file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: not a readable questions file ({exc})") from exc
    questions = [question_of(line, f"{path}:{n}") for n, line in enumerate(lines, 1) if line.strip()]
    if not questions:
        raise ConfigurationError(f"{path}: no questions")
    return questions


def question_of(line: str, where: str) -> Question:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"{where}: not a JSON object ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(row, dict):
        raise ConfigurationError(f"{where}: not a JSON object (a JSON {type(row).__name__})")
    try:
        return Question.from_json(row)
    except (KeyError, TypeError) as exc:
        raise ConfigurationError(f"{where}: not a question (fields: ../shared/eval/README.md): {exc!r}") from exc


# -- per question ----------------------------------------------------------------------


@dataclass(frozen=True)
class QuestionResult:
    """What one question scored; ranks are 1-based, None = no correct chunk."""

    id: str
    source: str
    kind: str
    answerable: bool
    first_candidate: int | None  # first correct chunk in fused candidate order
    first_final: int | None  # first correct chunk in final order (evidence, then the other candidates)
    page_recall: dict[int, float]  # cutoff -> share of evidence pages covered
    evidence_hit: bool
    answer_in_evidence: bool
    dense_first: int | None  # first correct chunk of the dense-only baseline
    seconds: float


def first_correct(question: Question, ranked: Iterable[Candidate]) -> int | None:
    return next((i for i, c in enumerate(ranked, 1) if question.is_correct(c)), None)


def page_recall(question: Question, ranked: Sequence[Candidate]) -> float:
    pages = question.pages
    covered = {(d, p) for d, p in pages if any(c.covers(d, p) for c in ranked)}
    return len(covered) / len(pages)


def final_order(evidence: Sequence[Evidence], candidates: Sequence[Candidate]) -> list[Candidate]:
    chosen = [e.candidate for e in evidence]
    ids = {c.chunk.chunk_id for c in chosen}
    return chosen + [c for c in candidates if c.chunk.chunk_id not in ids]


def answer_in(answer: str | None, evidence: Sequence[Evidence]) -> bool:
    """The answer is in the evidence's text, as ``answer_found`` finds it in a summary."""
    return answer_found(answer, "\n".join(e.candidate.chunk.text for e in evidence))


def run_question(
    question: Question, store: LanceStore, embedder: Embedder, reranker: Reranker, settings: Settings
) -> QuestionResult:
    scope = question.documents or None  # unanswerable questions name no document
    started = time.perf_counter()
    candidates = retrieve(store, embedder, question.question, k=settings.summarize.candidates, document_ids=scope)
    evidence = reranker.rerank(question.question, candidates, settings.summarize.evidence)
    seconds = time.perf_counter() - started

    vector = embedder.embed([question.question])[0]
    dense = dense_candidates(store, vector, k=DENSE_BASELINE_DEPTH, document_ids=scope)
    answerable = question.answerable
    return QuestionResult(
        id=question.id,
        source=question.source,
        kind=question.kind,
        answerable=answerable,
        first_candidate=first_correct(question, candidates) if answerable else None,
        first_final=first_correct(question, final_order(evidence, candidates)) if answerable else None,
        page_recall={k: page_recall(question, candidates[:k]) for k in CUTOFFS} if answerable else {},
        evidence_hit=answerable and first_correct(question, [e.candidate for e in evidence]) is not None,
        answer_in_evidence=answer_in(question.answer, evidence),
        dense_first=first_correct(question, dense) if answerable else None,
        seconds=seconds,
    )


# -- the report ------------------------------------------------------------------------


def _hit_rate(ranks: Sequence[int | None], k: int) -> float:
    return sum(r is not None and r <= k for r in ranks) / len(ranks) if ranks else 0.0


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def metrics(results: Sequence[QuestionResult], evidence_k: int) -> dict:
    """Hit metrics over the answerable results, shaped as the report's JSON."""
    scored = [r for r in results if r.answerable]
    first = [r.first_candidate for r in scored]
    candidates = {f"hit@{k}": _hit_rate(first, k) for k in CUTOFFS}
    candidates |= {f"page_recall@{k}": _mean(r.page_recall[k] for r in scored) for k in CUTOFFS}
    dense = [r.dense_first for r in scored]
    return {
        "questions": len(results),
        "unanswerable": len(results) - len(scored),  # not in any hit metric
        "candidates": candidates,
        "evidence": {f"hit@{evidence_k}": _mean(r.evidence_hit for r in scored)},
        "mrr": _mean(1 / r.first_final if r.first_final else 0.0 for r in scored),
        "dense_baseline": {f"hit@{evidence_k}": _hit_rate(dense, evidence_k), "hit@50": _hit_rate(dense, 50)},
        "answer_in_evidence": _mean(r.answer_in_evidence for r in scored),
    }


def _groups(results: Sequence[QuestionResult], key: Callable[[QuestionResult], str]) -> dict[str, list]:
    groups: dict[str, list[QuestionResult]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    return dict(sorted(groups.items()))


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


@dataclass(frozen=True)
class EvalReport:
    """The figures of one evaluation run and the per-question results they come from."""

    results: tuple[QuestionResult, ...]
    evidence_k: int
    settings: dict = field(default_factory=dict)  # what produced it: model, reranker, depths

    def latency(self) -> dict[str, float]:
        seconds = [r.seconds for r in self.results]
        median = statistics.median(seconds) if seconds else 0.0
        return {"median": median, "p90": percentile(seconds, 0.9)}

    def to_json(self) -> dict:
        return {
            **metrics(self.results, self.evidence_k),
            "latency_s": self.latency(),
            "by_source": {g: metrics(rs, self.evidence_k) for g, rs in _groups(self.results, _source).items()},
            "by_kind": {g: metrics(rs, self.evidence_k) for g, rs in _groups(self.results, _kind).items()},
            "settings": self.settings,
        }

    def table_columns(self) -> list[str]:
        sources = [f"source: {g}" for g in _groups(self.results, _source)]
        return ["metric", "all", *sources, *(f"kind: {g}" for g in _groups(self.results, _kind))]

    def table_rows(self) -> list[list[str]]:
        """One row per metric: overall, then by source, then by kind (for a rich Table)."""
        columns = [self.results, *_groups(self.results, _source).values(), *_groups(self.results, _kind).values()]
        flat = [_flatten(metrics(rs, self.evidence_k)) for rs in columns]
        rows = [[name] + [cell(f[name]) for f in flat] for name in flat[0]]
        latency = self.latency()
        rows.append(["latency median / p90 (s)", f"{latency['median']:.3f} / {latency['p90']:.3f}"])
        return rows


def _source(r: QuestionResult) -> str:
    return r.source


def _kind(r: QuestionResult) -> str:
    return r.kind


def _flatten(figures: dict) -> dict[str, float]:
    flat: dict[str, float] = {}
    for name, value in figures.items():
        if isinstance(value, dict):
            flat |= {f"{name} {inner}": v for inner, v in value.items()}
        else:
            flat[name] = value
    return flat


def cell(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def evaluate(
    questions: Sequence[Question],
    store: LanceStore,
    embedder: Embedder,
    reranker: Reranker,
    settings: Settings,
    *,
    on_result: Callable[[QuestionResult], None] | None = None,
) -> EvalReport:
    """Retrieve and rerank for every question within its own document(s); report the figures.

    ``on_result`` is called after each question (a progress bar, a log line).
    """
    results = []
    for question in questions:
        result = run_question(question, store, embedder, reranker, settings)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return EvalReport(tuple(results), settings.summarize.evidence, provenance(embedder, reranker, settings))


def provenance(embedder: Embedder, reranker: Reranker, settings: Settings) -> dict:
    return {
        "embed_model": embedder.name,
        "embed_backend": embedder.backend,
        "reranker": getattr(reranker, "name", type(reranker).__name__),
        "candidates": settings.summarize.candidates,
        "evidence": settings.summarize.evidence,
        "fingerprint": settings.fingerprint(),
    }
