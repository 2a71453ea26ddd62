"""Time and peak memory of ``citesum ingest`` per hostile corpus entry (issue 10), for the README.

    python tests/benchmarks/hostile_benchmark.py [--workdir DIR]

For each case of tests/hostile_cases.py a corpus holds one good PDF and that entry; the real command
ingests it into a fresh store against one temporary Prefect server, and the resident memory of the
command's whole process tree (the CLI, its extraction children) is sampled every 50 ms. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prefect.settings import PREFECT_API_URL
from prefect.testing.utilities import prefect_test_harness

from tests.hostile_cases import CASES, GOOD_TEXT, pdf_bytes, place, run_measured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="citesum-hostile-"))
    figures = []
    with prefect_test_harness(server_startup_timeout=120):
        env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "HF_HUB_OFFLINE": "1"}
        for case in ("none", *CASES):
            corpus = work / case / "corpus"
            corpus.mkdir(parents=True)
            (corpus / "good.pdf").write_bytes(pdf_bytes(GOOD_TEXT))
            if case != "none":
                place(case, corpus, work / case / "outside")
            command = [sys.executable, "-m", "citesum.deployments.cli", "ingest", str(corpus)]
            done, peak, seconds = run_measured([*command, "--db", str(work / case / "db"), "--json"], env)
            statuses = {d["document_id"]: d["status"] for d in json.loads(done.stdout)["documents"]}
            figures.append(
                {"case": case, "exit": done.returncode, "seconds": round(seconds, 1), "peak_mib": peak >> 20}
                | {"statuses": statuses}
            )
            print(json.dumps(figures[-1]), file=sys.stderr)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
