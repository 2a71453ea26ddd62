"""The LanceDB store on disk, with real vectors from the default model."""

from __future__ import annotations

import pytest

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.records import Chunk, DocumentRecord
from citesum.tasks.store.lance import LanceStore, chunk_schema, embedding_key


def chunks_of(doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
    return [Chunk(doc_id, version, f"/corpus/{doc_id}", i + 1, i + 1, "1 Scope", t, i) for i, t in enumerate(texts)]


def record_of(chunks: list[Chunk], at: str) -> DocumentRecord:
    c = chunks[0]
    return DocumentRecord(
        c.document_id,
        c.version,
        c.source,
        pages=len(chunks),
        chunks=len(chunks),
        status="ok",
        embed_model="m",
        ingested_at=at,
    )


@pytest.fixture
def store(tmp_path, embedder):
    s = LanceStore(str(tmp_path / "db"))
    s.check_model(embedder.name, embedder.dimension)
    return s


def put(store, embedder, chunks, at="t1"):
    store.supersede(record_of(chunks, at), chunks, embedder.embed([c.embedding_text for c in chunks]))


def test_tables_have_the_explicit_schema(store, embedder):
    assert store._chunks.schema.remove_metadata() == chunk_schema(embedder.name, embedder.dimension).remove_metadata()
    assert store.stored_model() == (embedder.name, embedder.dimension)


def test_supersede_replaces_only_that_document(store, embedder):
    put(store, embedder, chunks_of("a.pdf", "v1", ["The notice period is thirty days.", "Fees are due monthly."]))
    put(store, embedder, chunks_of("b.pdf", "v1", ["The warranty lasts one year."]))
    put(store, embedder, chunks_of("a.pdf", "v2", ["The notice period is ninety days.", "Fees are due monthly."]))

    rows = store.chunk_rows()
    assert sorted((r["document_id"], r["version"]) for r in rows) == [("a.pdf", "v2"), ("a.pdf", "v2"), ("b.pdf", "v1")]
    assert not store.search_text("thirty")
    assert [r["text"] for r in store.search_text("ninety")] == ["The notice period is ninety days."]
    assert store.documents()["a.pdf"].version == "v2"


def test_rewriting_the_same_version_changes_no_row(store, embedder):
    chunks = chunks_of("a.pdf", "v1", ["Payment is due in thirty days."])
    put(store, embedder, chunks, at="first")
    put(store, embedder, chunks, at="second")
    assert [r["ingested_at"] for r in store.chunk_rows()] == ["first"]


def test_delete_document_leaves_nothing_retrievable(store, embedder):
    put(store, embedder, chunks_of("a.pdf", "v1", ["Confidential information stays secret."]))
    assert store.delete_document("a.pdf") == 1
    assert store.chunk_rows() == [] and store.documents() == {}
    assert not store.search_text("confidential")


def test_reusable_vectors_by_document_or_version(store, embedder):
    chunks = chunks_of("a.pdf", "v1", ["Renewal is automatic for one year."])
    put(store, embedder, chunks)
    by_id = store.reusable_vectors(["a.pdf"], [])
    by_version = store.reusable_vectors(["other.pdf"], ["v1"])
    key = embedding_key(chunks[0].heading, chunks[0].text)
    assert key in by_id and key in by_version
    assert store.reusable_vectors(["other.pdf"], ["v9"]) == {}


def test_a_different_model_is_refused(store):
    with pytest.raises(ConfigurationError, match="holds vectors of"):
        store.check_model("some/other-model", 768)
