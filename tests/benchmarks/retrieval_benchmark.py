"""Retrieval benchmark: hybrid retrieval and reranking on an existing store, against the targets.

    python tests/benchmarks/retrieval_benchmark.py ../shared/eval/financebench/questions.jsonl \\
        --db /work/stores/financebench

Runs ``citesum.tasks.summarize.evaluate.evaluate`` (each question within its own document(s)) and prints the figures as
JSON, then how they stand against the targets:
- candidate hit@50 at least 0.95;
- evidence hit@8 after reranking at least 10 points above the dense-only hit@8 of the same run;
- median latency of one question (embed, retrieve, rerank) well under 2 s.
It is a script, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HIT50_TARGET = 0.95
LIFT_TARGET = 0.10
LATENCY_TARGET_S = 2.0


def against_targets(figures: dict, evidence_k: int) -> dict:
    hit50 = figures["candidates"]["hit@50"]
    evidence_hit = figures["evidence"][f"hit@{evidence_k}"]
    dense_hit = figures["dense_baseline"][f"hit@{evidence_k}"]
    median = figures["latency_s"]["median"]
    return {
        "candidate_hit@50": {"measured": hit50, "target": HIT50_TARGET, "ratio": hit50 / HIT50_TARGET},
        f"evidence_hit@{evidence_k}_minus_dense": {
            "measured": evidence_hit - dense_hit,
            "target": LIFT_TARGET,
            "difference": evidence_hit - dense_hit - LIFT_TARGET,
        },
        "median_latency_s": {"measured": median, "target": LATENCY_TARGET_S, "ratio": median / LATENCY_TARGET_S},
        "met": hit50 >= HIT50_TARGET and evidence_hit - dense_hit >= LIFT_TARGET and median < LATENCY_TARGET_S,
    }


def main() -> None:
    # Imported here: a spawned child process re-imports this script and must not load the model for nothing.
    from citesum.tasks.embed import embedder_for
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.summarize.evaluate import evaluate, load_questions
    from citesum.tasks.summarize.rerank import load_reranker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", type=Path)
    parser.add_argument("--db", required=True, help="LanceDB URI of a store holding the questions' documents")
    parser.add_argument("--reranker", default="local", help="'local' or a CrossEncoder folder")
    parser.add_argument("--out", type=Path, help="also write the full report (with per-question results) here")
    args = parser.parse_args()

    settings = Settings(db=args.db, reranker=args.reranker)
    store = LanceStore.open(settings.store.db)
    embedder = embedder_for(settings)
    embedder.embed(["warm-up"])  # loaded before timing, as in a warm worker
    reranker = load_reranker(settings.summarize.reranker, embedder)
    questions = load_questions(args.questions)
    missing = {d for q in questions for d in q.documents} - set(store.documents())
    if missing:
        parser.error(f"the store at {args.db} lacks {len(missing)} of the questions' documents, e.g. {min(missing)}")

    report = evaluate(questions, store, embedder, reranker, settings)
    figures = report.to_json()
    print(json.dumps(figures, indent=2))
    print(json.dumps({"targets": against_targets(figures, settings.summarize.evidence)}, indent=2))
    if args.out:
        results = [vars(r) for r in report.results]
        args.out.write_text(json.dumps({**figures, "results": results}, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
