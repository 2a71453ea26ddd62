"""A page's text blocks in reading order: MuPDF's blocks split into line groups, lines joined, columns ordered;
on a page with tables (``tables``), each table one block of its rows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pymupdf

from citesum.tasks.ingest.pdf.tables import FoundTable, page_tables
from citesum.tasks.text import normalize_space

# Unknown glyphs come out as U+FFFD (no TEXT_USE_CID_FOR_UNKNOWN_UNICODE) so that
# unreadable text is detectable; ligatures are expanded so "ﬁ" is searchable as "fi".
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
BOLD_FLAG = 16  # span["flags"] bit 4
HEADING_SIZE_RATIO = 1.15  # a heading's font is at least this much larger than body text
COLUMN_WIDTH = (0.3, 0.55)  # a column block's width as a share of the text area's width
COLUMN_MIN_SHARE = 0.2  # each column holds at least this share of the page's characters


@dataclass(frozen=True)
class TextBlock:
    """A block's text and the font facts heading detection needs."""

    text: str
    bbox: tuple[float, float, float, float]
    size: float  # the font size of most of its characters
    bold: bool  # most of its characters are bold
    chars: int
    table: bool = False  # a table: one row a line, ``label | cell | cell``
    header_rows: int = 0  # a table's first lines that name its columns


# --- text blocks -------------------------------------------------------------


def text_blocks(page: pymupdf.Page, tables: bool = True) -> list[TextBlock]:
    """The page's text blocks in reading order; with ``tables``, a table found on it is one block."""
    textpage = page.get_textpage(flags=TEXT_FLAGS)  # read once: the words of a table come from it too
    data = page.get_text("dict", sort=True, flags=TEXT_FLAGS, textpage=textpage)
    found = page_tables(page, textpage, data) if tables else []
    raws = [raw for raw in data["blocks"] if raw["type"] == 0]
    within = [[line for raw in raws for line in raw["lines"] if _inside(line["bbox"], table)] for table in found]
    taken = {id(line) for lines in within for line in lines}  # each line tested against each table once
    blocks = [b for b in (b for raw in raws for b in _split_block(_outside(raw, taken))) if b.text]
    for table, lines in zip(found, within, strict=True):  # before the first block that starts below the table's top
        at = next((i for i, b in enumerate(blocks) if b.bbox[1] >= table.bbox[1]), len(blocks))
        blocks.insert(at, _table_block(table, lines))
    return _reading_order(blocks)


def _outside(raw: dict, taken: set[int]) -> dict:
    """MuPDF's block without the lines inside a table, ``taken`` their ids (the table's block holds them)."""
    if not taken:
        return raw
    return {**raw, "lines": [line for line in raw["lines"] if id(line) not in taken]}


def _table_block(table: FoundTable, lines: list[dict]) -> TextBlock:
    size, _, _ = _font_profile([span for line in lines for span in line["spans"]])
    text = "\n".join(table.lines)
    chars = len("".join(text.split())) - text.count("|")  # neither spaces nor the cells' separators
    return TextBlock(text, table.bbox, size, False, chars, table=True, header_rows=table.header_rows)


def _inside(bbox: tuple[float, float, float, float], table: FoundTable) -> bool:
    x, y = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    x0, y0, x1, y1 = table.bbox
    return x0 - 1 <= x <= x1 + 1 and y0 - 1 <= y <= y1 + 1


def _split_block(raw: dict) -> Iterator[TextBlock]:
    """MuPDF's block, cut where a gap or a font-size change shows separate line groups.

    MuPDF sometimes puts a heading and its paragraph, or a running header and the
    body below it, in one block; the heading and boilerplate steps need them apart.
    """
    group: list[dict] = []
    for line in raw["lines"]:
        if group and _new_group(group[-1], line):
            yield _make_block(group)
            group = []
        group.append(line)
    if group:
        yield _make_block(group)


def _new_group(previous: dict, line: dict) -> bool:
    top0, bottom0, top1 = previous["bbox"][1], previous["bbox"][3], line["bbox"][1]
    if top1 < bottom0:  # same row (overlapping vertically): one group
        return False
    if top1 - bottom0 > max(bottom0 - top0, 1.0):  # a gap taller than the line above
        return True
    sizes = sorted(_font_profile(part["spans"])[0] for part in (previous, line))
    return sizes[0] > 0 and sizes[1] > HEADING_SIZE_RATIO * sizes[0]


def _make_block(lines: list[dict]) -> TextBlock:
    spans = [span for line in lines for span in line["spans"]]
    size, bold, chars = _font_profile(spans)
    return TextBlock(
        text=join_lines("".join(span["text"] for span in line["spans"]) for line in lines),
        bbox=(
            min(line["bbox"][0] for line in lines),
            min(line["bbox"][1] for line in lines),
            max(line["bbox"][2] for line in lines),
            max(line["bbox"][3] for line in lines),
        ),
        size=size,
        bold=bold,
        chars=chars,
    )


def _font_profile(spans: list[dict]) -> tuple[float, bool, int]:
    """The font size of most characters (to 0.5 pt), whether most are bold, and their count."""
    # A dict, not a Counter: this runs for every line and block, and Counter's overhead was half its time.
    # ``max`` keeps the first size of the largest count, as ``most_common(1)`` does.
    sizes: dict[float, int] = {}
    bold = 0
    for span in spans:
        chars = len(span["text"].strip())
        size = round(span["size"] * 2) / 2
        sizes[size] = sizes.get(size, 0) + chars
        if span["flags"] & BOLD_FLAG:
            bold += chars
    chars = sum(sizes.values())
    size = max(sizes, key=sizes.__getitem__) if chars else 0.0
    return size, bold * 2 > chars, chars


