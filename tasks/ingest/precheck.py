"""Whether a corpus run has anything to do, asked before Prefect or the model starts."""

from __future__ import annotations

import time
from pathlib import Path

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.plan import plan_ingest
from citesum.tasks.ingest.report import (
    NOTHING_TO_EMBED,
    IngestReport,
    ingest_report,
    rejected_outcome,
    unchanged_outcome,
)
from citesum.tasks.ingest.sources import sources_to_ingest
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore


def nothing_to_ingest(path: Path, settings: Settings) -> IngestReport | None:
    """The report of a corpus run that would change nothing, made without Prefect or the model; None when a run
    has anything to do (a new, changed, renamed or removed PDF, a conflict, a file that fails, a new store).

    The CLI asks first: an unchanged re-ingest then ends in the time of discovery and hashing, instead of
    waiting seconds for Prefect's temporary server to answer a run that writes nothing.
    """
    started = time.perf_counter()
    found, corpus_root = sources_to_ingest(path, settings)
    if corpus_root is None or any(r.fails for r in found.rejected):
        return None  # one file named: the user asked for it; a refused file: its failure belongs in a run
    try:
        stored = LanceStore.open(settings.store.db).documents()
    except ConfigurationError:  # no store yet
        return None
    plan = plan_ingest(found.sources, stored, settings_fingerprint=settings.fingerprint(), corpus_root=corpus_root)
    if plan.work or plan.deletions or plan.conflicts:
        return None
    outcomes = (
        *(unchanged_outcome(stored[s.document_id]) for s in plan.unchanged),
        *(rejected_outcome(r) for r in found.rejected),
    )
    return ingest_report(outcomes, settings, NOTHING_TO_EMBED, time.perf_counter() - started)
