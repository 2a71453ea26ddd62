"""Prefect tasks of the ingestion flow: small verbs over the plain functions.

A ``Job`` carries one document through extract -> chunk -> embed -> write, with
the time spent on it. Tasks retry only errors marked retryable (never bad input).
Each task run is named after its document and logs one line of what it did, so the
Prefect UI says which document a step handled or failed on.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from citesum.tasks import injection
from citesum.tasks.embed import Embedder
from citesum.tasks.errors import CitesumError, ConfigurationError
from citesum.tasks.ingest.chunk import chunk_document
from citesum.tasks.ingest.names import text_path
from citesum.tasks.ingest.pdf.sandbox import extract_with_time_limit
from citesum.tasks.ingest.plan import WorkItem
from citesum.tasks.ingest.report import DocumentOutcome, failed_outcome
from citesum.tasks.ingest.sources import Discovery, is_current, sources_to_ingest
from citesum.tasks.policy import STEP
from citesum.tasks.records import (
    ChunkedDocument,
    DocumentRecord,
    ExtractedDocument,
    Problem,
    lost_pages,
)
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import ChunkStore, embedding_key
from citesum.tasks.store.writer import WriterSlot


@dataclass(frozen=True)
class Job:
    """One document on its way through ingestion."""

    item: WorkItem
    extracted: ExtractedDocument | None = None
    chunked: ChunkedDocument | None = None
    vectors: np.ndarray | None = None
    embedded: int = 0
    seconds: float = 0.0

    @property
    def document_id(self) -> str:
        return self.item.source.document_id


def load_passwords(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        passwords = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"passwords file {path} is not readable JSON: {exc}") from exc
    if not isinstance(passwords, dict):
        raise ConfigurationError(f"passwords file {path} must hold a JSON object of document id to password")
    return {str(k): str(v) for k, v in passwords.items()}


@task(name="extract", task_run_name="extract {job.document_id}", **STEP)
def extract(job: Job, settings: Settings, password: str | None) -> Job:
    started = time.perf_counter()
    extracted = extract_with_time_limit(
        job.item.source,
        password=password,
        ocr=settings.chunking.ocr,
        ocr_language=settings.chunking.ocr_language,
        timeout=settings.ingest.document_timeout_seconds,
        memory_mb=settings.ingest.extract_memory_mb,
        max_pages=settings.ingest.max_pages,
        ocr_max_pixels=settings.ingest.ocr_max_pixels,
        tables=settings.chunking.tables,
    )
    seconds = time.perf_counter() - started
    get_run_logger().info(
        f"extracted {job.document_id}: {len(extracted.pages)} pages, {problems_line(extracted.problems)}, {seconds:.2f} s"
    )
    return replace(job, extracted=extracted, seconds=job.seconds + seconds)


def problems_line(problems: tuple[Problem, ...]) -> str:
    """'0 problems', or the count and each problem's kind and page: '2 problems (ocr p.1, lost p.3)'."""
    if not problems:
        return "0 problems"
    named = ", ".join(f"{p.kind} p.{p.page}" if p.page else p.kind for p in problems)
    return f"{len(problems)} problem{'s' if len(problems) > 1 else ''} ({named})"


@task(name="chunk", task_run_name="chunk {job.document_id}", **STEP)
def chunk(job: Job, settings: Settings, embedder: Embedder) -> Job:
    started = time.perf_counter()
    chunked = chunk_document(
        job.extracted,
        count_tokens=embedder.count_tokens,
        max_tokens=min(settings.chunking.chunk_tokens, embedder.max_tokens),
        overlap_sentences=settings.chunking.overlap_sentences,
        boilerplate_min_pages=settings.chunking.boilerplate_min_pages,
        counts_add_up=embedder.counts_add_up,
    )
    seconds = time.perf_counter() - started
    get_run_logger().info(
        f"chunked {job.document_id}: {len(chunked.chunks)} chunks, "
        f"{len(chunked.boilerplate)} repeated lines left out, {flagged_count(chunked)} addressing an AI system, "
        f"{seconds:.2f} s"
    )
    return replace(job, chunked=chunked, seconds=job.seconds + seconds)


