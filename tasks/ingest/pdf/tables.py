"""Tables on a page: aligned columns of figures become rows, ``label | cell | cell`` (``citesum.tasks.tables``).

``page_tables`` runs two cheap tests on the text MuPDF already gave. ``MIN_ROWS`` visual rows
ending in two or more figures flag a page for ``find_tables``, which builds rows from word
positions: figures are right-aligned in columns, a row's label sits left of them, header rows
(years, "December 31,") above. ``MIN_ROWS`` visual rows of ``MIN_PIECES`` separate pieces of
text, one a figure, not ending in two, flag it for ``ruled_tables``: a grid drawn with lines,
whose cells may hold words as well as a figure (a contract's fee schedule: "Managed hosting |
per month | 4,500.00 | 99.9% availability"). Only a flagged page pays for its drawings
(``get_cdrawings`` costs about two thirds of its text extraction) or for word positions.
PyMuPDF's own ``Page.find_tables`` is not used: its default finds ruled tables only, at about
0.5 s a page (the sample agreement's fee schedule, alone on its page), and 10-K tables are
mostly unruled (3M_2018_10K.pdf p.44: its "text" strategy takes the whole page, prose
included, as one table).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

import pymupdf

from citesum.tasks.tables import header_count, is_header_row, is_value, is_year, label_goes_on, row_line

MIN_ROWS = 2  # rows of two or more figures a table needs
MIN_PIECES = 3  # a ruled table's row: its label and two cells or more, MuPDF's separate lines side by side
MAX_BETWEEN = 5  # rows without two figures between two that have them, within one table
MAX_HEADER_ROWS = 6  # header rows and the label rows under them ("ASSETS", "Current assets:")
CELL_GAP = 0.6  # a gap wider than this share of the line height separates cells
ROW_GAP = 2.5  # a vertical gap over this many line heights ends a table
HEADER_CELL_WORDS = 5  # a header cell is a few words, a prose line is more
LABEL_WORDS = 15
_CURRENCY = frozenset("$€£")
_FOLLOWS = re.compile(r"\b(?:as follows|the following|following (?:is|are))\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Cell:
    text: str
    x0: float
    x1: float
    end: float  # where its figure ends: x1, or short of a "%" after it


# Compared by identity: ``_cells``'s cache hashes a row on each call, by value that hashed every word of it.
@dataclass(frozen=True, eq=False)
class _Row:
    words: tuple[tuple[float, float, float, float, str], ...]  # x0, y0, x1, y1, text; left to right
    # Worked out once (``_row``): the steps below ask for them over and over
    y0: float
    y1: float
    height: float  # the words' median height


@dataclass(frozen=True)
class FoundTable:
    """A table's rows as lines (header rows first) and where it is on the page."""

    lines: tuple[str, ...]
    header_rows: int
    bbox: tuple[float, float, float, float]


# --- the cheap test ------------------------------------------------------------


def page_tables(page: pymupdf.Page, textpage: pymupdf.TextPage, data: dict) -> list[FoundTable]:
    """The page's tables, top to bottom; ``data`` is its text (``get_text("dict")``) from ``textpage``. Where a
    grid and a table of aligned figures overlap, the grid is kept: its lines give the cells, where the figures'
    alignment took a column of words for the labels and left the row names out (obs-productdesc-en.pdf p.7)."""
    figures, cells = page_flags(data)
    grids = ruled_tables(page, textpage) if cells else []
    aligned = find_tables(page, textpage) if figures else []
    found = grids + [t for t in aligned if not any(pymupdf.Rect(t.bbox).intersects(g.bbox) for g in grids)]
    return sorted(found, key=lambda t: t.bbox[1])


def page_flags(data: dict) -> tuple[bool, bool]:
    """The two cheap tests on the page's text: ``MIN_ROWS`` rows ending in two figures (for ``find_tables``), and
    ``MIN_ROWS`` rows of separate pieces with a figure among words (for ``ruled_tables``)."""
    rows = _visual_rows(data)
    return _enough(rows, _ends_in_figures), _enough(rows, _is_cell_row)


