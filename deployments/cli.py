"""The ``citesum`` command line.

Exit codes: 0 done; 1 the run failed or some document failed; 2 unusable input or settings (bad path, model
mismatch, invalid option); 143 stopped by SIGTERM (``terminated``). Commands raise; ``Command.invoke`` turns an
error into its exit code (``CitesumError.exit_code``) and one line on stderr (with ``--json`` also
``{"error": {...}}`` on stdout), and prints a traceback only for a bug or with ``--verbose``. Engine logs go to the
Prefect API; on the terminal they appear only with ``--verbose``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import click
import typer
from pydantic import ValidationError
from rich.table import Table
from typer.core import TyperCommand

from citesum.deployments.output import (
    err,
    fitted_table,
    out,
    print_ingest_table,
    print_upload,
    progress_bar,
    report_error,
)

# Standard library only: the temporary server's process is begun before the flows' imports.
from citesum.flows.temporary_server import start_early

if TYPE_CHECKING:  # imported by the commands that need them: the CLI starts fast
    from citesum.flows.ingest import Progress as ProgressCallback
    from citesum.tasks.settings import Settings

# What the libraries a command loads print on the terminal. Quiet by default (main() sets these unless the
# user did); --verbose turns them back on. Prefect's console handler is raised above ERROR, not its loggers,
# so flow and task logs still reach the API (and the UI).
QUIET_ENGINE = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' "Loading weights" bar reads this at import
    "DO_NOT_TRACK": "1",  # Prefect's first-run telemetry notice (the CLI already opts the server out)
}
VERBOSE_ENGINE = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "NOTSET", "HF_HUB_DISABLE_PROGRESS_BARS": "0"}


class Command(TyperCommand):
    """Every citesum command: the one place an error becomes an exit code and a message."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:
            code = report_error(exc, json_output=bool(ctx.params.get("json_output")), verbose=verbose(ctx))
            raise typer.Exit(code) from None
        except BaseException as exc:  # SIGTERM during a run: Prefect's engine raises its own, not ``terminated``
            engine = sys.modules.get("prefect.exceptions")  # not imported: no run, so not Prefect's
            if engine and isinstance(exc, engine.TerminationSignal):
                raise typer.Exit(128 + exc.signal) from None
            raise


def verbose(ctx: click.Context) -> bool:
    return bool(ctx.find_root().params.get("verbose"))


app = typer.Typer(add_completion=False, no_args_is_help=True, help="Cited summaries of a PDF corpus.")
command = partial(app.command, cls=Command)


@app.callback()
def options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show engine logs (Prefect, model loading) and tracebacks.")
    ] = False,
):
    """Cited summaries of a PDF corpus."""
    if verbose:  # before any command imports Prefect, which reads its logging settings once
        os.environ.update(VERBOSE_ENGINE)


DbOption = Annotated[str | None, typer.Option("--db", help="LanceDB URI (default: CITESUM_DB or data/lancedb).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def make_settings(**overrides):
    """Settings from CITESUM_* variables, with the options given on the command line on top."""
    from citesum.tasks.errors import ConfigurationError
    from citesum.tasks.settings import Settings

    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise ConfigurationError(f"invalid settings: {exc}") from exc


def open_store(uri: str):
    """The store at ``uri``; a ConfigurationError when there is none or it cannot be opened (e.g. an object
    store without its variables)."""
    from citesum.tasks.store.lance import LanceStore

    return LanceStore.open(uri)


@command()
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
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Take a file for a stored document of the same id from another file (else a conflict)."
        ),
    ] = False,
    json_output: JsonOption = False,
):
    """Ingest PDFs: extract, chunk, embed and store them, superseding changed ones."""
    from citesum.tasks.ingest import report as reports
    from citesum.tasks.ingest.precheck import nothing_to_ingest

    settings = make_settings(db=db, passwords_file=passwords, runner=runner)
    # A bad path fails here, before any run starts; a corpus with nothing to do starts none.
    result = nothing_to_ingest(path or settings.ingest.corpus, settings)
    if result is not None:
        err.print("nothing changed since the last run: no Prefect run started", highlight=False)
    elif json_output or not err.is_terminal or verbose(click.get_current_context()):  # logs would garble a bar
        result = outcome(ingest_state(path, settings, replace=replace))  # failed documents: still a report
    else:
        with progress_bar() as bar:
            task_id = bar.add_task("ingest", total=None)

            def on_progress(step: str, document_id: str, done: int, total: int) -> None:
                bar.update(task_id, completed=done, total=total, description=f"{step} {document_id}")

            result = outcome(ingest_state(path, settings, on_progress, replace))
    if json_output:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print_ingest_table(reports.table_rows(result), result.totals())
        out.print(f"embedding backend: {result.embed_backend}", highlight=False)
    raise typer.Exit(1 if result.failed else 0)


