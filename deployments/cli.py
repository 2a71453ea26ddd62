"""The ``citesum`` command line.

Exit codes: 0 done; 1 the run failed or some document failed; 2 unusable
input or settings (bad path, model mismatch, invalid option).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:  # imported by the commands that need them: the CLI starts fast
    from citesum.flows.ingest import Progress as ProgressCallback
    from citesum.tasks.settings import Settings

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Cited summaries of a PDF corpus.")
err = Console(stderr=True)
out = Console()

DbOption = Annotated[str | None, typer.Option("--db", help="LanceDB URI (default: CITESUM_DB or data/lancedb).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def make_settings(**overrides):
    """Settings from CITESUM_* variables, with the options given on the command line on top."""
    from citesum.tasks.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        fail(f"invalid settings: {exc}", 2)


def open_store(uri: str):
    """The store at ``uri``, or exit 2 when there is none or it cannot be opened (e.g. an object store without its
    variables)."""
    from citesum.tasks.errors import ConfigurationError
    from citesum.tasks.store.lance import LanceStore

    try:
        return LanceStore.existing(uri)
    except ConfigurationError as exc:
        fail(str(exc), 2)


def fail(message: str, code: int):
    err.print(f"[red]error:[/red] {message}", highlight=False)
    raise typer.Exit(code)


@app.command()
def ingest(
    path: Annotated[Path | None, typer.Argument(help="Corpus folder or one PDF (default: the sample corpus).")] = None,
    db: DbOption = None,
    passwords: Annotated[Path | None, typer.Option(help="JSON file: document id -> PDF password.")] = None,
    runner: Annotated[
        str | None,
        typer.Option(
            help="threads (default) | dask (a temporary local cluster) | dask://HOST:PORT (an existing scheduler)."
        ),
    ] = None,
    json_output: JsonOption = False,
):
    """Ingest PDFs: extract, chunk, embed and store them, superseding changed ones."""
    from citesum.tasks.ingest import report as reports

    settings = make_settings(db=db, passwords_file=passwords, runner=runner)
    if json_output or not err.is_terminal:
        state = ingest_state(path, settings)
    else:
        with progress_bar() as bar:
            task_id = bar.add_task("ingest", total=None)

            def on_progress(step: str, document_id: str, done: int, total: int) -> None:
                bar.update(task_id, completed=done, total=total, description=f"{step} {document_id}")

            state = ingest_state(path, settings, on_progress)
    result = outcome(state, "ingestion")  # a run with failed documents still returns its report
    if json_output:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_ingest_table(reports.table_rows(result), result.totals())
    raise typer.Exit(1 if result.failed else 0)


def ingest_state(path: Path | None, settings: Settings, on_progress: ProgressCallback | None = None):
    """The ingestion flow's final state; a runner setting it cannot use exits 2 before any run."""
    from citesum.flows.ingest import run_ingest
    from citesum.tasks.errors import ConfigurationError

    try:
        return run_ingest(str(path) if path else None, settings, on_progress)
    except ConfigurationError as exc:
        fail(str(exc), 2)


@app.command()
def status(db: DbOption = None, json_output: JsonOption = False):
    """List stored documents with their versions and chunk counts."""
    settings = make_settings(db=db)
    documents = sorted(open_store(settings.db).documents().values(), key=lambda d: d.document_id)
    rows = [
        {
            "document_id": d.document_id,
            "version": d.version,
            "source": d.source,
            "pages": d.pages,
            "chunks": d.chunks,
            "status": d.status,
            "problems": len(d.problems),
            "ingested_at": d.ingested_at,
        }
        for d in documents
    ]
    if json_output:
        print(json.dumps({"db": settings.db, "documents": rows}, indent=2))
        return
    table = Table("document", "version", "pages", "chunks", "status", "problems", "ingested at", title=settings.db)
    for r in rows:
        table.add_row(
            r["document_id"],
            r["version"][:12],
            str(r["pages"]),
            str(r["chunks"]),
            r["status"],
            str(r["problems"]),
            r["ingested_at"],
        )
    out.print(table)