def embed_with_reuse(
    texts_keys: list[tuple[str, str]], reusable: dict[str, np.ndarray], embedder: Embedder
) -> tuple[np.ndarray, int]:
    """Vectors for (embedding text, key) pairs, computing only those not already stored."""
    missing = [i for i, (_, key) in enumerate(texts_keys) if key not in reusable]
    fresh = embedder.embed([texts_keys[i][0] for i in missing])
    vectors = np.zeros((len(texts_keys), embedder.dimension), np.float32)
    for i, (_, key) in enumerate(texts_keys):
        if key in reusable:
            vectors[i] = reusable[key]
    if missing:
        vectors[missing] = fresh
    return vectors, len(missing)


def batch_name(step: str, jobs: list[Job]) -> str:
    """The run name of a step over several documents: "embed a.pdf", "write a.pdf and 2 more"."""
    more = f" and {len(jobs) - 1} more" if len(jobs) > 1 else ""
    return f"{step} {jobs[0].document_id if jobs else '(none)'}{more}"


@task(name="embed", task_run_name=lambda parameters: batch_name("embed", parameters["jobs"]), **STEP)
def embed(jobs: list[Job], embedder: Embedder, store: ChunkStore) -> list[Job]:
    """Vectors for several documents in one pass, so the model's batches run full across document
    boundaries. A chunk whose text a document's previous version (or the file it was renamed from) already
    embedded keeps its stored vector."""
    started = time.perf_counter()
    reusable: dict[str, np.ndarray] = {}
    for job in jobs:
        previous = [job.document_id] + ([job.item.replaces] if job.item.replaces else [])
        reusable.update(store.reusable_vectors(previous, [job.item.source.version]))
    keyed = [[(c.embedding_text, embedding_key(c.heading, c.text)) for c in job.chunked.chunks] for job in jobs]
    vectors, _ = embed_with_reuse([pair for pairs in keyed for pair in pairs], reusable, embedder)
    seconds = time.perf_counter() - started
    total = max(sum(map(len, keyed)), 1)
    done, start = [], 0
    for job, pairs in zip(jobs, keyed, strict=True):
        computed = sum(key not in reusable for _, key in pairs)
        share = seconds * len(pairs) / total  # the pass's time, shared by chunks
        get_run_logger().info(
            f"embedded {job.document_id}: {len(pairs)} chunks, {computed} computed, {len(pairs) - computed} "
            f"reused, {share:.2f} s"
        )
        done.append(
            replace(job, vectors=vectors[start : start + len(pairs)], embedded=computed, seconds=job.seconds + share)
        )
        start += len(pairs)
    return done


INJECTION_FLAGGED = "text that addresses an AI system: indexed and flagged, never a finding of a summary"
INJECTION_BOILERPLATE = "a running header or footer addresses an AI system: not indexed"


def flagged_count(chunked: ChunkedDocument) -> int:
    return sum(bool(c.injection) for c in chunked.chunks)


def injection_problems(chunked: ChunkedDocument) -> list[Problem]:
    """One problem per page whose text addresses an AI system (``Chunk.injection``), and one for the
    document when a running header or footer does (left out of the chunks, so never flagged on a chunk)."""
    pages = sorted({page for c in chunked.chunks for page in c.injection})
    problems = [Problem("injection", INJECTION_FLAGGED, page) for page in pages]
    if any(injection.addresses_ai(line) for line in chunked.boilerplate):
        problems.append(Problem("injection", INJECTION_BOILERPLATE))
    return problems


def document_record(job: Job, embedder: Embedder, settings: Settings) -> DocumentRecord:
    extracted = job.extracted
    return DocumentRecord(
        document_id=extracted.source.document_id,
        version=extracted.source.version,
        source=extracted.source.path,
        pages=len(extracted.pages),
        chunks=len(job.chunked.chunks),
        status="partial" if lost_pages(extracted.problems) else "ok",
        problems=[*extracted.problems, *injection_problems(job.chunked)],
        embed_model=embedder.name,
        parser=extracted.parser,
        settings=settings.fingerprint(),
        ingested_at=datetime.now(UTC),
    )


@task(name="write", task_run_name=lambda parameters: batch_name("write", parameters["jobs"]), **STEP)
def write(
    jobs: list[Job], store: ChunkStore, embedder: Embedder, settings: Settings, writer: WriterSlot
) -> list[DocumentOutcome]:
    """Supersede each document in the store, one commit each, under one hold of the writer slot: each taking
    costs requests to the server, and another run's write may come between two (README, How ingestion works).

    A document whose write fails for good is a failed outcome, and the others are still written; an error
    that may pass fails the task, whose retry rewrites the documents already written unchanged.
    """
    with writer.hold(batch_name("writing", jobs)):
        return [write_document(job, store, embedder, settings) for job in jobs]


