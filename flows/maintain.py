"""Store maintenance and erasure flows: keep the store compact and indexed; forget a document."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.store.maintain import (
    Erasure,
    MaintenanceReport,
    build_vector_index,
    compact,
    describe_store,
    erase,
    erasure_markdown,
    find_document_task,
    maintenance_markdown,
    plan_vector_index_task,
    purge,
)
from citesum.tasks.store.writer import WriterSlot, ensure_writer_limit


@flow(name="maintain")
def maintain(settings: Settings | None = None, purge_versions: bool = False) -> MaintenanceReport:
    """Compact, refresh the indexes, remove old versions; build or retrain the vector index when due.

    ``purge_versions`` also rewrites every row and removes every older version now, e.g. after a
    `citesum forget` without --purge.
    """
    settings = settings or Settings()
    started = time.perf_counter()
    store = LanceStore.open(settings.store.db)
    writer = WriterSlot.from_settings(settings)
    ensure_writer_limit()
    before = describe_store(store)
    plan = plan_vector_index_task(store, before, settings)
    compact(store, timedelta(hours=settings.store.version_retention_hours), writer)
    if purge_versions:
        purge(store, writer)
    if plan.action in ("build", "rebuild"):
        build_vector_index(store, writer)
    report = MaintenanceReport(
        db=settings.store.db,
        before=before,
        after=describe_store(store),
        vector_index=plan,
        keep_versions_hours=settings.store.version_retention_hours,
        seconds=time.perf_counter() - started,
        purged=purge_versions,
    )
    create_markdown_artifact(
        maintenance_markdown(report), key="citesum-maintain-report", description="Store maintenance"
    )
    return report


@flow(name="forget")
def forget(document_id: str, purge_versions: bool = False, settings: Settings | None = None) -> Erasure:
    """Remove a document's chunks and record; with ``purge_versions`` its text also leaves the disk."""
    settings = settings or Settings()
    store = LanceStore.open(settings.store.db)
    writer = WriterSlot.from_settings(settings)
    ensure_writer_limit()
    target = find_document_task(store, document_id)  # fails (exit 2) for an id that is not stored
    erasure = erase(store, target, writer)
    if purge_versions:
        before, after = purge(store, writer)
        erasure = replace(erasure, purged=True, before=before, after=after)
    create_markdown_artifact(erasure_markdown(erasure), key="citesum-forget-report", description="Erasure")
    return erasure


def run_maintain(settings: Settings, purge_versions: bool = False):
    """Run the maintain flow; returns its final state."""
    return maintain(settings, purge_versions, return_state=True)


def run_forget(document_id: str, purge_versions: bool, settings: Settings):
    """Run the forget flow; returns its final state."""
    return forget(document_id, purge_versions, settings, return_state=True)