@app.command()
def forget(
    document_id: Annotated[str, typer.Argument(help="Stored document id (a path relative to the corpus).")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Also rewrite the store and remove all older versions: text leaves disk.")
    ] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
):
    """Remove a document's chunks and record; with --purge, its text is gone from disk too."""
    from citesum.flows.maintain import run_forget

    settings = make_settings(db=db)
    erasure = outcome(run_forget(document_id, purge, settings), "forget")  # exit 2 for an id not stored
    if json_output:
        print(json.dumps(erasure.to_json(), indent=2))
        return
    note = (
        "purged from disk"
        if erasure.purged
        else "not retrievable, but its text stays in the files until `citesum maintain --purge`"
    )
    summary = f"erased {erasure.document_id} (version {erasure.version[:12] or '-'}, {erasure.chunks} chunks): {note}"
    out.print(summary, highlight=False, markup=False, soft_wrap=True)


@app.command()
def maintain(
    db: DbOption = None,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge", help="Also rewrite the store and remove all older versions now: deleted text leaves disk."
        ),
    ] = False,
    json_output: JsonOption = False,
):
    """Compact the store, refresh its indexes, remove old versions; build the vector index when it is large."""
    from citesum.flows.maintain import run_maintain
    from citesum.tasks.store.maintain import maintenance_markdown

    settings = make_settings(db=db)
    report = outcome(run_maintain(settings, purge), "maintenance")
    if json_output:
        print(json.dumps(report.to_json(), indent=2))
    else:
        out.print(maintenance_markdown(report), highlight=False, markup=False, soft_wrap=True)


@app.command()
def summarize(
    question: Annotated[str | None, typer.Argument(help="What to summarize; none for a brief by topic.")] = None,
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Document id to summarize (repeatable).")] = None,
    mode: Annotated[str, typer.Option(help="auto | query | topics | exhaustive.")] = "auto",
    synth: Annotated[str, typer.Option(help="auto | ollama | extractive.")] = "auto",
    db: DbOption = None,
    json_output: JsonOption = False,
):
    """Summarize stored documents; every sentence cites its document and page."""
    from citesum.flows.summarize import run_summarize

    settings = make_settings(db=db)
    summary = outcome(run_summarize(question, doc, mode, synth, settings), "summarization")
    if json_output:
        print(json.dumps(summary.to_json(), indent=2, ensure_ascii=False))
    else:
        print(summary.markdown(), end="")  # plain: rich would re-wrap the lines
        err.print(f"run record: {settings.runs_dir / (summary.run_id + '.json')}", highlight=False)


@app.command("eval")
def evaluate(
    questions: Annotated[Path, typer.Argument(help="questions.jsonl (format: ../shared/eval/README.md).")],
    pdfs: Annotated[Path, typer.Option("--pdfs", help="Folder holding the questions' PDFs.")],
    db: DbOption = None,
    json_output: JsonOption = False,
):
    """Measure retrieval and rerank against questions with known evidence pages."""
    from citesum.tasks.embed import load_embedder
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.summarize import evaluate as evaluation
    from citesum.tasks.summarize.rerank import load_reranker

    if not questions.is_file():
        fail(f"{questions}: no such questions file", 2)
    settings = make_settings(db=db, corpus=pdfs)
    report = outcome(ingest_state(pdfs, settings), "ingestion")  # reuses what is stored
    if report.failed:
        err.print(f"{len(report.failed)} PDF(s) failed to ingest; their questions count as misses", highlight=False)
    embedder = load_embedder(settings.embed_model, settings.embed_batch_size)
    figures = evaluation.evaluate(
        evaluation.load_questions(questions),
        LanceStore(settings.db),
        embedder,
        load_reranker(settings.reranker, embedder),
        settings,
    )
    if json_output:
        print(json.dumps(figures.to_json(), indent=2))
        return
    table = Table(*figures.table_columns(), title=f"citesum eval: {questions}")
    for row in figures.table_rows():
        table.add_row(*row)
    out.print(table)


