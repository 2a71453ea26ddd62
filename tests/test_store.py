"""The LanceDB store on disk, with real vectors from the default model."""

from __future__ import annotations

import inspect
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from lancedb.index import FTS, BTree, IvfPq

from citesum.tasks.errors import ConfigurationError, TransientError
from citesum.tasks.records import Chunk, DocumentRecord, Problem
from citesum.tasks.store.lance import LanceStore, connect_lance, embedding_key

T1 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
T2 = T1 + timedelta(hours=1)


def chunks_of(doc_id: str, version: str, texts: list[str]) -> list[Chunk]:
    return [Chunk(doc_id, version, f"/corpus/{doc_id}", i + 1, i + 1, "1 Scope", t, i) for i, t in enumerate(texts)]


def record_of(chunks: list[Chunk], at: datetime) -> DocumentRecord:
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
    s = LanceStore.open_or_create(str(tmp_path / "db"), embedder.name, embedder.dimension)
    return s


def put(store, embedder, chunks, at=T1):
    store.supersede(record_of(chunks, at), chunks, embedder.embed([c.embedding_text for c in chunks]))


def columns(db: str, table: str) -> list[tuple[str, pa.DataType, bool]]:
    return [(f.name, f.type, f.nullable) for f in lancedb.connect(db).open_table(table).schema]


def test_tables_have_the_explicit_schema(store, embedder, tmp_path):
    db = str(tmp_path / "db")
    text, count, when = pa.string(), pa.int32(), pa.timestamp("us", tz="UTC")
    assert columns(db, "chunks") == [
        ("chunk_id", text, False),
        ("document_id", text, False),
        ("version", text, False),
        ("source", text, False),
        ("page_start", count, False),
        ("page_end", count, False),
        ("heading", text, False),
        ("text", text, False),
        ("ordinal", count, False),
        ("injection", pa.list_(count), False),
        ("vector", pa.list_(pa.float32(), embedder.dimension), False),
        ("ingested_at", when, False),
    ]
    problem = pa.struct(
        [pa.field("kind", text, nullable=False), pa.field("message", text, nullable=False), pa.field("page", count)]
    )
    assert columns(db, "documents") == [
        ("document_id", text, False),
        ("version", text, False),
        ("source", text, False),
        ("pages", count, False),
        ("chunks", count, False),
        ("status", text, False),
        ("problems", pa.list_(problem), False),
        ("embed_model", text, False),
        ("parser", text, False),
        ("settings", text, False),
        ("ingested_at", when, False),
    ]
    assert store.stored_model() == (embedder.name, embedder.dimension)


def test_rows_read_back_as_the_records_written(store, embedder):
    chunks = chunks_of("a.pdf", "v1", ["The notice period is thirty days."])
    record = DocumentRecord("a.pdf", "v1", "/corpus/a.pdf", 1, 1, "partial", [Problem("ocr", "OCR used", 1)], "m")
    store.supersede(record, chunks, embedder.embed([c.embedding_text for c in chunks]))
    assert store.documents() == {"a.pdf": record}
    (row,) = store.chunk_rows()
    fields = ("document_id", "version", "source", "page_start", "page_end", "heading", "text", "ordinal")
    assert Chunk(**{name: row[name] for name in fields}) == chunks[0]
    assert row["chunk_id"] == chunks[0].chunk_id and row["ingested_at"] == record.ingested_at


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
    put(store, embedder, chunks, at=T1)
    put(store, embedder, chunks, at=T2)
    assert [r["ingested_at"] for r in store.chunk_rows()] == [T1]


def test_the_same_version_chunked_anew_rewrites_the_rows_that_changed(store, embedder):
    # A re-chunk (a change of chunking settings or CHUNK_FORMAT) keeps the file's version and many chunk ids
    # (document, pages, text): a kept row must take the new heading, position and vector, or the store holds
    # stale headings and two chunks at one position.
    old = chunks_of("a.pdf", "v1", ["Payment is due in thirty days.", "Fees are due monthly."])
    put(store, embedder, old, at=T1)
    new = [replace(old[0], heading="4 Fees and Payment", ordinal=1), replace(old[1], ordinal=0)]
    put(store, embedder, new, at=T2)
    rows = {r["text"]: r for r in store.chunk_rows(columns=["text", "heading", "ordinal", "vector", "ingested_at"])}
    assert {t: (r["heading"], r["ordinal"]) for t, r in rows.items()} == {c.text: (c.heading, c.ordinal) for c in new}
    (vector,) = embedder.embed([new[0].embedding_text])
    assert np.allclose(rows[new[0].text]["vector"], vector)
    assert rows[new[0].text]["ingested_at"] == T2


