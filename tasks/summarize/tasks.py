"""Prefect tasks of the summarization flow, and the plain choices they rest on.

The synthesizer is chosen here (its reachability probed), with the reason the output reports; the mode and
the options are checked in choices.py, before any engine starts.
LLM-backed tasks carry the tag ``LLM_TAG``, whose concurrency limit the flow creates (``for_synthesizer``: not
when the synthesizer is the extractive one).
Each task run is named after its query or section and logs one line of counts.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from prefect import get_client, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import ObjectNotFound

from citesum.tasks.embed import Embedder
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.policy import retry_transient
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.schema import CHUNK_FIELDS, CHUNK_ID, VECTOR
from citesum.tasks.summarize import mapreduce
from citesum.tasks.summarize.choices import check_synthesizer
from citesum.tasks.summarize.compose import Section, write_section
from citesum.tasks.summarize.evidence import Candidate, Evidence
from citesum.tasks.summarize.premise import document_words, unmentioned
from citesum.tasks.summarize.rerank import Reranker
from citesum.tasks.summarize.retrieve import candidate_of, chunk_filter, document_filter, retrieve
from citesum.tasks.summarize.synthesizers.base import Synthesizer
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.synthesizers.ollama import OllamaSynthesizer, probe_ollama, resolve_ollama_host
from citesum.tasks.summarize.topics import (
    Topic,
    appended_from,
    is_reference_list,
    section_rows,
    section_titles,
    topics_from_clusters,
    topics_from_sections,
)
from citesum.tasks.text import evidence_label, split_heading

LLM_TAG = "citesum-llm"
LLM_CONCURRENCY = 2  # Ollama serves requests mostly one at a time; more would only queue there

# No task retries: the synthesizer retries each LLM call (Ollama: backoff, Retry-After), and a task retry
# would redo every call of the section, a map-reduce's included, after the last call already gave up.
SYNTH_TASK = dict(cache_policy=NO_CACHE, persist_result=False)


def choose_synthesizer(choice: str, settings: Settings, embedder: Embedder) -> tuple[Synthesizer, str]:
    """Ollama when chosen or reachable; otherwise the extractive synthesizer, saying why."""
    check_synthesizer(choice)
    extractive = ExtractiveSynthesizer(embedder)
    if choice == "extractive":
        return extractive, "chosen"
    problem = probe_ollama(settings.summarize.ollama_host, settings.summarize.ollama_model)
    if problem is None:
        return OllamaSynthesizer.from_settings(
            settings
        ), f"Ollama at {resolve_ollama_host(settings.summarize.ollama_host)}"
    if choice == "ollama":
        raise ConfigurationError(f"{problem}; use --synth extractive or start Ollama")
    return extractive, f"{problem}: extractive synthesis"


def fallback_synthesizer(synthesizer: Synthesizer, embedder: Embedder) -> Synthesizer | None:
    """What writes a section whose generated sentences failed validation twice: verbatim evidence sentences."""
    return None if synthesizer.verbatim else ExtractiveSynthesizer(embedder)


def resolve_documents(store: LanceStore, requested: Sequence[str] | None) -> tuple[str, ...]:
    """The chosen documents (all stored ones by default); an unknown id is an error naming it."""
    stored = store.documents()
    if not stored:
        raise ConfigurationError(f"the store at {store.uri} holds no documents: run `citesum ingest` first")
    if not requested:
        return tuple(sorted(stored))
    unknown = [d for d in requested if d not in stored]
    if unknown:
        raise ConfigurationError(f"not in the store: {', '.join(unknown)} (see `citesum status`)")
    return tuple(dict.fromkeys(requested))


def chunk_rows(store: LanceStore, document_ids: Sequence[str], *, vectors: bool = False) -> list[dict]:
    columns = [CHUNK_ID, *CHUNK_FIELDS, *([VECTOR] if vectors else [])]
    rows = store.chunk_rows(document_filter(document_ids), columns)
    return sorted(rows, key=lambda r: (r["document_id"], r["ordinal"]))


def combine(focus: str | None, topic: Topic) -> str:
    return f"{focus}: {topic.query}" if focus else topic.query


def topics_name(parameters: dict) -> str:
    """The run name of topic finding: the document, or how many."""
    ids = parameters["document_ids"]
    return f"find-topics {ids[0]}" if len(ids) == 1 else f"find-topics {len(ids)} documents"


@task(name="find-topics", task_run_name=topics_name, cache_policy=NO_CACHE)
def find_topics(store: LanceStore, document_ids: tuple[str, ...]) -> list[Topic]:
    """Topics from headings when the documents have enough sections, else from clusters."""
    rows = chunk_rows(store, document_ids, vectors=True)
    sections = section_rows(rows)
    topics, origin = topics_from_sections(sections, appended_from(rows)), "headings"
    if not topics:
        vectors = np.asarray([r["vector"] for r in rows], np.float32).reshape(len(rows), -1)
        topics, origin = topics_from_clusters(rows, vectors), "clusters"
    logger = get_run_logger()
    logger.info(f"{len(topics)} topics from {origin} of {len(rows)} chunks in {len(document_ids)} documents")
    if origin == "headings" and (
        lists := [f"{k.title} ({k.document_id})" for k in sections if is_reference_list(k.title)]
    ):
        logger.info(f"not briefed, reference lists: {'; '.join(lists)}")
    return topics


@task(
    name="retrieve",
    task_run_name="retrieve {query}",
    cache_policy=NO_CACHE,
    retries=2,
    retry_condition_fn=retry_transient,
)
def retrieve_candidates(
    query: str,
    store: LanceStore,
    embedder: Embedder,
    document_ids: tuple[str, ...],
    k: int,
    own: tuple[str, ...] = (),
    short: bool = False,
) -> list[Candidate]:
    started = time.perf_counter()
    candidates = own_first_candidates(store, embedder, query, document_ids, k, own, short)
    by_vector = sum(c.dense_rank is not None for c in candidates)
    by_text = sum(c.lexical_rank is not None for c in candidates)
    get_run_logger().info(
        f"{len(candidates)} candidates ({by_vector} by vector, {by_text} by text), {time.perf_counter() - started:.2f} s"
    )
    return candidates


def own_first_candidates(
    store: LanceStore,
    embedder: Embedder,
    query: str,
    document_ids: tuple[str, ...],
    k: int,
    own: tuple[str, ...] = (),
    short: bool = False,
) -> list[Candidate]:
    """A topic's candidates: from its own chunks (all documents' when it has none), then, only when
    those are short, from the rest of its documents, ranked after them."""
    if not own:
        return retrieve(store, embedder, query, k=k, document_ids=document_ids)
    first = retrieve(store, embedder, query, k=k, document_ids=document_ids, where=chunk_filter(own))
    found = sum(not c.page_mate for c in first)
    if not short or found >= k:
        return first
    rest = retrieve(
        store, embedder, query, k=k - found, document_ids=document_ids, where=chunk_filter(own, exclude=True)
    )
    proper = [c for c in first + rest if not c.page_mate]
    return [replace(c, rank=i) for i, c in enumerate(proper, 1)] + [c for c in first + rest if c.page_mate]


def own_first_evidence(
    query: str, candidates: Sequence[Candidate], reranker: Reranker, k: int, own: tuple[str, ...] = ()
) -> list[Evidence]:
    """The reranker's choice among a topic's own chunks, the best of each of its sections first (``by_section``),
    then among the others for the room left."""
    mine = set(own)
    first = [c for c in candidates if c.chunk.chunk_id in mine] if mine else list(candidates)
    evidence = by_section(reranker.rerank(query, first, len(first)), k) if mine else reranker.rerank(query, first, k)
    others = [c for c in candidates if mine and c.chunk.chunk_id not in mine]
    if others and len(evidence) < k:
        evidence += reranker.rerank(query, others, k - len(evidence))
    return [replace(e, label=evidence_label(i)) for i, e in enumerate(evidence, 1)]


def by_section(ranked: Sequence[Evidence], k: int) -> list[Evidence]:
    """``k`` of the ranked evidence: the best of each section first, in rank order, then the rest by rank. A topic of
    several sections ("6 Confidentiality; 7 Data Protection; 8 Intellectual Property; 9 Warranties") had its
    evidence, and so its sentences, from the one whose chunks matched its title best. A section is the heading below
    the one all the chunks share (a topic of one section: its subsections)."""
    paths = [split_heading(e.candidate.chunk.heading) for e in ranked]
    shared = 0
    while paths and all(len(p) > shared and p[shared] == paths[0][shared] for p in paths):
        shared += 1
    leads: dict[str, int] = {}  # each section's best, in rank order
    for index, path in enumerate(paths):
        leads.setdefault(path[shared] if len(path) > shared else "", index)
    first = set(leads.values())
    order = [*leads.values(), *(i for i in range(len(ranked)) if i not in first)]
    return [ranked[i] for i in order[:k]]


@task(name="rerank", task_run_name="rerank {query}", cache_policy=NO_CACHE)
def select_evidence(
    query: str, candidates: list[Candidate], reranker: Reranker, k: int, own: tuple[str, ...] = ()
) -> list[Evidence]:
    started = time.perf_counter()
    evidence = own_first_evidence(query, candidates, reranker, k, own)
    get_run_logger().info(
        f"{len(evidence)} evidence of {len(candidates)} candidates, {time.perf_counter() - started:.2f} s"
    )
    return evidence


@task(name="check premise", task_run_name="check premise {query}", cache_policy=NO_CACHE)
def check_premise(query: str, evidence: list[Evidence], store: LanceStore) -> list[str]:
    """What the question names that no document of its evidence mentions (``premise``): those documents' words are
    read, and the store asked about a capitalised word none of them holds."""
    documents = sorted({e.candidate.chunk.document_id for e in evidence})
    rows = store.chunk_rows(document_filter(documents), ["heading", "text"]) if documents else []
    missing = unmentioned(query, document_words(rows), store.holds_word)
    get_run_logger().info(f"not in its {len(documents)} documents: {', '.join(missing)}" if missing else "all named")
    return missing


@task(name="synthesize", task_run_name="synthesize {title}", tags=[LLM_TAG], **SYNTH_TASK)
def write_part(
    title: str,
    query: str,
    evidence: list[Evidence],
    synthesizer: Synthesizer,
    fallback: Synthesizer | None = None,
    is_question: bool = False,
    unmentioned: Sequence[str] = (),
) -> Section:
    started = time.perf_counter()
    section = write_section(
        title, query, evidence, synthesizer, fallback=fallback, is_question=is_question, unmentioned=unmentioned
    )
    get_run_logger().info(section_line(section, time.perf_counter() - started))
    return section


def section_line(section: Section, seconds: float) -> str:
    """What a written section holds: sentences, the evidence they cite, what validation removed, what the
    injection quarantine left out."""
    cited = {label for sentence in section.sentences for label in sentence.citations}
    line = (
        f"{len(section.sentences)} sentences citing {len(cited)} of {len(section.evidence)} evidence, "
        f"{len(section.removed)} removed, {seconds:.2f} s"
    )
    if section.quarantined:
        line += f", {len(section.quarantined)} left out as addressing an AI system"
    if section.fallback is not None:
        line += ", extractive fallback"
    return f"{line}; {section.warning}" if section.warning else line


def section_evidence(store: LanceStore, document_ids: tuple[str, ...]) -> dict[str, list[Evidence]]:
    """Every chunk of the documents' real sections as evidence, grouped by section in document order, under
    titles unique in the summary (``topics.section_titles``); a title-only part is no section (``topics.is_section``)."""
    rows = chunk_rows(store, document_ids)
    position = {row["chunk_id"]: i for i, row in enumerate(rows, 1)}
    grouped = section_rows(rows)
    titles = section_titles(list(grouped))
    return {
        _section_title(key, titles[key], len(document_ids)): [
            Evidence(evidence_label(i), candidate_of(row, position[row["chunk_id"]], 0.0, None, None), 0.0)
            for i, row in enumerate(group, 1)
        ]
        for key, group in grouped.items()
    }


def _section_title(key, title: str, documents: int) -> str:
    return f"{key.document_id}: {title}" if documents > 1 else title


@task(name="summarize-section", task_run_name="summarize-section {title}", tags=[LLM_TAG], **SYNTH_TASK)
def summarize_section(
    title: str,
    evidence: list[Evidence],
    synthesizer: Synthesizer,
    embedder: Embedder,
    fallback: Synthesizer | None = None,
    request: str | None = None,
) -> Section:
    started = time.perf_counter()
    section = mapreduce.summarize_section(title, evidence, synthesizer, embedder.count_tokens, fallback, request)
    get_run_logger().info(section_line(section, time.perf_counter() - started))
    return section


def for_synthesizer(synthesis_task, synthesizer: Synthesizer):
    """``write_part`` or ``summarize_section`` as it runs for ``synthesizer``: in the LLM's concurrency limit
    unless it is the extractive synthesizer, which calls no service. Each wait for a slot costs about a second:
    an exhaustive summary of a filing's 150 sections took 146 s with the waits, 21 s without (9 s of it synthesis)."""
    return synthesis_task.with_options(tags=set()) if isinstance(synthesizer, ExtractiveSynthesizer) else synthesis_task


def ensure_llm_limit() -> None:
    """A tag concurrency limit on LLM tasks, created if missing (a limit set by the user is kept)."""
    with get_client(sync_client=True) as client:
        try:
            client.read_concurrency_limit_by_tag(LLM_TAG)
        except ObjectNotFound:
            client.create_concurrency_limit(tag=LLM_TAG, concurrency_limit=LLM_CONCURRENCY)
