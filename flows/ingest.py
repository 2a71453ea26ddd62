"""The ingestion flow: PDFs -> page-provenanced chunks in LanceDB."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta

from prefect import Task, flow, get_run_logger, unmapped
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.futures import PrefectFuture, as_completed
from prefect.states import Failed

from citesum.flows.runners import ConfiguredTaskRunner, task_runner
from citesum.tasks.embed import Embedder, embedder_for, model_dimension
from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest import report as reports
from citesum.tasks.ingest.names import path_text, text_path
from citesum.tasks.ingest.pdf.extract import parser_version
from citesum.tasks.ingest.plan import Conflict, plan_ingest
from citesum.tasks.ingest.report import DocumentOutcome, IngestReport
from citesum.tasks.ingest.sources import Rejected
from citesum.tasks.ingest.tasks import (
    Job,
    chunk,
    delete_missing,
    discover,
    embed,
    extract,
    load_passwords,
    refresh_indexes,
    write,
)
from citesum.tasks.records import DocumentRecord, Problem
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.writer import WriterSlot, ensure_writer_limit

Progress = Callable[[str, str, int, int], None]  # (step, document id, steps done, steps in all)
STEPS = ("extract", "chunk", "embed", "write")

# The progress callback of a run started in this process (the CLI's progress bar). Not a flow parameter: Prefect
# copies a flow's parameters into every task's context, which Dask pickles for its workers, and a terminal
# progress bar (locks, a thread) cannot be pickled. Only the flow body reads it.
_PROGRESS: ContextVar[Progress | None] = ContextVar("citesum_ingest_progress", default=None)


@contextmanager
def reporting_progress(callback: Progress | None) -> Iterator[None]:
    """Ingestion runs started inside report their progress to ``callback``."""
    token = _PROGRESS.set(callback)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


def progress_callback() -> Progress | None:
    """The callback of ``reporting_progress`` around this run, if any. A function, not the variable itself, in
    the flow body: Dask pickles the flow function by value, and a ContextVar among its globals cannot be pickled."""
    return _PROGRESS.get()


# The runner and worker count of the settings, also in runs loaded from this module (citesum serve, workers).
@flow(name="ingest", task_runner=ConfiguredTaskRunner())
def ingest(path: str | None = None, settings: Settings | None = None, replace: bool = False):
    """Ingest a corpus folder (a full run: missing documents are deleted) or one PDF.

    ``path`` is text (names.path_text: undecodable bytes as %XX). ``replace`` takes a file for a stored
    document of the same id that came from another file still there (a conflict otherwise).
    """
    settings = settings or Settings()
    started = time.perf_counter()
    found, corpus_root = discover(text_path(path) if path else settings.ingest.corpus, settings)
    model = settings.chunking.embed_model
    # The model's config gives its dimension; the model itself loads only when a document needs chunking.
    store = LanceStore.open_or_create(
        settings.store.db, model, model_dimension(model) or embedder_for(settings).dimension
    )
    writer = WriterSlot.from_settings(settings)
    ensure_writer_limit()
    stored = store.documents()
    plan = plan_ingest(
        found.sources,
        stored,
        settings_fingerprint=settings.fingerprint(),
        corpus_root=corpus_root,
        held=[r.document_id for r in found.rejected if r.fails],
        replace_conflicts=replace,
    )
    passwords = load_passwords(settings.ingest.passwords_file)
    steps = StepTracker(len(plan.work), progress_callback())

    written, embedder = [], None
    if plan.work:
        embedder = loaded_embedder(settings)
        jobs = [Job(item) for item in plan.work]
        jobs = steps.settle("extract", extract.map(jobs, unmapped(settings), passwords_for(jobs, passwords)), jobs)
        jobs = steps.settle("chunk", chunk.map(jobs, unmapped(settings), unmapped(embedder)), jobs)
        jobs = steps.settle("embed", embed.map(jobs, unmapped(embedder), unmapped(store)), jobs)
        written = steps.settle_in_turn("write", write, jobs, store, embedder, settings, writer)
    deleted = delete_missing(plan.deletions, store, writer)
    if written or deleted:
        refresh_indexes(store, timedelta(hours=settings.store.version_retention_hours), writer)

    report = IngestReport(
        outcomes=(
            *(unchanged_outcome(stored[s.document_id]) for s in plan.unchanged),
            *written,
            *deleted,
            *steps.failures,
            *(conflict_outcome(c) for c in plan.conflicts),
            *(rejected_outcome(r) for r in found.rejected),
        ),
        db=settings.store.db,
        embed_model=model,
        embed_backend=f"{embedder.backend} ({embedder.backend_reason})" if embedder else "not loaded: nothing to embed",
        parser=parser_version(),
        settings=settings.fingerprint(),
        seconds=time.perf_counter() - started,
    )
    publish_report(report)
    if report.failed:
        return Failed(message=f"{len(report.failed)} of {len(report.outcomes)} documents failed", data=report)
    return report


def run_ingest(path: str | None, settings: Settings, on_progress: Progress | None = None, replace: bool = False):
    """Run the flow on the configured task runner; returns its final state. ``path`` as on disk; ``on_progress``
    gets each document-step done, in this process (``reporting_progress``).

    Raises ConfigurationError for a runner setting it cannot use, before any run starts.
    """
    with task_runner(settings) as runner, reporting_progress(on_progress):
        text = path_text(path) if path else None
        return ingest.with_options(task_runner=runner)(text, settings, replace, return_state=True)


def loaded_embedder(settings: Settings) -> Embedder:
    """The settings' embedder, with a log line of which backend runs and why."""
    embedder = embedder_for(settings)
    get_run_logger().info(f"embedding with {embedder.backend} ({embedder.backend_reason})")
    return embedder


