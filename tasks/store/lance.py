"""The LanceDB store: a ``chunks`` table and a ``documents`` table, schemas derived from the records.

Every chunk row carries its provenance (document, version, page span, heading, text, content id); a document
is superseded in one commit. ``LanceStore.open`` opens a store and never creates one; ``open_or_create`` is
for ingestion. Every public method translates its failures at this boundary (``store.failures``).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, IvfPq

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.records import Chunk, DocumentRecord, embedded_text, sha256_hex
from citesum.tasks.store import schema
from citesum.tasks.store.failures import boundary

CHUNKS = "chunks"
DOCUMENTS = "documents"
UNFINISHED = ""  # the version of a document record whose write has not finished
VECTOR_REFINE_FACTOR = 20  # indexed vector search re-ranks k x this many candidates by exact distance

Connect = Callable[[str], lancedb.DBConnection]


def embedding_key(heading: str, text: str) -> str:
    """Identifies what was embedded (the text itself, not the heading and text it is made of, so a change in
    what is embedded of them never reuses a vector of the old text), so an unchanged chunk's vector can be
    reused."""
    return sha256_hex(embedded_text(heading, text))


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class IndexState:
    name: str
    kind: str  # LanceDB's index type: BTree, FTS, IvfPq ...
    column: str
    indexed_rows: int
    unindexed_rows: int
    created_at: datetime | None = None


@dataclass(frozen=True)
class TableState:
    """A table's size and shape, for maintenance reports."""

    name: str
    rows: int
    versions: int  # versions still on disk
    fragments: int
    bytes: int | None  # everything under the table's folder; None on an object store
    indexes: tuple[IndexState, ...]

    def index(self, column: str) -> IndexState | None:
        return next((i for i in self.indexes if i.column == column), None)


