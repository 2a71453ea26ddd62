"""The records passed between ingestion steps, and how any record becomes JSON.

Source text (``Page`` / ``Block``), chunks and stored document records are
distinct types; every one carries its provenance (document, version, pages).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from pydantic import ConfigDict, TypeAdapter

from citesum.tasks.tables import without_separators

PageMethod = Literal["text", "ocr", "lost"]

# NaN and infinities stay numbers, as json.dumps writes them (pydantic's default would make them null).
_JSON = TypeAdapter(Any, config=ConfigDict(ser_json_inf_nan="constants"))


def to_json(value: Any, *, exclude: set[str] | None = None) -> Any:
    """``value`` as JSON values: a dataclass as an object of its fields (but ``exclude``), tuples and sets as
    lists, paths and datetimes as strings, numpy scalars and arrays as numbers and lists. The one way records
    become JSON (``--json`` output, run records); each shape that differs from a record's fields says so."""
    return _JSON.dump_python(value, mode="json", exclude=exclude, fallback=_numpy)


def _numpy(value: Any) -> Any:
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def sha256_hex(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\x1f")  # unit separator: ("ab","c") and ("a","bc") hash differently
    return h.hexdigest()


@dataclass(frozen=True)
class Problem:
    """Something that went wrong with a document or one of its pages."""

    kind: str
    message: str
    page: int | None = None  # 1-based physical page; None for the whole document


# Page notes that do not mean missing text: OCR supplied it, there was none to lose, or it addresses an AI
# system (indexed, flagged, kept out of summaries).
NOT_LOST = frozenset({"ocr", "blank_page", "injection"})


def lost_pages(problems: tuple[Problem, ...] | list[Problem]) -> set[int]:
    """Pages whose text is missing from the index (extraction loss)."""
    return {p.page for p in problems if p.page is not None and p.kind not in NOT_LOST}


@dataclass(frozen=True)
class Block:
    """A run of text on one page in reading order: a heading, a paragraph or a table."""

    text: str
    page: int
    heading_level: int = 0  # 0 = body text, 1 = top-level heading, 2 = sub-heading ...
    table: bool = False  # a table: one row a line, ``label | cell | cell`` (``citesum.tasks.tables``)
    header_rows: int = 0  # a table's first lines, naming its columns


@dataclass(frozen=True)
class Page:
    number: int  # 1-based physical page number
    blocks: tuple[Block, ...]
    method: PageMethod  # how its text was obtained; "lost" = no text could be obtained


@dataclass(frozen=True)
class SourceFile:
    """A PDF as found in the corpus, before it is opened."""

    document_id: str  # path relative to the corpus root, with forward slashes
    path: str  # absolute path on disk
    version: str  # sha256 of the file's bytes
    size: int = 0  # bytes, when found on disk: ingestion prepares the smallest documents first


@dataclass(frozen=True)
class ExtractedDocument:
    source: SourceFile
    pages: tuple[Page, ...]
    problems: tuple[Problem, ...]
    parser: str  # e.g. "pymupdf 2.0 (mupdf 1.27.0), tesseract 5.3.0"


def embedded_text(heading: str, text: str) -> str:
    """What is embedded of a chunk: heading context plus text, so a clause keeps its section; a table's rows
    (its header rows first) without their cell separators (``tables.without_separators``)."""
    text = without_separators(text) if "|" in text else text
    return f"{heading}\n{text}" if heading else text


@dataclass(frozen=True)
class Chunk:
    """A span of one document's text, the unit that is embedded and retrieved.

    A row of the ``chunks`` table holds these fields, the chunk id, its vector and when it was written.
    """

    document_id: str
    version: str
    source: str
    page_start: int
    page_end: int
    heading: str  # heading path, e.g. "12 Termination > 12.2 Notice"
    text: str  # the exact extracted text
    ordinal: int  # position within the document
    # Pages on which its text (or heading) addresses an AI system (``citesum.tasks.injection``); () = clean.
    # A store written before this field reads as (): summarization runs the detector on the text again.
    injection: tuple[int, ...] = ()

    @property
    def chunk_id(self) -> str:
        return sha256_hex(self.document_id, str(self.page_start), str(self.page_end), self.text)

    @property
    def embedding_text(self) -> str:
        return embedded_text(self.heading, self.text)


@dataclass(frozen=True)
class ChunkedDocument:
    extracted: ExtractedDocument
    chunks: tuple[Chunk, ...]
    boilerplate: tuple[str, ...] = ()  # repeated lines recognised and left out of chunks


@dataclass
class DocumentRecord:
    """A row of the ``documents`` table (its schema is derived from these fields: ``store.schema``)."""

    document_id: str
    version: str
    source: str
    pages: int
    chunks: int
    status: str  # "ok" | "partial" (some pages lost)
    problems: list[Problem] = field(default_factory=list)
    embed_model: str = ""
    parser: str = ""
    settings: str = ""  # Settings.fingerprint() of the run that wrote it
    ingested_at: datetime = field(default_factory=lambda: datetime.now(UTC))
