"""Wall time of the same cold ingest on threads and on a temporary local Dask cluster.

    python tests/benchmarks/dask_runner_benchmark.py [CORPUS] [--workers 2] [--no-ocr]

Without CORPUS it ingests the sample corpus (data/sample_corpus.py) written to a temporary folder. Each
runner ingests into a fresh store; Prefect's temporary server is started before timing. The Dask time
includes starting the cluster and loading the model once in each worker process, as every
`citesum ingest --runner dask` pays them. Prints the figures and the Dask / threads ratio as JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

# Run as a script, this folder is on sys.path; the import also sets the environment both benchmarks need.
from ingest_benchmark import timed_ingest

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_corpus.py"


def sample_corpus(folder: Path) -> Path:
    spec = importlib.util.spec_from_file_location("sample_corpus", SAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["sample_corpus"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    module.write_sample_corpus(folder)
    return folder


def figures_of(corpus: Path, settings) -> dict:
    report, seconds = timed_ingest(corpus, settings)
    return {"seconds": round(seconds, 1), "documents": len(report.outcomes), **report.totals()}


def main() -> None:
    # Imported here: extraction children are spawned and re-import this script.
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.writer import ensure_writer_limit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-ocr", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="citesum-dask-bench-"))
    corpus = args.corpus or sample_corpus(scratch / "corpus")

    ensure_writer_limit()  # starts Prefect's temporary server outside the timed runs
    figures = {}
    for runner in ("threads", "dask"):
        settings = Settings(
            corpus=corpus, db=str(scratch / runner), runner=runner, workers=args.workers, ocr=not args.no_ocr
        )
        figures[runner] = figures_of(corpus, settings)
    figures["dask / threads"] = round(figures["dask"]["seconds"] / figures["threads"]["seconds"], 2)
    figures["cpus"] = os.cpu_count()
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
