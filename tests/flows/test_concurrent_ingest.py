"""Two ingestion runs on one store at the same moment: a scheduled reindex and an upload-triggered run.

First the two interleavings that lose an update, made to happen step by step (a file changed after a run
read it; a file put back after a reindex found it gone); then both runs as separate processes started
together against the same Prefect server, checked for duplicates and lost updates.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from prefect.logging import disable_run_logger
from prefect.settings import PREFECT_API_URL

from citesum.flows.ingest import run_ingest
from citesum.tasks.errors import CitesumError
from citesum.tasks.ingest.plan import WorkItem
from citesum.tasks.ingest.sources import hash_file, source_for
from citesum.tasks.ingest.tasks import Job, chunk, delete_missing, embed, extract, write
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.writer import WriterSlot, ensure_writer_limit

BIN = Path(sys.executable).parent
AGREEMENT, REPORT = "agreement.pdf", "report.pdf"
RUN_TIMEOUT = 420


def stored_state(db: str) -> dict[str, tuple[str, int]]:
    """Each stored document's version and chunk count, after checking rows and records agree."""
    store = LanceStore.open(db)
    rows = store.chunk_rows(columns=["chunk_id", "document_id", "version"])
    duplicates = [cid for cid, n in Counter(r["chunk_id"] for r in rows).items() if n > 1]
    assert not duplicates, f"duplicate chunks: {duplicates[:5]}"
    records = store.documents()
    for row in rows:
        record = records.get(row["document_id"])
        assert record is not None, f"chunk {row['chunk_id']} of {row['document_id']}, which has no record"
        assert row["version"] == record.version, f"{row['document_id']}: a chunk of another version is stored"
    counts = Counter(r["document_id"] for r in rows)
    for document_id, record in records.items():
        assert counts[document_id] == record.chunks, (
            f"{document_id}: {counts[document_id]} rows, {record.chunks} in its record"
        )
    return {document_id: (record.version, record.chunks) for document_id, record in records.items()}


def read_but_not_written(path: Path, corpus: Path, settings: Settings, embedder, store: LanceStore) -> Job:
    """A run's job for the file as it is now, carried up to the write (the tasks' logic, outside a run)."""
    job = Job(WorkItem(source_for(path, corpus), "updated"))
    with disable_run_logger():
        job = extract.fn(job, settings, None)
        job = chunk.fn(job, settings, embedder)
        (job,) = embed.fn([job], embedder, store)
        return job