class ChunkStore(Protocol):
    """What ingestion needs from a store."""

    uri: str  # where it is; names the task runs that touch it

    def documents(self) -> dict[str, DocumentRecord]: ...
    def reusable_vectors(self, document_ids: Sequence[str], versions: Sequence[str]) -> dict[str, np.ndarray]: ...
    def supersede(self, record: DocumentRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...
    def delete_document(self, document_id: str) -> int: ...
    def compact(self, keep_versions: timedelta) -> None: ...


class LanceStore:
    """LanceDB at any URI (local folder, s3://, gs://, az://, memory://).

    Made by ``open`` (an existing store) or ``open_or_create`` (ingestion); ``connect`` is the collaborator
    that reaches LanceDB.
    """

    def __init__(self, uri: str, db: lancedb.DBConnection, connect: Connect):
        self.uri = uri
        self._connect = connect
        tables = db.list_tables().tables
        if DOCUMENTS not in tables:
            raise ConfigurationError(f"no citesum store at {uri}: run `citesum ingest` first")
        self._documents = db.open_table(DOCUMENTS)
        self._document_schema = self._documents.schema  # an older store's layout is kept when writing
        self._chunks = db.open_table(CHUNKS) if CHUNKS in tables else None

    @classmethod
    @boundary("opening the store")
    def open(cls, uri: str, connect: Connect | None = None) -> LanceStore:
        """The store at ``uri``, for commands that read or remove: a missing store is an error, never created."""
        if "://" not in uri and not Path(uri).is_dir():  # connecting would create the folder
            raise ConfigurationError(f"no citesum store at {uri}: run `citesum ingest` first")
        connect = connect or connect_lance
        return cls(uri, connect(uri), connect)

    @classmethod
    @boundary("creating the store")
    def open_or_create(cls, uri: str, embed_model: str, dimension: int, connect: Connect | None = None) -> LanceStore:
        """The store at ``uri`` for ingestion with this model: missing tables are created, another model refused."""
        connect = connect or connect_lance
        db = connect(uri)
        existing = db.list_tables().tables
        if DOCUMENTS not in existing:
            _create(db, DOCUMENTS, schema.DOCUMENT_SCHEMA, btree=["document_id"])
        if CHUNKS not in existing:
            chunks = _create(db, CHUNKS, schema.chunk_schema(embed_model, dimension), btree=["document_id", "chunk_id"])
            chunks.create_index("text", config=FTS(), replace=True)
        store = cls(uri, db, connect)
        store.check_model(embed_model, dimension)
        return store

    def __reduce__(self) -> tuple[Callable[..., LanceStore], tuple[str, Connect]]:
        # Sent to a Dask worker process as its URI: a connection and open tables cannot be pickled.
        return LanceStore.open, (self.uri, self._connect)

    # -- model ----------------------------------------------------------------

    @boundary("reading the stored model")
    def stored_model(self) -> tuple[str, int] | None:
        if self._chunks is None:
            return None
        meta = self._chunks.schema.metadata or {}
        return meta[b"embed_model"].decode(), int(meta[b"dimension"])

    @boundary("reading the stored model")
    def check_model(self, embed_model: str, dimension: int) -> None:
        """Refuse a model that differs from the one whose vectors are stored."""
        stored = self.stored_model()
        if stored is not None and stored != (embed_model, dimension):
            raise ConfigurationError(
                f"the store at {self.uri} holds vectors of {stored[0]!r} ({stored[1]} dimensions); "
                f"this run uses {embed_model!r} ({dimension} dimensions). "
                "Use another --db, or the stored model."
            )

    # -- reads ----------------------------------------------------------------

    @boundary("reading documents")
    def documents(self) -> dict[str, DocumentRecord]:
        rows = schema.rows(self._documents.search().limit(None).to_arrow())
        return {row["document_id"]: schema.document_of(row) for row in rows}

    @boundary("reading chunks")
    def chunk_rows(self, where: str | None = None, columns: Sequence[str] | None = None) -> list[dict]:
        if self._chunks is None:
            return []
        query = self._chunks.search()
        if columns:  # a store written before an optional column was added reads without it (schema.chunk_of)
            stored = set(self._chunks.schema.names)
            columns = [c for c in columns if c in stored or c not in schema.OPTIONAL_CHUNK_FIELDS]
        if where:
            query = query.where(where)
        if columns:
            query = query.select(list(columns))
        return schema.rows(query.limit(None).to_arrow())

    @boundary("reading stored vectors")
    def reusable_vectors(self, document_ids: Sequence[str], versions: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these documents or versions, by embedding key."""
        if not document_ids and not versions:
            return {}
        terms = [f"document_id IN ({', '.join(map(sql_string, document_ids))})"] if document_ids else []
        if versions:
            terms.append(f"version IN ({', '.join(map(sql_string, versions))})")
        rows = self.chunk_rows(" OR ".join(terms), ["heading", "text", "vector"])
        return {embedding_key(r["heading"], r["text"]): np.asarray(r["vector"], np.float32) for r in rows}

    @boundary("vector search")
    def search_vector(self, vector: np.ndarray, k: int = 10, where: str | None = None) -> list[dict]:
        # With the IVF_PQ index `citesum maintain` builds past CITESUM_VECTOR_INDEX_MIN_ROWS, candidates ranked
        # by compressed vectors are re-ranked by exact distance: recall@10 0.38 without, 0.99 with (README,
        # Operations). Without a vector index the search is exact and refine_factor changes nothing.
        query = self._require_chunks().search(vector).limit(k).refine_factor(VECTOR_REFINE_FACTOR)
        return schema.rows((query.where(where) if where else query).to_arrow())

    @boundary("full-text search")
    def search_text(self, text: str, k: int = 10, where: str | None = None) -> list[dict]:
        """Best first; chunks tied in score in chunk id order. The full-text index returns ties in any order, and
        fused with the other lists a tie's order moved evidence: two runs of the same questions chose different
        evidence for 3 of MMLongBench-Doc's 209."""
        query = self._require_chunks().search(text, query_type="fts").limit(k)
        found = (query.where(where) if where else query).to_arrow()
        return schema.rows(found.sort_by([("_score", "descending"), ("chunk_id", "ascending")]))

    @boundary("word scan")
    def holds_word(self, word: str) -> bool:
        """Whether a chunk's heading or text holds ``word`` as a whole word (a run of letters and digits, as
        ``text.words`` splits them), exactly as written, case included: a filtered scan, since the full-text index
        folds case."""
        if self._chunks is None:
            return False
        pattern = sql_string(rf"(^|[^\p{{L}}\p{{N}}]){re.escape(word)}([^\p{{L}}\p{{N}}]|$)")
        where = f"regexp_like(text, {pattern}) OR regexp_like(heading, {pattern})"
        return bool(self._chunks.search().where(where).select(["chunk_id"]).limit(1).to_list())

    def _require_chunks(self):
        if self._chunks is None:
            raise ConfigurationError(f"the store at {self.uri} holds no chunks yet: ingest first")
        return self._chunks

    # -- writes ---------------------------------------------------------------

    @boundary("write failed", document="record")
    def supersede(self, record: DocumentRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Replace the document's chunks with these in one commit, then record the document.

        Unchanged rows (same id and every stored field the same) are not rewritten; a row whose id is kept
        with anything else changed is: a re-chunk of the same version (new chunking settings or CHUNK_FORMAT)
        keeps ids (document, pages, text) under new headings, positions and vectors. Chunks of the old
        version that are not in the new one are deleted in the same commit, and no other document is touched.

        The record is written first without a version (status "writing"): a process killed
        before the last commit leaves a record no file matches, so the next run redoes the
        document, or deletes it with its file. Without it, a kill between the chunks commit
        and the record left chunks of the new version under the old record, for good if the
        file went back to the old version, and a new document's chunks with no record at all
        (tests/test_maintain.py, crash safety).
        """
        table = self._require_chunks()
        batch = schema.chunk_table(chunks, vectors, record.ingested_at, table.schema)  # reading the schema is I/O
        self._upsert_document(replace(record, version=UNFINISHED, status="writing"))
        (
            table.merge_insert(schema.CHUNK_ID)
            .when_matched_update_all(where=_changed(batch.schema.names))
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"document_id = {sql_string(record.document_id)}")
            .execute(batch)
        )
        self._upsert_document(record)

    def _upsert_document(self, record: DocumentRecord) -> None:
        row = schema.document_table(record, self._document_schema)
        self._documents.merge_insert("document_id").when_matched_update_all().when_not_matched_insert_all().execute(row)

    @boundary("deleting a document", document="document_id")
    def delete_document(self, document_id: str) -> int:
        """Delete a document's chunks and its record; returns how many chunks went.

        The record is first marked unfinished, as a write does: a process killed after the chunks went
        leaves a record no file matches, so the next run redoes the document or deletes it. Without the
        mark, a file still on disk (a forgotten or renamed document) looked unchanged and kept a record
        whose chunks were gone, for good (tests/test_maintain.py).
        """
        where = f"document_id = {sql_string(document_id)}"
        removed = 0
        if self._chunks is not None:
            self._documents.update(where=where, values={"version": UNFINISHED, "status": "deleting"})
            removed = self._chunks.count_rows(where)
            self._chunks.delete(where)
        self._documents.delete(where)
        return removed

    # -- maintenance ----------------------------------------------------------

    def _tables(self) -> dict:
        pairs = ((DOCUMENTS, self._documents), (CHUNKS, self._chunks))
        return {name: table for name, table in pairs if table is not None}

    @boundary("reading table states")
    def table_states(self) -> tuple[TableState, ...]:
        return tuple(_table_state(name, table) for name, table in self._tables().items())

    @boundary("optimizing the store")
    def compact(self, keep_versions: timedelta, *, delete_unverified: bool = False) -> None:
        """Compact both tables, fold new rows into every index (BTREE, full-text, vector), and remove
        versions older than ``keep_versions`` (CITESUM_VERSION_RETENTION_HOURS)."""
        for table in self._tables().values():
            table.optimize(cleanup_older_than=keep_versions, delete_unverified=delete_unverified)

    @boundary("counting chunks", document="document_id")
    def chunk_count(self, document_id: str) -> int:
        if self._chunks is None:
            return 0
        return self._chunks.count_rows(f"document_id = {sql_string(document_id)}")

    @boundary("counting chunks")
    def chunks_written_since(self, moment: datetime) -> int:
        """Chunks inserted, or rewritten for a new version of their document, after ``moment``."""
        # A store with text timestamps compares them as times too: the filter casts the text column.
        stamp = sql_string(moment.astimezone(UTC).isoformat())
        return self._require_chunks().count_rows(f"{schema.WRITTEN_AT} > TIMESTAMP {stamp}")

    @boundary("building the vector index")
    def build_vector_index(self, config: IvfPq) -> None:
        """(Re)train the vector index on every chunk; readers use the old one until this commits."""
        self._require_chunks().create_index("vector", config=config, replace=True)

    @boundary("purging")
    def purge(self) -> None:
        """Make deleted rows physically gone, with every older version of both tables.

        A delete only marks rows deleted, and compaction leaves a data file alone while few of its rows
        are deleted, so every row is rewritten into new files first. Indexes are rebuilt from the
        surviving rows: the full-text index otherwise keeps a deleted row's words in its token list.
        Old versions and unreferenced files then go, at once: readers on an older version fail.
        """
        for table in self._tables().values():
            indexes = [(index.columns[0], _same_index(index)) for index in table.list_indices()]
            table.update(values_sql={"document_id": "document_id"})  # an identity update rewrites every row
            for column, config in indexes:
                table.create_index(column, config=config, replace=True)
            with warnings.catch_warnings():  # LanceDB warns that readers of old versions fail: the point here
                warnings.simplefilter("ignore", UserWarning)
                table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)


def _changed(columns: Sequence[str]) -> str:
    """A merge condition: the stored row differs from the new one in a column other than its key and write time."""
    compared = [c for c in columns if c not in (schema.CHUNK_ID, schema.WRITTEN_AT)]
    return " OR ".join(f"target.{c} != source.{c}" for c in compared)


def _create(db: lancedb.DBConnection, name: str, table_schema: pa.Schema, btree: Sequence[str]):
    table = db.create_table(name, schema=table_schema, exist_ok=True)
    for column in btree:
        table.create_index(column, config=BTree(), replace=True)
    return table


def connect_lance(uri: str) -> lancedb.DBConnection:
    """A connection whose reads see other processes' latest commits (zero consistency interval).

    LanceDB 0.40 opens an object store here and reports any failure to reach it (no bucket, endpoint down, an
    http:// endpoint without AWS_ALLOW_HTTP, no credentials) as a ValueError "Failed to connect to namespace:
    ..." holding the object store's whole error: raised again as a ConfigurationError saying what to check.
    """
    try:
        return lancedb.connect(uri, read_consistency_interval=timedelta(0))
    except ValueError as exc:
        raise ConfigurationError(
            f"cannot open the store at {uri}; an object store takes its endpoint and credentials from "
            f"environment variables, AWS_* for s3:// (README, Operations, Object store): {exc}"
        ) from exc


def _table_state(name: str, table) -> TableState:
    return TableState(
        name=name,
        rows=table.count_rows(),
        versions=len(table.list_versions()),
        fragments=table.stats()["fragment_stats"]["num_fragments"],
        bytes=_folder_bytes(table.uri),
        indexes=tuple(
            IndexState(i.name, i.index_type, i.columns[0], i.num_indexed_rows, i.num_unindexed_rows, i.created_at)
            for i in table.list_indices()
        ),
    )


def _folder_bytes(uri: str) -> int | None:
    if "://" in uri and not uri.startswith("file://"):
        return None  # an object store: listing every object is not cheap
    root = uri.removeprefix("file://")
    return sum(os.path.getsize(os.path.join(folder, f)) for folder, _, files in os.walk(root) for f in files)


def _same_index(index) -> FTS | BTree | IvfPq:
    """The configuration to rebuild an index as it was built."""
    if index.index_type == "FTS":
        return FTS()
    if index.index_type == "BTree":
        return BTree()
    if index.index_type == "IvfPq":
        details = index.index_details
        return IvfPq(
            distance_type=details["metric_type"].lower(),
            num_sub_vectors=details["compression"]["num_sub_vectors"],
        )
    raise ConfigurationError(f"cannot rebuild a {index.index_type} index on {index.columns}: purge stopped")
