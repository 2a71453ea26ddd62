"""Heading levels of a document's blocks: from the PDF outline when it matches, else from font size and weight."""

from __future__ import annotations

import re
from collections import Counter

import pymupdf

from citesum.tasks.ingest.pdf import MUPDF_ERRORS
from citesum.tasks.ingest.pdf.layout import HEADING_SIZE_RATIO, TextBlock
from citesum.tasks.ingest.pdf.page import PageText

HEADING_MAX_WORDS = 15
MIN_OUTLINE_HEADINGS = 2


def read_toc(doc: pymupdf.Document) -> list[tuple[int, str, int]]:
    """The outline as (level, title, 1-based page); entries without a page are dropped."""
    try:
        toc = doc.get_toc(simple=True)
    except MUPDF_ERRORS:  # a broken outline only costs outline headings: fonts are used instead
        return []
    return [(level, title, page) for level, title, page, *_ in toc if page >= 1 and title.strip()]


def heading_levels(pages: list[PageText], toc: list[tuple[int, str, int]]) -> dict[tuple[int, int], int]:
    """Heading level by (page number, block index): from the outline when its titles
    are found on their pages, otherwise from font size and weight.

    An outline that matches one block is not used: it is typically the title alone
    (2305.03393v1-pg9.pdf), and fonts find the sections it leaves out.
    """
    levels = _outline_levels(pages, toc)
    return levels if len(levels) >= MIN_OUTLINE_HEADINGS else _font_levels(pages)


def _outline_levels(pages: list[PageText], toc: list[tuple[int, str, int]]) -> dict[tuple[int, int], int]:
    by_number = {page.number: page for page in pages}
    levels: dict[tuple[int, int], int] = {}
    for level, title, number in toc:
        key = _title_key(title)
        page = by_number.get(number)
        if not key or page is None:
            continue
        for index, block in enumerate(page.blocks):
            if (number, index) not in levels and not block.table and _is_title(block.text, key):
                levels[(number, index)] = level
                break
    return levels


_PARENTHESISED = re.compile(r"^\s*\([^()]*\)\s*$")
# Lines set like headings that are not titles: on a filing's cover page, an identifier or a postal address
# ("Delaware 91-0425694", "Santa Monica, CA 90405", "arXiv:2303.08559v2 [cs.CL]"), a web or mail address;
# elsewhere a bullet or a row of amounts ("Total $1,581", "value $ 8,879 14,209"). Taken for headings, they named
# the sections of a filing's brief and stood over every chunk that followed (a bold bullet over 226 of them).
_NOT_A_TITLE = re.compile(
    r"\d+[-.]\d{5,}|\d{5,}-\d+|^\d{5}\b|,[^,]*\b\d{5}\b"  # identifiers (tax, file, arXiv numbers), postal codes
    r"|www\.|://|\S@\S+\.\w"  # web and mail addresses
    r"|^\s*(?:[•·▪●◦■]|[-–]\s)"  # a bullet
    r"|\$\s*\(?\d|\d,\d{3}\b"  # an amount, a figure with a thousands separator
)
_NUMBERING = re.compile(r"^\s*(\d+(?:\.\d+)*)\.?\s+")
# A section number in a title, as an outline may leave it out: "12.2 ", "IV. ", "A. " (IEEE style papers), an
# appendix's "A " and "A.1 ".
_SECTION_NUMBER = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[IVXLC]+[.)]|[A-Z](?:\.\d+)*[.)]?)\s+")


def _title_key(text: str) -> str:
    """A title without its section number, case, spacing and punctuation."""
    return "".join(c for c in _SECTION_NUMBER.sub("", text).casefold() if c.isalnum())


def _is_title(text: str, key: str) -> bool:
    """Whether a short block is the outline title ``key``, or begins it or with it."""
    if len(text.split()) > HEADING_MAX_WORDS:
        return False
    found = _title_key(text)
    return bool(found) and (found.startswith(key) or (key.startswith(found) and 2 * len(found) >= len(key)))


def _font_levels(pages: list[PageText]) -> dict[tuple[int, int], int]:
    """Headings are short blocks set larger than body text, or bold when body text is not.

    Levels follow size (largest = 1), then numbering depth ("12" above "12.2").
    OCR pages are left out: their font sizes are estimates from glyph boxes.
    """
    text_pages = [page for page in pages if page.method == "text"]
    body_size, body_bold = _body_style(text_pages)
    ranks = {
        (page.number, index): _heading_rank(block)
        for page in text_pages
        for index, block in enumerate(page.blocks)
        if _is_heading(block, body_size, body_bold)
    }
    order = {rank: level for level, rank in enumerate(sorted(set(ranks.values())), start=1)}
    return {position: order[rank] for position, rank in ranks.items()}


def _body_style(pages: list[PageText]) -> tuple[float, bool]:
    """The size of most characters in the document, and whether most of those are bold."""
    sizes: Counter[float] = Counter()
    for block in (b for page in pages for b in page.blocks):
        sizes[block.size] += block.chars
    if not sizes:
        return 0.0, False
    size = sizes.most_common(1)[0][0]
    body = [b for page in pages for b in page.blocks if b.size == size]
    return size, 2 * sum(b.chars for b in body if b.bold) > sum(b.chars for b in body)


def _is_heading(block: TextBlock, body_size: float, body_bold: bool) -> bool:
    words = block.text.split()
    if block.table or not words or len(words) > HEADING_MAX_WORDS or block.text[-1] in ".,;":
        return False
    if sum(c.isalpha() for c in block.text) < 2:  # page numbers, table figures, drop capitals
        return False
    if _PARENTHESISED.match(block.text):  # a statement's units, "(in millions)": not a title that replaces its own
        return False
    if _NOT_A_TITLE.search(block.text):
        return False
    larger = block.size >= HEADING_SIZE_RATIO * body_size
    return larger or (block.bold and not body_bold and block.size >= body_size)


def _heading_rank(block: TextBlock) -> tuple[float, bool, int]:
    """Sorts the most prominent first: larger, then bold, then shallower numbering."""
    numbering = _NUMBERING.match(block.text)
    depth = numbering.group(1).count(".") + 1 if numbering else 1
    return (-block.size, not block.bold, depth)