def write_document(job: Job, store: ChunkStore, embedder: Embedder, settings: Settings) -> DocumentOutcome:
    """One document's write, under the writer slot.

    A file that changed since this run read it is not written: another run (an upload, the next reindex)
    reads the new bytes, and writing the old ones after it would undo its update.
    """
    started = time.perf_counter()
    record = document_record(job, embedder, settings)
    try:
        current = is_current(job.item.source)
        if current:
            store.supersede(record, job.chunked.chunks, job.vectors)
            if job.item.replaces:
                store.delete_document(job.item.replaces)
    except CitesumError as exc:
        if exc.retryable:
            raise
        get_run_logger().error(f"did not write {record.document_id}: {exc}")
        return failed_outcome(job.item.source, exc, "write", job.seconds + time.perf_counter() - started)
    outcome = DocumentOutcome(
        document_id=record.document_id,
        source=record.source,
        status=job.item.status if current else "outdated",
        version=record.version,
        pages=record.pages,
        chunks=record.chunks if current else 0,
        embedded=job.embedded,
        problems=tuple(record.problems),
        seconds=job.seconds + time.perf_counter() - started,
        renamed_from=job.item.replaces if current else None,
        note=None if current else "the file changed while this run read it; not written",
    )
    seconds = time.perf_counter() - started
    if current:
        renamed = f", renamed from {outcome.renamed_from}" if outcome.renamed_from else ""
        line = f"wrote {record.document_id}: {record.chunks} chunks ({outcome.status}{renamed}), {seconds:.2f} s"
    else:
        line = f"did not write {record.document_id}: {outcome.note}"
    get_run_logger().info(line)
    return outcome


def deletions_name(parameters: dict) -> str:
    """The run name of a deletion: the documents, or the first few and how many more."""
    ids = parameters["document_ids"]
    named = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return f"delete-missing {named or '(none)'}"


@task(name="delete-missing", task_run_name=deletions_name, **STEP)
def delete_missing(document_ids: tuple[str, ...], store: ChunkStore, writer: WriterSlot) -> list[DocumentOutcome]:
    """Explicit deletion of documents no longer in the corpus.

    Checked again under the writer slot: a file put back meanwhile (an upload) is not deleted.
    """
    if not document_ids:
        return []
    with writer.hold(f"deleting {len(document_ids)} removed document(s)"):
        stored = store.documents()
        outcomes = [delete_if_gone(document_id, stored.get(document_id), store) for document_id in document_ids]
    get_run_logger().info("; ".join(deletion_line(o) for o in outcomes))
    return outcomes


def deletion_line(outcome: DocumentOutcome) -> str:
    if outcome.status == "deleted":
        return f"deleted {outcome.document_id}: {outcome.chunks} chunks"
    return f"kept {outcome.document_id}: {outcome.note}"


def delete_if_gone(document_id: str, record: DocumentRecord | None, store: ChunkStore) -> DocumentOutcome:
    if record is not None and text_path(record.source).is_file():
        return DocumentOutcome(
            document_id, record.source, "outdated", version=record.version, note="the file came back; not deleted"
        )
    removed = store.delete_document(document_id)  # also when another run removed the record first
    return DocumentOutcome(
        document_id,
        record.source if record else "",
        "deleted",
        version=record.version if record else "",
        chunks=removed,
    )


@task(name="refresh-indexes", task_run_name="refresh-indexes {store.uri}", **STEP)
def refresh_indexes(store: ChunkStore, keep_versions: timedelta, writer: WriterSlot) -> None:
    """Fold the written rows into the indexes; versions older than the configured retention go too."""
    started = time.perf_counter()
    with writer.hold("refreshing indexes"):
        store.compact(keep_versions)
    get_run_logger().info(f"refreshed the indexes of {store.uri}, {time.perf_counter() - started:.2f} s")


@task(name="discover", task_run_name="discover {target}", cache_policy=NO_CACHE)
def discover(target: Path, settings: Settings) -> tuple[Discovery, Path | None]:
    found, root = sources_to_ingest(target, settings)
    refused = f", {len(found.rejected)} entries refused" if found.rejected else ""
    if root:
        get_run_logger().info(f"found {len(found.sources)} PDFs in {root}{refused}")
    elif found.sources:
        get_run_logger().info(f"one PDF, {found.sources[0].document_id}: nothing else is deleted")
    else:
        get_run_logger().info(f"one file, {found.rejected[0].document_id}, refused: {found.rejected[0].message}")
    return found, root
