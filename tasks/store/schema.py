"""The tables' schemas, derived from the records they hold, and rows converted both ways.

A ``documents`` row is a ``DocumentRecord``; a ``chunks`` row is a ``Chunk`` with its id, its vector and the
time it was written. The pyarrow schemas are derived from the dataclass fields, so a column is declared once.

A store written before ``Chunk.injection`` has no such column: its rows read as not flagged (the default),
and rows written into it keep its layout.

A store written before timestamps were typed holds them as ISO text: rows read from it are cast to
timestamps, and rows written into it keep its text layout, so such a store still opens, reads and ingests.
"""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import MISSING, asdict, fields, is_dataclass
from datetime import datetime
from typing import Any, Union, get_args, get_origin, get_type_hints

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.records import Chunk, DocumentRecord, Problem

TIMESTAMP = pa.timestamp("us", tz="UTC")
ARROW_TYPES: dict[type, pa.DataType] = {str: pa.string(), int: pa.int32(), datetime: TIMESTAMP}
LEGACY_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # datetime.isoformat(timespec="seconds") of an aware time

CHUNK_ID = "chunk_id"  # Chunk.chunk_id, stored: the key supersession merges on
VECTOR = "vector"
WRITTEN_AT = "ingested_at"  # when the chunk was inserted, or rewritten (a new version of its document, a re-chunk)
CHUNK_FIELDS = tuple(f.name for f in fields(Chunk))
# Fields added after stores were first written (each with a default): a store without the column reads
# as the default, and rows written into it leave the column out, as its schema does.
OPTIONAL_CHUNK_FIELDS = {f.name: f.default for f in fields(Chunk) if f.default is not MISSING}


def arrow_type(annotation: Any) -> pa.DataType:
    if get_origin(annotation) in (list, tuple):
        return pa.list_(arrow_type(get_args(annotation)[0]))
    if is_dataclass(annotation):
        return pa.struct(record_fields(annotation))
    return ARROW_TYPES[annotation]


def arrow_field(name: str, annotation: Any) -> pa.Field:
    """A field of this annotation's type; ``X | None`` is nullable, everything else is required."""
    if get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation):
        (inner,) = [a for a in get_args(annotation) if a is not type(None)]
        return pa.field(name, arrow_type(inner), nullable=True)
    return pa.field(name, arrow_type(annotation), nullable=False)


def record_fields(record: type) -> list[pa.Field]:
    hints = get_type_hints(record)
    return [arrow_field(f.name, hints[f.name]) for f in fields(record)]


DOCUMENT_SCHEMA = pa.schema(record_fields(DocumentRecord))


def chunk_schema(embed_model: str, dimension: int) -> pa.Schema:
    """The chunks table schema; its metadata records which model made the vectors."""
    return pa.schema(
        [
            pa.field(CHUNK_ID, pa.string(), nullable=False),
            *record_fields(Chunk),
            pa.field(VECTOR, pa.list_(pa.float32(), dimension), nullable=False),
            pa.field(WRITTEN_AT, TIMESTAMP, nullable=False),
        ],
        metadata={"embed_model": embed_model, "dimension": str(dimension)},
    )


# -- rows to write ------------------------------------------------------------------------


def stored_column(values: list, type_: pa.DataType) -> pa.Array:
    if pa.types.is_string(type_) and any(isinstance(v, datetime) for v in values):
        values = [v.isoformat(timespec="seconds") for v in values]  # a store with text timestamps
    return pa.array(values, type_)


def chunk_table(chunks: Sequence[Chunk], vectors: np.ndarray, written_at: datetime, schema: pa.Schema) -> pa.Table:
    """The chunks as rows of a table of ``schema`` (the stored table's, which an older store may order otherwise)."""
    if len(chunks) != len(vectors):
        raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
    columns = []
    for field in schema:
        if field.name == VECTOR:
            flat = pa.array(np.asarray(vectors, np.float32).reshape(-1), pa.float32())
            columns.append(pa.FixedSizeListArray.from_arrays(flat, field.type.list_size))
        elif field.name == WRITTEN_AT:
            columns.append(stored_column([written_at] * len(chunks), field.type))
        else:
            columns.append(stored_column([getattr(c, field.name) for c in chunks], field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def document_table(record: DocumentRecord, schema: pa.Schema) -> pa.Table:
    row = asdict(record)
    return pa.Table.from_arrays([stored_column([row[f.name]], f.type) for f in schema], schema=schema)


# -- rows read -------------------------------------------------------------------------------


def typed(table: pa.Table) -> pa.Table:
    """Rows as the records declare them: text timestamps (a store written before they were typed) cast."""
    for index, field in enumerate(table.schema):
        if field.name == WRITTEN_AT and pa.types.is_string(field.type):
            table = table.set_column(index, pa.field(WRITTEN_AT, TIMESTAMP), parsed_times(table.column(index)))
    return table


def parsed_times(column: pa.ChunkedArray) -> pa.ChunkedArray:
    try:
        return pc.strptime(column, format=LEGACY_TIME_FORMAT, unit="us").cast(TIMESTAMP)
    except pa.ArrowInvalid as exc:
        raise ConfigurationError(
            f"the store holds {WRITTEN_AT} values that are not ISO times ({exc}); it was not written by citesum "
            "or is damaged: ingest the corpus into a new --db"
        ) from exc


def rows(table: pa.Table) -> list[dict]:
    return typed(table).to_pylist()


def document_of(row: dict) -> DocumentRecord:
    return DocumentRecord(**{**row, "problems": [Problem(**p) for p in row["problems"]]})


def chunk_of(row: dict) -> Chunk:
    values = {name: row.get(name, OPTIONAL_CHUNK_FIELDS.get(name)) for name in CHUNK_FIELDS}
    return Chunk(**values | {"injection": tuple(values["injection"] or ())})