@app.command()
def serve(
    corpus: Annotated[Path | None, typer.Option(help="Corpus folder (default: CITESUM_CORPUS).")] = None,
    db: DbOption = None,
    reindex_cron: Annotated[str | None, typer.Option(help="Cron of the full reindex (default: 0 2 * * *).")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Most flow runs at the same time.")] = None,
):
    """Serve the deployments (reindex, ingest-upload, summarize, maintain) until stopped."""
    from citesum.deployments import serve as serving

    settings = make_settings(corpus=corpus, db=db, reindex_cron=reindex_cron)
    require_prefect_server("serve")
    try:
        deployments = serving.build_deployments(settings)
    except ValueError as exc:  # a bad cron expression or time zone
        fail(str(exc), 2)
    serving.serve(settings, deployments, limit)


@app.command()
def watch(
    inbox: Annotated[Path | None, typer.Argument(help="Upload folder (default: CITESUM_INBOX or data/inbox).")] = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus folder (default: CITESUM_CORPUS).")] = None,
    poll: Annotated[float | None, typer.Option(help="Seconds between polls (default: 2).")] = None,
):
    """Move complete PDFs from an upload folder into the corpus and announce each for ingestion."""
    import signal
    import threading

    from citesum.deployments import watch as watching

    settings = make_settings(inbox=inbox, corpus=corpus, watch_poll_seconds=poll)
    require_prefect_server("watch")
    try:
        watching.check_layout(settings.inbox, settings.corpus)
    except ValueError as exc:
        fail(str(exc), 2)
    settings.inbox.mkdir(parents=True, exist_ok=True)
    watcher = watching.Watcher(
        settings.inbox, settings.corpus, watching.emit_uploaded, quiet_seconds=settings.watch_quiet_seconds
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # exit normally, so queued events are flushed
    err.print(f"watching {watcher.inbox} -> {watcher.corpus}", highlight=False, soft_wrap=True)
    try:
        watching.run(watcher, settings.watch_poll_seconds, stop, report=print_upload)
    except KeyboardInterrupt:
        pass


def require_prefect_server(command: str) -> None:
    """serve and watch need a lasting server: a temporary one would vanish with the process."""
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():
        fail(
            f"{command} needs a Prefect server: start one with `prefect server start` and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api",
            2,
        )


def print_upload(upload) -> None:
    """One log line per upload; never wrapped, so a service log keeps one line per event."""
    if upload.status == "duplicate":
        line = f"{upload.document_id}: same content as {upload.path}, removed from the inbox"
    else:
        line = f"{upload.document_id}: moved to {upload.path}, announced ({upload.sha256[:12]})"
    err.print(line, highlight=False, soft_wrap=True, markup=False)


def outcome(state, what: str):
    """The flow's result, or an exit: 2 for unusable input or settings, 1 for a failed run."""
    from citesum.tasks.errors import CitesumError, ConfigurationError

    result = state.result(raise_on_failure=False)
    if isinstance(result, ConfigurationError):
        fail(str(result), 2)
    if isinstance(result, CitesumError):
        fail(str(result), 1)
    if isinstance(result, BaseException):
        fail(f"{what} failed: {type(result).__name__}: {result}", 1)
    return result


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def print_ingest_table(rows: list[dict], totals: dict) -> None:
    table = Table(*rows[0].keys() if rows else ["document"], title="citesum ingest")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    out.print(table)
    out.print(", ".join(f"{k} {v}" for k, v in totals.items()), highlight=False)


def main() -> None:
    # Defaults for libraries the commands load: never reach a model hub, give the
    # temporary Prefect server time to start on a busy 2-core machine.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    app()


if __name__ == "__main__":
    main()
