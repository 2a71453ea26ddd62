"""The ingestion flow: PDFs -> page-provenanced chunks in LanceDB."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.states import Failed
from prefect.utilities.annotations import quote

from citesum.flows.runners import ConfiguredTaskRunner, task_runner
from citesum.flows.stream import DocumentStream, Progress, Steps, StepTracker, progress_artifact
from citesum.tasks.embed import Embedder, embedder_for, model_dimension
from citesum.tasks.ingest import report as reports
from citesum.tasks.ingest.names import path_text, text_path
from citesum.tasks.ingest.plan import plan_ingest
from citesum.tasks.ingest.report import (
    NOTHING_TO_EMBED,
    IngestReport,
    conflict_outcome,
    ingest_report,
    rejected_outcome,
    unchanged_outcome,
)
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
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.writer import WriterSlot, ensure_writer_limit

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
    # The model's config gives its dimension; the model itself loads only when a document needs chunking.
    store = LanceStore.open_or_create(
        settings.store.db,
        settings.chunking.embed_model,
        model_dimension(settings.chunking.embed_model) or embedder_for(settings).dimension,
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
    tracker = StepTracker(len(plan.work), progress_callback(), progress_artifact())

    written, embedder = [], None
    if plan.work:
        embedder = loaded_embedder(settings)
        steps = ingest_steps(settings, passwords, embedder, store, writer)
        stream = DocumentStream(steps, tracker, window=settings.ingest.workers)
        written = stream.run([Job(item) for item in plan.work])
    deleted = delete_missing(plan.deletions, store, writer)
    if written or deleted:
        refresh_indexes(store, timedelta(hours=settings.store.version_retention_hours), writer)

    report = ingest_report(
        (
            *(unchanged_outcome(stored[s.document_id]) for s in plan.unchanged),
            *written,
            *deleted,
            *tracker.failures,
            *(conflict_outcome(c) for c in plan.conflicts),
            *(rejected_outcome(r) for r in found.rejected),
        ),
        settings,
        f"{embedder.backend} ({embedder.backend_reason})" if embedder else NOTHING_TO_EMBED,
        time.perf_counter() - started,
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


def ingest_steps(
    settings: Settings, passwords: dict[str, str], embedder: Embedder, store: LanceStore, writer: WriterSlot
) -> Steps:
    """Each step submitted to the run's task runner.

    On threads, jobs go quoted: unquoted, Prefect walks a task's arguments for futures, through every page, block
    and chunk of a job (about 0.1 s of CPU a filing's job each time a step is submitted; README, How ingestion works).
    Dask rebuilds a quote as a plain tuple (prefect-dask issue 43), so its workers get jobs as they are.
    """
    hand = quote if settings.ingest.runner == "threads" else lambda unquoted: unquoted
    return Steps(
        extract=lambda job: extract.submit(hand(job), settings, passwords.get(job.document_id)),
        chunk=lambda job: chunk.submit(hand(job), settings, embedder),
        embed=lambda jobs: embed.submit(hand(jobs), embedder, store),
        write=lambda jobs: write.submit(hand(jobs), store, embedder, settings, writer),
    )


def loaded_embedder(settings: Settings) -> Embedder:
    """The settings' embedder, with a log line of which backend runs and why."""
    embedder = embedder_for(settings)
    get_run_logger().info(f"embedding with {embedder.backend} ({embedder.backend_reason})")
    return embedder


def publish_report(report: IngestReport) -> None:
    create_markdown_artifact(reports.markdown(report), key="citesum-ingest-report", description="Ingestion report")
    create_table_artifact(
        reports.table_rows(report), key="citesum-ingest-documents", description="Documents of this run"
    )
