"""A corpus of hostile entries beside good PDFs, ingested by the real ``citesum`` command (issue 10).

The batch reports every entry, the good documents are stored with their text, nothing from outside
the corpus is stored, and the whole ingest's process tree stays under 3 GB with the giant page.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from prefect.settings import PREFECT_API_URL
from typer.testing import CliRunner

from citesum.deployments.cli import app
from citesum.tasks.store.lance import LanceStore
from tests.hostile_cases import (
    BAD_NAME_TEXT,
    CASES,
    GOOD_TEXT,
    SECRET_TEXT,
    pdf_bytes,
    place,
    run_measured,
)

CITESUM = [sys.executable, "-m", "citesum.deployments.cli"]
PEAK_LIMIT = 3 * 1024**3


def command_env() -> dict[str, str]:
    return {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "HF_HUB_OFFLINE": "1"}


def test_a_hostile_batch_reports_every_entry_and_stores_only_the_corpus(tmp_path):
    corpus, outside, db = tmp_path / "corpus", tmp_path / "outside", tmp_path / "db"
    corpus.mkdir()
    (corpus / "good.pdf").write_bytes(pdf_bytes(GOOD_TEXT))
    for case in CASES:
        place(case, corpus, outside)

    ingested, peak, seconds = run_measured([*CITESUM, "ingest", str(corpus), "--db", str(db), "--json"], command_env())
    assert ingested.returncode == 0, ingested.stderr[-3000:]
    report = {d["document_id"]: d for d in json.loads(ingested.stdout)["documents"]}
    assert {k: v["status"] for k, v in report.items()} == {
        "good.pdf": "new",
        "bad-%FF-name.pdf": "new",
        "giant.pdf": "new",
        "inflated.pdf": "new",
        "fifo.pdf": "skipped",
        "secret.pdf": "skipped",
        "loop": "skipped",
    }
    assert [p["kind"] for p in report["secret.pdf"]["problems"]] == ["outside_corpus"]
    assert report["giant.pdf"]["pages_lost"] == 1
    assert "pixel cap" in report["giant.pdf"]["problems"][0]["message"]
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB over {seconds:.0f} s"
    print(f"hostile batch: {seconds:.1f} s, peak {peak / 2**20:.0f} MiB")

    texts = {r["document_id"]: r["text"] for r in LanceStore.open(str(db)).chunk_rows(columns=["document_id", "text"])}
    assert GOOD_TEXT.split()[1] in texts["good.pdf"] and BAD_NAME_TEXT.split()[0] in texts["bad-%FF-name.pdf"]
    assert not any(SECRET_TEXT.split()[0] in text for text in texts.values())
    assert not any("\x00" in text for text in texts.values())

    status = CliRunner().invoke(app, ["status", "--db", str(db), "--json"])
    listed = [d["document_id"] for d in json.loads(status.stdout)["documents"]]
    assert "bad-%FF-name.pdf" in listed and "secret.pdf" not in listed
    forgot = CliRunner().invoke(app, ["forget", "bad-%FF-name.pdf", "--db", str(db)])  # what status printed
    assert forgot.exit_code == 0, forgot.output
    status = CliRunner().invoke(app, ["status", "--db", str(db), "--json"])
    assert "bad-%FF-name.pdf" not in [d["document_id"] for d in json.loads(status.stdout)["documents"]]


def test_two_folders_with_the_same_name_conflict_unless_replace(tmp_path):
    first, second, db = tmp_path / "corpus", tmp_path / "other", str(tmp_path / "db")
    for folder, text in ((first, "Master services agreement of the first folder."), (second, "Another paper.")):
        folder.mkdir()
        (folder / "msa.pdf").write_bytes(pdf_bytes(text))
    runner = CliRunner(env={"CITESUM_CORPUS": str(first)})
    assert runner.invoke(app, ["ingest", str(first), "--db", db]).exit_code == 0

    conflict = runner.invoke(app, ["ingest", str(second), "--db", db, "--json"])
    assert conflict.exit_code == 1, conflict.output
    [outcome] = json.loads(conflict.stdout)["documents"]
    assert outcome["status"] == "failed" and "--replace" in outcome["error"]
    assert [p["kind"] for p in outcome["problems"]] == ["conflict"]
    record = LanceStore.open(db).documents()["msa.pdf"]
    assert Path(record.source) == first / "msa.pdf"  # nothing replaced
    assert runner.invoke(app, ["ingest", str(first), "--db", db]).exit_code == 0  # the corpus itself: unchanged

    replaced = runner.invoke(app, ["ingest", str(second), "--db", db, "--replace"])
    assert replaced.exit_code == 0, replaced.output
    assert Path(LanceStore.open(db).documents()["msa.pdf"].source) == second / "msa.pdf"
