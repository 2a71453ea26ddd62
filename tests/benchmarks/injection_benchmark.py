"""False positives of the injection detector (citesum.tasks.injection) on real PDFs, for its docstring and the README.

    python tests/benchmarks/injection_benchmark.py ../shared/eval/financebench/pdfs ../shared/eval/mmlongbench/pdfs

Every PDF under the folders is extracted (``extract_document``, default settings: OCR on) and chunked as
ingestion does it (``chunk_document`` with the default model's token counter and chunking settings). Counts:
pages whose text matches the detector, chunks flagged (``Chunk.injection``), and the time the detector took
over every page (``flagged_spans``) and over every chunk (``hits``, what ingestion runs).
Every flagged sentence is printed with its document, page and patterns, to be read by eye: a development
PDF holds no injection, so each one is a false positive unless reading it shows otherwise. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from citesum.tasks import injection
from citesum.tasks.embed import load_embedder
from citesum.tasks.ingest.chunk import chunk_document
from citesum.tasks.ingest.pdf.extract import extract_document
from citesum.tasks.ingest.sources import source_for
from citesum.tasks.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    settings = Settings()
    embedder = load_embedder(settings.chunking.embed_model)
    totals = {"documents": 0, "pages": 0, "flagged_pages": 0, "chunks": 0, "flagged_chunks": 0}
    totals |= {"page_detector_s": 0.0, "chunk_detector_s": 0.0}
    passages = []
    for folder in args.folders:
        for path in sorted(folder.rglob("*.pdf")):
            source = source_for(path.resolve(), folder.resolve(), 10**10)
            extracted = extract_document(source, ocr=settings.chunking.ocr, ocr_language=settings.chunking.ocr_language)
            chunked = chunk_document(
                extracted,
                count_tokens=embedder.count_tokens,
                max_tokens=min(settings.chunking.chunk_tokens, embedder.max_tokens),
                overlap_sentences=settings.chunking.overlap_sentences,
                boilerplate_min_pages=settings.chunking.boilerplate_min_pages,
            )
            started = time.perf_counter()
            for page in extracted.pages:
                text = "\n\n".join(b.text for b in page.blocks)
                for start, end in injection.flagged_spans(text):
                    sentence = " ".join(text[start:end].split())
                    found = injection.patterns_in(sentence)
                    passages.append(
                        {"document": source.document_id, "page": page.number, "patterns": found, "text": sentence[:400]}
                    )
                totals["flagged_pages"] += injection.addresses_ai(text)
            totals["page_detector_s"] += time.perf_counter() - started
            started = time.perf_counter()
            for c in chunked.chunks:  # what ingestion adds per chunk when nothing is found
                injection.hits(c.text)
            totals["chunk_detector_s"] += time.perf_counter() - started
            totals["documents"] += 1
            totals["pages"] += len(extracted.pages)
            totals["chunks"] += len(chunked.chunks)
            totals["flagged_chunks"] += sum(bool(c.injection) for c in chunked.chunks)
            print(f"{source.document_id}: {len(extracted.pages)} pages", file=sys.stderr, flush=True)
    totals = {k: round(v, 2) if isinstance(v, float) else v for k, v in totals.items()}
    print(json.dumps({"totals": totals, "passages": passages}, indent=1))


if __name__ == "__main__":
    main()
