"""Deciding what an ingestion run does, before any PDF is opened."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from citesum.tasks.ingest.names import text_path
from citesum.tasks.records import DocumentRecord, SourceFile

WorkStatus = Literal["new", "updated", "renamed"]


@dataclass(frozen=True)
class WorkItem:
    """A document that must be extracted, chunked, embedded and written."""

    source: SourceFile
    status: WorkStatus
    replaces: str | None = None  # for a rename: the old document id, deleted once this is written


@dataclass(frozen=True)
class IngestPlan:
    work: tuple[WorkItem, ...]
    unchanged: tuple[SourceFile, ...]
    deletions: tuple[str, ...]  # stored documents no longer in the corpus
    conflicts: tuple[Conflict, ...] = ()


@dataclass(frozen=True)
class Conflict:
    """A file whose document id is held by a stored document from another file that is still there."""

    source: SourceFile
    held_by: str  # the stored document's source path

    @property
    def message(self) -> str:
        return (
            f"conflict: the id {self.source.document_id} is held by {self.held_by}, another file that is still "
            "there; nothing replaced (ingest with --replace to take this file for it)"
        )


def is_under(path: str, root: Path) -> bool:
    return text_path(path).is_relative_to(root)


def source_exists(path: str) -> bool:
    return text_path(path).exists()


def plan_ingest(
    sources: Sequence[SourceFile],
    stored: dict[str, DocumentRecord],
    *,
    settings_fingerprint: str,
    corpus_root: Path | None,
    held: Collection[str] = (),
    replace_conflicts: bool = False,
    exists: Callable[[str], bool] = source_exists,
) -> IngestPlan:
    """Sort sources into work and unchanged, and find what a full-corpus run deletes.

    ``corpus_root`` is given for a full-corpus run: stored documents whose source
    lies under it and that are no longer there are deleted, or matched to a new
    document with the same bytes (a rename). A single-file run passes None and
    never deletes. ``held`` are ids found but unreadable in this run: never deleted.

    A document id names one file: a source whose id is stored for another path that still exists is a
    ``Conflict`` and is not worked on, unless ``replace_conflicts`` (the user's --replace). A stored
    source that is gone (a moved corpus) is simply updated.
    """
    present = {s.document_id for s in sources} | set(held)
    missing = (
        {doc_id: rec for doc_id, rec in stored.items() if doc_id not in present and is_under(rec.source, corpus_root)}
        if corpus_root is not None
        else {}
    )
    missing_by_version = {rec.version: doc_id for doc_id, rec in sorted(missing.items())}
    work: list[WorkItem] = []
    unchanged: list[SourceFile] = []
    conflicts: list[Conflict] = []
    for source in sources:
        record = stored.get(source.document_id)
        if record is not None and record.source != source.path and not replace_conflicts and exists(record.source):
            conflicts.append(Conflict(source, record.source))
        elif record is None:
            old_id = missing_by_version.pop(source.version, None)
            work.append(WorkItem(source, "renamed" if old_id else "new", replaces=old_id))
        elif record.version == source.version and record.settings == settings_fingerprint:
            unchanged.append(source)
        else:
            work.append(WorkItem(source, "updated"))
    renamed = {item.replaces for item in work if item.replaces}
    deletions = tuple(sorted(doc_id for doc_id in missing if doc_id not in renamed))
    return IngestPlan(tuple(work), tuple(unchanged), deletions, tuple(conflicts))