def test_a_write_of_a_file_changed_since_it_was_read_does_not_undo_the_newer_write(tmp_path, sample, embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    agreement = corpus / AGREEMENT
    sample.services_agreement(agreement)
    settings = Settings(corpus=corpus, db=str(tmp_path / "db"))
    assert run_ingest(None, settings).is_completed()
    store = LanceStore.open(settings.store.db)

    sample.services_agreement(agreement, notice_days=60)  # the reindex reads this version ...
    stale = read_but_not_written(agreement, corpus, settings, embedder, store)
    sample.services_agreement(agreement, notice_days=90)  # ... an upload replaces it and is ingested first
    assert run_ingest(str(agreement), settings).is_completed()
    newest = hash_file(agreement)

    with disable_run_logger():
        (outcome,) = write.fn([stale], store, embedder, settings, WriterSlot.from_settings(settings))

    assert outcome.status == "outdated" and outcome.chunks == 0
    assert outcome.note == "the file changed while this run read it; not written"
    assert stored_state(settings.store.db)[AGREEMENT][0] == newest
    texts = " ".join(r["text"] for r in store.chunk_rows(columns=["text"]))
    assert "90 days before" in texts and "60 days before" not in texts


class RefusingOne:
    """The real store, whose write of one document fails for good (a collaborator passed in, not a patch)."""

    def __init__(self, store: LanceStore, document_id: str):
        self.store, self.document_id = store, document_id

    def supersede(self, record, chunks, vectors) -> None:
        if record.document_id == self.document_id:
            raise CitesumError("the table refused the rows", source=record.document_id)
        self.store.supersede(record, chunks, vectors)


def test_a_write_that_fails_for_good_fails_its_document_and_the_batch_goes_on(tmp_path, sample, embedder):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    sample.technical_report(corpus / REPORT)
    settings = Settings(corpus=corpus, db=str(tmp_path / "db"))
    store = LanceStore.open_or_create(settings.store.db, embedder.name, embedder.dimension)
    jobs = [read_but_not_written(corpus / name, corpus, settings, embedder, store) for name in (AGREEMENT, REPORT)]
    ensure_writer_limit()  # as a run does first

    with disable_run_logger():
        failed, written = write.fn(
            jobs, RefusingOne(store, AGREEMENT), embedder, settings, WriterSlot.from_settings(settings)
        )

    assert (failed.document_id, failed.status) == (AGREEMENT, "failed")
    assert failed.error == f"write: {AGREEMENT}: the table refused the rows"
    assert (written.document_id, written.status, written.chunks) == (REPORT, "updated", len(jobs[1].chunked.chunks))
    assert set(store.documents()) == {REPORT}


def test_a_file_put_back_after_the_reindex_found_it_gone_is_not_deleted(tmp_path, sample):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    sample.technical_report(corpus / REPORT)
    settings = Settings(corpus=corpus, db=str(tmp_path / "db"))
    assert run_ingest(None, settings).is_completed()
    before = stored_state(settings.store.db)
    kept = (corpus / REPORT).read_bytes()
    (corpus / REPORT).unlink()
    (corpus / AGREEMENT).unlink()  # the reindex plans to delete both ...
    (corpus / REPORT).write_bytes(kept)  # ... and an upload puts one back before the deletion

    with disable_run_logger():
        outcomes = delete_missing.fn(
            (AGREEMENT, REPORT), LanceStore.open(settings.store.db), WriterSlot.from_settings(settings)
        )

    assert {o.document_id: o.status for o in outcomes} == {AGREEMENT: "deleted", REPORT: "outdated"}
    assert stored_state(settings.store.db) == {REPORT: before[REPORT]}


def test_a_reindex_and_an_upload_started_together_leave_one_current_version_of_each_document(tmp_path, sample):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sample.services_agreement(corpus / AGREEMENT)
    sample.technical_report(corpus / REPORT)
    sample.services_agreement(corpus / "old_contract.pdf", notice_days=45)
    db = str(tmp_path / "db")
    assert run_ingest(None, Settings(corpus=corpus, db=db)).is_completed()

    sample.services_agreement(corpus / AGREEMENT, notice_days=60)  # changed since the last reindex
    (corpus / "old_contract.pdf").unlink()  # removed
    upload = corpus / "uploads" / "new_contract.pdf"  # what `citesum watch` moved in and announced
    upload.parent.mkdir()
    sample.services_agreement(upload, extra_clause="The Supplier keeps a register of every upload it receives.")

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "CITESUM_CORPUS": str(corpus), "CITESUM_DB": db}
    runs = {
        "reindex": [BIN / "citesum", "ingest", str(corpus)],
        "upload": [BIN / "citesum", "ingest", str(upload)],
    }
    started = {
        name: subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, args in runs.items()
    }
    outputs = {}
    try:
        for name, process in started.items():
            outputs[name] = process.communicate(timeout=RUN_TIMEOUT)[0]
    finally:
        for process in started.values():
            process.kill()
    for name, process in started.items():
        assert process.returncode == 0, f"{name} exited with {process.returncode}:\n{outputs[name][-3000:]}"

    state = stored_state(db)  # no duplicate chunk, every chunk of its record's version, counts agree
    assert set(state) == {AGREEMENT, REPORT, "uploads/new_contract.pdf"}
    for document_id in state:  # no lost update: what is stored is what each file holds now
        assert state[document_id][0] == hash_file(corpus / document_id), document_id