def test_chunks_tied_in_a_text_search_come_in_chunk_id_order(store, embedder):
    # The full-text index returns chunks of equal score in any order; fused with the vector lists, that order moved
    # a question's evidence from one run to the next.
    chunks = chunks_of("a.pdf", "v1", [f"The notice period is {n} days." for n in ("ten", "twenty", "thirty", "forty")])
    put(store, embedder, chunks)
    for _ in range(5):
        found = [r["chunk_id"] for r in store.search_text("notice period", k=10)]
        assert found == sorted(c.chunk_id for c in chunks)


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


def test_a_vector_is_reused_by_what_was_embedded_not_by_the_text_it_came_from():
    # A table's row is embedded without its cell separators: the same words set as prose embed alike.
    row = "Total debt | $14,622 | $13,949\nNet debt | $11,352 | $9,793"
    prose = "Total debt $14,622 $13,949\nNet debt $11,352 $9,793"
    assert embedding_key("Net debt", row) == embedding_key("Net debt", prose)
    assert embedding_key("Net debt", prose) != embedding_key("Gross debt", prose)


def test_a_different_model_is_refused(store):
    with pytest.raises(ConfigurationError, match="holds vectors of"):
        store.check_model("some/other-model", 768)


def test_chunks_written_since_compares_times(store, embedder):
    put(store, embedder, chunks_of("a.pdf", "v1", ["Old clause."]), at=T1)
    put(store, embedder, chunks_of("b.pdf", "v1", ["New clause."]), at=T2)
    assert store.chunks_written_since(T1 - timedelta(microseconds=1)) == 2
    assert store.chunks_written_since(T1) == 1
    # The same moment in another zone: compared as a time, never as text.
    assert store.chunks_written_since(T1.astimezone(timezone(timedelta(hours=-5)))) == 1
    assert store.chunks_written_since(T2) == 0


# -- opening and creating --------------------------------------------------------------------------


def test_opening_a_missing_store_fails_and_creates_nothing(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(ConfigurationError, match="no citesum store at"):
        LanceStore.open(str(missing))
    assert not missing.exists()
    missing.mkdir()  # a folder that holds no store
    with pytest.raises(ConfigurationError, match="no citesum store at"):
        LanceStore.open(str(missing))
    assert list(missing.iterdir()) == []


def test_open_or_create_makes_both_tables_and_open_then_reads_them(tmp_path, embedder):
    db = str(tmp_path / "db")
    LanceStore.open_or_create(db, embedder.name, embedder.dimension)
    assert sorted(lancedb.connect(db).list_tables().tables) == ["chunks", "documents"]
    store = LanceStore.open(db)
    assert store.stored_model() == (embedder.name, embedder.dimension) and store.documents() == {}
    with pytest.raises(ConfigurationError, match="holds vectors of"):
        LanceStore.open_or_create(db, "some/other-model", 768)


# -- a store written before timestamps were typed -------------------------------------------------------

OLD_PROBLEM = pa.struct([pa.field("page", pa.int32()), pa.field("kind", pa.string()), pa.field("message", pa.string())])
OLD_DOCUMENTS = pa.schema(
    [pa.field(n, pa.string(), nullable=False) for n in ("document_id", "version", "source")]
    + [pa.field(n, pa.int32(), nullable=False) for n in ("pages", "chunks")]
    + [pa.field("status", pa.string(), nullable=False), pa.field("problems", pa.list_(OLD_PROBLEM), nullable=False)]
    + [pa.field(n, pa.string(), nullable=False) for n in ("embed_model", "parser", "settings", "ingested_at")]
)


def old_chunks_schema(model: str, dimension: int) -> pa.Schema:
    text = [pa.field(n, pa.string(), nullable=False) for n in ("chunk_id", "document_id", "version", "source")]
    pages = [pa.field(n, pa.int32(), nullable=False) for n in ("page_start", "page_end")]
    return pa.schema(
        [*text, *pages]
        + [pa.field(n, pa.string(), nullable=False) for n in ("heading", "text")]
        + [pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False)]
        + [pa.field("ordinal", pa.int32(), nullable=False), pa.field("ingested_at", pa.string(), nullable=False)],
        metadata={"embed_model": model, "dimension": str(dimension)},
    )