def unchanged_outcome(record: DocumentRecord) -> DocumentOutcome:
    return DocumentOutcome(
        record.document_id,
        record.source,
        "unchanged",
        version=record.version,
        pages=record.pages,
        chunks=record.chunks,
        problems=tuple(record.problems),
    )


def passwords_for(jobs: list[Job], passwords: dict[str, str]) -> list[str | None]:
    return [passwords.get(job.item.source.document_id) for job in jobs]


class StepTracker:
    """Waits for each mapped step, keeps its failures, and reports progress.

    Progress counts document-steps into a Prefect progress artifact and an optional
    callback; a failed document counts its remaining steps as done.
    """

    def __init__(self, documents: int, on_progress: Progress | None):
        self.total, self.done, self.on_progress = max(documents * len(STEPS), 1), 0, on_progress
        self.failures: list[DocumentOutcome] = []
        self.artifact = create_progress_artifact(0.0, key="citesum-ingest-progress", description="Ingestion progress")

    def settle(self, step: str, futures: list[PrefectFuture], jobs: list[Job]) -> list:
        """The results of a mapped step, in input order; its failures become outcomes."""
        job_of = {id(f): job for f, job in zip(futures, jobs, strict=True)}
        results = {}
        for future in as_completed(futures):
            future.wait()  # as_completed may yield before the final state is recorded
            job, state = job_of[id(future)], future.state
            if state.is_completed():
                results[id(future)] = future.result()
                self.advance(step, job, steps=1)
            else:
                self.failures.append(failed_outcome(job, state.result(raise_on_failure=False), step))
                self.advance(step, job, steps=len(STEPS) - STEPS.index(step))
        return [results[id(f)] for f in futures if id(f) in results]

    def settle_in_turn(self, step: str, task: Task, jobs: list[Job], *args) -> list:
        """A step run one document at a time: writes are serialized by the writer limit
        anyway, and threads contending for its slot wait about a second each."""
        return [result for job in jobs for result in self.settle(step, [task.submit(job, *args)], [job])]

    def advance(self, step: str, job: Job, steps: int) -> None:
        self.done += steps
        update_progress_artifact(self.artifact, 100.0 * self.done / self.total)
        if self.on_progress:
            self.on_progress(step, job.item.source.document_id, self.done, self.total)


def failed_outcome(job: Job, error: BaseException, step: str) -> DocumentOutcome:
    source = job.item.source
    kind = (Problem(error.kind, error.message),) if isinstance(error, DocumentError) else ()
    return DocumentOutcome(
        source.document_id,
        source.path,
        "failed",
        version=source.version,
        problems=kind,
        error=f"{step}: {error}",
        seconds=job.seconds,
    )


def conflict_outcome(conflict: Conflict) -> DocumentOutcome:
    source = conflict.source
    return DocumentOutcome(
        source.document_id,
        source.path,
        "failed",
        version=source.version,
        problems=(Problem("conflict", conflict.message),),
        error=conflict.message,
    )


def rejected_outcome(rejected: Rejected) -> DocumentOutcome:
    """A failed entry is one the user meant to ingest (unreadable, too large); a skipped one is not a PDF
    this corpus takes (a FIFO, a link out of the corpus)."""
    text = f"{rejected.kind}: {rejected.message}"
    return DocumentOutcome(
        rejected.document_id,
        rejected.path,
        "failed" if rejected.fails else "skipped",
        problems=(Problem(rejected.kind, rejected.message),),
        error=text if rejected.fails else None,
        note=None if rejected.fails else text,
    )


def publish_report(report: IngestReport) -> None:
    create_markdown_artifact(reports.markdown(report), key="citesum-ingest-report", description="Ingestion report")
    create_table_artifact(
        reports.table_rows(report), key="citesum-ingest-documents", description="Documents of this run"
    )
