"""The summarization flow: topics -> retrieval -> rerank -> synthesis -> validated, cited sections."""

from __future__ import annotations

from typing import NamedTuple

from prefect import flow, unmapped
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from citesum.tasks.embed import embedder_for
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize import metrics
from citesum.tasks.summarize.choices import choose_mode
from citesum.tasks.summarize.rerank import load_reranker
from citesum.tasks.summarize.runs import new_run_id, run_record, write_run
from citesum.tasks.summarize.summary import (
    Summary,
    SummaryPart,
    candidate_rows,
    evidence_rows,
    failure_warnings,
    without_repeats,
)
from citesum.tasks.summarize.tasks import (
    check_premise,
    choose_synthesizer,
    combine,
    ensure_llm_limit,
    fallback_synthesizer,
    find_topics,
    for_synthesizer,
    resolve_documents,
    retrieve_candidates,
    section_evidence,
    select_evidence,
    summarize_section,
    write_part,
)


@flow(name="summarize", task_runner=ThreadPoolTaskRunner(max_workers=4))
def summarize(
    question: str | None = None,
    documents: list[str] | None = None,
    mode: str = "auto",
    synth: str = "auto",
    settings: Settings | None = None,
) -> Summary:
    """Summarize the chosen documents (default: all), every sentence cited to document and page."""
    settings = settings or Settings()
    mode, mode_reason = choose_mode(question, mode)
    embedder = embedder_for(settings)
    store = LanceStore.open(settings.store.db)
    # An empty store is refused first, with the command that fills it.
    document_ids = resolve_documents(store, documents)
    store.check_model(embedder.name, embedder.dimension)
    synthesizer, synth_reason = choose_synthesizer(synth, settings, embedder)
    fallback = fallback_synthesizer(synthesizer, embedder)
    ensure_llm_limit()

    if mode == "exhaustive":
        parts = every_section(store, document_ids, synthesizer, fallback, embedder, question)
    else:
        plan = (
            [Step("Summary", question, document_ids, is_question=True)]
            if mode == "query"
            else topic_plan(store, document_ids, question)
        )
        reranker = load_reranker(settings.summarize.reranker, embedder)
        parts = retrieved_parts(plan, store, embedder, reranker, synthesizer, fallback, settings)
    parts = without_repeats(parts)

    figures = metrics.summary_metrics(mode, parts)
    summary = Summary(
        run_id=new_run_id(),
        question=question,
        mode=mode,
        mode_reason=mode_reason,
        synthesizer=synthesizer.name,
        synthesizer_reason=synth_reason,
        parts=parts,
        metrics=figures,
        warnings=failure_warnings(parts, metrics.collapse_warning(mode, parts)),
    )
    backend = f"{embedder.backend} ({embedder.backend_reason})"
    path = write_run(run_record(summary, settings, backend), settings.summarize.runs_dir)
    publish_summary(summary, path)
    return summary


class Step(NamedTuple):
    """One part of a retrieved summary: its title, what is searched, and where."""

    title: str
    query: str
    documents: tuple[str, ...]
    own: tuple[str, ...] = ()  # a topic's own chunks, searched first
    short: bool = False  # its own chunks are too few: the rest of its documents are searched too
    is_question: bool = False  # the user's question itself, which the evidence may not answer


def topic_plan(store: LanceStore, document_ids: tuple[str, ...], focus: str | None) -> list[Step]:
    topics = find_topics(store, document_ids)
    return [Step(t.title, combine(focus, t), t.document_ids, t.chunk_ids, t.short) for t in topics]


def retrieved_parts(
    plan: list[Step], store, embedder, reranker, synthesizer, fallback, settings: Settings
) -> list[SummaryPart]:
    """Per query, in parallel: broad hybrid retrieval, narrow rerank, the premise check of a question (what it
    names that its evidence's documents never mention), synthesis with validation (and fallback)."""
    titles, queries, scopes, owns, shorts, questions = (list(c) for c in zip(*plan, strict=True)) if plan else ([],) * 6
    candidates = retrieve_candidates.map(
        queries, unmapped(store), unmapped(embedder), scopes, settings.summarize.candidates, owns, shorts
    )
    evidence = select_evidence.map(queries, candidates, unmapped(reranker), settings.summarize.evidence, owns)
    # Only a question has a premise to check: a topic's words are a heading's.
    unmentioned = check_premise.map(queries, evidence, unmapped(store)) if any(questions) else [()] * len(plan)
    write = for_synthesizer(write_part, synthesizer)
    sections = write.map(titles, queries, evidence, unmapped(synthesizer), unmapped(fallback), questions, unmentioned)
    return [
        SummaryPart(s.result(), q, tuple(c.result())) for s, q, c in zip(sections, queries, candidates, strict=True)
    ]


def every_section(
    store, document_ids: tuple[str, ...], synthesizer, fallback, embedder, request: str | None
) -> list[SummaryPart]:
    """Exhaustive: map-reduce over every chunk, one part per top-level section, each asked the request."""
    grouped = section_evidence(store, document_ids)
    futures = for_synthesizer(summarize_section, synthesizer).map(
        list(grouped),
        list(grouped.values()),
        unmapped(synthesizer),
        unmapped(embedder),
        unmapped(fallback),
        unmapped(request),
    )
    return [
        SummaryPart(f.result(), title, tuple(e.candidate for e in grouped[title]))
        for title, f in zip(grouped, futures, strict=True)
    ]


def publish_summary(summary: Summary, record_path) -> None:
    create_markdown_artifact(
        summary.markdown(links=True) + f"\nRun record: `{record_path}`\n",
        key="citesum-summary",
        description="The summary, every sentence cited",
    )
    create_table_artifact(
        [{"metric": k, "value": v} for k, v in summary.metrics.items()],
        key="citesum-summary-metrics",
        description="Coverage and citation rate",
    )
    create_table_artifact(candidate_rows(summary), key="citesum-summary-candidates", description="Retrieval candidates")
    create_table_artifact(evidence_rows(summary), key="citesum-summary-evidence", description="Selected evidence")


def run_summarize(question: str | None, documents: list[str] | None, mode: str, synth: str, settings: Settings):
    """Run the flow; returns its final state (the summary, or the error)."""
    return summarize(question, documents, mode, synth, settings, return_state=True)