def _visual_rows(data: dict) -> list[list[str]]:
    """The texts of MuPDF's lines that share a baseline band, each band's left to right."""
    lines = [
        (line["bbox"][1], line["bbox"][3], line["bbox"][0], "".join(s["text"] for s in line["spans"]))
        for block in data["blocks"]
        if block["type"] == 0
        for line in block["lines"]
    ]
    lines.sort(key=lambda item: (item[0] + item[1]) / 2)
    rows: list[list[str]] = []
    current: list[tuple[float, str]] = []
    bottom = -1.0
    for top, low, x0, text in lines:
        if current and (top + low) / 2 > bottom:
            rows.append([t for _, t in sorted(current)])
            current = []
        if not current:
            bottom = low
        current.append((x0, text))
    if current:
        rows.append([t for _, t in sorted(current)])
    return rows


def _enough(rows: list[list[str]], test: Callable[[list[str]], bool]) -> bool:
    """``MIN_ROWS`` of the rows pass ``test``: the rows after those are not tested."""
    return len(list(islice(filter(test, rows), MIN_ROWS))) == MIN_ROWS


def _ends_in_figures(pieces: list[str]) -> bool:
    return _trailing_figures(" ".join(pieces)) >= 2


def _is_cell_row(pieces: list[str]) -> bool:
    """Separate pieces, one a figure, the row not ending in two: words beside the figure (rows of figures, most
    of a 10-K's, are the other test's, and flagging them here cost its pages their drawings for no table)."""
    texts = [p.strip() for p in pieces if p.strip()]
    if len(texts) < MIN_PIECES:
        return False
    return any(is_value(t) and not is_year(t) for t in texts[1:]) and not _ends_in_figures(texts)


def _trailing_figures(text: str) -> int:
    count = 0
    for token in reversed(text.split()):
        if token in _CURRENCY or token == "%":
            continue
        if not is_value(token):
            break
        count += 1
    return count


# --- rows from word positions ----------------------------------------------------


def find_tables(page: pymupdf.Page, textpage: pymupdf.TextPage) -> list[FoundTable]:
    """The page's tables, top to bottom, from its text (``textpage``)."""
    # Unsorted: PyMuPDF's sort costs two thirds of the time here, and ``_rows`` orders the words anyway.
    words = [w[:5] for w in page.get_text("words", textpage=textpage) if w[4].strip()]
    rows = list(_rows(words))
    return [table for group in _anchor_groups(rows) for table in _tables(rows, group)]


def _rows(words: list[tuple]) -> Iterator[_Row]:
    """Words in visual rows (one baseline band), each row left to right."""
    current: list[tuple] = []
    for word in sorted(words, key=lambda w: (w[1] + w[3]) / 2):
        if current and (word[1] + word[3]) / 2 > current[0][3]:
            yield _row(tuple(sorted(current)))
            current = []
        current.append(word)
    if current:
        yield _row(tuple(sorted(current)))


def _row(words: tuple[tuple[float, float, float, float, str], ...]) -> _Row:
    return _Row(
        words, min(w[1] for w in words), max(w[3] for w in words), statistics.median(w[3] - w[1] for w in words)
    )


