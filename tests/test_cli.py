"""The command line as a user meets it, for input refused before any run starts: one line on stderr,
exit 2, a JSON error with --json, and nothing created. (Runs through the engine: tests/flows/test_cli.py.)"""

from __future__ import annotations

import json
import signal

from typer.testing import CliRunner

from citesum.deployments.cli import app


def test_a_folder_without_pdfs_is_refused_and_nothing_is_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "emptydir").mkdir()
    (tmp_path / "emptydir" / "notes.txt").write_text("not a PDF")
    result = CliRunner().invoke(app, ["ingest", "emptydir", "--db", "db"])
    assert result.exit_code == 2, result.output
    assert result.stderr == "error: emptydir: no PDF found\n"
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emptydir"]  # no store, no runs folder


def test_with_json_an_error_is_a_json_object_on_stdout(tmp_path):
    missing = tmp_path / "no-store"
    result = CliRunner().invoke(app, ["status", "--db", str(missing), "--json"])
    assert result.exit_code == 2, result.output
    message = f"no citesum store at {missing}: run `citesum ingest` first"
    assert json.loads(result.stdout) == {"error": {"kind": "configuration", "message": message}}
    assert result.stderr == f"error: {message}\n"


def test_a_malformed_questions_file_is_refused_before_any_ingestion(tmp_path, monkeypatch, sample):
    monkeypatch.chdir(tmp_path)
    sample.write_sample_corpus(tmp_path / "pdfs")
    good = {"id": "q1", "question": "What is the term?", "source": "test", "kind": "fact"}
    (tmp_path / "notes.txt").write_text(f"{json.dumps(good)}\n\nTerm and renewal: see page 2\n")
    result = CliRunner().invoke(app, ["eval", "notes.txt", "--pdfs", "pdfs", "--db", "db"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: notes.txt:3: not a JSON object (")
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "db").exists()  # nothing was ingested


def test_a_questions_line_without_the_fields_names_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pdfs").mkdir()
    (tmp_path / "q.jsonl").write_text('{"id": "q1"}\n')
    result = CliRunner().invoke(app, ["eval", "q.jsonl", "--pdfs", "pdfs", "--db", "db", "--json"])
    assert result.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "configuration" and error["message"].startswith("q.jsonl:1: not a question")


def test_deployments_lists_what_starts_each():
    result = CliRunner().invoke(app, ["deployments"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    for line in ("ingest/reindex", "cron 0 2 * * * (UTC)", "ingest/ingest-upload", "event citesum.document.uploaded"):
        assert line in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_a_table_leaves_out_the_columns_a_long_id_leaves_no_room_for():
    """`citesum status` of a store holding a 70-character file name, at 80 columns: the id whole on one line, each
    other column whole or left out (rich squeezed them to "…", headers included)."""
    import io

    from rich.console import Console

    from citesum.deployments.output import fitted_table

    long_id = "germanwingsdigitalcrisisanalysis-150403064828-conversion-gate01_95.pdf"
    headers = ["document", "version", "pages", "chunks", "status", "problems", "ingested at"]
    rows = [
        dict(zip(headers, [name, "92760b9186dc", "23", "23", "ok", "0", "2026-12-07 02:21"], strict=True))
        for name in (long_id, "services_agreement.pdf")
    ]
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(fitted_table("store", headers, rows, 80, drop_first=("ingested at", "version", "problems")))
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(f"│ {long_id} │" in line for line in lines), lines
    assert "…" not in "\n".join(lines)
    header = next(line for line in lines if "document" in line)
    shown = [cell.strip() for cell in header.strip("┃│ ").split("┃") if cell.strip()]
    assert shown[0] == "document" and set(shown) <= set(headers)
    left_out = ", ".join(h for h in headers if h not in shown)
    assert f"{left_out}: left out to fit the terminal" in " ".join(" ".join(lines).split())  # and says so


def test_sigterm_during_a_run_exits_as_sigterm():
    """Inside a flow run Prefect's engine turns SIGTERM into its TerminationSignal (a BaseException), which escaped
    the CLI as a traceback and exit code 1; a stop by SIGTERM exits 128 + 15 wherever it lands."""
    import typer
    from prefect.exceptions import TerminationSignal

    from citesum.deployments.cli import Command

    stopped = typer.Typer()

    @stopped.command(cls=Command)
    def run() -> None:
        raise TerminationSignal(signal.SIGTERM)

    assert CliRunner().invoke(stopped, []).exit_code == 128 + signal.SIGTERM
