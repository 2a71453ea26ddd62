"""Tables on a page: aligned columns of figures become rows, ``label | cell | cell`` (``citesum.tasks.tables``).

``is_tabular`` is the cheap test every page gets, on the text MuPDF already gave: at
least ``MIN_ROWS`` visual rows ending in two or more figures. Only pages it flags pay
for ``find_tables``, which builds rows from word positions: figures are right-aligned in
columns, a row's label sits left of them, header rows (years, "December 31,") above.
PyMuPDF's own ``Page.find_tables`` is not used: its default finds ruled tables only, and
10-K tables are mostly unruled (3M_2018_10K.pdf p.44: its "text" strategy takes the whole
page, prose included, as one table).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import pymupdf

from citesum.tasks.tables import is_header_row, is_value, is_year, row_line

MIN_ROWS = 2  # rows of two or more figures a table needs
MAX_BETWEEN = 5  # rows without two figures between two that have them, within one table
MAX_HEADER_ROWS = 6  # header rows and the label rows under them ("ASSETS", "Current assets:")
CELL_GAP = 0.6  # a gap wider than this share of the line height separates cells
ROW_GAP = 2.5  # a vertical gap over this many line heights ends a table
HEADER_CELL_WORDS = 5  # a header cell is a few words, a prose line is more
LABEL_WORDS = 15
_CURRENCY = frozenset("$€£")


@dataclass(frozen=True)
class _Cell:
    text: str
    x0: float
    x1: float


@dataclass(frozen=True)
class _Row:
    words: tuple[tuple[float, float, float, float, str], ...]  # x0, y0, x1, y1, text; left to right

    @property
    def y0(self) -> float:
        return min(w[1] for w in self.words)

    @property
    def y1(self) -> float:
        return max(w[3] for w in self.words)

    @property
    def height(self) -> float:
        return statistics.median(w[3] - w[1] for w in self.words)


@dataclass(frozen=True)
class FoundTable:
    """A table's rows as lines (header rows first) and where it is on the page."""

    lines: tuple[str, ...]
    header_rows: int
    bbox: tuple[float, float, float, float]


# --- the cheap test ------------------------------------------------------------


def is_tabular(data: dict) -> bool:
    """Whether the page's text (``get_text("dict")``) has ``MIN_ROWS`` rows ending in two figures or more."""
    lines = [
        (line["bbox"][1], line["bbox"][3], line["bbox"][0], "".join(s["text"] for s in line["spans"]))
        for block in data["blocks"]
        if block["type"] == 0
        for line in block["lines"]
    ]
    lines.sort(key=lambda item: (item[0] + item[1]) / 2)
    rows, current, bottom = 0, [], -1.0
    for top, low, x0, text in [*lines, (1e9, 1e9, 0.0, "")]:
        if current and (top + low) / 2 > bottom:
            rows += _trailing_figures(" ".join(t for _, t in sorted(current))) >= 2
            current = []
        if not current:
            bottom = low
        current.append((x0, text))
        if rows >= MIN_ROWS:
            return True
    return False


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
            yield _Row(tuple(sorted(current)))
            current = []
        current.append(word)
    if current:
        yield _Row(tuple(sorted(current)))


@lru_cache(maxsize=1024)  # a row's cells are asked for by each step below
def _cells(row: _Row, left: float = -1e9, right: float = 1e9) -> tuple[_Cell, ...]:
    """The row's words between ``left`` and ``right`` in cells: split at wide gaps and before a "$" (it belongs to
    the figure after it, "9,889 $ 8,348"), a lone "$" joined to its figure, even one past ``right`` (the last
    column's figure set further right than the column's others: BESTBUY_2023_10K p.53)."""
    gap = CELL_GAP * row.height
    cells: list[list[tuple]] = []
    inside = [i for i, w in enumerate(row.words) if w[0] >= left and w[2] <= right]
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
        cell = _Cell(" ".join(w[4] for w in words), words[0][0], words[-1][2])
        if pending is not None:
            cell, pending = _Cell(pending.text + cell.text, cell.x0, cell.x1), None
        if cell.text in _CURRENCY:
            pending = cell
        elif cell.text == "%" and merged:
            merged[-1] = _Cell(merged[-1].text + "%", merged[-1].x0, cell.x1)
        else:
            merged.append(cell)
    # A sign with no figure after it is left out: as a cell of its own it made a column of "$" (issue 12).
    return tuple(merged)


def _figures(cells: tuple[_Cell, ...]) -> list[_Cell]:
    return [c for c in cells if is_value(c.text) and not is_year(c.text)]


def _anchor_groups(rows: list[_Row]) -> Iterator[list[int]]:
    """Runs of rows with two figures or more, close enough to be one table."""
    group: list[int] = []
    for index, row in enumerate(rows):
        if len(_figures(_cells(row))) < 2:
            continue
        if group and (index - group[-1] - 1 > MAX_BETWEEN or not _close(rows, group[-1], index)):
            yield group
            group = []
        group.append(index)
    if group:
        yield group


def _close(rows: list[_Row], first: int, last: int) -> bool:
    return all(
        rows[i + 1].y0 - rows[i].y1 <= ROW_GAP * max(rows[i].height, rows[i + 1].height) for i in range(first, last)
    )