def ingest_state(
    path: Path | None, settings: Settings, on_progress: ProgressCallback | None = None, replace: bool = False
):
    """The ingestion flow's final state; a runner setting it cannot use raises before any run."""
    engine_ready = start_early()  # Prefect's temporary server answers seconds later: the flow's imports overlap that
    from citesum.flows.ingest import run_ingest

    engine_ready()
    return run_ingest(str(path) if path else None, settings, on_progress, replace)


@command()
def status(db: DbOption = None, json_output: JsonOption = False):
    """List stored documents with their versions and chunk counts."""
    settings = make_settings(db=db)
    from citesum.tasks.records import to_json

    documents = sorted(open_store(settings.store.db).documents().values(), key=lambda d: d.document_id)
    # what made each document (model, parser, settings) is in the ingestion report; here, the count of problems
    rows = [
        to_json(d, exclude={"embed_model", "parser", "settings"})
        | {"problems": len(d.problems), "ingested_at": d.ingested_at.isoformat(timespec="seconds")}
        for d in documents
    ]
    if json_output:
        print(json.dumps({"db": settings.store.db, "documents": rows}, indent=2))
        return
    shown = [
        {
            "document": r["document_id"],
            "version": r["version"][:12],
            "pages": str(r["pages"]),
            "chunks": str(r["chunks"]),
            "status": r["status"],
            "problems": str(r["problems"]),
            "ingested at": r["ingested_at"],
        }
        for r in rows
    ]
    headers = ["document", "version", "pages", "chunks", "status", "problems", "ingested at"]
    out.print(
        fitted_table(settings.store.db, headers, shown, out.width, drop_first=("ingested at", "version", "problems"))
    )


@command()
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
    erasure = outcome(run_forget(document_id, purge, settings))  # exit 2 for an id not stored
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


@command()
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
    report = outcome(run_maintain(settings, purge))
    if json_output:
        print(json.dumps(report.to_json(), indent=2))
    else:
        out.print(maintenance_markdown(report), highlight=False, markup=False, soft_wrap=True)


@command()
def summarize(
    question: Annotated[str | None, typer.Argument(help="What to summarize; none for a brief by topic.")] = None,
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Document id to summarize (repeatable).")] = None,
    mode: Annotated[str, typer.Option(help="auto | query | topics | exhaustive.")] = "auto",
    synth: Annotated[str, typer.Option(help="auto | ollama | extractive.")] = "auto",
    db: DbOption = None,
    json_output: JsonOption = False,
):
    """Summarize stored documents; every sentence cites its document and page."""
    from citesum.tasks.summarize.choices import check_synthesizer, choose_mode

    choose_mode(question, mode)  # options and the store are checked before the engine or the model starts
    check_synthesizer(synth)
    settings = make_settings(db=db)
    open_store(settings.store.db)
    engine_ready = start_early()
    from citesum.flows.summarize import run_summarize

    engine_ready()
    summary = outcome(run_summarize(question, doc, mode, synth, settings))
    if json_output:
        print(json.dumps(summary.to_json(), indent=2, ensure_ascii=False))
    else:
        print(summary.markdown(), end="")  # plain: rich would re-wrap the lines
        err.print(f"run record: {settings.summarize.runs_dir / (summary.run_id + '.json')}", highlight=False)


@command("eval")
def evaluate(
    questions: Annotated[Path, typer.Argument(help="questions.jsonl (format: ../shared/eval/README.md).")],
    pdfs: Annotated[Path, typer.Option("--pdfs", help="Folder holding the questions' PDFs.")],
    db: DbOption = None,
    json_output: JsonOption = False,
    summaries: Annotated[
        bool, typer.Option("--summaries", help="Measure query summaries against LexRank and lead baselines instead.")
    ] = False,
    synth: Annotated[
        str, typer.Option(help="extractive | ollama | auto: the synthesizer whose summaries --summaries measures.")
    ] = "extractive",
):
    """Measure retrieval and rerank (or, with --summaries, summaries) against questions with known evidence pages."""
    from citesum.tasks.embed import embedder_for
    from citesum.tasks.errors import ConfigurationError
    from citesum.tasks.ingest.sources import sources_to_ingest
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.summarize import evaluate as evaluation
    from citesum.tasks.summarize import quality
    from citesum.tasks.summarize.choices import check_synthesizer
    from citesum.tasks.summarize.rerank import load_reranker
    from citesum.tasks.summarize.tasks import choose_synthesizer

    check_synthesizer(synth)
    if synth != "extractive" and not summaries:
        raise ConfigurationError("--synth chooses the synthesizer of --summaries; retrieval is measured without one")
    settings = make_settings(db=db, corpus=pdfs)
    checked = evaluation.load_questions(questions)  # inputs are checked before any work starts
    sources_to_ingest(pdfs, settings)
    report = outcome(ingest_state(pdfs, settings))  # reuses what is stored
    if report.failed:
        err.print(f"{len(report.failed)} PDF(s) failed to ingest; their questions count as misses", highlight=False)
    embedder = embedder_for(settings)
    store, reranker = LanceStore.open(settings.store.db), load_reranker(settings.summarize.reranker, embedder)
    if summaries:
        synthesizer, why = choose_synthesizer(synth, settings, embedder)
        err.print(f"summaries by the {synthesizer.name} synthesizer ({why})", highlight=False)
        figures = quality.evaluate_summaries(checked, store, embedder, reranker, settings, synthesizer=synthesizer)
    else:
        figures = evaluation.evaluate(checked, store, embedder, reranker, settings)
    if json_output:
        print(json.dumps(figures.to_json(), indent=2))
        return
    table = Table(*figures.table_columns(), title=f"citesum eval: {questions}")
    for row in figures.table_rows():
        table.add_row(*row)
    out.print(table)


