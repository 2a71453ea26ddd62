"""Table detection benchmark: how many pages the cheap test flags, and what table handling adds to extraction.

    python tests/benchmarks/table_benchmark.py ../shared/eval/financebench/pdfs \
        --timed 3M_2018_10K.pdf AMAZON_2017_10K.pdf BOEING_2022_10K.pdf

Prints:
- pages flagged by each of ``tables.page_flags``' two cheap tests (rows ending in figures; rows of separate
  pieces, one a figure), as shares of all pages of the PDFs in the folder, and pages where each built a table
  (a page counted for each test whose table it built, even where both built one and only the grid is kept)
- for each ``--timed`` file: ``extract_document`` wall time with and without table handling (best of
  ``--repeats`` runs each, alternating, in this process), and the difference as a share of the time without
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def flagged_pages(folder: Path) -> dict[str, int]:
    """Over every PDF in ``folder``: pages, pages flagged by each cheap test, pages with a table built by each."""
    import pymupdf

    from citesum.tasks.ingest.pdf import tables
    from citesum.tasks.ingest.pdf.layout import TEXT_FLAGS

    counts = dict.fromkeys(("pages", "figure rows", "figure tables", "cell rows", "ruled tables"), 0)
    for path in sorted(folder.glob("*.pdf")):
        with pymupdf.open(path) as doc:
            for page in doc:
                counts["pages"] += 1
                textpage = page.get_textpage(flags=TEXT_FLAGS)
                figures, cells = tables.page_flags(
                    page.get_text("dict", sort=True, flags=TEXT_FLAGS, textpage=textpage)
                )
                if figures:
                    counts["figure rows"] += 1
                    counts["figure tables"] += bool(tables.find_tables(page, textpage))
                if cells:
                    counts["cell rows"] += 1
                    counts["ruled tables"] += bool(tables.ruled_tables(page, textpage))
    return counts


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

    counts = flagged_pages(args.folder)
    pages = counts["pages"]
    print(
        f"pages: {pages}; flagged for aligned figures: {counts['figure rows']} ({counts['figure rows'] / pages:.1%}),"
        f" a table built on {counts['figure tables']}; flagged for ruled cells: {counts['cell rows']}"
        f" ({counts['cell rows'] / pages:.1%}), a ruled table built on {counts['ruled tables']}"
    )
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
