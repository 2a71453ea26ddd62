"""What table handling adds to ingestion: cold ingests of the same filings without and with tables, in one run.

    python tests/benchmarks/tables_ingest_benchmark.py ../shared/eval/financebench/pdfs \
        3M_2018_10K.pdf AMAZON_2017_10K.pdf BOEING_2022_10K.pdf

The named PDFs are copied into a temporary corpus (a link that leaves the corpus is refused); each ingest (extract, chunk, embed, write) goes into a fresh
temporary store, alternating without and with tables (``--repeats`` times each, the best kept), with the model
loaded and Prefect's server started before the first. Prints each run, then both best times, their ratio and the
chunks each gave. ``table_benchmark.py`` times extraction alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def main() -> None:
    # Imported here: extraction children are spawned and re-import this script.
    from ingest_benchmark import timed_ingest

    from citesum.tasks.embed import embedder_for
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.writer import ensure_writer_limit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    corpus = Path(tempfile.mkdtemp(prefix="citesum-tables-corpus-"))
    for name in args.files:
        shutil.copyfile(args.folder / name, corpus / name)

    embedder_for(Settings()).embed(["warm-up"])  # loaded before timing, as in a warm worker
    ensure_writer_limit()  # starts Prefect's temporary server outside the timed runs
    best: dict[bool, float] = {}
    chunks: dict[bool, int] = {}
    for run in range(args.repeats):
        for tables in (False, True):  # alternating, so load on the machine hits both alike
            settings = Settings(corpus=corpus, db=tempfile.mkdtemp(prefix="citesum-tables-bench-"), tables=tables)
            report, seconds = timed_ingest(corpus, settings)
            chunks[tables] = sum(o.chunks for o in report.outcomes)
            best[tables] = min(best.get(tables, float("inf")), seconds)
            print(f"run {run + 1}, tables {'on' if tables else 'off'}: {seconds:.1f} s, {chunks[tables]} chunks")
    ratio = best[True] / best[False]
    print(
        f"ingest of {len(args.files)} PDFs: {best[False]:.1f} s without tables, {best[True]:.1f} s with "
        f"(ratio {ratio:.3f}, {ratio - 1:+.1%}); chunks {chunks[False]} without, {chunks[True]} with"
    )


if __name__ == "__main__":
    main()
