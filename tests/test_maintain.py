"""Store maintenance and erasure without the Prefect engine: LanceDB on disk, random unit vectors."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb
import numpy as np
import pytest

from citesum.tasks.errors import ConfigurationError, TransientError, is_retryable
from citesum.tasks.ingest.plan import plan_ingest
from citesum.tasks.records import Chunk, DocumentRecord, SourceFile
from citesum.tasks.settings import Settings
from citesum.tasks.store.failures import failures_are_transient, is_commit_conflict
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.maintain import (
    Erasure,
    MaintenanceReport,
    erasure_log_line,
    find_document,
    maintenance_markdown,
    plan_vector_index,
    vector_index_config,
    vector_index_plan,
)
from tests.summary_fixtures import files_holding

DIMENSION = 384
MARKER = b"zanzibarquokka"


def unit_vectors(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def put(store: LanceStore, doc_id: str, texts: list[str], version: str = "v1", at: datetime | None = None) -> None:
    at = at or datetime.now(UTC)
    chunks = [Chunk(doc_id, version, f"/corpus/{doc_id}", 1, 1, "1 Scope", t, i) for i, t in enumerate(texts)]
    record = DocumentRecord(doc_id, version, f"/corpus/{doc_id}", 1, len(chunks), "ok", embed_model="m", ingested_at=at)
    store.supersede(record, chunks, unit_vectors(len(chunks), seed=len(doc_id) + len(texts)))


@pytest.fixture
def store(tmp_path) -> LanceStore:
    s = LanceStore.open_or_create(str(tmp_path / "db"), "test-model", DIMENSION)
    return s


def data_and_index_files(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
        if "/data" in folder or "/_indices" in folder
    }


# -- commit conflicts ---------------------------------------------------------------------


def test_a_real_commit_conflict_becomes_a_transient_error(store, tmp_path):
    for doc_id in ("a.pdf", "b.pdf", "c.pdf"):
        put(store, doc_id, [f"Clause {i} of {doc_id}." for i in range(3)])  # one small fragment each
    stale = lancedb.connect(str(tmp_path / "db")).open_table("chunks")  # pinned to this version
    store.delete_document("b.pdf")  # a commit the stale handle's compaction did not see

    with pytest.raises(TransientError) as caught:
        with failures_are_transient("optimizing chunks"):
            stale.optimize()
    assert is_retryable(caught.value)
    assert is_commit_conflict(caught.value.__cause__)
    assert type(caught.value.__cause__) is RuntimeError  # what LanceDB 0.40 raises; the mapping depends on it

    stale.checkout_latest()
    stale.optimize()  # a retry on the latest version passes


def test_other_runtime_errors_are_not_retried():
    with pytest.raises(RuntimeError, match="corrupt"):
        with failures_are_transient("optimizing chunks"):
            raise RuntimeError("lance error: corrupt file")
    assert not is_commit_conflict(ValueError("Retryable commit conflict"))  # only LanceDB's RuntimeError


@pytest.mark.parametrize(
    "failure",
    [OSError(5, "Input/output error"), RuntimeError("lance error: LanceError(IO): Generic S3 error: list request")],
)
def test_failed_io_requests_are_transient(failure):
    with pytest.raises(TransientError, match="optimizing chunks") as caught:
        with failures_are_transient("optimizing chunks"):
            raise failure
    assert is_retryable(caught.value) and caught.value.__cause__ is failure


# -- maintenance ----------------------------------------------------------------------------


def test_compaction_removes_old_versions_and_folds_rows_into_indexes(store):
    for round_ in range(4):
        put(store, "a.pdf", [f"Notice period of {30 + round_} days.", "Fees are due monthly."], version=f"v{round_}")
        put(store, f"b{round_}.pdf", ["The warranty lasts one year."])
    before = {s.name: s for s in store.table_states()}
    assert before["chunks"].fragments > 1 and before["chunks"].versions > 5
    assert any(i.unindexed_rows for i in before["chunks"].indexes)

    store.compact(timedelta(0))

    after = {s.name: s for s in store.table_states()}
    assert after["chunks"].rows == before["chunks"].rows == 6
    assert after["chunks"].fragments == 1
    assert after["chunks"].versions < before["chunks"].versions and after["documents"].versions <= 2
    assert {i.kind for i in after["chunks"].indexes} == {"BTree", "FTS"}
    assert all(i.unindexed_rows == 0 for s in after.values() for i in s.indexes)
    assert after["chunks"].bytes < before["chunks"].bytes
    assert [r["text"] for r in store.search_text("warranty", k=10)] == ["The warranty lasts one year."] * 4


def test_plain_delete_leaves_text_on_disk_and_purge_removes_it(store, tmp_path):
    put(store, "other.pdf", [f"Ordinary clause number {i} about payment terms." for i in range(30)])
    put(store, "secret.pdf", ["The zanzibarquokka clause is confidential."])
    store.compact(timedelta(0))  # both documents now share one data file
    root = tmp_path / "db"
    assert files_holding(root, MARKER)
    store.delete_document("secret.pdf")
    store.compact(timedelta(0), delete_unverified=True)
    # Compaction leaves a file alone while few of its rows are deleted: the text is still on disk.
    assert files_holding(root, MARKER)
    assert not store.search_text("zanzibarquokka")
    earlier_files = data_and_index_files(root)

    store.purge()

    assert files_holding(root, MARKER) == []
    assert data_and_index_files(root).isdisjoint(earlier_files)  # no data or index file written before survives
    states = {s.name: s for s in store.table_states()}
    assert states["chunks"].versions == states["documents"].versions == 1
    assert {i.kind for i in states["chunks"].indexes} == {"BTree", "FTS"}
    assert all(i.indexed_rows == states[s].rows for s in states for i in states[s].indexes)
    assert len(store.search_text("payment", k=50)) == 30


def test_find_document_reports_what_is_stored_and_refuses_an_unknown_id(store):
    put(store, "a.pdf", ["One.", "Two."], version="abc")
    assert find_document(store, "a.pdf") == Erasure("a.pdf", "abc", 2, store.uri)
    with pytest.raises(ConfigurationError, match="no document 'missing.pdf' is stored"):
        find_document(store, "missing.pdf")


def test_erasure_log_line_names_the_document_never_its_text():
    line = erasure_log_line(Erasure("a.pdf", "abc123", 7, "db", erased_at="2026-11-30T10:00:00+00:00"))
    assert line == "erased document 'a.pdf' version abc123: 7 chunks, at 2026-11-30T10:00:00+00:00"


# -- the vector index ---------------------------------------------------------------------------


def settings(**values) -> Settings:
    return Settings(vector_index_min_rows=1_000, vector_index_rebuild_share=0.25, **values)


@pytest.mark.parametrize(
    ("rows", "present", "written", "action"),
    [
        (999, False, 0, "none"),
        (1_000, False, 0, "build"),
        (4_000, True, 999, "fold"),
        (4_000, True, 1_000, "rebuild"),
        (500, True, 0, "fold"),  # shrunk below the threshold: the index is kept
    ],
)
def test_vector_index_decision(rows, present, written, action):
    assert plan_vector_index(rows, present, written, settings()).action == action


def test_vector_index_is_built_then_counts_rows_written_after_it(store):
    put(store, "big.pdf", [f"Synthetic chunk {i}." for i in range(1_200)], at=datetime(2026, 1, 1, tzinfo=UTC))
    plan = vector_index_plan(store, store.table_states(), settings())
    assert plan.action == "build"
    store.build_vector_index(vector_index_config())
    index = next(s for s in store.table_states() if s.name == "chunks").index("vector")
    assert (index.kind, index.indexed_rows) == ("IvfPq", 1_200)
    assert vector_index_plan(store, store.table_states(), settings()).action == "fold"
    assert indexed_recall_at_10(store) >= 0.85  # compressed vectors alone give about 0.45 here

    later = index.created_at + timedelta(seconds=2)
    put(store, "new.pdf", [f"Later chunk {i}." for i in range(500)], at=later)
    assert store.chunks_written_since(index.created_at) == 500
    assert vector_index_plan(store, store.table_states(), settings()).action == "rebuild"  # 500 of 1,700

    store.compact(timedelta(0))  # folds the new rows in without retraining
    folded = next(s for s in store.table_states() if s.name == "chunks").index("vector")
    assert (folded.indexed_rows, folded.unindexed_rows, folded.created_at) == (1_700, 0, index.created_at)


def indexed_recall_at_10(store: LanceStore) -> float:
    """Recall of ``search_vector`` against exact search (numpy), over 20 random queries."""
    rows = store.chunk_rows(columns=["chunk_id", "vector"])
    ids, vectors = [r["chunk_id"] for r in rows], np.asarray([r["vector"] for r in rows], np.float32)
    found = []
    for query in unit_vectors(20, seed=99):
        exact = {ids[i] for i in np.argsort(-(vectors @ query))[:10]}
        found.append(len(exact & {r["chunk_id"] for r in store.search_vector(query, k=10)}) / 10)
    return float(np.mean(found))


def test_maintenance_report_says_what_was_done(store):
    states = store.table_states()
    plan = plan_vector_index(0, False, 0, settings())
    report = MaintenanceReport("db", states, states, plan, 24.0, 1.5)
    text = maintenance_markdown(report)
    assert "Vector index: **none**" in text and "| chunks |" in text
    assert report.to_json()["tables"][0]["table"] == "documents"


# -- crash safety of a write ------------------------------------------------------------------------


def killed_between_commits(db: Path) -> None:
    """Put the documents table back to its state just before the write's last commit (its record).

    A write's record is its last commit, so this is the store a process killed right after the chunks
    commit leaves behind: the chunks table already holds the new version.
    """
    documents = lancedb.connect(str(db)).open_table("documents")
    documents.restore(documents.version - 1)


def rerun_plan(db: Path, on_disk: dict[str, str]):
    """What the next ingestion of a corpus holding ``on_disk`` (document id -> version) would do."""
    sources = [SourceFile(d, f"/corpus/{d}", v) for d, v in on_disk.items()]
    plan = plan_ingest(
        sources, LanceStore.open(str(db)).documents(), settings_fingerprint="", corpus_root=Path("/corpus")
    )
    return {w.source.document_id for w in plan.work}, set(plan.deletions)


@pytest.mark.parametrize(
    ("on_disk", "redo"),
    [
        ({"a.pdf": "v2"}, "work"),  # the file as written
        ({"a.pdf": "v1"}, "work"),  # the file reverted to the version the record names
        ({}, "delete"),  # the file removed
    ],
)
def test_a_write_killed_after_its_chunks_commit_is_redone(store, tmp_path, on_disk, redo):
    put(store, "a.pdf", ["Notice is thirty days.", "Fees are due monthly."], version="v1")
    put(store, "a.pdf", ["Notice is ninety days.", "Fees are due monthly."], version="v2")
    killed_between_commits(tmp_path / "db")

    work, deletions = rerun_plan(tmp_path / "db", on_disk)

    assert "a.pdf" in (work if redo == "work" else deletions)


def test_a_new_document_killed_after_its_chunks_commit_is_deleted_with_its_file(store, tmp_path):
    put(store, "b.pdf", ["A clause that was never recorded."], version="v1")
    killed_between_commits(tmp_path / "db")

    _, deletions = rerun_plan(tmp_path / "db", {})

    assert deletions == {"b.pdf"}  # else its chunks stay, searchable, with no record to delete them by
    LanceStore.open(str(tmp_path / "db")).delete_document("b.pdf")
    assert LanceStore.open(str(tmp_path / "db")).chunk_rows() == []


@pytest.mark.parametrize(("on_disk", "redo"), [({"a.pdf": "v1"}, "work"), ({}, "delete")])
def test_a_deletion_killed_after_its_chunks_went_is_redone(store, tmp_path, on_disk, redo):
    put(store, "a.pdf", ["Notice is thirty days.", "Fees are due monthly."], version="v1")
    store.delete_document("a.pdf")
    killed_between_commits(tmp_path / "db")  # the record is back, its chunks are gone

    work, deletions = rerun_plan(tmp_path / "db", on_disk)

    # Else a file still on disk (a forgotten or renamed document) looks unchanged and keeps a record
    # whose chunks are gone, for good.
    assert "a.pdf" in (work if redo == "work" else deletions)
