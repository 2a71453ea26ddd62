"""Store maintenance and erasure: plain functions, their records and reports, and the Prefect tasks.

Maintenance compacts both tables, folds new rows into the indexes (FTS, BTREE and, past a size, the vector
index), and removes old table versions. Erasure removes one document; a purge also rewrites what is left and
removes every older version, so the document's text is gone from disk. Both write: their tasks hold the
writer limit ingestion holds, and retry only what may pass (a lost commit race or a failed I/O request, see
``store.failures``). Each task run is named after the store (or document) it touches and logs
one line: rows and bytes, what was decided, how long it took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from lancedb.index import IvfPq
from prefect import get_run_logger, task

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.policy import STEP
from citesum.tasks.records import to_json
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import CHUNKS, LanceStore, TableState
from citesum.tasks.store.writer import WriterSlot

VectorAction = Literal["none", "build", "rebuild", "fold"]


@dataclass(frozen=True)
class VectorIndexPlan:
    action: VectorAction  # none: exact search; build/rebuild: (re)train; fold: optimize adds new rows to it
    reason: str


@dataclass(frozen=True)
class MaintenanceReport:
    db: str
    before: tuple[TableState, ...]
    after: tuple[TableState, ...]
    vector_index: VectorIndexPlan
    keep_versions_hours: float
    seconds: float
    purged: bool = False  # every row rewritten and every older version removed (--purge)

    def to_json(self) -> dict:
        """Each table before and after, then the fields; the time to the hundredth of a second."""
        return {
            "db": self.db,
            "tables": table_changes(self.before, self.after),
            **to_json(self, exclude={"db", "before", "after", "seconds"}),
            "seconds": round(self.seconds, 2),
        }


@dataclass(frozen=True)
class Erasure:
    """What ``forget`` removed: identifiers and counts only, never text."""

    document_id: str
    version: str  # "" when only chunks were stored (a write interrupted before its record)
    chunks: int
    db: str
    erased_at: str = ""
    purged: bool = False
    before: tuple[TableState, ...] = field(default=())  # table states around a purge
    after: tuple[TableState, ...] = field(default=())

    def to_json(self) -> dict:
        return to_json(self, exclude={"before", "after"}) | {"tables": table_changes(self.before, self.after)}


# -- decisions ------------------------------------------------------------------------


def plan_vector_index(rows: int, index_present: bool, written_since_built: int, settings: Settings) -> VectorIndexPlan:
    """Whether maintenance builds, retrains or only refreshes the vector index.

    Rows added to an index are assigned to the partitions it was trained on; once many chunks were
    written after training, its partitions and codebooks no longer fit the data and it is retrained.
    """
    least, share_limit = settings.store.vector_index_min_rows, settings.store.vector_index_rebuild_share
    if not index_present:
        if rows < least:
            return VectorIndexPlan("none", f"{rows:,} chunks, below {least:,}: exact search is used")
        return VectorIndexPlan("build", f"{rows:,} chunks, at least {least:,}")
    share = written_since_built / rows if rows else 0.0
    if share >= share_limit:
        return VectorIndexPlan("rebuild", f"{share:.0%} of {rows:,} chunks written since it was built")
    return VectorIndexPlan("fold", f"new rows folded in; {share:.0%} of {rows:,} chunks written since it was built")


def vector_index_config() -> IvfPq:
    """IVF_PQ with cosine distance (the vectors are normalised), LanceDB's default partitioning.

    48 sub-vectors of 8 dimensions (LanceDB's default is 24 of 16): finer codes for a 384-dimension model.
    Searches re-rank the candidates by exact distance (``store.VECTOR_REFINE_FACTOR``); README, Operations.
    """
    return IvfPq(distance_type="cosine", num_sub_vectors=48)


def chunk_state(states: tuple[TableState, ...]) -> TableState | None:
    return next((s for s in states if s.name == CHUNKS), None)


# -- plain operations -------------------------------------------------------------------


def vector_index_plan(store: LanceStore, states: tuple[TableState, ...], settings: Settings) -> VectorIndexPlan:
    chunks = chunk_state(states)
    index = chunks.index("vector") if chunks else None
    written = store.chunks_written_since(index.created_at) if index and index.created_at else 0
    return plan_vector_index(chunks.rows if chunks else 0, index is not None, written, settings)


def find_document(store: LanceStore, document_id: str) -> Erasure:
    """What is stored of a document; a ConfigurationError (exit 2) if nothing is."""
    record = store.documents().get(document_id)
    chunks = store.chunk_count(document_id)
    if record is None and chunks == 0:
        raise ConfigurationError(
            f"no document {document_id!r} is stored in {store.uri}; `citesum status` lists the stored documents "
            "(a document forgotten without --purge: `citesum maintain --purge` removes its text from disk)"
        )
    return Erasure(document_id, record.version if record else "", chunks, store.uri)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# -- reports ------------------------------------------------------------------------------


def paired(before: tuple[TableState, ...], after: tuple[TableState, ...]) -> list[tuple[TableState, TableState]]:
    later = {s.name: s for s in after}
    return [(b, later[b.name]) for b in before if b.name in later]


TABLE_FIGURES = ("rows", "versions", "fragments", "bytes")


def table_changes(before: tuple[TableState, ...], after: tuple[TableState, ...]) -> list[dict]:
    """Per table, each figure as [before, after]; its indexes as they are after."""
    return [
        {
            "table": b.name,
            **{figure: [getattr(b, figure), getattr(a, figure)] for figure in TABLE_FIGURES},
            "indexes": [
                to_json(i, exclude={"indexed_rows", "unindexed_rows", "created_at"})
                | {"indexed": i.indexed_rows, "unindexed": i.unindexed_rows}
                for i in a.indexes
            ],
        }
        for b, a in paired(before, after)
    ]


def size(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1e6:,.1f} MB" if value >= 1e6 else f"{value / 1e3:,.1f} kB"


def tables_markdown(before: tuple[TableState, ...], after: tuple[TableState, ...]) -> list[str]:
    lines = [
        "| table | rows | versions on disk | fragments | size on disk |",
        "|---|---|---|---|---|",
    ]
    for b, a in paired(before, after):
        lines.append(
            f"| {b.name} | {b.rows:,} -> {a.rows:,} | {b.versions} -> {a.versions} | {b.fragments} -> {a.fragments} "
            f"| {size(b.bytes)} -> {size(a.bytes)} |"
        )
    lines += ["", "| table | index | type | column | indexed rows | unindexed rows |", "|---|---|---|---|---|---|"]
    for state in after:
        for i in state.indexes:
            lines.append(
                f"| {state.name} | {i.name} | {i.kind} | {i.column} | {i.indexed_rows:,} | {i.unindexed_rows:,} |"
            )
    return lines


def maintenance_markdown(report: MaintenanceReport) -> str:
    plan = report.vector_index
    return "\n".join(
        [
            f"# citesum maintain: {report.db}",
            "",
            f"Compacted both tables, folded new rows into their indexes and removed versions older than "
            f"{report.keep_versions_hours:g} h, in {report.seconds:.1f} s.",
            *(
                ["Purged: every row rewritten, indexes rebuilt, all older versions removed (deleted text is gone)."]
                if report.purged
                else []
            ),
            f"Vector index: **{plan.action}** ({plan.reason}).",
            "",
            *tables_markdown(report.before, report.after),
        ]
    )


def erasure_markdown(erasure: Erasure) -> str:
    lines = [
        f"# citesum forget: {erasure.document_id}",
        "",
        f"Erased document `{erasure.document_id}` (version `{erasure.version or 'none recorded'}`, "
        f"{erasure.chunks} chunks) from {erasure.db} at {erasure.erased_at}.",
    ]
    if erasure.purged:
        lines += ["Purged: every row rewritten, indexes rebuilt, all older versions removed.", ""]
        lines += tables_markdown(erasure.before, erasure.after)
    else:
        lines.append(
            "Not purged: the text is no longer retrievable, but stays in the table files (older versions, and "
            "data files compaction leaves alone while few of their rows are deleted)."
        )
    return "\n".join(lines)


def erasure_log_line(erasure: Erasure) -> str:
    """The log line of an erasure: identifiers, counts and time, never the content."""
    return (
        f"erased document {erasure.document_id!r} version {erasure.version or '-'}: "
        f"{erasure.chunks} chunks, at {erasure.erased_at}"
    )


def purge_log_line(before: tuple[TableState, ...], after: tuple[TableState, ...]) -> str:
    changes = [
        f"{b.name} {b.versions} -> {a.versions} versions, {size(b.bytes)} -> {size(a.bytes)}"
        for b, a in paired(before, after)
    ]
    return "purged older versions: " + "; ".join(changes)


# -- Prefect tasks -----------------------------------------------------------------------


def states_log_line(states: tuple[TableState, ...]) -> str:
    return "; ".join(
        f"{s.name}: {s.rows:,} rows, {s.versions} versions, {s.fragments} fragments, {size(s.bytes)}" for s in states
    )


@task(name="describe-store", task_run_name="describe-store {store.uri}", **STEP)
def describe_store(store: LanceStore) -> tuple[TableState, ...]:
    states = store.table_states()
    get_run_logger().info(states_log_line(states))
    return states


@task(name="plan-vector-index", task_run_name="plan-vector-index {store.uri}", **STEP)
def plan_vector_index_task(store: LanceStore, states: tuple[TableState, ...], settings: Settings) -> VectorIndexPlan:
    plan = vector_index_plan(store, states, settings)
    get_run_logger().info(f"vector index: {plan.action} ({plan.reason})")
    return plan


@task(name="compact", task_run_name="compact {store.uri}", **STEP)
def compact(store: LanceStore, keep_versions: timedelta, writer: WriterSlot) -> None:
    """Compaction, index refresh and version cleanup; writers wait, so it never races them."""
    started = time.perf_counter()
    with writer.hold("compacting the store"):
        store.compact(keep_versions)
    get_run_logger().info(
        f"compacted {store.uri}, removed versions older than {keep_versions.total_seconds() / 3600:g} h, "
        f"{time.perf_counter() - started:.2f} s"
    )


@task(name="build-vector-index", task_run_name="build-vector-index {store.uri}", **STEP)
def build_vector_index(store: LanceStore, writer: WriterSlot) -> float:
    started = time.perf_counter()
    with writer.hold("building the vector index"):
        store.build_vector_index(vector_index_config())
    seconds = time.perf_counter() - started
    get_run_logger().info(f"built the vector index of {store.uri}, {seconds:.2f} s")
    return seconds


@task(name="find-document", task_run_name="find-document {document_id}", **STEP)
def find_document_task(store: LanceStore, document_id: str) -> Erasure:
    found = find_document(store, document_id)
    get_run_logger().info(f"found {document_id!r} version {found.version or '-'}: {found.chunks} chunks")
    return found


@task(name="erase", task_run_name="erase {target.document_id}", **STEP)
def erase(store: LanceStore, target: Erasure, writer: WriterSlot) -> Erasure:
    """Delete the document's chunks and record; a retry after a partial delete finishes it."""
    with writer.hold(f"erasing {target.document_id}"):
        store.delete_document(target.document_id)
    erased = Erasure(target.document_id, target.version, target.chunks, target.db, erased_at=now())
    get_run_logger().info(erasure_log_line(erased))
    return erased


@task(name="purge", task_run_name="purge {store.uri}", **STEP)
def purge(store: LanceStore, writer: WriterSlot) -> tuple[tuple[TableState, ...], tuple[TableState, ...]]:
    """Rewrite, reindex and drop every older version: deleted text leaves the disk."""
    with writer.hold("purging old versions"):
        before = store.table_states()
        store.purge()
        after = store.table_states()
    get_run_logger().info(purge_log_line(before, after))
    return before, after
