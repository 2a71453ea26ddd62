"""The LanceDB store: a ``chunks`` table and a ``documents`` table, explicit schemas.

Every chunk row carries its provenance (document, version, page span, heading,
text, content id); a document is superseded in one commit.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Protocol

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, IvfPq

from citesum.tasks.errors import ConfigurationError, TransientError
from citesum.tasks.records import Chunk, DocumentRecord, Problem, sha256_hex

CHUNKS = "chunks"
DOCUMENTS = "documents"
UNFINISHED = ""  # the version of a document record whose write has not finished
VECTOR_REFINE_FACTOR = 20  # indexed vector search re-ranks k x this many candidates by exact distance

PROBLEM_TYPE = pa.struct(
    [pa.field("page", pa.int32()), pa.field("kind", pa.string()), pa.field("message", pa.string())]
)

DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("document_id", pa.string(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("pages", pa.int32(), nullable=False),
        pa.field("chunks", pa.int32(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("problems", pa.list_(PROBLEM_TYPE), nullable=False),
        pa.field("embed_model", pa.string(), nullable=False),
        pa.field("parser", pa.string(), nullable=False),
        pa.field("settings", pa.string(), nullable=False),
        pa.field("ingested_at", pa.string(), nullable=False),
    ]
)


def chunk_schema(embed_model: str, dimension: int) -> pa.Schema:
    """The chunks table schema; its metadata records which model made the vectors."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("version", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("page_start", pa.int32(), nullable=False),
            pa.field("page_end", pa.int32(), nullable=False),
            pa.field("heading", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
            pa.field("ordinal", pa.int32(), nullable=False),
            pa.field("ingested_at", pa.string(), nullable=False),
        ],
        metadata={"embed_model": embed_model, "dimension": str(dimension)},
    )


def embedding_key(heading: str, text: str) -> str:
    """Identifies what was embedded, so an unchanged chunk's vector can be reused."""
    return sha256_hex(heading, text)


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# LanceDB 0.40 reports a lost commit race as a plain RuntimeError, e.g. "lance error: Retryable commit
# conflict for version 39: This Rewrite transaction was preempted by concurrent transaction Delete at
# version 39. Please retry." (seen when optimize() races a writer; reproduced in tests/test_maintain.py).
COMMIT_CONFLICT = "Retryable commit conflict"