def old_layout_store(db: str, embedder, chunk: Chunk, at: str) -> None:
    """A store as the code before typed timestamps wrote it: ISO text in ``ingested_at``."""
    connection = lancedb.connect(db)
    documents = connection.create_table("documents", schema=OLD_DOCUMENTS)
    documents.create_index("document_id", config=BTree())
    row = {
        "document_id": chunk.document_id,
        "version": chunk.version,
        "source": chunk.source,
        "pages": 1,
        "chunks": 1,
        "status": "partial",
        "problems": [{"page": 1, "kind": "ocr", "message": "OCR used"}],
        "embed_model": embedder.name,
        "parser": "p",
        "settings": "s",
        "ingested_at": at,
    }
    documents.add(pa.Table.from_pylist([row], schema=OLD_DOCUMENTS))
    schema = old_chunks_schema(embedder.name, embedder.dimension)
    chunks = connection.create_table("chunks", schema=schema)
    for column in ("document_id", "chunk_id"):
        chunks.create_index(column, config=BTree())
    vector = embedder.embed([chunk.embedding_text])[0].tolist()
    values = {"chunk_id": chunk.chunk_id, **{f: getattr(chunk, f) for f in ("document_id", "version", "source")}}
    values |= {"page_start": 1, "page_end": 1, "heading": chunk.heading, "text": chunk.text, "vector": vector}
    chunks.add(pa.Table.from_pylist([{**values, "ordinal": 0, "ingested_at": at}], schema=schema))
    chunks.create_index("text", config=FTS())


def test_a_store_with_text_timestamps_is_read_and_written(tmp_path, embedder):
    db = str(tmp_path / "db")
    (old,) = chunks_of("a.pdf", "v1", ["The notice period is thirty days."])
    old_layout_store(db, embedder, old, T1.isoformat(timespec="seconds"))

    store = LanceStore.open(db)
    record = store.documents()["a.pdf"]
    assert record.ingested_at == T1 and record.problems == [Problem("ocr", "OCR used", 1)]
    assert [r["ingested_at"] for r in store.chunk_rows()] == [T1]
    assert [r["text"] for r in store.search_text("notice")] == [old.text]
    assert store.chunks_written_since(T1 - timedelta(seconds=1)) == 1 and store.chunks_written_since(T1) == 0

    writer = LanceStore.open_or_create(db, embedder.name, embedder.dimension)  # an ingest into the old store
    put(writer, embedder, chunks_of("b.pdf", "v1", ["Fees are due monthly."]), at=T2)
    assert {d: r.ingested_at for d, r in writer.documents().items()} == {"a.pdf": T1, "b.pdf": T2}
    assert sorted(r["ingested_at"] for r in writer.chunk_rows()) == [T1, T2]
    assert writer.chunks_written_since(T1) == 1
    assert writer.delete_document("a.pdf") == 1 and set(writer.documents()) == {"b.pdf"}


def test_a_store_with_unreadable_timestamps_is_refused_saying_how_to_rebuild(tmp_path, embedder):
    db = str(tmp_path / "db")
    (old,) = chunks_of("a.pdf", "v1", ["The notice period is thirty days."])
    old_layout_store(db, embedder, old, "yesterday")
    with pytest.raises(ConfigurationError, match="ingest the corpus into a new --db"):
        LanceStore.open(db).documents()


# -- failures translated at the boundary ------------------------------------------------------------

DIMENSION = 8
MODEL = "test-model"


class Switch:
    failure: BaseException | None = None


class Failing:
    """A LanceDB connection or table: the real one, except that every use raises ``switch.failure`` once set."""

    def __init__(self, inner, switch: Switch):
        self._inner, self._switch = inner, switch

    def __getattr__(self, name):
        if self._switch.failure is not None:
            raise self._switch.failure
        value = getattr(self._inner, name)
        if name in ("open_table", "create_table"):
            return lambda *args, **kwargs: Failing(value(*args, **kwargs), self._switch)
        return value


def vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(n).standard_normal((n, DIMENSION)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def write(store: LanceStore, version: str) -> None:
    chunks = chunks_of("a.pdf", version, ["The notice period is thirty days.", "Fees are due monthly."])
    store.supersede(record_of(chunks, T1), chunks, vectors(len(chunks)))


# Every public method (and how to call it), so a new one without translation fails the test below.
CALLS = {
    "open": lambda store, uri, connect: LanceStore.open(uri, connect),
    "open_or_create": lambda store, uri, connect: LanceStore.open_or_create(uri, MODEL, DIMENSION, connect),
    "stored_model": lambda store, *_: store.stored_model(),
    "check_model": lambda store, *_: store.check_model(MODEL, DIMENSION),
    "documents": lambda store, *_: store.documents(),
    "chunk_rows": lambda store, *_: store.chunk_rows(),
    "reusable_vectors": lambda store, *_: store.reusable_vectors(["a.pdf"], ["v1"]),
    "search_vector": lambda store, *_: store.search_vector(vectors(1)[0]),
    "search_text": lambda store, *_: store.search_text("notice"),
    "holds_word": lambda store, *_: store.holds_word("notice"),
    "supersede": lambda store, *_: write(store, "v2"),
    "delete_document": lambda store, *_: store.delete_document("a.pdf"),
    "table_states": lambda store, *_: store.table_states(),
    "compact": lambda store, *_: store.compact(timedelta(hours=1)),
    "chunk_count": lambda store, *_: store.chunk_count("a.pdf"),
    "chunks_written_since": lambda store, *_: store.chunks_written_since(T1),
    "build_vector_index": lambda store, *_: store.build_vector_index(IvfPq(num_partitions=1, num_sub_vectors=2)),
    "purge": lambda store, *_: store.purge(),
}
ABOUT_A_DOCUMENT = {"supersede", "delete_document", "chunk_count"}
TRANSIENT = {
    "a disk I/O error": OSError(5, "Input/output error"),
    "an object store request": RuntimeError("lance error: LanceError(IO): Generic S3 error: list request failed"),
    "a lost commit race": RuntimeError("lance error: Retryable commit conflict for version 39: Please retry."),
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> str:
    uri = str(tmp_path_factory.mktemp("failing") / "db")
    write(LanceStore.open_or_create(uri, MODEL, DIMENSION), "v1")
    return uri


def failing_store(uri: str):
    switch = Switch()
    connect = lambda u: Failing(connect_lance(u), switch)  # noqa: E731
    return LanceStore.open(uri, connect), connect, switch


def test_every_public_method_is_listed():
    public = {name for name, _ in inspect.getmembers(LanceStore, callable) if not name.startswith("_")}
    assert public == set(CALLS)


@pytest.mark.parametrize("failure", TRANSIENT.values(), ids=TRANSIENT.keys())
@pytest.mark.parametrize("method", CALLS)
def test_every_public_method_raises_io_failures_and_conflicts_as_transient(stored, method, failure):
    store, connect, switch = failing_store(stored)
    switch.failure = failure
    with pytest.raises(TransientError) as caught:
        CALLS[method](store, stored, connect)
    assert caught.value.retryable and caught.value.__cause__ is failure
    assert caught.value.source == ("a.pdf" if method in ABOUT_A_DOCUMENT else None)


@pytest.mark.parametrize("failure", [RuntimeError("lance error: corrupt file"), ValueError("bad filter")])
@pytest.mark.parametrize("method", CALLS)
def test_other_failures_are_left_alone(stored, method, failure):
    store, connect, switch = failing_store(stored)
    switch.failure = failure
    with pytest.raises(type(failure)) as caught:
        CALLS[method](store, stored, connect)
    assert caught.value is failure


def test_holds_word_finds_a_whole_word_as_written_in_a_heading_or_text(store, embedder):
    put(store, embedder, chunks_of("a.pdf", "v1", ["Email us at the desk; the Platform's e-mail is listed."]))
    put(store, embedder, [replace(c, heading="Search platform") for c in chunks_of("b.pdf", "v1", ["Nothing here."])])
    assert store.holds_word("us") and store.holds_word("Email") and store.holds_word("mail")
    assert store.holds_word("platform")  # in b.pdf's heading
    assert not store.holds_word("email")  # case counts: a capitalised word at a sentence's start is no proof
    assert not store.holds_word("Emai") and not store.holds_word("desks")  # whole words only