# A line ending in a letter and a hyphen (or a soft hyphen): a word broken across lines,
# or a hyphenated compound broken at its hyphen when the word already has one ("just-in-").
_LINE_END_HYPHEN = re.compile(r"[^\W\d_][-\u00ad]$")
_COMPOUND_END = re.compile(r"-\S*-$")
# Chinese and Japanese do not separate words with spaces, so their lines join without one.
_NO_SPACE_SCRIPT = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def join_lines(lines: Iterable[str]) -> str:
    """The lines of a block as one string: single spaces, broken words rejoined.

    >>> join_lines(["notice of termi-", "nation  by   either", "party"])
    'notice of termination by either party'
    """
    text = ""
    for line in (normalize_space(raw) for raw in lines):
        if line:
            text = _join(text, line) if text else line
    return text


def _join(text: str, line: str) -> str:
    # Only the last two characters can match: searching the whole text made joining a block's lines quadratic
    if _LINE_END_HYPHEN.search(text[-2:]):
        if text[-1] == "\u00ad" or (line[0].islower() and not _COMPOUND_END.search(text)):
            return text[:-1] + line  # "termi-" + "nation"
        return text + line  # "COVID-" + "19", "just-in-" + "time": the hyphen belongs
    if _NO_SPACE_SCRIPT.match(text[-1]) and _NO_SPACE_SCRIPT.match(line[0]):
        return text + line
    return f"{text} {line}"


# --- reading order -----------------------------------------------------------


def _reading_order(blocks: list[TextBlock]) -> list[TextBlock]:
    """Blocks top to bottom; on a two-column page, the left column before the right.

    MuPDF's sort=True orders blocks by position only, which interleaves the lines of
    side-by-side columns (tracemonkey.pdf, multicolumn.pdf).
    """
    if not blocks:
        return blocks
    left, right = min(b.bbox[0] for b in blocks), max(b.bbox[2] for b in blocks)
    columns = [b for b in blocks if _is_column(b, right - left)]
    gutter = _gutter(blocks, columns, left, right)
    return blocks if gutter is None else list(_column_order(blocks, columns, gutter))


def _is_column(block: TextBlock, text_width: float) -> bool:
    """A block as wide as a column of a two-column page (titles are wider, labels narrower)."""
    share = (block.bbox[2] - block.bbox[0]) / text_width if text_width > 0 else 0.0
    return COLUMN_WIDTH[0] <= share <= COLUMN_WIDTH[1]


def _gutter(blocks: list[TextBlock], columns: list[TextBlock], left: float, right: float) -> float | None:
    """The x of the gap between two text columns, or None for a one-column page."""
    width = right - left
    gaps = _gaps(sorted((b.bbox[0], b.bbox[2]) for b in columns))
    middle = [g for g in gaps if left + 0.3 * width <= (g[0] + g[1]) / 2 <= left + 0.7 * width]
    if not middle:
        return None
    low, high = max(middle, key=lambda g: g[1] - g[0])
    gutter = (low + high) / 2
    total = sum(b.chars for b in blocks)
    left_chars = sum(b.chars for b in blocks if b.bbox[2] <= gutter)
    right_chars = sum(b.chars for b in blocks if b.bbox[0] >= gutter)
    return gutter if min(left_chars, right_chars) >= COLUMN_MIN_SHARE * total else None


def _gaps(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The uncovered stretches between sorted x intervals."""
    gaps: list[tuple[float, float]] = []
    reach: float | None = None
    for low, high in intervals:
        if reach is not None and low > reach:
            gaps.append((reach, low))
        reach = high if reach is None else max(reach, high)
    return gaps


def _column_order(blocks: list[TextBlock], columns: list[TextBlock], gutter: float) -> Iterator[TextBlock]:
    """Blocks that cross the gutter (titles, wide figures) cut the page into bands."""
    band: list[TextBlock] = []
    for block in blocks:
        if block.bbox[0] < gutter < block.bbox[2]:
            yield from _order_band(band, columns, gutter)
            band = []
            yield block
        else:
            band.append(block)
    yield from _order_band(band, columns, gutter)


def _order_band(band: list[TextBlock], columns: list[TextBlock], gutter: float) -> list[TextBlock]:
    """Within a band: what is above the columns (a running header), the left column,
    the right column, then what is below them (a footer)."""
    in_band = [b for b in band if b in columns]
    if not in_band:
        return band
    top, bottom = min(b.bbox[1] for b in in_band), max(b.bbox[3] for b in in_band)
    # More than a line's height away: a header or footer, not the short last line of a column
    above = [b for b in band if top - b.bbox[3] > b.bbox[3] - b.bbox[1]]
    below = [b for b in band if b.bbox[1] - bottom > b.bbox[3] - b.bbox[1] and b not in above]
    inside = [b for b in band if b not in above and b not in below]
    left = [b for b in inside if b.bbox[2] <= gutter]
    right = [b for b in inside if b.bbox[2] > gutter]
    return above + left + right + below