@lru_cache(maxsize=1024)  # a row's cells are asked for by each step below
def _cells(row: _Row, left: float = -1e9, right: float = 1e9) -> tuple[_Cell, ...]:
    """The row's words that reach past ``left`` and begin before ``right``, with the words before them that the same
    cell begins with (a label set left of where labels begin, "Net earnings ...", a balance sheet's "Assets": cut off,
    its words were lost inside the table's bounds; a column of prose further left stays out), in cells (a word may
    end past ``right``: the last column's name or a percentage's sign set wider than its figures, BOEING_2022_10K
    p.41's "2020" and "24 %"): split
    at wide gaps and before a "$" (it belongs to the figure after it, "9,889 $ 8,348"), a lone "$" joined to its
    figure, even one past ``right`` (the last column's figure set further right than the column's others:
    BESTBUY_2023_10K p.53)."""
    gap = CELL_GAP * row.height
    cells: list[list[tuple]] = []
    inside = [i for i, w in enumerate(row.words) if w[2] > left and w[0] < right]
    while inside and inside[0] > 0 and row.words[inside[0]][0] - row.words[inside[0] - 1][2] <= gap:
        inside.insert(0, inside[0] - 1)  # a label begun left of where labels begin ("Net earnings", "Assets") is whole
    if inside and row.words[inside[-1]][4] in _CURRENCY and inside[-1] + 1 < len(row.words):
        if is_value(row.words[inside[-1] + 1][4]):  # a sign at the columns' right edge: its figure is past it
            inside.append(inside[-1] + 1)
    for word in (row.words[i] for i in inside):
        if cells and word[0] - cells[-1][-1][2] <= gap and word[4] not in _CURRENCY:
            cells[-1].append(word)
        else:
            cells.append([word])
    merged: list[_Cell] = []
    pending: _Cell | None = None
    for words in cells:
        ends = [_figure_end(w) for w in words if w[4] != "%"]
        cell = _Cell(" ".join(w[4] for w in words), words[0][0], words[-1][2], max(ends, default=words[-1][2]))
        if pending is not None:
            cell, pending = _Cell(pending.text + cell.text, cell.x0, cell.x1, cell.end), None
        if cell.text in _CURRENCY:
            pending = cell
        elif cell.text == "%" and merged:
            merged[-1] = _Cell(merged[-1].text + "%", merged[-1].x0, cell.x1, merged[-1].end)
        else:
            merged.append(cell)
    # A sign with no figure after it is left out: as a cell of its own it made a column of "$" (issue 12).
    return tuple(merged)


def _figure_end(word: tuple) -> float:
    """Where a word's figure ends: short of a "%" it ends in ("(1.6)%"), by about a character's width."""
    x0, _, x1, _, text = word
    return x1 - (x1 - x0) / len(text) if len(text) > 1 and text.endswith("%") else x1


def _figures(cells: tuple[_Cell, ...]) -> list[_Cell]:
    return [c for c in cells if is_value(c.text) and not is_year(c.text)]


def _anchor_groups(rows: list[_Row]) -> Iterator[list[int]]:
    """Runs of rows with two figures or more, close enough to be one table, and no row of years between them: years
    over the columns head the next table (BOEING_2022_10K p.80: Note 7's inventories, two lines under Note 6's table,
    had become rows of it)."""
    group: list[int] = []
    for index, row in enumerate(rows):
        if len(_figures(_cells(row))) < 2:
            continue
        if group and _apart(rows, group[-1], index):
            yield group
            group = []
        group.append(index)
    if group:
        yield group


def _apart(rows: list[_Row], last: int, index: int) -> bool:
    """Rows ``last`` and ``index`` (both with figures) are in different tables: too many rows or too much space
    between them, or a row of years."""
    between = range(last + 1, index)
    return len(between) > MAX_BETWEEN or not _close(rows, last, index) or any(_years_row(rows[i]) for i in between)


def _years_row(row: _Row) -> bool:
    """A row of two years or more and nothing else: column names."""
    cells = _cells(row)
    return len(cells) >= 2 and all(is_year(c.text) for c in cells)


def _close(rows: list[_Row], first: int, last: int) -> bool:
    return all(
        rows[i + 1].y0 - rows[i].y1 <= ROW_GAP * max(rows[i].height, rows[i + 1].height) for i in range(first, last)
    )


