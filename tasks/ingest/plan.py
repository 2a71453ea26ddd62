"""Deciding what an ingestion run does, before any PDF is opened."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


def is_under(path: str, root: Path) -> bool:
    return Path(path).is_relative_to(root)


def plan_ingest(
    sources: Sequence[SourceFile],
    stored: dict[str, DocumentRecord],
    *,
    settings_fingerprint: str,
    corpus_root: Path | None,
) -> IngestPlan:
    """Sort sources into work and unchanged, and find what a full-corpus run deletes.

    ``corpus_root`` is given for a full-corpus run: stored documents whose source
    lies under it and that are no longer there are deleted, or matched to a new
    document with the same bytes (a rename). A single-file run passes None and
    never deletes.
    """
    present = {s.document_id for s in sources}
    missing = (
        {doc_id: rec for doc_id, rec in stored.items() if doc_id not in present and is_under(rec.source, corpus_root)}
        if corpus_root is not None
        else {}
    )
    missing_by_version = {rec.version: doc_id for doc_id, rec in sorted(missing.items())}
    work: list[WorkItem] = []
    unchanged: list[SourceFile] = []
    for source in sources:
        record = stored.get(source.document_id)
        if record is None:
            old_id = missing_by_version.pop(source.version, None)
            work.append(WorkItem(source, "renamed" if old_id else "new", replaces=old_id))
        elif record.version == source.version and record.settings == settings_fingerprint:
            unchanged.append(source)
        else:
            work.append(WorkItem(source, "updated"))
    renamed = {item.replaces for item in work if item.replaces}
    deletions = tuple(sorted(doc_id for doc_id in missing if doc_id not in renamed))
    return IngestPlan(tuple(work), tuple(unchanged), deletions)
