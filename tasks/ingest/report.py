"""What an ingestion run did, per document, and its renderings (JSON, markdown, table)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest.pdf.extract import parser_version
from citesum.tasks.ingest.plan import Conflict
from citesum.tasks.ingest.sources import Rejected
from citesum.tasks.records import DocumentRecord, Problem, SourceFile, lost_pages, to_json
from citesum.tasks.settings import Settings

# outdated: the file changed, vanished or came back while the run worked on it, so what the run read was
# not written (or not deleted); the run that reads the file as it is now writes it.
# skipped: an entry that is not a PDF this corpus ingests (a FIFO named x.pdf, a link out of the corpus).
NOTHING_TO_EMBED = "not loaded: nothing to embed"  # the embed backend of a run that embedded nothing
STATUSES = ("new", "updated", "unchanged", "renamed", "deleted", "outdated", "skipped", "failed")


@dataclass(frozen=True)
class DocumentOutcome:
    document_id: str
    source: str
    status: str  # one of STATUSES
    version: str = ""
    pages: int = 0
    chunks: int = 0
    embedded: int = 0  # chunks whose vectors were computed in this run (the rest were reused)
    problems: tuple[Problem, ...] = ()
    error: str | None = None
    seconds: float = 0.0
    renamed_from: str | None = None
    note: str | None = None  # why an outcome is what it is, when its status alone does not say

    @property
    def pages_lost(self) -> int:
        return len(lost_pages(self.problems))

    def to_json(self) -> dict:
        """Its fields, with the pages lost and the time to the hundredth of a second."""
        return to_json(self) | {"pages_lost": self.pages_lost, "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class IngestReport:
    outcomes: tuple[DocumentOutcome, ...]
    db: str
    embed_model: str
    embed_backend: str  # what computed this run's vectors and why ("openvino bf16 (auto: ...)"), or that none ran
    parser: str
    settings: str  # Settings.fingerprint()
    seconds: float

    @property
    def failed(self) -> tuple[DocumentOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")

    def totals(self) -> dict:
        counts = Counter(o.status for o in self.outcomes)
        return {
            "documents": len(self.outcomes),
            **{status: counts.get(status, 0) for status in STATUSES},
            "pages": sum(o.pages for o in self.outcomes),
            "chunks": sum(o.chunks for o in self.outcomes),
            "embedded": sum(o.embedded for o in self.outcomes),
            "pages_lost": sum(o.pages_lost for o in self.outcomes),
            "seconds": round(self.seconds, 2),
        }

    def to_json(self) -> dict:
        """The outcomes as ``documents``, their totals (the run's time among them), then what made the run."""
        return {
            "documents": [o.to_json() for o in self.outcomes],
            "totals": self.totals(),
            **to_json(self, exclude={"outcomes", "seconds"}),
        }


def table_rows(report: IngestReport) -> list[dict]:
    """One row per document, for the table artifact and the CLI summary."""
    return [
        {
            "document": o.document_id,
            "status": o.status,
            "pages": o.pages,
            "chunks": o.chunks,
            "pages lost": o.pages_lost,
            "seconds": round(o.seconds, 1),
            "note": o.error or o.note or (f"renamed from {o.renamed_from}" if o.renamed_from else ""),
        }
        for o in report.outcomes
    ]


def markdown(report: IngestReport) -> str:
    totals = report.totals()
    lines = [
        "# citesum ingestion report",
        "",
        f"Store `{report.db}`, model `{report.embed_model}`, parser `{report.parser}`, settings `{report.settings}`.",
        f"Embedding backend: {report.embed_backend}.",
        "",
        ", ".join(f"{totals[s]} {s}" for s in STATUSES)
        + f"; {totals['pages']} pages, {totals['chunks']} chunks ({totals['embedded']} embedded), "
        f"{totals['pages_lost']} pages lost to extraction, {totals['seconds']} s.",
    ]
    if report.failed:
        lines += ["", "## Failed documents", ""]
        lines += [f"- `{o.document_id}`: {o.error}" for o in report.failed]
    with_problems = [o for o in report.outcomes if o.problems]
    if with_problems:
        lines += ["", "## Page problems", ""]
        for o in with_problems:
            lines += [
                f"- `{o.document_id}` {f'p.{p.page}' if p.page else 'document'}: {p.kind}: {p.message}"
                for p in o.problems
            ]
    return "\n".join(lines) + "\n"


def ingest_report(
    outcomes: tuple[DocumentOutcome, ...], settings: Settings, embed_backend: str, seconds: float
) -> IngestReport:
    """A run's report: its outcomes and what made them (``embed_backend``: what computed the vectors, or why none)."""
    return IngestReport(
        outcomes=outcomes,
        db=settings.store.db,
        embed_model=settings.chunking.embed_model,
        embed_backend=embed_backend,
        parser=parser_version(),
        settings=settings.fingerprint(),
        seconds=seconds,
    )


def unchanged_outcome(record: DocumentRecord) -> DocumentOutcome:
    return DocumentOutcome(
        record.document_id,
        record.source,
        "unchanged",
        version=record.version,
        pages=record.pages,
        chunks=record.chunks,
        problems=tuple(record.problems),
    )


def conflict_outcome(conflict: Conflict) -> DocumentOutcome:
    source = conflict.source
    return DocumentOutcome(
        source.document_id,
        source.path,
        "failed",
        version=source.version,
        problems=(Problem("conflict", conflict.message),),
        error=conflict.message,
    )


def rejected_outcome(rejected: Rejected) -> DocumentOutcome:
    """A failed entry is one the user meant to ingest (unreadable, too large); a skipped one is not a PDF
    this corpus takes (a FIFO, a link out of the corpus)."""
    text = f"{rejected.kind}: {rejected.message}"
    return DocumentOutcome(
        rejected.document_id,
        rejected.path,
        "failed" if rejected.fails else "skipped",
        problems=(Problem(rejected.kind, rejected.message),),
        error=text if rejected.fails else None,
        note=None if rejected.fails else text,
    )


def failed_outcome(source: SourceFile, error: BaseException, step: str, seconds: float = 0.0) -> DocumentOutcome:
    """A document that failed at ``step`` ("extract", "write"...), the error named; a bad document's kind kept."""
    kind = (Problem(error.kind, error.message),) if isinstance(error, DocumentError) else ()
    return DocumentOutcome(
        source.document_id,
        source.path,
        "failed",
        version=source.version,
        problems=kind,
        error=f"{step}: {error}",
        seconds=seconds,
    )