@dataclass(frozen=True)
class _Columns:
    spans: tuple[tuple[float, float], ...]  # each value column's x extent, left to right
    left: float  # where the labels begin
    right: float

    def assign(self, cells: tuple[_Cell, ...], body: bool = True) -> list[str] | None:
        """[label, value per column], or None when a cell crosses the columns as prose does. ``body``: a row among the
        figures, not above them (``_is_label``)."""
        label: list[str] = []
        values = [""] * len(self.spans)
        for cell in cells:
            if self._is_label(cell, body):
                label.append(cell.text)
                continue
            if len(cell.text.split()) > HEADER_CELL_WORDS:
                return None
            index = max(range(len(self.spans)), key=lambda i: self._fit(cell, i))
            if values[index] and cell.x0 > self.spans[-1][1]:
                continue  # past the last column, which has its value: a column the table did not find
            values[index] = f"{values[index]} {cell.text}".strip()
        return [" ".join(label), *values]

    def assign_header(self, cells: tuple[_Cell, ...]) -> list[str] | None:
        """A header row's cells: as ``assign``, but one name per column, in order, when the row has as many names
        right of the label as there are columns and ``assign`` put two in one column. Names set left-aligned over
        right-aligned figures stand nearer the column to their left: the sample report's "Confirmed leaks" and
        "Transient" had become one column's name, leaving the next without one."""
        if len(cells) == 1 and is_year(cells[0].text) and self._is_label(cells[0]):  # a group's year, over its rows
            return [cells[0].text, *[""] * len(self.spans)]
        assigned = self.assign(cells, body=False)
        if assigned is None:
            return None
        names = [c for c in cells if not self._is_label(c, body=False)]
        if len(names) == len(self.spans) and sum(bool(v) for v in assigned[1:]) < len(names):
            if all(self._between_neighbours(name, i) for i, name in enumerate(names)):
                return [assigned[0], *(name.text for name in names)]
        return assigned

    def _between_neighbours(self, cell: _Cell, index: int) -> bool:
        """The cell's middle lies past the column before ``index`` and short of the one after: a name over its
        column, not a chart's axis labels spread wider than the table (VERIZON_2021_10K p.19)."""
        middle = (cell.x0 + cell.x1) / 2
        low = self.spans[index - 1][1] if index else self.left
        high = self.spans[index + 1][0] if index + 1 < len(self.spans) else self.right
        return low < middle < high

    def _is_label(self, cell: _Cell, body: bool = True) -> bool:
        """Left of the figures: words, or in a ``body`` row a figure nearer where the labels begin than the figures (a
        label's second line "2021", the end of "... $355 million in"; a year naming its row). Above the figures a
        year is a column's name, centred over them, or a chart's axis (VERIZON_2021_10K p.19)."""
        if cell.x1 > self.spans[0][0] + 1:
            return False
        return not is_value(cell.text) or (body and cell.x0 - self.left < self.spans[0][0] - cell.x1)

    def _fit(self, cell: _Cell, index: int) -> float:
        low, high = self.spans[index]
        overlap = min(cell.x1, high) - max(cell.x0, low)
        return overlap if overlap > 0 else -abs((cell.x0 + cell.x1) / 2 - (low + high) / 2)


def _columns(rows: list[_Row], group: list[int]) -> _Columns | None:
    """Value columns: clusters of figures' right edges (figures are right-aligned), in two rows or more. A "%" set
    apart after a figure stands inside its column's edge in some tables (BOEING_2022_10K p.97's rates under
    "$48,770") and past it in others, where the figures with a sign had made columns of their own beside the figures
    without one (3M_2018_10K p.34: "Organic local-currency | | 5.1 %" beside "Acquisitions | 7.3 |") or found none
    (GENERALMILLS_2019_10K p.92's "3.91 %" over "4.17"): of the two readings, the one that leaves the fewest
    figures out of its columns (CORNING_2021_10K p.37's "7%" over "(12%)" lie apart by their signs' ends), then puts
    no two figures of a row in one column, then finds the fewest columns; the first when they tie."""
    figures = [(c, rows[i].height, i) for i in group for c in _figures(_cells(rows[i]))]
    readings = [_Reading.of(figures, lambda c: c.x1), _Reading.of(figures, lambda c: c.end)]
    best = min((r for r in readings if r.spans), key=lambda r: (r.left_out, r.crowded, len(r.spans)), default=None)
    if best is None:
        return None
    spans = best.spans
    # The labels' column: the cell just left of the figures; text further left (a column of prose) is not the table's.
    lefts = [_label_start(_cells(rows[i]), spans[0][0]) for i in group]
    lefts = [x for x in lefts if x is not None] or [spans[0][0]]
    middle = statistics.median(lefts)
    left = min(x for x in lefts if x >= middle - 40)
    return _Columns(spans, left - 1, spans[-1][1] + 8)


