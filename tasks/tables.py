"""Table rows as text: the one format extraction writes and summarization reads.

A table block holds one line per row, ``label | cell | cell``, every row with the same
number of cells (an empty cell stays empty: ``Current assets: | |``). Its header rows
come first: the rows before the first one that states a figure other than a year.

- ``row_line`` / ``row_cells``: a row as a line and back (``text.table_rows`` finds the row lines).
- ``is_value`` / ``is_header_row`` / ``header_count``: what a figure is, and which rows name the columns.
- ``tables_in``: the tables of a chunk's text, as header rows and data rows.
- ``finding`` / ``row_findings`` / ``finding_supported``: a data row as a statement, "Total
  debt: 2018 $14,622; 2017 $13,949", and the check that a chunk's row states exactly that. A header
  row with one cell over several columns qualifies every value: "Accounts payable (Year Ended
  December 31): 2015 4,294; 2016 5,030", unless the cell is a line of one column's name that stops short
  ("Increase /" over "(Decrease)"); a label over a group of columns names each of them ("Pension 2021
  (1,330); Pension 2020 (1,288)", ``Table._groups``); a year alone as a row's label names the rows under it
  ("Total revenues (2014): ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from citesum.tasks.text import normalize_space, table_rows

SEPARATOR = " | "
# A figure as financial statements print it: "14,622", "$14,622", "(886)", "12.5%", "-3", or a dash for none.
_VALUE = re.compile(r"^[(\-\u2212\u2013]?[$\u20ac\u00a3]?\(?\d[\d,]*(?:\.\d+)?\)?%?\)?$|^[\-\u2013\u2014]$")
_YEAR = re.compile(r"^(?:FY|fiscal\s)?(?:19|20)\d\d$", re.IGNORECASE)
GROUPS = 6  # labels a header row may spread over groups of columns: the ways to split grow as 6 ** labels
DRIFT = 2  # a group's label stands within a column of its centre: |2 * label - first - last| <= DRIFT
_NAME_GOES_ON = re.compile(r"\b(?:per|vs\.)$|/$", re.IGNORECASE)  # a column name's line, besides ``_WRAPPED``
_WRAPPED = re.compile(r"\b(?:and|of|the|for|to|or|in|by|from|with|a|an|at|on|as)$|[&\-\u2013]$", re.IGNORECASE)


def row_line(cells: list[str]) -> str:
    """A row as one line; an empty label leaves the line starting with "|"."""
    return SEPARATOR.join(normalize_space(c) for c in cells).strip()


def without_separators(text: str) -> str:
    """``text`` with its table rows' cell separators as spaces: "Total debt $14,622 $13,949".

    What is embedded: a "|" per cell in every row made table chunks alike to the embedding model, whatever their
    rows said, and they crowded other chunks out of dense retrieval (FinanceBench, issue 12)."""
    spans = table_rows(text)
    for start, end in reversed(spans):
        text = text[:start] + " ".join(c for c in row_cells(text[start:end]) if c) + text[end:]
    return text


def row_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")]


def label_goes_on(label: str, following: str) -> bool:
    """A row label cut off at the end of its line, going on in ``following``: it ends in a word or sign that needs
    more ("NET INCREASE IN CASH AND" over "CASH EQUIVALENTS", "... and $355 million in" over "2021"), the next line
    starts in lower case, or the label ends in a comma and the next line goes on with no capital ("Options
    exercisable at May 31," over "2016"; "At May 31," over "Cash and equivalents" is a heading over its rows)."""
    label = label.strip()
    if _WRAPPED.search(label) or following[:1].islower():
        return True
    return label.endswith(",") and not following[:1].isupper()


def is_value(cell: str) -> bool:
    """A cell that is one figure (a year is one too)."""
    return bool(_VALUE.match(cell.replace(" ", "")))


def is_year(cell: str) -> bool:
    return bool(_YEAR.match(cell.strip()))


def is_header_row(cells: list[str]) -> bool:
    """A row naming columns: none of its value cells is a figure other than a year."""
    return not any(is_value(c) and not is_year(c) for c in cells[1:] if c)


@dataclass(frozen=True)
class Table:
    header: tuple[tuple[str, ...], ...]  # the header rows' cells
    rows: tuple[tuple[str, ...], ...]  # the data rows' cells (label first)

    @cached_property
    def _width(self) -> int:
        return max(len(r) for r in (*self.header, *self.rows))

    @cached_property
    def _valued(self) -> frozenset[int]:
        """The value columns (1-based, as in a row) that hold a figure in some data row."""
        return frozenset(i for i in range(1, self._width) if any(i < len(r) and r[i] for r in self.rows))

    def _spanning(self, row: tuple[str, ...]) -> bool:
        """A header row whose one cell of two or more words stands over several value columns ("Year Ended
        December 31,"): extraction puts such a cell in one column, the middle one or the first. A cell that stops
        short ("Vested and", "Grant Date Fair Value Per", "2022 vs.") is the first line of one column's name."""
        named = [c for c in row[1:] if c]
        return len(named) == 1 and len(named[0].split()) > 1 and len(self._valued) > 1 and row not in self._stacked

    @cached_property
    def _stacked(self) -> frozenset[tuple[str, ...]]:
        """Header rows of one cell that are lines of one column's name: a run of such rows in the same column, one of
        which stops short ("Estimated Fair" / "Value as of" / "December 31,")."""
        stacked: set[tuple[str, ...]] = set()
        run: list[tuple[str, ...]] = []  # rows of one cell each, in one column
        column = 0
        for row in (*self.header, ()):
            named = [i for i, c in enumerate(row) if i and c]
            if run and named != [column]:
                if any(_stops_short(r[column]) for r in run):
                    stacked.update(run)
                run = []
            if len(named) == 1:
                run.append(row)
                column = named[0]
        return frozenset(stacked)

    @cached_property
    def qualifier(self) -> str:
        """What the spanning header rows say of every column, "Year Ended December 31", or ""."""
        return " ".join(next(c for c in r[1:] if c) for r in self.header if self._spanning(r)).rstrip(",: ")

    @cached_property
    def column_names(self) -> tuple[str, ...]:
        """Each value column's name: its header cells, top to bottom ("December 31, 2018"), spanning rows aside, a
        group's label on each column of its group (``_groups``). A name over a column without figures moves to the
        next column (else the one before) that has figures but no name: the header cell was set a column apart from
        its values ("2018" over "" and "$30"). A column with figures but no name then takes the name of the column
        beside it (the one before, else the one after) when no row has figures in both: extraction set one column's
        figures apart ("2018" over "$6,827" and, a row below, over "| 5.1 %" one column on)."""
        width, valued = self._width, self._valued
        rows = _joined([r for r in self.header if not self._spanning(r)], valued)
        rows = [self._groups(r, rows[k + 1 :]) for k, r in enumerate(rows)]
        names = [" ".join(r[i] for r in rows if i < len(r) and r[i]) for i in range(width)]
        for i in range(1, width):
            if names[i] and i not in valued:
                j = next((j for j in (i + 1, i - 1) if 0 < j < width and j in valued and not names[j]), None)
                if j is not None:
                    names[i], names[j] = "", names[i]
        columns = {i: {i} for i in range(1, width) if names[i] and i in valued}  # the columns under each name
        for i in sorted(valued):
            if not names[i]:
                j = next((j for j in (i - 1, i + 1) if j in columns and not self._filled_with(i, columns[j])), None)
                if j is not None:
                    names[i] = names[j]
                    columns[j].add(i)
        return tuple(names[1:])

    def _filled_with(self, column: int, others: set[int]) -> bool:
        """Whether some data row has figures both in ``column`` and in one of ``others``."""
        return any(column < len(r) and r[column] and any(o < len(r) and r[o] for o in others) for r in self.rows)

    def _groups(self, row: tuple[str, ...], below: list[tuple[str, ...]]) -> tuple[str, ...]:
        """``row`` with each of its labels over every column of its group: "| 2021 | | 2022 | | | 2023 |" over "Total
        | Opened | Closed | Total | Opened | Closed | Total" names the 2022 group's three columns, not its middle one.

        Extraction sets a label over several columns in one of them, the first or one near the middle. Of the ways to
        split the columns into one run per label (``_splits``), the one kept is the split whose runs repeat each
        other's column names below most often (at least two runs alike, "Opened, Closed, Total" twice; the most runs
        of one kind first), then whose labels sit nearest their runs' centres; only the runs alike are spread. A row
        no split fits (names that continue the column names below, "Percentage" over "Change 2016"), that repeats a
        label or has more than ``GROUPS`` labels is left as it is."""
        named = [i for i in range(1, len(row)) if row[i]]
        if not 2 <= len(named) <= GROUPS or len({row[i] for i in named}) < len(named) or not below:
            return row  # a label repeated ("Total Stores" thrice) begins the column names below: no groups
        leaves = [_pattern(" ".join(r[i] for r in below if i < len(r) and r[i])) for i in range(self._width)]
        columns = sorted(self._valued.union(named, (i for i in range(1, self._width) if leaves[i])))
        best = None  # (rank, runs, the column names below each run)
        for runs in _splits(named, columns[0], columns[-1]):
            kinds = [tuple(leaves[a : b + 1]) for a, b in runs]
            counts = [kinds.count(kind) for kind in kinds if any(kind)]
            alike = sum(count > 1 for count in counts)
            off = sum(abs(m - (a + b) / 2) for m, (a, b) in zip(named, runs, strict=True))
            rank = (-max(counts, default=0), -alike, off)
            if alike >= 2 and (best is None or rank < best[0]):
                best = (rank, runs, kinds)
        if best is None:
            return row
        _, runs, kinds = best
        spread = list(row) + [""] * (self._width - len(row))
        for m, (a, b), kind in zip(named, runs, kinds, strict=True):
            if kinds.count(kind) > 1:  # a run like no other may be a label over one column only ("Other")
                spread[a : b + 1] = [row[m]] * (b - a + 1)
        return tuple(spread[: max(len(row), runs[-1][1] + 1)])

    @cached_property
    def _wrapped_labels(self) -> dict[tuple[str, ...], str]:
        """Rows whose label began on the row above, a label alone that stops short ("... CASH AND") or goes on in
        lower case ("Cost of products" over "sold | 1,234"), whole. Having no figures, such a row above the first
        data row counts as a header row (``header_count``)."""
        return {
            row: f"{above[0]} {row[0]}"
            for above, row in zip((self.header[-1] if self.header else ("",), *self.rows), self.rows, strict=False)
            if not any(above[1:]) and above[0].strip() and label_goes_on(above[0], row[0]) and any(row[1:])
        }

    @cached_property
    def _years(self) -> dict[tuple[str, ...], str]:
        """Data rows under a year set alone as a label, a group's ("2014 | | |" over a quarter's rows), that year."""
        years: dict[tuple[str, ...], str] = {}
        year = ""
        for row in (*self.header, *self.rows):
            if not any(row[1:]) and is_year(row[0]):
                year = row[0].strip()
            elif year and any(row[1:]):
                years.setdefault(row, year)
        return years

    def label(self, row: tuple[str, ...]) -> str:
        """A data row's label (whole when it began on the row above), with its group's year and the qualifier in
        brackets: "Accounts payable (Year Ended December 31)", "Total revenues (2014)"."""
        label = normalize_space(self._wrapped_labels.get(row, row[0]).rstrip(":").strip())
        if label and row in self._years:
            label = f"{label} ({self._years[row]})"
        if not (label and self.qualifier):
            return label
        # "(in thousands)", "(in millions, unaudited) 12 Weeks Ended": brackets of its own, none around it
        return f"{label} {self.qualifier}" if self.qualifier.startswith("(") else f"{label} ({self.qualifier})"


def _stops_short(name: str) -> bool:
    """A line of a column's name that the line below goes on: "Vested and", "Increase /", "2022 vs."."""
    name = name.strip()
    return bool(_WRAPPED.search(name) or _NAME_GOES_ON.search(name))


def _joined(rows: list[tuple[str, ...]], valued: frozenset[int]) -> list[tuple[str, ...]]:
    """Header rows with the labels of a row joined to those of the row below when they stand over some of its
    labels and that row names groups (it leaves a value column unnamed): "Qualified Defined" over "Benefit Pension
    Plans", "Notional | | Accrued" over "amounts | Other assets | liabilities", are one label each."""
    out: list[tuple[str, ...]] = []
    for row in rows:
        named = {i for i, cell in enumerate(row) if cell and i}
        above = out[-1] if out else ()
        over = {i for i, cell in enumerate(above) if cell and i}
        if len(above) == len(row) and len(named) > 1 and over and over <= named and not valued <= named:
            out[-1] = tuple(normalize_space(f"{a} {b}") for a, b in zip(above, row, strict=True))
        else:
            out.append(row)
    return out


def _splits(named: list[int], first: int, last: int) -> list[list[tuple[int, int]]]:
    """Every way to cut columns ``first``..``last`` into runs, one per label column of ``named`` (in order), each
    label first in its run or within a column of its centre (Verizon's "Pension" stands over the last of its three
    years, "Health Care and Life" over the middle one)."""
    if len(named) == 1:
        m = named[0]
        fits = m == first or abs(2 * m - first - last) <= DRIFT
        return [[(first, last)]] if first <= m <= last and fits else []
    m, before = named[-1], named[-2]
    starts = {m} | {2 * m - last + d for d in range(-DRIFT, DRIFT + 1)}
    return [[*rest, (a, last)] for a in sorted(starts) if before < a <= m for rest in _splits(named[:-1], first, a - 1)]


def _pattern(name: str) -> str:
    """A column name as a pattern its group's twin shares: case, footnote marks and digits aside."""
    return re.sub(r"\d+", "#", re.sub(r"\(\d{1,2}\)|\*", "", name.lower())).strip()


def tables_in(text: str) -> list[Table]:
    """The tables in ``text``: runs of row lines with the same number of cells."""
    found: list[Table] = []
    run: list[list[str]] = []
    end = -1
    for start, stop in [*table_rows(text), (len(text) + 2, len(text) + 2)]:
        cells = row_cells(text[start:stop]) if stop <= len(text) else None
        if run and (cells is None or len(cells) != len(run[0]) or text[end:start].count("\n") > 2):
            found.append(_table(run))
            run = []
        if cells is not None:
            run.append(cells)
        end = stop
    return found


def header_count(rows: list[list[str]]) -> int:
    """How many of the rows name columns: those before the first that states a figure other than a year."""
    count = 0
    while count < len(rows) and is_header_row(rows[count]):
        count += 1
    return count


def _table(rows: list[list[str]]) -> Table:
    count = header_count(rows)
    return Table(tuple(map(tuple, rows[:count])), tuple(map(tuple, rows[count:])))


def row_findings(text: str) -> dict[tuple[str, ...], str]:
    """Each data row of the tables in ``text`` (its cells) with its ``finding``."""
    found = {}
    for table in tables_in(text):
        for row in table.rows:
            if (statement := finding(table, row)) is not None:
                found.setdefault(row, statement)
    return found


def finding(table: Table, row: tuple[str, ...]) -> str | None:
    """The row as a statement, "Total debt: 2018 $14,622; 2017 $13,949", or None for a row without figures."""
    pairs = _pairs(table, row)
    label = table.label(row)
    return f"{label}: {'; '.join(pairs)}" if label and pairs else None


def _pairs(table: Table, row: tuple[str, ...]) -> list[str]:
    names = table.column_names
    return [normalize_space(f"{name} {value}") for name, value in zip(names, row[1:], strict=False) if value]


def finding_supported(chunk_text: str, sentence: str) -> bool:
    """Whether a row of the chunk has the sentence's label and each of its column-value pairs."""
    sentence = normalize_space(sentence)
    for table in tables_in(chunk_text):
        for row in table.rows:
            label = f"{table.label(row)}: "
            if len(label) > 2 and sentence.lower().startswith(label.lower()):
                wanted = [pair for pair in sentence[len(label) :].split("; ") if pair]
                pairs = set(_pairs(table, row))
                if wanted and all(pair in pairs for pair in wanted):
                    return True
    return False
