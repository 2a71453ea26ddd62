"""Vector search with and without the IVF_PQ index that ``citesum maintain`` builds.

    python tests/benchmarks/vector_index_benchmark.py [--rows 100000] [--queries 200] [--vectors embedded|random]

Writes ``--rows`` synthetic chunks into a fresh store through ``LanceStore.supersede`` (the chunks table schema,
1,000 chunks per document), then measures, over ``--queries`` query vectors:

- query latency (median, p90) of ``LanceStore.search_vector`` (what retrieval calls) without an index: exact search;
- the index build time (``vector_index_config()``, the configuration maintenance uses);
- latency and recall@10 against exact search (numpy over the same vectors) with the index: through
  ``search_vector`` (LanceDB's 20 probes, ``VECTOR_REFINE_FACTOR``), and for a few nprobes / refine_factor pairs.

Vectors: ``embedded`` (default) embeds template sentences with the default model and writes 50 noisy copies
of each (cosine about 0.9 to their sentence), queries are other sentences of the same templates; ``random``
uses uniformly random unit vectors (no structure: the hardest case for IVF_PQ). Prints JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import tempfile
import time

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DIMENSION = 384
PER_DOCUMENT = 1_000
SETTINGS_GRID = [(20, None), (50, None), (20, 10), (20, 20), (50, 20), (100, 40)]  # (nprobes, refine_factor)

PARTIES = ["the Supplier", "the Customer", "the Contractor", "the Licensee", "the Auditor", "the Agent", "each Party"]
ACTIONS = [
    "notify",
    "indemnify",
    "invoice",
    "reimburse",
    "inspect",
    "certify",
    "insure",
    "audit",
    "suspend",
    "terminate",
    "renew",
    "escalate",
]
OBJECTS = [
    "the services",
    "all subcontractors",
    "the fee schedule",
    "confidential information",
    "the hosting platform",
    "personal data",
    "the leak detection sensors",
    "the pressure readings",
    "the backup copies",
    "the statement of work",
    "any defective deliverable",
]
WHEN = [
    "within thirty days",
    "before each renewal",
    "after a material breach",
    "at the end of every quarter",
    "on written request",
    "during the trial period",
    "once a year",
]


def sentences() -> list[str]:
    return [f"{p} shall {a} {o} {w}." for p, a, o, w in itertools.product(PARTIES, ACTIONS, OBJECTS, WHEN)]


def unit(vectors: np.ndarray) -> np.ndarray:
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def embedded_vectors(rows: int, queries: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, str]:
    from citesum.tasks.embed import load_embedder

    texts = sentences()
    rng.shuffle(texts)
    copies = 50
    bases, held_out = texts[: rows // copies], texts[rows // copies : rows // copies + queries]
    embedder = load_embedder()
    base = embedder.embed(bases)
    noise = rng.standard_normal((len(bases), copies, DIMENSION)).astype(np.float32) * (0.5 / np.sqrt(DIMENSION))
    data = unit((base[:, None, :] + noise).reshape(-1, DIMENSION))
    how = f"{len(bases)} embedded sentences x {copies} noisy copies; queries: {len(held_out)} other sentences"
    return data[:rows], unit(embedder.embed(held_out)), how


def random_vectors(rows: int, queries: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, str]:
    return unit(rng.standard_normal((rows, DIMENSION))), unit(rng.standard_normal((queries, DIMENSION))), "random"


def fill(store, vectors: np.ndarray) -> float:
    from citesum.tasks.records import Chunk, DocumentRecord

    started = time.perf_counter()
    for first in range(0, len(vectors), PER_DOCUMENT):
        doc = f"doc{first // PER_DOCUMENT:04d}.pdf"
        block = vectors[first : first + PER_DOCUMENT]
        chunks = [
            Chunk(doc, "v1", f"/bench/{doc}", 1 + i // 5, 1 + i // 5, "1 Section", f"Synthetic chunk {first + i}.", i)
            for i in range(len(block))
        ]
        record = DocumentRecord(doc, "v1", f"/bench/{doc}", len(block) // 5, len(block), "ok")
        store.supersede(record, chunks, block)
    return time.perf_counter() - started


def ids_of(rows: list[dict]) -> list[str]:
    return [r["chunk_id"] for r in rows]


def timed(search, queries: np.ndarray) -> tuple[list[list[str]], dict]:
    results, seconds = [], []
    for q in queries:
        started = time.perf_counter()
        results.append(ids_of(search(q)))
        seconds.append(time.perf_counter() - started)
    ms = sorted(1000 * s for s in seconds)
    return results, {"median_ms": round(statistics.median(ms), 1), "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 1)}


def recall(found: list[list[str]], exact: list[list[str]]) -> float:
    return round(float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact, strict=True)])), 4)


def main() -> None:
    from citesum.tasks.store.lance import VECTOR_REFINE_FACTOR, LanceStore
    from citesum.tasks.store.maintain import vector_index_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--vectors", choices=["embedded", "random"], default="embedded")
    parser.add_argument("--db", help="a fresh folder (default: a temporary one)")
    args = parser.parse_args()
    rng = np.random.default_rng(20261130)
    make = embedded_vectors if args.vectors == "embedded" else random_vectors
    data, queries, how = make(args.rows, args.queries, rng)

    store = LanceStore.open_or_create(
        args.db or tempfile.mkdtemp(prefix="citesum-vector-bench-"), f"benchmark-{args.vectors}", DIMENSION
    )
    write_seconds = fill(store, data)
    rows = store.chunk_rows(columns=["chunk_id", "vector"])
    assert len({r["chunk_id"] for r in rows}) == len(rows) == args.rows
    ids, stored = ids_of(rows), np.asarray([r["vector"] for r in rows], np.float32)
    exact = [[ids[i] for i in np.argsort(-(stored @ q))[:10]] for q in queries]  # cosine: the vectors are unit
    del rows

    flat, flat_latency = timed(lambda q: store.search_vector(q, k=10), queries)
    started = time.perf_counter()
    store.build_vector_index(vector_index_config())
    build_seconds = time.perf_counter() - started
    indexed, default_latency = timed(lambda q: store.search_vector(q, k=10), queries)

    table = store._require_chunks()  # the query builder's nprobes / refine_factor are not part of the store API
    grid = []
    for nprobes, refine in SETTINGS_GRID:

        def tuned(q, nprobes=nprobes, refine=refine):
            query = table.search(q).nprobes(nprobes).limit(10)
            return (query.refine_factor(refine) if refine else query).to_arrow().to_pylist()

        found, latency = timed(tuned, queries)
        grid.append({"nprobes": nprobes, "refine_factor": refine, **latency, "recall_at_10": recall(found, exact)})

    config = vector_index_config()
    print(
        json.dumps(
            {
                "rows": args.rows,
                "dimension": DIMENSION,
                "queries": len(queries),
                "vectors": how,
                "write_seconds": round(write_seconds, 1),
                "index": {
                    "type": "IVF_PQ",
                    "distance": config.distance_type,
                    "num_sub_vectors": config.num_sub_vectors,
                    "num_partitions": "LanceDB default",
                    "build_seconds": round(build_seconds, 1),
                },
                "exact_search": {**flat_latency, "recall_at_10": recall(flat, exact)},
                "indexed_search_store": {
                    "nprobes": "LanceDB default (20)",
                    "refine_factor": VECTOR_REFINE_FACTOR,
                    **default_latency,
                    "recall_at_10": recall(indexed, exact),
                },
                "indexed_search_settings": grid,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
