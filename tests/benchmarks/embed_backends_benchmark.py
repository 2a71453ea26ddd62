"""Embedding backends and start-up: texts/s of torch and OpenVINO on the same chunks, and two command wall times.

    python tests/benchmarks/embed_backends_benchmark.py [PDF_OR_FOLDER ...] [--texts 600]

Prints, from one run (default PDFs: the sample corpus, written to a temporary folder):
- texts/s of sentence-transformers on torch fp32 and of the OpenVINO backend (the precision it chose), on the
  folder's chunk texts as ingestion makes them, in interleaved rounds (median), their ratio, and the least
  cosine between the two backends' vectors
- wall time of `citesum summarize termination --mode fast` (a usage error; target < 1 s)
- wall time of `citesum ingest` of the unchanged sample corpus (target < 5 s), after a first ingest fills a store
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
CITESUM = Path(sys.executable).with_name("citesum")
SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_corpus.py"


def chunk_texts(paths: list[Path], count_tokens, max_tokens: int) -> list[str]:
    from citesum.tasks.ingest.chunk import chunk_document
    from citesum.tasks.ingest.pdf.extract import extract_document
    from citesum.tasks.ingest.sources import discover_sources, source_for

    sources = [
        source
        for path in paths
        for source in (
            discover_sources(path.resolve()).sources if path.is_dir() else [source_for(path.resolve(), path.parent)]
        )
    ]
    texts = []
    for source in sources:
        extracted = extract_document(source)
        chunked = chunk_document(extracted, count_tokens=count_tokens, max_tokens=max_tokens)
        texts += [c.embedding_text for c in chunked.chunks]
    return texts


def rate(embedder, texts: list[str]) -> float:
    started = time.perf_counter()
    embedder.embed(texts)
    return len(texts) / (time.perf_counter() - started)


def wall(*args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([str(CITESUM), *args], cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done


def main() -> None:
    import numpy as np

    from citesum.tasks.embed import load_embedder
    from citesum.tasks.settings import DEFAULT_EMBED_MODEL, Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", type=Path, nargs="*", help="PDFs or folders of them (default: the sample corpus)")
    parser.add_argument("--texts", type=int, default=600, help="most chunk texts per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="citesum-embed-bench-"))
    sample = work / "corpus"
    subprocess.run([sys.executable, str(SAMPLE), str(sample)], check=True, capture_output=True)

    cache = Settings().ingest.embed_cache
    torch_embedder = load_embedder(DEFAULT_EMBED_MODEL, 32, "torch")
    fast = load_embedder(DEFAULT_EMBED_MODEL, 32, "openvino", cache)
    budget = min(Settings().chunking.chunk_tokens, torch_embedder.max_tokens)  # as ingestion chunks
    texts = chunk_texts(args.pdfs or [sample], torch_embedder.count_tokens, budget)[: args.texts]
    torch_embedder.embed(texts[:32]), fast.embed(texts[:32])  # warm-up
    torch_rates, fast_rates = [], []
    for _ in range(args.rounds):  # interleaved: both backends see the same machine load
        torch_rates.append(rate(torch_embedder, texts))
        fast_rates.append(rate(fast, texts))
    cosine = float(np.min(np.sum(fast.embed(texts) * torch_embedder.embed(texts), axis=1)))

    usage_s, usage = wall("summarize", "termination", "--mode", "fast", cwd=work)
    assert usage.returncode == 2 and "unknown mode 'fast'" in usage.stderr, usage.stderr
    first_s, first = wall("ingest", "corpus", "--db", "db", "--json", cwd=work)
    assert first.returncode == 0, first.stderr
    again_s, again = wall("ingest", "corpus", "--db", "db", "--json", cwd=work)
    report = json.loads(again.stdout)
    assert report["totals"]["unchanged"] == report["totals"]["documents"], again.stdout

    figures = {
        "texts": len(texts),
        "mean_tokens": round(sum(map(torch_embedder.count_tokens, texts)) / len(texts), 1),
        "torch_texts_per_s": round(statistics.median(torch_rates), 1),
        "openvino_texts_per_s": round(statistics.median(fast_rates), 1),
        "openvino_precision": fast.precision,
        "openvino_over_torch": round(statistics.median(fast_rates) / statistics.median(torch_rates), 2),
        "least_cosine": round(cosine, 6),
        "usage_error_s": round(usage_s, 2),
        "sample_first_ingest_s": round(first_s, 1),
        "sample_unchanged_reingest_s": round(again_s, 2),
        "reingest_report_s": report["totals"]["seconds"],
        "reingest_backend": report["embed_backend"],
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
