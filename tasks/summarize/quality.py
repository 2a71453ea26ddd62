"""Summary quality against gold evidence pages: citesum's query summary beside two baselines.

For every question, the pipeline's own steps run as plain calls (retrieve -> rerank ->
extractive synthesis -> citation validation); two baselines are then written from the same
selected evidence and cut to as many sentences as citesum's summary has:

- ``lexrank``: LexRank (the ``sumy`` package) over the evidence's sentences, split by
  ``citesum.tasks.text.split_sentences`` (no NLTK data is needed or downloaded);
- ``lead``: the first sentence of each evidence chunk, in rank order.

A baseline sentence cites the chunk it came from. A citation hits gold when its document is a gold
document and its page span (``page_start``..``page_end``) includes a gold page: one rule for every
method. Figures per method, over the answerable questions:

- cited-page precision: the share of all the summaries' citations (one per sentence and cited
  chunk, pooled over the questions) that hit gold;
- gold-page recall: the share of questions whose summary has at least one citation that hits gold;
- answer found: over questions with a short answer (every MMLongBench-Doc answer, and any answer
  that is a figure), the share whose answer is in the summary's text (``answer_found``);
- repeated sentences (a sentence equal to an earlier one of the same summary, normalised), sentences
  per summary, and latency: the shared retrieval and rerank plus the method's own step;
- injected surfaced: sentences, over every question's summary (answerable or not), that match the
  injection detector (``citesum.tasks.injection``): text that addresses an AI system, shown as a finding.
  The baselines read the selected evidence as it is (citesum's synthesis quarantines it first), so their
  count is what a summary of the same evidence without the quarantine would show.

Beside them, the run's evidence hit@N: what the summaries could have cited. For unanswerable
questions (``answer: null`` and no evidence), the share that citesum answers "Not stated in the
evidence.". A row that names a document but no page is in neither group.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prefect.logging import disable_run_logger

from citesum.tasks import injection
from citesum.tasks.embed import Embedder
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.answers import answer_found, figure
from citesum.tasks.summarize.evaluate import Question, cell, first_correct, percentile, provenance
from citesum.tasks.summarize.evidence import Citation, Evidence
from citesum.tasks.summarize.rerank import Reranker
from citesum.tasks.summarize.synthesizers.base import Synthesizer
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.tasks import (
    check_premise,
    fallback_synthesizer,
    retrieve_candidates,
    select_evidence,
    write_part,
)
from citesum.tasks.summarize.validate import is_not_stated
from citesum.tasks.text import normalize_space, split_sentences, words

METHODS = ("citesum", "lexrank", "lead")
SHORT_ANSWER_SOURCES = frozenset({"mmlongbench-doc"})  # sources whose every answer is short by design


@dataclass(frozen=True)
class Claim:
    """One sentence of a summary and where it points."""

    text: str
    citations: tuple[Citation, ...]
    not_stated: bool = False  # "Not stated in the evidence.": no claim, no citation


@dataclass(frozen=True)
class MethodSummary:
    method: str
    claims: tuple[Claim, ...]
    seconds: float  # the method's own step (for citesum: synthesis and validation)


@dataclass(frozen=True)
class QualityResult:
    """One question: the three summaries and what the evidence could have given them."""

    id: str
    source: str
    answerable: bool  # has gold pages: scored against them
    unanswerable: bool  # no answer, no evidence: scored on abstaining (a document but no page is neither)
    short_answer: bool
    evidence_hit: bool
    selection_seconds: float  # retrieval and rerank, shared by the three methods
    summaries: dict[str, MethodSummary]
    gold: frozenset[tuple[str, int]]
    answer: str | None


# -- the baselines ---------------------------------------------------------------------


def _chunk_sentences(item: Evidence) -> list[str]:
    text = item.text
    return [normalize_space(text[start:end]) for start, end in split_sentences(text)]


def lead(evidence: Sequence[Evidence], count: int) -> tuple[Claim, ...]:
    """The first sentence of each evidence chunk in rank order, the first ``count`` of them."""
    firsts = [(sentences[0], item) for item in evidence if (sentences := _chunk_sentences(item))]
    return tuple(Claim(text, (Citation.of(item),)) for text, item in firsts[:count])


class _Words:
    """sumy's word tokenizer interface over citesum's tokeniser (sumy's own one needs NLTK data)."""

    language = "english"

    @staticmethod
    def to_words(sentence: str) -> list[str]:
        return words(sentence)


def lexrank(evidence: Sequence[Evidence], count: int) -> tuple[Claim, ...]:
    """LexRank's best ``count`` sentences of the evidence, in evidence order, each citing its chunk.

    A sentence repeated by overlapping chunks enters once, citing its first chunk.
    """
    from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence
    from sumy.nlp.stemmers import Stemmer
    from sumy.summarizers.lex_rank import LexRankSummarizer
    from sumy.utils import get_stop_words

    if count <= 0:
        return ()
    tokenizer = _Words()
    seen: set[str] = set()
    paragraphs, cited = [], {}
    for item in evidence:
        found = []
        for text in _chunk_sentences(item):
            if text.lower() in seen or not words(text):
                continue
            seen.add(text.lower())
            sentence = Sentence(text, tokenizer)
            cited[id(sentence)] = Claim(text, (Citation.of(item),))
            found.append(sentence)
        if found:
            paragraphs.append(Paragraph(found))
    if not paragraphs:
        return ()
    summarizer = LexRankSummarizer(Stemmer("english"))
    summarizer.stop_words = get_stop_words("english")
    return tuple(cited[id(s)] for s in summarizer(ObjectDocumentModel(paragraphs), count))


# -- scoring ---------------------------------------------------------------------------


def hits_gold(citation: Citation, gold: frozenset[tuple[str, int]]) -> bool:
    return any(citation.document_id == d and citation.page_start <= p <= citation.page_end for d, p in gold)


def repeated_sentences(claims: Sequence[Claim]) -> int:
    """Sentences equal (case and spacing aside) to an earlier sentence of the same summary."""
    texts = [normalize_space(c.text).lower() for c in claims]
    return len(texts) - len(set(texts))


def is_short_answer(question: Question) -> bool:
    """Scored for answer found: every answer of a short-answer source, and any figure."""
    if not question.answer:
        return False
    return question.source in SHORT_ANSWER_SOURCES or figure(question.answer) is not None


# -- the run ---------------------------------------------------------------------------


def _claims(section) -> tuple[Claim, ...]:
    by_label = {e.label: e for e in section.evidence}
    return tuple(
        Claim(s.text, tuple(Citation.of(by_label[x]) for x in s.citations if x in by_label), is_not_stated(s))
        for s in section.sentences
    )


def run_question(
    question: Question,
    store: LanceStore,
    embedder: Embedder,
    reranker: Reranker,
    synthesizer: Synthesizer,
    settings: Settings,
) -> QualityResult:
    """The pipeline's query summary and the two baselines over the same selected evidence."""
    scope = question.documents or None  # unanswerable questions name no document: the whole store
    with disable_run_logger():  # the tasks' own logic, outside a flow run
        started = time.perf_counter()
        candidates = retrieve_candidates.fn(question.question, store, embedder, scope, settings.summarize.candidates)
        evidence = select_evidence.fn(question.question, candidates, reranker, settings.summarize.evidence)
        selected = time.perf_counter()
        missing = check_premise.fn(question.question, evidence, store)
        section = write_part.fn(
            "Summary",
            question.question,
            evidence,
            synthesizer,
            fallback_synthesizer(synthesizer, embedder),  # as a summary run writes it
            is_question=True,
            unmentioned=missing,
        )
        written = time.perf_counter()
    ours = _claims(section)
    count = sum(not c.not_stated for c in ours)
    summaries = {"citesum": MethodSummary("citesum", ours, written - selected)}
    for name, baseline in (("lexrank", lexrank), ("lead", lead)):
        begun = time.perf_counter()
        claims = baseline(evidence, count)
        summaries[name] = MethodSummary(name, claims, time.perf_counter() - begun)
    answerable = question.answerable
    return QualityResult(
        id=question.id,
        source=question.source,
        answerable=answerable,
        unanswerable=question.answer is None and not question.evidence,
        short_answer=answerable and is_short_answer(question),
        evidence_hit=answerable and first_correct(question, [e.candidate for e in evidence]) is not None,
        selection_seconds=selected - started,
        summaries=summaries,
        gold=question.pages,
        answer=question.answer,
    )


def says_not_stated(summary: MethodSummary) -> bool:
    """The summary abstains: it has sentences and each is "Not stated in the evidence."."""
    return bool(summary.claims) and all(c.not_stated for c in summary.claims)


def injected_surfaced(claims: Sequence[Claim]) -> int:
    """Sentences of a summary that address an AI system (the injection detector's hits)."""
    return sum(injection.addresses_ai(c.text) for c in claims)


def method_figures(results: Sequence[QualityResult], method: str) -> dict:
    """One method's figures over the answerable results; injected sentences over every result."""
    scored = [r for r in results if r.answerable]
    citations = [(r, c) for r in scored for claim in r.summaries[method].claims for c in claim.citations]
    recall = [any(hits_gold(c, r.gold) for cl in r.summaries[method].claims for c in cl.citations) for r in scored]
    short = [r for r in scored if r.short_answer]
    found = [answer_found(r.answer, " ".join(c.text for c in r.summaries[method].claims)) for r in short]
    seconds = [r.selection_seconds + r.summaries[method].seconds for r in scored]
    return {
        "cited_page_precision": _share(hits_gold(c, r.gold) for r, c in citations),
        "citations": len(citations),
        "gold_page_recall": _share(recall),
        "answer_found": _share(found),
        "short_answers": len(short),
        "repeated_sentences": sum(repeated_sentences(r.summaries[method].claims) for r in scored),
        "sentences_per_summary": _share(len(r.summaries[method].claims) for r in scored),
        "injected_surfaced": sum(injected_surfaced(r.summaries[method].claims) for r in results),
        "latency_s": _latency(seconds),
    }


def figures(results: Sequence[QualityResult], evidence_k: int) -> dict:
    scored = [r for r in results if r.answerable]
    unanswerable = [r for r in results if r.unanswerable]
    return {
        "questions": len(results),
        "answerable": len(scored),
        f"evidence_hit@{evidence_k}": _share(r.evidence_hit for r in scored),
        "methods": {m: method_figures(results, m) for m in METHODS},
        "unanswerable": {
            "questions": len(unanswerable),
            "not_stated": _share(says_not_stated(r.summaries["citesum"]) for r in unanswerable),
        },
    }


def _share(values) -> float:
    values = [float(v) for v in values]
    return sum(values) / len(values) if values else 0.0


def _latency(seconds: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(seconds) if seconds else 0.0, "p90": percentile(seconds, 0.9)}


_TABLE_ROWS = (
    ("cited_page_precision", "cited-page precision"),
    ("gold_page_recall", "gold-page recall"),
    ("answer_found", "answer found (short answers)"),
    ("repeated_sentences", "repeated sentences"),
    ("sentences_per_summary", "sentences per summary"),
    ("injected_surfaced", "injected sentences surfaced"),
)


@dataclass(frozen=True)
class QualityReport:
    results: tuple[QualityResult, ...]
    evidence_k: int
    settings: dict

    def by_source(self) -> dict[str, list[QualityResult]]:
        groups: dict[str, list[QualityResult]] = {}
        for r in self.results:
            groups.setdefault(r.source, []).append(r)
        return dict(sorted(groups.items()))

    def to_json(self) -> dict:
        return {
            **figures(self.results, self.evidence_k),
            "by_source": {g: figures(rs, self.evidence_k) for g, rs in self.by_source().items()},
            "settings": self.settings,
        }

    def table_columns(self) -> list[str]:
        return ["metric", "all", *(f"source: {g}" for g in self.by_source())]

    def table_rows(self) -> list[list[str]]:
        """Per method its figures, then evidence hit@N and the unanswerable share (a rich Table)."""
        groups = [self.results, *self.by_source().values()]
        columns = [figures(rs, self.evidence_k) for rs in groups]
        rows = [
            [f"{method} {label}", *(cell(f["methods"][method][key]) for f in columns)]
            for method in METHODS
            for key, label in _TABLE_ROWS
        ]
        for m in METHODS:
            latency = [f["methods"][m]["latency_s"] for f in columns]
            rows.append([f"{m} latency median / p90 (s)", *(f"{x['median']:.3f} / {x['p90']:.3f}" for x in latency)])
        hit = f"evidence_hit@{self.evidence_k}"
        rows.append([f"evidence hit@{self.evidence_k}", *(cell(f[hit]) for f in columns)])
        rows.append(["short-answer questions", *(str(f["methods"]["citesum"]["short_answers"]) for f in columns)])
        rows.append(["unanswerable questions", *(str(f["unanswerable"]["questions"]) for f in columns)])
        rows.append(['unanswerable answered "not stated"', *(cell(f["unanswerable"]["not_stated"]) for f in columns)])
        return rows


def evaluate_summaries(
    questions: Sequence[Question],
    store: LanceStore,
    embedder: Embedder,
    reranker: Reranker,
    settings: Settings,
    *,
    synthesizer: Synthesizer | None = None,
    on_result: Callable[[QualityResult], None] | None = None,
) -> QualityReport:
    """Summaries of every question (answerable or not) by the three methods; the report of their figures.

    ``synthesizer`` is citesum's, the extractive one by default: what the baselines are measured against.
    """
    synthesizer = synthesizer or ExtractiveSynthesizer(embedder)
    results = []
    for question in questions:
        results.append(run_question(question, store, embedder, reranker, synthesizer, settings))
        if on_result is not None:
            on_result(results[-1])
    made_by = provenance(embedder, reranker, settings) | {"synthesizer": synthesizer.name}
    return QualityReport(tuple(results), settings.summarize.evidence, made_by)