@command()
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
    serving.serve(settings, serving.build_deployments(settings), limit)


@command("deployments")
def list_deployments(
    as_yaml: Annotated[
        bool, typer.Option("--yaml", help="Print prefect.yaml for a worker instead of a table.")
    ] = False,
):
    """The deployments `citesum serve` serves; with --yaml, the prefect.yaml that declares them for a worker
    (`citesum deployments --yaml > prefect.yaml`)."""
    from citesum.deployments import prefect_yaml
    from citesum.deployments import serve as serving

    deployments = serving.build_deployments(make_settings())
    if as_yaml:
        print(prefect_yaml.render(deployments), end="")
        return
    rows = [
        {
            "deployment": f"{d.flow_name}/{d.name}",
            "entrypoint": d.entrypoint,
            "started by": prefect_yaml.started_by(d),
            "description": d.description or "",
        }
        for d in deployments
    ]
    table = fitted_table(
        "citesum deployments", list(rows[0]), rows, out.width, cut="description", drop_first=("entrypoint",)
    )
    out.print(table)


@command()
def watch(
    inbox: Annotated[Path | None, typer.Argument(help="Upload folder (default: CITESUM_INBOX or data/inbox).")] = None,
    corpus: Annotated[Path | None, typer.Option(help="Corpus folder (default: CITESUM_CORPUS).")] = None,
    poll: Annotated[float | None, typer.Option(help="Seconds between polls (default: 2).")] = None,
):
    """Move complete PDFs from an upload folder into the corpus and announce each for ingestion."""
    from citesum.deployments import watch as watching

    settings = make_settings(inbox=inbox, corpus=corpus, watch_poll_seconds=poll)
    require_prefect_server("watch")
    watching.check_layout(settings.service.inbox, settings.ingest.corpus)
    settings.service.inbox.mkdir(parents=True, exist_ok=True)
    watcher = watching.Watcher(
        settings.service.inbox,
        settings.ingest.corpus,
        watching.emit_uploaded,
        quiet_seconds=settings.service.watch_quiet_seconds,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # exit normally, so queued events are flushed
    err.print(f"watching {watcher.inbox} -> {watcher.corpus}", highlight=False, soft_wrap=True)
    try:
        watching.run(watcher, settings.service.watch_poll_seconds, stop, report=print_upload)
    except KeyboardInterrupt:
        pass


def require_prefect_server(command: str) -> None:
    """serve and watch need a lasting server: a temporary one would vanish with the process."""
    from prefect.settings import PREFECT_API_URL

    from citesum.tasks.errors import ConfigurationError

    if not PREFECT_API_URL.value():
        raise ConfigurationError(
            f"{command} needs a Prefect server: start one with `prefect server start` and set "
            "PREFECT_API_URL=http://127.0.0.1:4200/api"
        )


def outcome(state):
    """The flow's result; the error it failed with is raised here, for ``Command`` to report."""
    result = state.result(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    return result


def terminated(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's, a CI job's or `timeout`'s stop) ends a command as an exception does: with-blocks and
    exit handlers run, so the temporary Prefect server stops with the process; killed outright, it outlived it."""
    raise SystemExit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, terminated)  # ``watch`` sets its own: it stops between polls
    # Defaults for libraries the commands load: never reach a model hub, give the
    # temporary Prefect server time to start on a busy 2-core machine; engine output stays off the terminal.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    for name, value in QUIET_ENGINE.items():
        os.environ.setdefault(name, value)
    app()


if __name__ == "__main__":
    main()
