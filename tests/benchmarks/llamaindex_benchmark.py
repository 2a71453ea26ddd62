"""citesum beside LlamaIndex on the same PDFs: whole-process cold ingest, alternating runs, best of each.

    make bench-llamaindex     # makes the LlamaIndex virtualenv, then runs this on the three filings below

    python tests/benchmarks/llamaindex_benchmark.py --llamaindex-python VENV/bin/python [PDF ...]

Each run is a new process from nothing to done, into a fresh store: `citesum ingest DIR --db NEW --json`
(the configured backend: OpenVINO where it loads; then once more with CITESUM_EMBED_BACKEND=torch), and
``llamaindex_ingest.py DIR`` (PyMuPDFReader, SentenceSplitter 256/32, HuggingFaceEmbedding of the same model,
no vector store). Rounds alternate the pipelines, so a machine slowing down slows both. Prints a table and one
JSON object: wall seconds (best of the rounds), pages/s, pieces embedded, and citesum's pages/s over
LlamaIndex's (target >= 2.0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILINGS = ("3M_2018_10K", "AMAZON_2017_10K", "BOEING_2022_10K")
DEFAULT_PDFS = Path(__file__).resolve().parents[2].parent / "shared" / "eval" / "financebench" / "pdfs"
HERE = Path(__file__).resolve().parent


def citesum_run(folder: Path, scratch: Path, backend: str | None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    if backend:
        env["CITESUM_EMBED_BACKEND"] = backend
    db = Path(tempfile.mkdtemp(prefix="db-", dir=scratch))
    command = [str(Path(sys.executable).with_name("citesum")), "ingest", str(folder), "--db", str(db), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"citesum ingest failed ({done.returncode}): {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return {
        "wall_s": seconds,
        "pages": sum(o["pages"] for o in report["documents"]),
        "pieces": sum(o["chunks"] for o in report["documents"]),
        "backend": report["embed_backend"],
    }


def llamaindex_run(folder: Path, python: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    started = time.perf_counter()
    done = subprocess.run(
        [python, str(HERE / "llamaindex_ingest.py"), str(folder)], env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the LlamaIndex pipeline failed ({done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": seconds, "pages": result["pages"], "pieces": result["nodes"], "backend": "torch"}


def best(runs: list[dict]) -> dict:
    fastest = min(runs, key=lambda r: r["wall_s"])
    return fastest | {
        "pages_per_s": fastest["pages"] / fastest["wall_s"],
        "runs_s": [round(r["wall_s"], 1) for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", nargs="*", type=Path, help=f"default: {', '.join(FILINGS)} from {DEFAULT_PDFS}")
    parser.add_argument("--llamaindex-python", required=True, help="python of a virtualenv with LlamaIndex 0.14")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    pdfs = args.pdfs or [DEFAULT_PDFS / f"{name}.pdf" for name in FILINGS]
    scratch = Path(tempfile.mkdtemp(prefix="citesum-vs-llamaindex-"))
    folder = scratch / "pdfs"  # the PDFs alone in a folder (copied: a corpus refuses links out of it)
    folder.mkdir()
    for pdf in pdfs:
        shutil.copy(pdf, folder / pdf.name)

    runs: dict[str, list[dict]] = {"citesum": [], "llamaindex": [], "citesum_torch": []}
    for _ in range(args.rounds):
        runs["citesum"].append(citesum_run(folder, scratch, None))
        runs["llamaindex"].append(llamaindex_run(folder, args.llamaindex_python))
    runs["citesum_torch"].append(citesum_run(folder, scratch, "torch"))  # once: for comparison, not the target
    shutil.rmtree(scratch, ignore_errors=True)

    figures = {name: best(r) for name, r in runs.items()}
    print(f"{'pipeline':<16}{'wall s':>9}{'pages/s':>9}{'pieces':>8}  backend")
    for name, f in figures.items():
        print(f"{name:<16}{f['wall_s']:>9.1f}{f['pages_per_s']:>9.1f}{f['pieces']:>8}  {f['backend']}")
    ratio = figures["citesum"]["pages_per_s"] / figures["llamaindex"]["pages_per_s"]
    print(f"citesum over LlamaIndex, pages/s: {ratio:.2f}x (target >= 2.0)")
    print(json.dumps({"pdfs": [p.name for p in pdfs], "figures": figures, "citesum_over_llamaindex": round(ratio, 3)}))


if __name__ == "__main__":
    main()
