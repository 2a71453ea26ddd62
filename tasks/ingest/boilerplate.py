"""Running headers and footers: text repeated at the page edges, recognised so it is not indexed."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from citesum.tasks.records import Block, Page
from citesum.tasks.text import normalize_space

# Running headers and footers sit among the first or last few blocks of a page. In the
# FinanceBench 10-Ks they hold 90-100% of their occurrences there, while repeated table
# labels ("(a)", "(in millions)") sit mostly mid-page.
EDGE_BLOCKS = 3
EDGE_SHARE = 0.8
# Some running headers cover only one part of a filing: the financial-statement pages
# ("F-12", "Notes to consolidated financial statements (continued)") are 20-30% of a 10-K.
PAGE_SHARE = 0.2

# A page number is a run of 1-3 digits ("Page 3 of 6", "- 4 -", "F-12"). Years and
# formatted amounts ("2019", "1,234", "12.5") stay literal, so a table's column labels
# are not mistaken for a footer.
_PAGE_NUMBER = re.compile(r"(?<![\d,.])\d{1,3}(?![\d,.])")


def boilerplate_key(text: str) -> str:
    """The form in which repeated text is compared: whitespace- and case-folded, page numbers as '#'."""
    return _PAGE_NUMBER.sub("#", normalize_space(text).lower())


def find_boilerplate(pages: Sequence[Page], min_pages: int) -> frozenset[str]:
    """Keys of running headers and footers: text at a page edge on many pages.

    A key qualifies when it is among the first or last ``EDGE_BLOCKS`` blocks of at least
    ``min_pages`` pages and of ``PAGE_SHARE`` of the pages with text, and sits at an edge
    on ``EDGE_SHARE`` of the pages where it occurs at all.
    """
    with_text = [blocks for page in pages if (blocks := text_blocks(page))]
    anywhere: Counter[str] = Counter()
    at_edge: Counter[str] = Counter()
    for blocks in with_text:
        keys = [boilerplate_key(b.text) for b in blocks]
        anywhere.update(set(keys))
        at_edge.update(set(keys[:EDGE_BLOCKS] + keys[-EDGE_BLOCKS:]))
    return frozenset(
        key
        for key, count in at_edge.items()
        if count >= min_pages and count >= PAGE_SHARE * len(with_text) and count >= EDGE_SHARE * anywhere[key]
    )


def strip_boilerplate(page: Page, boilerplate: frozenset[str]) -> list[Block]:
    """The page's text blocks less the boilerplate among its first and last ``EDGE_BLOCKS``.

    The rule that finds running text removes it: the same text in mid-page is content
    (a table label), and a stray block after a footer does not shield it.
    """
    blocks = text_blocks(page)
    edge = set(range(EDGE_BLOCKS)) | set(range(len(blocks) - EDGE_BLOCKS, len(blocks)))
    return [b for i, b in enumerate(blocks) if i not in edge or boilerplate_key(b.text) not in boilerplate]


def text_blocks(page: Page) -> list[Block]:
    return [b for b in page.blocks if b.text.strip()]