@dataclass(frozen=True)
class _Reading:
    """Value columns read from one edge of the figures."""

    spans: tuple[tuple[float, float], ...]  # each column's x extent
    left_out: int  # figures in no column: no other figure's edge near theirs
    crowded: bool  # a column holds two figures of one row

    @classmethod
    def of(cls, figures: list[tuple[_Cell, float, int]], edge: Callable[[_Cell], float]) -> _Reading:
        """Columns of figures (with their row's height and index) whose ``edge`` lies within 0.8 heights of the one
        before, two or more."""
        clusters: list[list[tuple[_Cell, float, int]]] = []
        for figure in sorted(figures, key=lambda f: edge(f[0])):
            if clusters and edge(figure[0]) - edge(clusters[-1][-1][0]) <= 0.8 * figure[1]:
                clusters[-1].append(figure)
            else:
                clusters.append([figure])
        columns = [k for k in clusters if len(k) >= 2]
        return cls(
            spans=tuple((min(c.x0 for c, *_ in k), max(c.x1 for c, *_ in k)) for k in columns),
            left_out=len(figures) - sum(len(k) for k in columns),
            crowded=any(len({row for *_, row in k}) < len(k) for k in columns),
        )


def _label_start(cells: tuple[_Cell, ...], first_column: float) -> float | None:
    before = [c for c in cells if c.x1 <= first_column]
    return before[-1].x0 if before else None


def _tables(rows: list[_Row], group: list[int]) -> Iterator[FoundTable]:
    """The group's tables: its rows from the first to the last with figures, cut where prose crosses the columns or
    a line introduces the next table."""
    columns = _columns(rows, group)
    if columns is None:
        return
    body: list[tuple[int, list[str]]] = []
    ends: list[int] = []  # each body row's last line: a label broken over two lines ends on the second
    introduced = False  # the body follows a line that introduces it: one row of figures makes it a table
    for index in [*range(_first_row(rows, group[0], columns), group[-1] + 1), None]:
        cells = None if index is None else columns.assign(_cells(rows[index], columns.left, columns.right))
        introduces = cells is not None and _introduces(cells)
        if introduces:
            cells = None  # ends the table above as prose crossing the columns does
        if cells is not None and body and _completes(body[-1][1], cells):
            above = body[-1][1]
            body[-1] = (body[-1][0], [above[0], *(a or b for a, b in zip(above[1:], cells[1:], strict=True))])
            ends[-1] = index
            continue
        if cells is not None and body and _continues(body[-1][1], cells):
            body[-1] = (body[-1][0], [f"{body[-1][1][0]} {cells[0]}", *cells[1:]])
            ends[-1] = index
            continue
        if cells is not None:
            body.append((index, cells))
            ends.append(index)
            continue
        while body and len(_figures_in(body[-1][1])) < 2:  # a table ends on a row of figures
            body.pop()
            ends.pop()
        while body and _is_lead_in(body[0][1]):  # and starts after the prose that crossed the columns
            body.pop(0)
            ends.pop(0)
        if sum(len(_figures_in(cells)) >= 2 for _, cells in body) >= (1 if introduced else MIN_ROWS):
            yield _found(rows, [*_header(rows, body[0][0], columns), *body], columns, ends[-1])
        body, ends, introduced = [], [], introduces


