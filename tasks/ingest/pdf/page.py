"""One page: its text layer when readable, else OCR, else a lost page with the ``Problem`` that says why."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymupdf

from citesum.tasks.ingest.pdf import MUPDF_ERRORS
from citesum.tasks.ingest.pdf.layout import TextBlock, text_blocks
from citesum.tasks.ingest.pdf.ocr import OCR_DPI, Ocr, capped_dpi, ocr_blocks, ocr_engine
from citesum.tasks.records import PageMethod, Problem

BLANK_DPI = 36  # enough to see any ink on a page
UNREADABLE_SHARE = 0.5  # share of U+FFFD / private-use characters that makes a page unreadable
# U+FFFD and Unicode's private-use planes (category Co), matched at once: a character-by-character scan of every
# page took 0.72 s of the 33 s that extracting the 29 FinanceBench filings costs, this 0.25 s.
_UNREADABLE = re.compile("[\ufffd\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")


@dataclass(frozen=True)
class PageText:
    """One page's text blocks, how they were read, and what went wrong on it."""

    number: int
    method: PageMethod
    blocks: tuple[TextBlock, ...]
    problems: tuple[Problem, ...] = ()


def extract_page(
    doc: pymupdf.Document,
    index: int,
    ocr: bool,
    ocr_language: str,
    ocr_max_pixels: int = 25_000_000,
    tables: bool = True,
) -> PageText:
    """Raises ``MemoryError`` when the page needs more memory than the process may have: that fails
    the document (kind memory_limit), it is not a page MuPDF cannot read."""
    number = index + 1
    try:
        page = doc.load_page(index)
        blocks = text_blocks(page, tables)
        if blocks and _unreadable_share(blocks) < UNREADABLE_SHARE:
            return PageText(number, "text", tuple(blocks))
        return _without_text_layer(page, number, blocks, ocr_engine(ocr, ocr_language, ocr_max_pixels))
    except MUPDF_ERRORS as exc:
        if is_memory_error(exc):
            raise MemoryError(str(exc)) from exc
        problem = Problem("page_error", f"MuPDF cannot read this page ({exc}): page not indexed", number)
        return PageText(number, "lost", (), (problem,))


def _without_text_layer(page: pymupdf.Page, number: int, blocks: list[TextBlock], engine: Ocr) -> PageText:
    """OCR a page whose text layer is missing or unreadable, or record it as lost.

    Unreadable text (U+FFFD / private-use glyphs from fonts without a Unicode map)
    is OCRed like a scan: the glyphs are drawn correctly even when their codes are
    meaningless, so OCR recovers the words (issue215.pdf: "OPENMAGAZIN").
    """
    if not blocks and _is_blank(page, engine.max_pixels):
        return _lost(number, "blank_page", "blank page: nothing to extract")
    kind, reason = _missing_text(blocks)
    if engine.tessdata is None:
        return _lost(number, kind, f"{reason} and {engine.unavailable}: page not indexed")
    dpi = capped_dpi(page, OCR_DPI, engine.max_pixels)
    capped = f" at {dpi:.0f} dpi (the pixel cap CITESUM_OCR_MAX_PIXELS for a page this large)" if dpi < OCR_DPI else ""
    try:
        recognised = ocr_blocks(page, engine)
    except MUPDF_ERRORS as exc:
        if is_memory_error(exc):
            raise
        return _lost(number, kind, f"{reason} and OCR{capped} failed ({exc}): page not indexed")
    if not recognised:
        return _lost(number, kind, f"{reason} and OCR{capped} found no text: page not indexed")
    problem = Problem("ocr" if kind == "no_text_layer" else kind, f"{reason}; text from OCR", number)
    return PageText(number, "ocr", tuple(recognised), (problem,))


def _missing_text(blocks: list[TextBlock]) -> tuple[str, str]:
    """The problem kind and reason for a page without usable text."""
    if not blocks:
        return "no_text_layer", "no text layer"
    share = _unreadable_share(blocks)
    return "unreadable_text", f"text layer unreadable ({share:.0%} U+FFFD or private-use characters)"


def _lost(number: int, kind: str, message: str) -> PageText:
    return PageText(number, "lost", (), (Problem(kind, message, number),))


def _is_blank(page: pymupdf.Page, max_pixels: int) -> bool:
    # A page that renders in one colour has nothing to OCR and nothing was lost
    zoom = capped_dpi(page, BLANK_DPI, max_pixels) / 72
    return page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY).is_unicolor


def is_memory_error(exc: BaseException) -> bool:
    """MuPDF's out-of-memory error, e.g. under the extraction memory limit: PyMuPDF 2.0 has no class for it,
    a failed allocation is an FzErrorSystem (or a RuntimeError) saying "malloc ... failed"."""
    message = str(exc).lower()
    return "malloc" in message or "out of memory" in message


def _unreadable_share(blocks: list[TextBlock]) -> float:
    """The share of characters that are U+FFFD (no Unicode known) or private-use."""
    text = "".join(b.text for b in blocks)
    chars = sum(map(len, text.split()))  # not whitespace: split() drops what str.isspace() is true of
    return len(_UNREADABLE.findall(text)) / chars if chars else 0.0
