"""Latency of query-focused extractive summaries on an ingested store, model already loaded.

For every answerable question of a questions.jsonl, restricted to its document:
retrieve (hybrid, broad) -> rerank (narrow) -> extractive synthesis with citation
validation, timed as plain function calls; then a sample of the same questions
through the Prefect flow, to show what the engine adds. Prints JSON.

    python tests/benchmarks/summarize_benchmark.py ../shared/eval/financebench/questions.jsonl \
        --db /path/to/financebench-store [--flow-runs 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> None:
    # Heavy imports stay inside main: extraction children are spawned and re-import __main__.
    from prefect.logging import disable_run_logger

    from citesum.flows.summarize import run_summarize
    from citesum.tasks.embed import embedder_for
    from citesum.tasks.settings import Settings
    from citesum.tasks.store.lance import LanceStore
    from citesum.tasks.summarize.evaluate import load_questions
    from citesum.tasks.summarize.rerank import load_reranker
    from citesum.tasks.summarize.tasks import choose_synthesizer, retrieve_candidates, select_evidence, write_part

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions")
    parser.add_argument("--db", required=True)
    parser.add_argument("--flow-runs", type=int, default=10, help="questions also run through the Prefect flow")
    args = parser.parse_args()

    settings = Settings(db=args.db, runs_dir="/tmp/citesum-benchmark-runs")
    embedder = embedder_for(settings)
    store = LanceStore.open(settings.store.db)
    reranker = load_reranker(settings.summarize.reranker, embedder)
    synthesizer, reason = choose_synthesizer("extractive", settings, embedder)
    questions = [q for q in load_questions(args.questions) if q.answerable]
    stored = set(store.documents())

    seconds, rates = [], []
    for q in questions:
        documents = tuple(d for d in q.documents if d in stored)
        if not documents:
            continue
        started = time.perf_counter()
        with disable_run_logger():  # the tasks' logic, outside a run
            candidates = retrieve_candidates.fn(q.question, store, embedder, documents, settings.summarize.candidates)
            evidence = select_evidence.fn(q.question, candidates, reranker, settings.summarize.evidence)
            section = write_part.fn("Summary", q.question, evidence, synthesizer)
        seconds.append(time.perf_counter() - started)
        rates.append(bool(section.sentences))

    flow_seconds = []
    for q in questions[: args.flow_runs]:
        started = time.perf_counter()
        state = run_summarize(q.question, list(q.documents), "query", "extractive", settings)
        flow_seconds.append(time.perf_counter() - started)
        assert state.is_completed(), state

    median = statistics.median(seconds)
    print(
        json.dumps(
            {
                "questions": len(seconds),
                "synthesizer": f"{synthesizer.name} ({reason})",
                "pipeline_seconds": {
                    "median": round(median, 3),
                    "p90": round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 3),
                    "max": round(max(seconds), 3),
                },
                "median_vs_target_2s": round(median / 2.0, 3),
                "with_cited_sentences": round(sum(rates) / len(rates), 3),
                "flow_seconds_median": round(statistics.median(flow_seconds), 3) if flow_seconds else None,
                "flow_runs": len(flow_seconds),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
