"""Table detection benchmark: how many pages the cheap test flags, and what table handling adds to extraction.

    python tests/benchmarks/table_benchmark.py ../shared/eval/financebench/pdfs \
        --timed 3M_2018_10K.pdf AMAZON_2017_10K.pdf BOEING_2022_10K.pdf

Prints:
- pages flagged as tabular by the cheap test (``tables.is_tabular``), and pages where tables were built,
  as shares of all pages of the PDFs in the folder
- for each ``--timed`` file: ``extract_document`` wall time with and without table handling (best of
  ``--repeats`` runs each, alternating, in this process), and the difference as a share of the time without
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def flagged_pages(folder: Path) -> tuple[int, int, int]:
    """(pages, flagged by the cheap test, with a table built) over every PDF in ``folder``."""
    import pymupdf

    from citesum.tasks.ingest.pdf.layout import TEXT_FLAGS
    from citesum.tasks.ingest.pdf.tables import find_tables, is_tabular

    pages = flagged = with_table = 0
    for path in sorted(folder.glob("*.pdf")):
        with pymupdf.open(path) as doc:
            for page in doc:
                pages += 1
                textpage = page.get_textpage(flags=TEXT_FLAGS)
                if is_tabular(page.get_text("dict", sort=True, flags=TEXT_FLAGS, textpage=textpage)):
                    flagged += 1
                    with_table += bool(find_tables(page, textpage))
    return pages, flagged, with_table


def extraction_seconds(path: Path, tables: bool, repeats: int) -> float:
    from citesum.tasks.ingest.pdf.extract import extract_document
    from citesum.tasks.ingest.sources import source_for

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        extract_document(source_for(path, path.parent), ocr=False, tables=tables)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--timed", nargs="*", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    pages, flagged, with_table = flagged_pages(args.folder)
    print(f"pages: {pages}; flagged as tabular: {flagged} ({flagged / pages:.1%}); with a table: {with_table}")
    total_with = total_without = 0.0
    for name in args.timed:
        path = args.folder / name
        extraction_seconds(path, True, 1)  # warm the file cache and the imports
        without = with_ = float("inf")
        for _ in range(args.repeats):  # alternating, so load on the machine hits both alike
            without = min(without, extraction_seconds(path, False, 1))
            with_ = min(with_, extraction_seconds(path, True, 1))
        total_with, total_without = total_with + with_, total_without + without
        print(f"{name}: {without:.2f} s without tables, {with_:.2f} s with (+{with_ / without - 1:.1%})")
    if args.timed:
        added = total_with / total_without - 1
        print(f"total: {total_without:.2f} s without, {total_with:.2f} s with (+{added:.1%})")


if __name__ == "__main__":
    main()
