"""Text extraction of one document with PyMuPDF: pages in reading order, headings, OCR, every failure recorded.

``extract_document`` turns one PDF into ``Page`` records (1-based physical page
numbers) of ``Block`` records. A page whose text cannot be read is OCRed when
Tesseract is installed, else kept as a "lost" page with a ``Problem``; a page
that fails does not discard its document. Whole-document failures raise
``DocumentError``. ``sandbox.extract_with_time_limit`` runs the same function in a
forked child process, so a hang or a crash inside MuPDF costs one document.
``parser_version`` names what extracts the text.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache

import pymupdf

from citesum.tasks.ingest.pdf.headings import heading_levels, read_toc
from citesum.tasks.ingest.pdf.open import authenticate, document_error, open_pdf, page_count
from citesum.tasks.ingest.pdf.page import PageText, extract_page
from citesum.tasks.records import Block, ExtractedDocument, Page, Problem, SourceFile


def extract_document(
    source: SourceFile,
    *,
    password: str | None = None,
    ocr: bool = True,
    ocr_language: str = "eng",
    max_pages: int | None = None,
    ocr_max_pixels: int = 25_000_000,
    tables: bool = True,
) -> ExtractedDocument:
    """Every page's text in reading order, with headings and a record of what went wrong.

    Raises ``DocumentError`` when the file cannot be read as a PDF at all (kinds:
    empty_file, unreadable, not_pdf, corrupt, encrypted, no_pages, too_many_pages), including a
    damaged file that MuPDF repaired into nothing but blank pages (a truncated
    upload): storing it would supersede a good version with nothing. Otherwise a
    document whose pages are all lost is returned: each lost page carries a ``Problem``.
    With ``tables``, a table on a text page is one block of rows (``layout.text_blocks``).
    """
    # MuPDF's default, in case pymupdf4llm was imported before this module and unset it
    pymupdf.TOOLS.unset_quad_corrections(False)
    doc = open_pdf(source)
    try:
        authenticate(doc, password, source)
        count = page_count(doc, source)
        if max_pages is not None and count > max_pages:
            raise document_error(
                source, "too_many_pages", f"{count:,} pages, over the limit of {max_pages:,} (CITESUM_MAX_PAGES)"
            )
        pages = [extract_page(doc, index, ocr, ocr_language, ocr_max_pixels, tables) for index in range(count)]
        levels = heading_levels(pages, read_toc(doc))
        problems = _document_problems(doc) + tuple(p for page in pages for p in page.problems)
        if doc.is_repaired and all(_is_blank_result(page) for page in pages):
            raise document_error(
                source, "corrupt", "damaged file (truncated?): repaired by MuPDF, but no page has text"
            )
    finally:
        doc.close()
    return ExtractedDocument(
        source=source,
        pages=tuple(_page_record(page, levels) for page in pages),
        problems=problems,
        parser=parser_version(include_ocr=any(page.method == "ocr" for page in pages)),
    )


def _is_blank_result(page: PageText) -> bool:
    return page.method == "lost" and [p.kind for p in page.problems] == ["blank_page"]


def _document_problems(doc: pymupdf.Document) -> tuple[Problem, ...]:
    if not doc.is_repaired:
        return ()
    return (Problem("repaired", "MuPDF repaired a damaged file structure; some text may be missing"),)


def _page_record(page: PageText, levels: dict[tuple[int, int], int]) -> Page:
    blocks = tuple(
        Block(
            text=b.text,
            page=page.number,
            heading_level=levels.get((page.number, i), 0),
            table=b.table,
            header_rows=b.header_rows,
        )
        for i, b in enumerate(page.blocks)
    )
    return Page(number=page.number, blocks=blocks, method=page.method)


def parser_version(include_ocr: bool = True) -> str:
    """What extracts text, e.g. "pymupdf 2.0 (mupdf 1.28.5), tesseract 5.3.0".

    OCR runs in MuPDF's built-in Tesseract with the installed Tesseract's language
    data and orientation detection, so the installed version is the one named.
    """
    name = f"pymupdf {pymupdf.__version__} (mupdf {pymupdf.mupdf_version})"
    tesseract = _tesseract_version() if include_ocr else None
    return f"{name}, tesseract {tesseract}" if tesseract else name


@cache
def _tesseract_version() -> str | None:
    if not shutil.which("tesseract"):
        return None
    run = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=False)
    match = re.search(r"tesseract v?(\S+)", run.stdout + run.stderr)
    return match.group(1) if match else None
