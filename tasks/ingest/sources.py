"""Which PDFs make up the corpus and which bytes each holds: discovery and sha256 versions."""

from __future__ import annotations

import hashlib
from pathlib import Path

from citesum.tasks.records import SourceFile


def hash_file(path: Path | str, chunk_size: int = 1 << 20) -> str:
    """sha256 hex digest of a file's bytes, read in chunks (PDFs can be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def is_current(source: SourceFile) -> bool:
    """Whether the file still holds the bytes it was read with (another run or an upload may have changed it)."""
    path = Path(source.path)
    return path.is_file() and hash_file(path) == source.version


def source_for(path: Path, root: Path) -> SourceFile:
    """The ``SourceFile`` of one PDF; its id is its path relative to ``root``."""
    path, root = path.absolute(), root.absolute()
    return SourceFile(document_id=path.relative_to(root).as_posix(), path=str(path), version=hash_file(path))


def discover_sources(root: Path) -> list[SourceFile]:
    """Every ``*.pdf`` (any case) under ``root``, recursively, sorted by document id."""
    root = root.absolute()
    files = [p for p in root.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()]
    return sorted((source_for(p, root) for p in files), key=lambda s: s.document_id)
