"""Ingestion benchmark: one cold ingest, one re-ingest, and pure embedding of the same chunks.

    python tests/benchmarks/ingest_benchmark.py ../shared/eval/financebench/pdfs

Prints, from one run in one process:
- flow wall time / time the same model takes to embed the same chunk texts (target <= 1.3)
- re-ingest of the unchanged corpus as a share of the cold ingest (target <= 3%)
- pages per second of the cold ingest
- peak memory (target <= 2.5 GB): this process through the two ingests (read before the
  embedding-only pass, which runs in the same process and would otherwise count), and the
  largest extraction child process
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def timed_ingest(corpus: Path, settings):
    from citesum.flows.ingest import run_ingest

    started = time.perf_counter()
    state = run_ingest(str(corpus), settings)
    seconds = time.perf_counter() - started
    report = state.result(raise_on_failure=False)
    if isinstance(report, BaseException):
        raise report
    return report, seconds


def main() -> None:
    # Imported here: extraction children are spawned and re-import this script, and
    # must not load Prefect and LanceDB for nothing.
    from citesum.tasks.embed import embedder_for
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.store.writer import ensure_writer_limit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--db", help="LanceDB URI (default: a fresh temporary folder)")
    args = parser.parse_args()
    db = args.db or tempfile.mkdtemp(prefix="citesum-bench-")
    settings = Settings(corpus=args.corpus, db=db)

    embedder = embedder_for(settings)  # loaded before timing, as in a warm worker
    embedder.embed(["warm-up"])
    ensure_writer_limit()  # starts Prefect's temporary server outside the timed runs
    cold, cold_s = timed_ingest(args.corpus, settings)
    warm, warm_s = timed_ingest(args.corpus, settings)
    ingest_peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    rows = LanceStore.open(db).chunk_rows(columns=["heading", "text"])
    texts = [f"{r['heading']}\n{r['text']}" if r["heading"] else r["text"] for r in rows]
    started = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - started

    totals = cold.totals()
    figures = {
        "documents": totals["documents"],
        "failed": totals["failed"],
        "pages": totals["pages"],
        "pages_lost": totals["pages_lost"],
        "chunks": totals["chunks"],
        "cold_ingest_s": round(cold_s, 1),
        "embed_only_s": round(embed_s, 1),
        "ingest_over_embed": round(cold_s / embed_s, 3),
        "reingest_s": round(warm_s, 2),
        "reingest_share": round(warm_s / cold_s, 4),
        "reingest_unchanged": warm.totals()["unchanged"],
        "pages_per_s": round(totals["pages"] / cold_s, 2),
        "peak_rss_ingest_mb": round(ingest_peak_kb / 1024),
        "peak_rss_after_embed_only_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        # No figure for the extraction children: on Linux a child's ru_maxrss starts at its parent's resident
        # size when forked and exec keeps it, so RUSAGE_CHILDREN reports this process's size, not theirs.
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
