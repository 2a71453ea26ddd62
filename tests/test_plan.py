from pathlib import Path

from citesum.tasks.ingest.plan import plan_ingest
from citesum.tasks.records import DocumentRecord, SourceFile


def record(doc_id: str, version: str, source: str, settings: str = "s1") -> DocumentRecord:
    return DocumentRecord(doc_id, version, source, pages=1, chunks=1, status="ok", settings=settings)


def source(doc_id: str, version: str, root: str = "/corpus") -> SourceFile:
    return SourceFile(doc_id, f"{root}/{doc_id}", version)


def test_sorts_new_updated_unchanged_and_deleted():
    stored = {
        "same.pdf": record("same.pdf", "v1", "/corpus/same.pdf"),
        "edited.pdf": record("edited.pdf", "v1", "/corpus/edited.pdf"),
        "gone.pdf": record("gone.pdf", "v9", "/corpus/gone.pdf"),
    }
    sources = [source("same.pdf", "v1"), source("edited.pdf", "v2"), source("fresh.pdf", "v3")]
    plan = plan_ingest(sources, stored, settings_fingerprint="s1", corpus_root=Path("/corpus"))
    assert {(w.source.document_id, w.status) for w in plan.work} == {("edited.pdf", "updated"), ("fresh.pdf", "new")}
    assert [s.document_id for s in plan.unchanged] == ["same.pdf"]
    assert plan.deletions == ("gone.pdf",)


def test_changed_settings_make_a_document_updated():
    stored = {"a.pdf": record("a.pdf", "v1", "/corpus/a.pdf", settings="old")}
    plan = plan_ingest([source("a.pdf", "v1")], stored, settings_fingerprint="new", corpus_root=Path("/corpus"))
    assert [w.status for w in plan.work] == ["updated"]


def test_same_bytes_under_a_new_name_is_a_rename_not_a_deletion():
    stored = {"old/name.pdf": record("old/name.pdf", "v1", "/corpus/old/name.pdf")}
    plan = plan_ingest([source("new/name.pdf", "v1")], stored, settings_fingerprint="s1", corpus_root=Path("/corpus"))
    assert [(w.status, w.replaces) for w in plan.work] == [("renamed", "old/name.pdf")]
    assert plan.deletions == ()


def test_single_file_run_and_other_roots_never_delete():
    stored = {
        "a.pdf": record("a.pdf", "v1", "/corpus/a.pdf"),
        "b.pdf": record("b.pdf", "v2", "/elsewhere/b.pdf"),
    }
    single = plan_ingest([source("c.pdf", "v3")], stored, settings_fingerprint="s1", corpus_root=None)
    assert single.deletions == ()
    full = plan_ingest([source("c.pdf", "v3")], stored, settings_fingerprint="s1", corpus_root=Path("/corpus"))
    assert full.deletions == ("a.pdf",)  # b.pdf was ingested from another folder
