"""The command line as a user meets it, through the engine: what reaches the terminal, and what does not.

The subprocess tests run `citesum` as a user would, against the session's test server (PREFECT_API_URL), so
its stderr is the real one: Prefect's console logging, the progress bars of the libraries it loads.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from prefect.settings import PREFECT_API_URL
from typer.testing import CliRunner

from citesum.deployments.cli import app
from citesum.flows.ingest import run_ingest
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore

CITESUM = Path(sys.executable).parent / "citesum"
BROKEN = "broken_vendor_agreement.pdf"
AGREEMENT = "services_agreement.pdf"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, sample):
    """A store holding the services agreement, and the ingest run's table at 80 columns (one PDF failed)."""
    folder = tmp_path_factory.mktemp("cli")
    corpus, db = folder / "corpus", folder / "db"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    (corpus / BROKEN).write_bytes(b"this upload was cut off before it became a PDF " * 4)
    table = CliRunner().invoke(app, ["ingest", str(corpus), "--db", str(db)], env={"COLUMNS": "80"})
    report = CliRunner().invoke(app, ["ingest", str(corpus), "--db", str(db), "--json"])
    return corpus, db, table, report


def citesum(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`citesum ARGS` in a child process, on the test server, with no logging settings of this process."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_LOGGING_", "CITESUM_"))}
    base |= {"PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "80"}
    return subprocess.run(
        [str(CITESUM), *args], env=base | env, capture_output=True, text=True, timeout=600, check=False
    )


def test_ingest_table_keeps_ids_whole_and_cuts_long_notes(ingested):
    _, _, table, report = ingested
    assert table.exit_code == 1, table.output  # one document failed
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    [failed_row] = [line for line in lines if BROKEN in line]
    assert "failed" in failed_row and "…" in failed_row  # the note, cut to its one line
    [error] = [d["error"] for d in json.loads(report.stdout)["documents"] if d["document_id"] == BROKEN]
    assert len(error) > 20 and error not in table.stdout  # the whole note is in --json
    assert error[:8] in failed_row


def test_status_at_80_columns_shows_whole_ids(ingested):
    _, db, _, _ = ingested
    result = CliRunner().invoke(app, ["status", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert any(f"│ {AGREEMENT} │" in line for line in result.stdout.splitlines()), result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_an_emptied_corpus_folder_deletes_nothing(ingested, tmp_path):
    _, db, _, _ = ingested
    before = LanceStore.open(str(db)).documents()
    (tmp_path / "corpus").mkdir()
    state = run_ingest(str(tmp_path / "corpus"), Settings(db=str(db), corpus=tmp_path / "corpus"))
    assert state.is_failed()
    error = state.result(raise_on_failure=False)
    assert isinstance(error, ConfigurationError) and "no PDF found" in str(error)
    assert LanceStore.open(str(db)).documents() == before


def test_an_expected_error_is_one_line_and_json_with_json(ingested):
    _, db, _, _ = ingested
    message = (
        f"no document 'nosuch.pdf' is stored in {db}; `citesum status` lists the stored documents "
        "(a document forgotten without --purge: `citesum maintain --purge` removes its text from disk)"
    )
    plain = citesum("forget", "nosuch.pdf", "--db", str(db))
    assert (plain.returncode, plain.stdout, plain.stderr) == (2, "", f"error: {message}\n")
    as_json = citesum("forget", "nosuch.pdf", "--db", str(db), "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {"error": {"kind": "configuration", "message": message}}
    assert as_json.stderr == f"error: {message}\n"


def test_engine_logs_reach_the_terminal_only_with_verbose(ingested, tmp_path):
    corpus, _, _, _ = ingested
    # Fresh stores, so the document is embedded and the model loads (an unchanged document loads none); torch,
    # whose loading shows the "Loading weights" bar (a cached OpenVINO export loads without a word).
    quiet = citesum("ingest", str(corpus / AGREEMENT), "--db", str(tmp_path / "quiet"), CITESUM_EMBED_BACKEND="torch")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""  # no Prefect lines, no telemetry notice, no "Loading weights" bar
    assert "embedding backend: torch fp32 (chosen)" in quiet.stdout
    loud = citesum(
        "--verbose", "ingest", str(corpus / AGREEMENT), "--db", str(tmp_path / "loud"), CITESUM_EMBED_BACKEND="torch"
    )
    assert loud.returncode == 0, loud.stderr
    assert "| INFO    | Flow run" in loud.stderr and "Finished in state Completed()" in loud.stderr
    assert "Loading weights" in loud.stderr and "embedding with torch fp32 (chosen)" in loud.stderr


def test_summarize_on_an_empty_store_exits_2_with_one_line(tmp_path):
    empty = tmp_path / "empty-db"
    LanceStore.open_or_create(str(empty), "some-model", 8)  # the tables, no document
    result = citesum("summarize", "What is the term?", "--db", str(empty), "--synth", "extractive")
    message = f"the store at {empty} holds no documents: run `citesum ingest` first"
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"error: {message}\n")


def closed_port_url() -> str:
    with socket.socket() as sock:  # a loopback port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_synth_ollama_without_ollama_exits_2_with_one_line(ingested):
    _, db, _, _ = ingested
    host = closed_port_url()
    result = citesum("summarize", "What is the term?", "--db", str(db), "--synth", "ollama", CITESUM_OLLAMA_HOST=host)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and host in line and line.endswith("; use --synth extractive or start Ollama")


def test_an_unchanged_reingest_starts_no_run_and_a_changed_one_does(tmp_path, sample):
    corpus, db = tmp_path / "corpus", tmp_path / "db"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    assert run_ingest(None, Settings(corpus=corpus, db=str(db))).is_completed()

    # No Prefect server answers at this URL: a run would fail, so none started.
    unchanged = citesum("ingest", str(corpus), "--db", str(db), "--json", PREFECT_API_URL=closed_port_url())
    assert unchanged.returncode == 0, unchanged.stderr
    report = json.loads(unchanged.stdout)
    assert [(d["document_id"], d["status"]) for d in report["documents"]] == [(AGREEMENT, "unchanged")]
    assert report["embed_backend"] == "not loaded: nothing to embed"
    assert "nothing changed since the last run: no Prefect run started" in unchanged.stderr

    sample.services_agreement(corpus / AGREEMENT, notice_days=60)
    changed = citesum("ingest", str(corpus), "--db", str(db), "--json")
    assert changed.returncode == 0, changed.stderr
    assert [d["status"] for d in json.loads(changed.stdout)["documents"]] == ["updated"]


def test_a_terminated_ingest_stops_its_temporary_prefect_server(tmp_path, sample):
    # Without PREFECT_API_URL the command starts a temporary Prefect server, a child process. Stopped by SIGTERM (a
    # scheduler's or `timeout`'s stop), the command used to die at once and leave the server running, reparented.
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL" and not k.startswith("CITESUM_")}
    command = [str(CITESUM), "ingest", str(corpus), "--db", str(tmp_path / "db")]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as run:
        server = wait_for_child(psutil.Process(run.pid), "uvicorn")
        run.send_signal(signal.SIGTERM)
        code = run.wait(timeout=120)
    outlived = alive(server)
    if outlived:
        server.kill()  # no stray server for the rest of the session
    assert not outlived, "the temporary Prefect server outlived the command"
    assert code == 128 + signal.SIGTERM  # the shell's code for a process stopped by SIGTERM


def wait_for_child(process: psutil.Process, name: str, timeout: float = 120) -> psutil.Process:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in process.children():
            with contextlib.suppress(psutil.Error):  # gone meanwhile
                if name in " ".join(child.cmdline()):
                    return child
        time.sleep(0.2)
    raise AssertionError(f"no {name} child of {process.pid} within {timeout} s")


def alive(process: psutil.Process) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