def is_commit_conflict(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and COMMIT_CONFLICT in str(exc)


# An object store's failed request, after the object-store client's own retries (about 5 s), is a plain
# RuntimeError too, e.g. "lance error: LanceError(IO): Generic S3 error: Error performing list request: ..."
# (seen with the S3 server stopped, tests/flows/test_object_store.py). A local disk's failures are OSError.
STORE_IO_FAILURE = "LanceError(IO)"


def is_io_failure(exc: BaseException) -> bool:
    return isinstance(exc, OSError) or (isinstance(exc, RuntimeError) and STORE_IO_FAILURE in str(exc))


@contextmanager
def failures_are_transient(what: str, source: str | None = None) -> Iterator[None]:
    """Re-raise a lost commit race (retried on the latest version) or a failed I/O request as a TransientError;
    anything else as is."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        if is_commit_conflict(exc) or is_io_failure(exc):
            raise TransientError(f"{what}: {exc}", source=source) from exc
        raise


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

    def check_model(self, embed_model: str, dimension: int) -> None: ...
    def documents(self) -> dict[str, DocumentRecord]: ...
    def reusable_vectors(self, document_ids: Sequence[str], versions: Sequence[str]) -> dict[str, np.ndarray]: ...
    def supersede(self, record: DocumentRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None: ...
    def delete_document(self, document_id: str) -> int: ...
    def refresh_indexes(self) -> None: ...


class LanceStore:
    """LanceDB at any URI (local folder, s3://, gs://, az://, memory://)."""

    def __init__(self, uri: str):
        self.uri = uri
        self._db = _connect(uri)
        self._documents = self._open_or_create(DOCUMENTS, DOCUMENT_SCHEMA, ["document_id"])
        self._chunks = self._db.open_table(CHUNKS) if self._exists(CHUNKS) else None

    @classmethod
    def existing(cls, uri: str) -> LanceStore:
        """The store at ``uri``, for commands that read or remove: a missing store is an error, never created."""
        local_folder_missing = "://" not in uri and not Path(uri).is_dir()  # connecting would create the folder
        if local_folder_missing or DOCUMENTS not in _connect(uri).list_tables().tables:
            raise ConfigurationError(f"no citesum store at {uri}: run `citesum ingest` first")
        return cls(uri)

    def __reduce__(self) -> tuple[type[LanceStore], tuple[str]]:
        # Sent to a Dask worker process as its URI: a connection and open tables cannot be pickled.
        return LanceStore, (self.uri,)

    def _exists(self, name: str) -> bool:
        return name in self._db.list_tables().tables

    def _open_or_create(self, name: str, schema: pa.Schema, btree_columns: Iterable[str]):
        if self._exists(name):
            return self._db.open_table(name)
        table = self._db.create_table(name, schema=schema, exist_ok=True)
        for column in btree_columns:
            table.create_index(column, config=BTree(), replace=True)
        return table

    # -- model ----------------------------------------------------------------

    def stored_model(self) -> tuple[str, int] | None:
        if self._chunks is None:
            return None
        meta = self._chunks.schema.metadata or {}
        return meta[b"embed_model"].decode(), int(meta[b"dimension"])

    def check_model(self, embed_model: str, dimension: int) -> None:
        """Create the chunks table for this model, or refuse a model that differs from the stored one."""
        stored = self.stored_model()
        if stored is None:
            self._chunks = self._open_or_create(
                CHUNKS, chunk_schema(embed_model, dimension), ["document_id", "chunk_id"]
            )
            self._chunks.create_index("text", config=FTS(), replace=True)
            return
        if stored != (embed_model, dimension):
            raise ConfigurationError(
                f"the store at {self.uri} holds vectors of {stored[0]!r} ({stored[1]} dimensions); "
                f"this run uses {embed_model!r} ({dimension} dimensions). "
                "Use another --db, or the stored model."
            )

    # -- reads ----------------------------------------------------------------

    def documents(self) -> dict[str, DocumentRecord]:
        rows = self._documents.search().limit(None).to_arrow().to_pylist()
        return {row["document_id"]: _document_from_row(row) for row in rows}

    def chunk_rows(self, where: str | None = None, columns: Sequence[str] | None = None) -> list[dict]:
        if self._chunks is None:
            return []
        query = self._chunks.search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(list(columns))
        return query.limit(None).to_arrow().to_pylist()

    def reusable_vectors(self, document_ids: Sequence[str], versions: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these documents or versions, by embedding key."""
        if not document_ids and not versions:
            return {}
        terms = [f"document_id IN ({', '.join(map(sql_string, document_ids))})"] if document_ids else []
        if versions:
            terms.append(f"version IN ({', '.join(map(sql_string, versions))})")
        rows = self.chunk_rows(" OR ".join(terms), ["heading", "text", "vector"])
        return {embedding_key(r["heading"], r["text"]): np.asarray(r["vector"], np.float32) for r in rows}

    def search_vector(self, vector: np.ndarray, k: int = 10, where: str | None = None) -> list[dict]:
        # With the IVF_PQ index `citesum maintain` builds past CITESUM_VECTOR_INDEX_MIN_ROWS, candidates ranked
        # by compressed vectors are re-ranked by exact distance: recall@10 0.38 without, 0.99 with (README,
        # Operations). Without a vector index the search is exact and refine_factor changes nothing.
        query = self._require_chunks().search(vector).limit(k).refine_factor(VECTOR_REFINE_FACTOR)
        return (query.where(where) if where else query).to_arrow().to_pylist()

    def search_text(self, text: str, k: int = 10, where: str | None = None) -> list[dict]:
        query = self._require_chunks().search(text, query_type="fts").limit(k)
        return (query.where(where) if where else query).to_arrow().to_pylist()

    def _require_chunks(self):
        if self._chunks is None:
            raise ConfigurationError(f"the store at {self.uri} holds no chunks yet: ingest first")
        return self._chunks

    # -- writes ---------------------------------------------------------------

    def supersede(self, record: DocumentRecord, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Replace the document's chunks with these in one commit, then record the document.

        Unchanged chunks (same id and version) are not rewritten; chunks of the old
        version that are not in the new one are deleted in the same commit, and no
        other document is touched.

        The record is written first without a version (status "writing"): a process killed
        before the last commit leaves a record no file matches, so the next run redoes the
        document, or deletes it with its file. Without it, a kill between the chunks commit
        and the record left chunks of the new version under the old record, for good if the
        file went back to the old version, and a new document's chunks with no record at all
        (tests/test_maintain.py, crash safety).
        """
        table = self._require_chunks()
        with failures_are_transient("write failed", source=record.document_id):
            batch = _chunk_batch(chunks, vectors, table.schema, record.ingested_at)  # reading the schema is I/O
            self._upsert_document(replace(record, version=UNFINISHED, status="writing"))
            (
                table.merge_insert("chunk_id")
                .when_matched_update_all(where="target.version != source.version")
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(f"document_id = {sql_string(record.document_id)}")
                .execute(batch)
            )
            self._upsert_document(record)

    def _upsert_document(self, record: DocumentRecord) -> None:
        row = pa.Table.from_pylist([_document_row(record)], schema=DOCUMENT_SCHEMA)
        self._documents.merge_insert("document_id").when_matched_update_all().when_not_matched_insert_all().execute(row)

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

    def refresh_indexes(self) -> None:
        """Fold newly written rows into the BTREE and full-text indexes.

        ``optimize()`` also compacts and drops table versions older than 7 days (its
        default); on a large table this is whole-table work on every run that wrote.
        """
        for table in (self._documents, self._chunks):
            if table is not None:
                table.optimize()

    # -- maintenance ----------------------------------------------------------

    def _tables(self) -> dict:
        pairs = ((DOCUMENTS, self._documents), (CHUNKS, self._chunks))
        return {name: table for name, table in pairs if table is not None}

    def table_states(self) -> tuple[TableState, ...]:
        return tuple(_table_state(name, table) for name, table in self._tables().items())

    def compact(self, keep_versions: timedelta, *, delete_unverified: bool = False) -> None:
        """Compact both tables, fold new rows into every index, and remove versions older than ``keep_versions``."""
        for name, table in self._tables().items():
            with failures_are_transient(f"optimizing {name}"):
                table.optimize(cleanup_older_than=keep_versions, delete_unverified=delete_unverified)

    def chunk_count(self, document_id: str) -> int:
        if self._chunks is None:
            return 0
        return self._chunks.count_rows(f"document_id = {sql_string(document_id)}")

    def chunks_written_since(self, moment: datetime) -> int:
        """Chunks inserted, or rewritten for a new version of their document, after ``moment``."""
        stamp = moment.astimezone(UTC).isoformat(timespec="seconds")  # the format of ingested_at
        return self._require_chunks().count_rows(f"ingested_at > {sql_string(stamp)}")

    def build_vector_index(self, config: IvfPq) -> None:
        """(Re)train the vector index on every chunk; readers use the old one until this commits."""
        with failures_are_transient("building the vector index"):
            self._require_chunks().create_index("vector", config=config, replace=True)

    def purge(self) -> None:
        """Make deleted rows physically gone, with every older version of both tables.

        A delete only marks rows deleted, and compaction leaves a data file alone while few of its rows
        are deleted, so every row is rewritten into new files first. Indexes are rebuilt from the
        surviving rows: the full-text index otherwise keeps a deleted row's words in its token list.
        Old versions and unreferenced files then go, at once: readers on an older version fail.
        """
        for name, table in self._tables().items():
            indexes = [(index.columns[0], _same_index(index)) for index in table.list_indices()]
            with failures_are_transient(f"purging {name}"):
                table.update(values_sql={"document_id": "document_id"})  # an identity update rewrites every row
                for column, config in indexes:
                    table.create_index(column, config=config, replace=True)
                with warnings.catch_warnings():  # LanceDB warns that readers of old versions fail: the point here
                    warnings.simplefilter("ignore", UserWarning)
                    table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)


def _connect(uri: str) -> lancedb.DBConnection:
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


def _chunk_batch(chunks: Sequence[Chunk], vectors: np.ndarray, schema: pa.Schema, ingested_at: str) -> pa.Table:
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    dimension = schema.field("vector").type.list_size
    flat = pa.array(np.asarray(vectors, np.float32).reshape(-1), pa.float32())
    columns = {
        "chunk_id": [c.chunk_id for c in chunks],
        "document_id": [c.document_id for c in chunks],
        "version": [c.version for c in chunks],
        "source": [c.source for c in chunks],
        "page_start": [c.page_start for c in chunks],
        "page_end": [c.page_end for c in chunks],
        "heading": [c.heading for c in chunks],
        "text": [c.text for c in chunks],
        "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
        "ordinal": [c.ordinal for c in chunks],
        "ingested_at": [ingested_at] * len(chunks),
    }
    return pa.table(
        {
            name: pa.array(col, schema.field(name).type) if isinstance(col, list) else col
            for name, col in columns.items()
        },
        schema=schema,
    )


def _document_row(record: DocumentRecord) -> dict:
    return {
        "document_id": record.document_id,
        "version": record.version,
        "source": record.source,
        "pages": record.pages,
        "chunks": record.chunks,
        "status": record.status,
        "problems": [asdict(p) for p in record.problems],
        "embed_model": record.embed_model,
        "parser": record.parser,
        "settings": record.settings,
        "ingested_at": record.ingested_at,
    }


def _document_from_row(row: dict) -> DocumentRecord:
    problems = [Problem(kind=p["kind"], message=p["message"], page=p["page"]) for p in row["problems"]]
    return DocumentRecord(**{**row, "problems": problems})