def _first_row(rows: list[_Row], first: int, columns: _Columns) -> int:
    """The group's first line, or the line above when that line holds the first row's label and first figures and
    the group's first line the rest (``_completes``): the group begins at a line of two figures or more."""
    if first == 0 or not _close(rows, first - 1, first):
        return first
    above = columns.assign(_cells(rows[first - 1], columns.left, columns.right))
    below = columns.assign(_cells(rows[first], columns.left, columns.right))
    return first - 1 if above is not None and below is not None and _completes(above, below) else first


def _completes(previous: list[str], cells: list[str]) -> bool:
    """The rest of a row's figures, set a line under its label and first figures (GENERALMILLS_2019_10K p.18: each
    row's first year on the label's line, the other years a line below, which had become a row without a label; p.43:
    the first year's taxes on the label's line, its earnings and the other years below): no label, figures in
    exactly the columns the row above left empty, and more of them than the label's line holds. A figure or two
    under a row that has most of its own is no such rest: a cell spanning a group of rows (2303.08559v2.pdf p.15's
    label counts)."""
    if cells[0] or not previous[0] or not _figures_in(previous) or not _figures_in(cells):
        return False
    above, below = [bool(v) for v in previous[1:]], [bool(v) for v in cells[1:]]
    return sum(above) < sum(below) and all(a != b for a, b in zip(above, below, strict=True))


def _is_title(cells: list[str]) -> bool:
    """A statement's title set over the columns ("CONSOLIDATED STATEMENTS OF OPERATIONS"): not a column's name."""
    text = " ".join(cells[1:])
    return len(text.split()) >= 3 and text.isupper() and not any(c.isdigit() for c in text)


def _is_lead_in(cells: list[str]) -> bool:
    """A line of prose short of the columns, no row: a paragraph's last line or the sentence that introduces the
    table ("Corporate and Other operating income (loss) activity was as follows during the periods presented:",
    MICROSOFT_2016_10K p.94), which had become the table's first header row, repeated on each of its chunks."""
    label = cells[0]
    return not any(cells[1:]) and (_prose(label) or label.endswith(":")) and len(label.split()) > HEADER_CELL_WORDS


def _introduces(cells: list[str]) -> bool:
    """A line that introduces a table ("The significant components of the Company's deferred tax account balances
    are as follows:", WALMART_2020_10K p.75): no row's label says so. Two tables' figures form one run when no row of
    years alone stands between them, and the second's rows had been named by the first's columns."""
    return not any(cells[1:]) and cells[0].endswith((":", ".")) and _FOLLOWS.search(cells[0]) is not None


def _prose(label: str) -> bool:
    """A line that reads as part of a paragraph: it starts in lower case or ends a sentence or clause (not "U.S.")."""
    last = label.split()[-1] if label.split() else ""
    return label[:1].islower() or label.endswith(";") or (last.endswith(".") and "." not in last[:-1])


def _continues(previous: list[str], cells: list[str]) -> bool:
    """One row over two lines: the first line is a label without values, and the second starts in lower case or the
    first stops short ("Pension settlement charge, net of tax of $314 million in 2022 and $355 million in" / "2021"),
    or the second has figures and no label: they were set on the last line of a label that MuPDF reads as one
    line ("Property, sales-related and other taxes" over "273 277", 3M_2018_10K p.81), which had lost its label."""
    if any(previous[1:]) or not previous[0]:
        return False
    if not cells[0]:  # a paragraph's line beside the table is no label ("management letter;", ITC's report p.6)
        return bool(_figures_in(cells)) and not _prose(previous[0])
    return label_goes_on(previous[0], cells[0])


def _figures_in(cells: list[str]) -> list[str]:
    return [c for c in cells[1:] if is_value(c) and not is_year(c)]


