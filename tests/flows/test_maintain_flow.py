"""Maintenance and erasure through the Prefect engine: the real ingest flow, the sample corpus, LanceDB on disk."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from citesum.deployments.cli import app
from citesum.flows.ingest import run_ingest
from citesum.flows.maintain import run_forget, run_maintain
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.maintain import Erasure, MaintenanceReport
from tests.summary_fixtures import files_holding

AGREEMENT = "services_agreement.pdf"
MARKER_WORD = "zanzibarquokka"
MARKER = f"The {MARKER_WORD} clause obliges the Supplier to audit every subcontractor twice a year."


def ingested_with_marker(tmp_path, corpus, sample) -> Settings:
    folder, _ = corpus
    sample.services_agreement(folder / AGREEMENT, extra_clause=MARKER)
    settings = Settings(corpus=folder, db=str(tmp_path / "db"))
    state = run_ingest(None, settings)
    assert state.is_completed(), state.message
    return settings


def test_forget_with_purge_leaves_no_trace_on_disk(tmp_path, corpus, sample, embedder):
    settings = ingested_with_marker(tmp_path, corpus, sample)
    db = Path(settings.store.db)
    assert files_holding(db, MARKER.encode())  # the sentence is in a data file: the scan can see it

    state = run_forget(AGREEMENT, True, settings)

    assert state.is_completed(), state.message
    erasure = state.result()
    assert isinstance(erasure, Erasure) and erasure.purged and erasure.chunks > 0
    assert files_holding(db, MARKER.encode()) == []
    assert files_holding(db, MARKER_WORD.encode()) == []
    store = LanceStore.open(settings.store.db)
    assert set(store.documents()) == {"technical_report.pdf", "scanned_memo.pdf"}
    hits = store.search_text("hydrants")  # the index was rebuilt: the other documents are still found
    assert hits and {r["document_id"] for r in hits} == {"technical_report.pdf"}
    nearest = store.search_vector(embedder.embed(["pressure sensors detect leaks in water pipes"])[0], k=3)
    assert nearest[0]["document_id"] == "technical_report.pdf"


def test_forget_without_purge_makes_the_text_unretrievable(tmp_path, corpus, sample, embedder):
    settings = ingested_with_marker(tmp_path, corpus, sample)
    chunks = LanceStore.open(settings.store.db).chunk_count(AGREEMENT)

    state = run_forget(AGREEMENT, False, settings)

    assert state.is_completed(), state.message
    assert state.result().chunks == chunks and not state.result().purged
    store = LanceStore.open(settings.store.db)
    assert AGREEMENT not in store.documents() and store.chunk_count(AGREEMENT) == 0
    assert not store.search_text(MARKER_WORD)
    nearest = store.search_vector(embedder.embed([MARKER])[0], k=50)
    assert not any(MARKER_WORD in r["text"] for r in nearest)
    # Not asserted: the bytes may remain in older table versions and in data files that still hold
    # other rows (README, Operations). tests/test_maintain.py shows they do, and that a purge removes them.


def test_forget_of_an_unknown_document_or_store_exits_2_and_creates_nothing(tmp_path, corpus, sample):
    missing = tmp_path / "missing-db"
    result = CliRunner().invoke(app, ["forget", "no-such.pdf", "--db", str(missing)])
    assert result.exit_code == 2 and f"no citesum store at {missing}:" in " ".join(result.output.split())
    assert not missing.exists()

    settings = ingested_with_marker(tmp_path, corpus, sample)
    result = CliRunner().invoke(app, ["forget", "no-such.pdf", "--db", settings.store.db])
    assert result.exit_code == 2
    assert "no document 'no-such.pdf' is stored" in result.output


def test_status_and_maintain_of_a_missing_store_exit_2_and_create_nothing(tmp_path):
    missing = tmp_path / "missing-db"
    for command in (["status"], ["maintain"], ["summarize", "What is the notice period?"]):
        result = CliRunner().invoke(app, [*command, "--db", str(missing)])
        assert result.exit_code == 2, (command, result.output)
        assert f"no citesum store at {missing}:" in " ".join(result.output.split())  # unwrapped
    assert not missing.exists()


def test_maintain_compacts_cleans_versions_and_reports(tmp_path, corpus, sample):
    folder, _ = corpus
    ingesting = Settings(corpus=folder, db=str(tmp_path / "db"))  # its index refresh keeps the last 24 h
    assert run_ingest(None, ingesting).is_completed()
    sample.services_agreement(folder / AGREEMENT, notice_days=60)
    assert run_ingest(None, ingesting).is_completed()  # a superseded version: more versions and fragments

    state = run_maintain(Settings(corpus=folder, db=ingesting.store.db, version_retention_hours=0))

    assert state.is_completed(), state.message
    report = state.result()
    assert isinstance(report, MaintenanceReport)
    before, after = ({s.name: s for s in states} for states in (report.before, report.after))
    assert after["chunks"].rows == before["chunks"].rows
    assert after["chunks"].versions < before["chunks"].versions
    assert after["chunks"].fragments == 1
    assert all(i.unindexed_rows == 0 for s in after.values() for i in s.indexes)
    assert report.vector_index.action == "none"  # the sample corpus is far below the threshold
    assert LanceStore.open(ingesting.store.db).search_text("notice")


def test_maintain_cli_prints_json(tmp_path, corpus):
    folder, _ = corpus
    db = str(tmp_path / "db")
    assert run_ingest(None, Settings(corpus=folder, db=db)).is_completed()
    result = CliRunner().invoke(app, ["maintain", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {t["table"] for t in payload["tables"]} == {"documents", "chunks"}
    assert payload["vector_index"]["action"] == "none"


def test_maintain_purge_removes_the_text_of_a_document_forgotten_without_purge(tmp_path, corpus, sample):
    settings = ingested_with_marker(tmp_path, corpus, sample)
    assert run_forget(AGREEMENT, False, settings).is_completed()
    db = Path(settings.store.db)
    assert files_holding(db, MARKER.encode())  # forgotten, but still in the table files
    again = CliRunner().invoke(app, ["forget", AGREEMENT, "--purge", "--db", settings.store.db])
    assert again.exit_code == 2 and "citesum maintain --purge" in again.output  # nothing left to forget

    result = CliRunner().invoke(app, ["maintain", "--purge", "--db", settings.store.db, "--json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["purged"] is True
    assert files_holding(db, MARKER_WORD.encode()) == []
    assert set(LanceStore.open(settings.store.db).documents()) == {"technical_report.pdf", "scanned_memo.pdf"}