@dataclass(frozen=True)
class _Columns:
    spans: tuple[tuple[float, float], ...]  # each value column's x extent, left to right
    left: float  # where the labels begin
    right: float

    def assign(self, cells: tuple[_Cell, ...]) -> list[str] | None:
        """[label, value per column], or None when a cell crosses the columns as prose does."""
        label: list[str] = []
        values = [""] * len(self.spans)
        for cell in cells:
            if cell.x1 <= self.spans[0][0] + 1 and not is_value(cell.text):  # a centred year is a header
                label.append(cell.text)
                continue
            if len(cell.text.split()) > HEADER_CELL_WORDS:
                return None
            index = max(range(len(self.spans)), key=lambda i: self._fit(cell, i))
            if values[index] and cell.x0 > self.spans[-1][1]:
                continue  # past the last column, which has its value: a column the table did not find
            values[index] = f"{values[index]} {cell.text}".strip()
        return [" ".join(label), *values]

    def _fit(self, cell: _Cell, index: int) -> float:
        low, high = self.spans[index]
        overlap = min(cell.x1, high) - max(cell.x0, low)
        return overlap if overlap > 0 else -abs((cell.x0 + cell.x1) / 2 - (low + high) / 2)


def _columns(rows: list[_Row], group: list[int]) -> _Columns | None:
    """Value columns: clusters of figures' right edges (figures are right-aligned), in two rows or more."""
    figures = [(c, rows[i].height) for i in group for c in _figures(_cells(rows[i]))]
    clusters: list[list[_Cell]] = []
    for cell, height in sorted(figures, key=lambda f: f[0].x1):
        if clusters and cell.x1 - clusters[-1][-1].x1 <= 0.8 * height:
            clusters[-1].append(cell)
        else:
            clusters.append([cell])
    spans = tuple((min(c.x0 for c in k), max(c.x1 for c in k)) for k in clusters if len(k) >= 2)
    if len(spans) < 1:
        return None
    # The labels' column: the cell just left of the figures; text further left (a column of prose) is not the table's.
    lefts = [_label_start(_cells(rows[i]), spans[0][0]) for i in group]
    lefts = [x for x in lefts if x is not None] or [spans[0][0]]
    middle = statistics.median(lefts)
    left = min(x for x in lefts if x >= middle - 40)
    return _Columns(spans, left - 1, spans[-1][1] + 8)


def _label_start(cells: tuple[_Cell, ...], first_column: float) -> float | None:
    before = [c for c in cells if c.x1 <= first_column]
    return before[-1].x0 if before else None


def _tables(rows: list[_Row], group: list[int]) -> Iterator[FoundTable]:
    """The group's tables: its rows from the first to the last with figures, cut where prose crosses the columns."""
    columns = _columns(rows, group)
    if columns is None:
        return
    body: list[tuple[int, list[str]]] = []
    for index in [*range(group[0], group[-1] + 1), None]:
        cells = None if index is None else columns.assign(_cells(rows[index], columns.left, columns.right))
        if cells is not None and body and _continues(body[-1][1], cells):
            body[-1] = (body[-1][0], [f"{body[-1][1][0]} {cells[0]}", *cells[1:]])
            continue
        if cells is not None:
            body.append((index, cells))
            continue
        while body and len(_figures_in(body[-1][1])) < 2:  # a table ends on a row of figures
            body.pop()
        if sum(len(_figures_in(cells)) >= 2 for _, cells in body) >= MIN_ROWS:
            yield _found(rows, [*_header(rows, body[0][0], columns), *body], columns)
        body = []


def _is_title(cells: list[str]) -> bool:
    """A statement's title set over the columns ("CONSOLIDATED STATEMENTS OF OPERATIONS"): not a column's name."""
    text = " ".join(cells[1:])
    return len(text.split()) >= 3 and text.isupper() and not any(c.isdigit() for c in text)


def _continues(previous: list[str], cells: list[str]) -> bool:
    """A label broken over two lines: the first line has no values, the second starts in lower case."""
    return not any(previous[1:]) and bool(previous[0]) and cells[0][:1].islower()


def _figures_in(cells: list[str]) -> list[str]:
    return [c for c in cells[1:] if is_value(c) and not is_year(c)]


def _found(rows: list[_Row], table: list[tuple[int, list[str]]], columns: _Columns) -> FoundTable:
    header = 0
    for position, (_, cells) in enumerate(table):
        if not is_header_row(cells):
            break
        header = position + 1 if any(cells[1:]) else header
    words = [w for i, _ in table for w in rows[i].words if w[0] >= columns.left and w[2] <= columns.right]
    bbox = (min(w[0] for w in words), min(w[1] for w in words), max(w[2] for w in words), max(w[3] for w in words))
    return FoundTable(tuple(row_line(cells) for _, cells in table), header, bbox)


def _header(rows: list[_Row], first: int, columns: _Columns) -> list[tuple[int, list[str]]]:
    """The header rows above the first row of figures: short cells over the columns without figures ("2018",
    "December 31,"), and the label rows between them and the figures ("Cash Flows from Operating Activities")."""
    above: list[tuple[int, list[str]]] = []
    for index in range(first - 1, max(first - 1 - MAX_HEADER_ROWS, -1), -1):
        if not _close(rows, index, index + 1):
            break
        cells = columns.assign(_cells(rows[index], columns.left, columns.right))
        if cells is None or not any(cells) or not is_header_row(cells) or _is_title(cells):
            break
        if not any(cells[1:]) and any(any(row[1:]) for _, row in above):
            break  # a label over the column names is a caption or heading ("Segment Performance Summary")
        above.insert(0, (index, cells))
    while above and not any(above[0][1][1:]):  # a label above the header is a caption, not the table's
        above.pop(0)
    return above