def _found(rows: list[_Row], table: list[tuple[int, list[str]]], columns: _Columns, last: int) -> FoundTable:
    """The table from its rows' lines, ``last`` its last line: the bounds take every line from the first, a label's
    second line too ("net $ (38) $ (29)", CORNING_2021_10K p.28), which else stood as text beside the table too."""
    header = 0
    for position, (_, cells) in enumerate(table):
        if not is_header_row(cells):
            break
        header = position + 1 if any(cells[1:]) else header
    lines = range(table[0][0], last + 1)
    words = [w for i in lines for w in rows[i].words if w[0] >= columns.left and w[0] < columns.right]
    bbox = (min(w[0] for w in words), min(w[1] for w in words), max(w[2] for w in words), max(w[3] for w in words))
    return FoundTable(tuple(row_line(cells) for _, cells in table), header, bbox)


def _header(rows: list[_Row], first: int, columns: _Columns) -> list[tuple[int, list[str]]]:
    """The header rows above the first row of figures: short cells over the columns without figures ("2018",
    "December 31,"), and the label rows between them and the figures ("Cash Flows from Operating Activities")."""
    above: list[tuple[int, list[str]]] = []
    for index in range(first - 1, max(first - 1 - MAX_HEADER_ROWS, -1), -1):
        if not _close(rows, index, index + 1):
            break
        cells = columns.assign_header(_cells(rows[index], columns.left, columns.right))
        if cells is None or not any(cells) or not is_header_row(cells) or _is_title(cells):
            break
        if not any(cells[1:]) and any(any(row[1:]) for _, row in above):
            break  # a label over the column names is a caption or heading ("Segment Performance Summary")
        above.insert(0, (index, cells))
    # A label above the header is a caption, not the table's; a group's year stays over its rows.
    while above and not any(above[0][1][1:]) and not is_year(above[0][1][0]):
        above.pop(0)
    return above


# --- ruled grids -------------------------------------------------------------------

RULE_WIDTH = 2.0  # a filled rectangle thinner than this is a drawn line
SNAP = 2.0  # lines closer than this are one grid line


def ruled_tables(page: pymupdf.Page, textpage: pymupdf.TextPage) -> list[FoundTable]:
    """Tables drawn as a grid: vertical lines make the columns, horizontal lines across them the rows; each
    word goes to the cell its centre is in (a cell spanning columns holds its words in its first column). A
    grid is a table when ``MIN_ROWS`` of its rows hold words and a figure after the first cell, no cell holds
    more than ``LABEL_WORDS`` words and no text stands beside its rows; the rows before the first that holds a
    figure name the columns."""
    horizontal, vertical = _rules(page)
    words = [w[:5] for w in page.get_text("words", textpage=textpage) if w[4].strip()]
    found = []
    for columns in _grids(vertical):
        top, bottom = min(v[1] for v in columns), max(v[2] for v in columns)
        xs = _snapped(v[0] for v in columns)
        width = xs[-1] - xs[0]
        ys = _snapped(
            y
            for y, x0, x1 in horizontal
            if top - SNAP <= y <= bottom + SNAP and min(x1, xs[-1]) - max(x0, xs[0]) > width / 2
        )
        if len(xs) < 3 or len(ys) < 3:
            continue
        rows = [_grid_row(words, columns, xs, low, high) for low, high in zip(ys, ys[1:], strict=False)]
        rows = [cells for cells in rows if any(cells)]
        if sum(_labelled(cells) and bool(_figures_in(cells)) for cells in rows) < MIN_ROWS:
            continue  # a chart's axis, or figures alone
        if any(len(cell.split()) > LABEL_WORDS for cells in rows for cell in cells):
            continue  # a grid that lays out prose (a form's descriptions): its sentences stay sentences
        if any(ys[0] < (w[1] + w[3]) / 2 < ys[-1] and not xs[0] < (w[0] + w[2]) / 2 < xs[-1] for w in words):
            continue  # text beside the grid's rows: the grid rules part of a table (its labels stand outside it)
        lines = tuple(row_line(cells) for cells in rows)
        found.append(FoundTable(lines, header_count(rows), (xs[0], ys[0], xs[-1], ys[-1])))
    return found


def _labelled(cells: list[str]) -> bool:
    """A row with words in it, not figures alone (its label may be a number: "1 | ICBC | 330,435.30")."""
    return any(cell and not is_value(cell) for cell in cells)


def _rules(page: pymupdf.Page) -> tuple[list[tuple[float, float, float]], list[tuple[float, float, float]]]:
    """The page's drawn lines, horizontal ones as (y, x0, x1), vertical ones as (x, y0, y1), each run of pieces
    that meet joined into one: a word processor draws a grid cell by cell, each border a rectangle or a piece."""
    horizontal, vertical = [], []
    for path in page.get_cdrawings():
        for item in path["items"]:
            for (x0, y0), (x1, y1) in _segments(item, stroked="s" in path["type"]):
                if abs(y1 - y0) < 1 and abs(x1 - x0) > SNAP:
                    horizontal.append(((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
                elif abs(x1 - x0) < 1 and abs(y1 - y0) > SNAP:
                    vertical.append(((x0 + x1) / 2, min(y0, y1), max(y0, y1)))
    return _joined(horizontal), _joined(vertical)


def _segments(item: tuple, stroked: bool) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """A path item's straight lines: a line; a stroked rectangle's four sides; a filled one only when it is thin
    (a rule drawn as a filled bar), not a box of shading."""
    if item[0] == "l":
        return [(item[1], item[2])]
    if item[0] != "re":
        return []
    x0, y0, x1, y1 = item[1]
    if y1 - y0 <= RULE_WIDTH:
        return [((x0, (y0 + y1) / 2), (x1, (y0 + y1) / 2))]
    if x1 - x0 <= RULE_WIDTH:
        return [(((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1))]
    if not stroked:
        return []
    return [((x0, y0), (x1, y0)), ((x0, y1), (x1, y1)), ((x0, y0), (x0, y1)), ((x1, y0), (x1, y1))]


def _joined(lines: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Lines at one position (within ``SNAP``) whose extents meet or overlap, as one line each."""
    out: list[tuple[float, float, float]] = []
    for at, low, high in sorted(lines, key=lambda line: (round(line[0] / SNAP), line[1])):
        if out and abs(out[-1][0] - at) <= SNAP and low <= out[-1][2] + SNAP:
            out[-1] = (out[-1][0], out[-1][1], max(out[-1][2], high))
        else:
            out.append((at, low, high))
    return out


def _grids(vertical: list[tuple[float, float, float]]) -> Iterator[list[tuple[float, float, float]]]:
    """Vertical lines whose heights overlap or meet, one group per grid."""
    group: list[tuple[float, float, float]] = []
    reach = 0.0  # the lowest end of the group's lines
    for line in sorted(vertical, key=lambda v: v[1]):
        if group and line[1] > reach + SNAP:
            yield group
            group = []
        reach = max(reach, line[2]) if group else line[2]
        group.append(line)
    if group:
        yield group


def _snapped(values: Iterable[float]) -> list[float]:
    out: list[float] = []
    for value in sorted(values):
        if not out or value - out[-1] > SNAP:
            out.append(value)
    return out


def _grid_row(
    words: list[tuple], columns: list[tuple[float, float, float]], xs: list[float], low: float, high: float
) -> list[str]:
    """One row's cells: the words between two horizontal lines, in the columns whose left line crosses the row."""
    middle = (low + high) / 2
    edges = [i for i, x in enumerate(xs[:-1]) if any(abs(v[0] - x) <= SNAP and v[1] <= middle <= v[2] for v in columns)]
    cells: list[list[tuple]] = [[] for _ in xs[:-1]]
    for word in words:
        cx, cy = (word[0] + word[2]) / 2, (word[1] + word[3]) / 2
        if low < cy < high and xs[0] < cx < xs[-1]:
            cells[max((i for i in edges if xs[i] < cx), default=0)].append(word)
    return [" ".join(w[4] for line in _rows(cell) for w in line.words) for cell in cells]  # lines top to bottom
