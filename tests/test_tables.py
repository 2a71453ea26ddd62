"""Tables as rows: extraction (tables this file draws with PyMuPDF, and known rows of real 10-K pages),
chunking with headers on every chunk, the sentence splitter, and row findings of the extractive synthesizer."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from citesum.tasks.ingest.chunk import chunk_document
from citesum.tasks.ingest.pdf.extract import extract_document
from citesum.tasks.ingest.pdf.layout import TEXT_FLAGS, text_blocks
from citesum.tasks.ingest.pdf.tables import ruled_tables
from citesum.tasks.ingest.sources import source_for
from citesum.tasks.records import Block, ExtractedDocument, Page, SourceFile
from citesum.tasks.summarize.evidence import CitedSentence, Draft
from citesum.tasks.summarize.synthesizers.base import SynthesisRequest
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.validate import validate
from citesum.tasks.tables import finding_supported, row_cells, row_findings
from citesum.tasks.text import sentences
from tests.summary_fixtures import evidence

FINANCEBENCH = Path(__file__).resolve().parents[2] / "shared/eval/financebench/pdfs"
needs_financebench = pytest.mark.skipif(not FINANCEBENCH.is_dir(), reason=f"FinanceBench PDFs not at {FINANCEBENCH}")
MMLONGBENCH = Path(__file__).resolve().parents[2] / "shared/eval/mmlongbench/pdfs"
needs_mmlongbench = pytest.mark.skipif(not MMLONGBENCH.is_dir(), reason=f"MMLongBench PDFs not at {MMLONGBENCH}")
TABLE_FIXTURES = Path(__file__).resolve().parents[2] / "shared/eval/robustness/tables"

SIZE = 9
INCOME = [
    ("Revenue", "32,833", "28,787"),
    ("Cost of revenue", "(19,402)", "(18,664)"),
    ("Gross profit", "13,431", "10,123"),
    ("Operating expenses", "", ""),
    ("Research and development", "(2,105)", "(1,998)"),
    ("Net income", "9,971", "7,386"),
]
PROSE = (
    "The board reviewed the results of the year and the outlook for the next one, and it approved the "
    "dividend proposed by management after a long discussion of the capital plan."
)


def right_aligned(page: pymupdf.Page, right: float, y: float, text: str) -> None:
    page.insert_text((right - pymupdf.get_text_length(text, fontsize=SIZE), y), text, fontsize=SIZE)


def draw_table(
    page: pymupdf.Page,
    rows: list[tuple[str, str, str]],
    *,
    top: float,
    left: float = 72,
    columns: tuple[float, float] = (420, 500),
    header: tuple[str, str] | None = ("2024", "2023"),
    ruled: bool = False,
) -> float:
    """Rows of a label and two right-aligned figures (a year header above); returns the y below the table."""
    y = top
    if header:
        for right, year in zip(columns, header, strict=True):
            right_aligned(page, right, y, year)
        y += 14
    for label, *values in rows:
        page.insert_text((left, y), label, fontsize=SIZE)
        for right, value in zip(columns, values, strict=True):
            if value:
                right_aligned(page, right, y, value)
        if ruled:
            page.draw_line((left - 4, y + 4), (columns[1] + 6, y + 4), width=0.5)
        y += 14
    if ruled:
        for x in (left - 4, columns[0] - 60, columns[1] - 60, columns[1] + 6):
            page.draw_line((x, top - 12), (x, y - 10), width=0.5)
    return y


def wrapped(page: pymupdf.Page, text: str, *, left: float, top: float, width: float) -> float:
    """``text`` in lines of at most ``width`` points; returns the y below it."""
    line, y = "", top
    for word in text.split():
        if line and pymupdf.get_text_length(f"{line} {word}", fontsize=SIZE) > width:
            page.insert_text((left, y), line, fontsize=SIZE)
            line, y = word, y + 12
        else:
            line = f"{line} {word}".strip()
    page.insert_text((left, y), line, fontsize=SIZE)
    return y + 12


def one_page(draw) -> list:
    doc = pymupdf.open()
    page = doc.new_page()
    draw(page)
    return text_blocks(page)


def tables(blocks) -> list:
    return [b for b in blocks if b.table]


# --- extraction ------------------------------------------------------------------


@pytest.mark.parametrize("ruled", [False, True])
def test_a_drawn_table_becomes_rows_under_its_year_header(ruled):
    def draw(page):
        y = wrapped(page, PROSE, left=72, top=72, width=440)
        draw_table(page, INCOME, top=y + 20, ruled=ruled)

    blocks = one_page(draw)
    (table,) = tables(blocks)
    assert table.text.splitlines() == [
        "| 2024 | 2023",
        "Revenue | 32,833 | 28,787",
        "Cost of revenue | (19,402) | (18,664)",
        "Gross profit | 13,431 | 10,123",
        "Operating expenses |  |",
        "Research and development | (2,105) | (1,998)",
        "Net income | 9,971 | 7,386",
    ]
    assert table.header_rows == 1
    prose = [b for b in blocks if not b.table]
    assert " ".join(b.text for b in prose) == PROSE  # the prose above is untouched, and no row is in it


def names_over_figures(page: pymupdf.Page, top: float, axis: tuple[str, ...] = ()) -> None:
    """The sample report's table (data/sample_corpus.py, 10 pt): column names set from each column's left edge,
    figures flush with its right edge, so a name stands nearer the figures of the column to its left; ``axis``: a
    chart's labels above it, spread wider than the table."""
    for x, label in zip(range(60, 540, 90), axis, strict=False):
        page.insert_text((x, top - 24), label, fontsize=10)
    edges = [72, 183, 273, 348, 423, 523]  # the columns' left edges, the last one's right edge
    names = ["Pipe material", "Confirmed leaks", "Transient", "Acoustic", "Median error (m)"]
    for left, name in zip(edges, names, strict=False):
        page.insert_text((left + 4, top), name, fontsize=10)
    rows = [("Polyethylene", "26", "24", "11", "41"), ("Ductile iron", "13", "12", "12", "29")]
    for y, (label, *values) in zip((top + 16, top + 32), rows, strict=True):
        page.insert_text((76, y), label, fontsize=10)
        for right, value in zip(edges[2:], values, strict=True):
            page.insert_text((right - 4 - pymupdf.get_text_length(value, fontsize=10), y), value, fontsize=10)


def test_column_names_set_left_over_right_aligned_figures_name_their_own_columns():
    (table,) = tables(one_page(lambda page: names_over_figures(page, 100)))
    assert table.text.splitlines() == [
        "Pipe material | Confirmed leaks | Transient | Acoustic | Median error (m)",
        "Polyethylene | 26 | 24 | 11 | 41",
        "Ductile iron | 13 | 12 | 12 | 29",
    ]


def test_a_charts_axis_labels_above_a_table_do_not_become_its_column_names():
    axis = ("2016", "2017", "2018", "2019", "2020", "2021")
    (table,) = tables(one_page(lambda page: names_over_figures(page, 100, axis)))
    assert table.text.splitlines()[0] == "Pipe material | Confirmed leaks | Transient | Acoustic | Median error (m)"


def test_a_last_column_set_wider_than_its_figures_keeps_its_name_and_percent_signs():
    def draw(page):
        # Each percentage a figure and a "%" set apart; the year over it flush with the "%" (BOEING_2022_10K p.41).
        for right, year in ((420, "2022"), (500, "2021")):
            right_aligned(page, right, 100, year)
        rows = (("Revenues", "$199", "$272"), ("Earnings", "$29", "$106"), ("Margins", "15", "39"))
        for y, (label, first, second) in zip((114, 128, 142), rows, strict=True):
            page.insert_text((72, y), label, fontsize=SIZE)
            for right, value in ((420, first), (500, second)):
                if label == "Margins":  # every figure flush, a percentage's sign hanging past
                    right_aligned(page, right, y, f"{value} %")
                else:
                    right_aligned(page, right - pymupdf.get_text_length(" %", fontsize=SIZE), y, value)

    (table,) = tables(one_page(draw))
    assert table.text.splitlines() == [
        "| 2022 | 2021",
        "Revenues | $199 | $272",
        "Earnings | $29 | $106",
        "Margins | 15 % | 39 %",
    ]


def test_a_label_broken_before_a_year_is_one_row_and_a_year_where_labels_begin_names_its_row():
    rows = [
        ("Net earnings", "$5,732", "$6,315"),
        ("Pension settlement charge, net of tax of $314 million in 2022 and $355 million in", "", ""),
        ("2021", "1,156", "1,310"),  # the label's end (LOCKHEEDMARTIN_2022_10K p.64)
        ("Comprehensive income", "$8,715", "$11,430"),
        ("April 1, 2019-", "", ""),  # a period broken after its dash (GENERALMILLS_2019_10K p.17)
        ("April 28, 2019", "8,032", "50.99"),
        ("Maturities", "", ""),
        ("2023", "$1,522", "1,551"),  # a year naming its row (JOHNSON_JOHNSON_2022_10K p.39)
        ("2024", "2,029", "1,392"),
    ]
    (table,) = tables(one_page(lambda page: draw_table(page, rows, top=100)))
    assert table.text.splitlines() == [
        "| 2024 | 2023",
        "Net earnings | $5,732 | $6,315",
        "Pension settlement charge, net of tax of $314 million in 2022 and $355 million in 2021 | 1,156 | 1,310",
        "Comprehensive income | $8,715 | $11,430",
        "April 1, 2019- April 28, 2019 | 8,032 | 50.99",
        "Maturities |  |",
        "2023 | $1,522 | 1,551",
        "2024 | 2,029 | 1,392",
    ]


def test_a_groups_year_set_where_labels_begin_names_the_rows_under_it():
    rows = [("2015", "", ""), ("Revenue", "1,823", "1,738"), ("Net income", "43", "29")]
    rows += [("2014", "", ""), ("Revenue", "1,484", "1,409"), ("Net income", "83", "59")]
    (table,) = tables(one_page(lambda page: draw_table(page, rows, top=100, header=("Dec 31", "Sep 30"))))
    assert table.text.splitlines()[:3] == ["| Dec 31 | Sep 30", "2015 |  |", "Revenue | 1,823 | 1,738"]
    assert list(row_findings(table.text).values()) == [
        "Revenue (2015): Dec 31 1,823; Sep 30 1,738",
        "Net income (2015): Dec 31 43; Sep 30 29",
        "Revenue (2014): Dec 31 1,484; Sep 30 1,409",
        "Net income (2014): Dec 31 83; Sep 30 59",
    ]


def test_a_table_beside_a_column_of_prose_keeps_the_prose_out():
    def draw(page):
        wrapped(page, PROSE + " " + PROSE, left=50, top=72, width=200)
        draw_table(page, INCOME, top=84, left=300, columns=(460, 540))

    blocks = one_page(draw)
    (table,) = tables(blocks)
    assert table.text.splitlines()[0] == "| 2024 | 2023"
    assert "Net income | 9,971 | 7,386" in table.text.splitlines()
    assert not any(word in table.text for word in ("board", "dividend", "capital"))
    assert " ".join(b.text for b in blocks if not b.table) == f"{PROSE} {PROSE}"


def test_prose_with_figures_is_no_table():
    text = (
        "Revenue rose to 32,833 in 2024 from 28,787 in 2023. Net income was 9,971 against 7,386 a year before. "
        "Cash was 1,200 and debt 3,400 at the end of the year, both within the ranges the board set."
    )
    blocks = one_page(lambda page: wrapped(page, text, left=72, top=72, width=440))
    assert not tables(blocks)
    assert " ".join(b.text for b in blocks) == text


def test_table_detection_can_be_turned_off():
    doc = pymupdf.open()
    page = doc.new_page()
    draw_table(page, INCOME, top=100)
    assert not tables(text_blocks(page, tables=False))
    assert "Net income 9,971 7,386" in " ".join(b.text for b in text_blocks(page, tables=False))


FEES = [
    ("Service", "Billing basis", "Fee (EUR)", "Service level"),
    ("Managed hosting, production", "per month", "4,500.00", "99.9% availability"),
    ("Application support", "per month", "2,750.00", "P1 response in 30 minutes"),
    ("Out-of-hours call-out", "per incident", "300.00", "P1 incidents only"),
]


def draw_grid(
    page: pymupdf.Page, rows: list[tuple[str, ...]], *, top: float, edges=(72, 222, 307, 382, 523), by_cell=False
) -> float:
    """Rows in a grid of drawn lines, every cell's text at its left edge; returns the y below the grid. With
    ``by_cell``, as a word processor draws it: each cell a rectangle of its own."""
    y = top
    for row in rows:
        for x, text in zip(edges, row, strict=False):
            page.insert_text((x + 4, y + 11), text, fontsize=SIZE)
        if by_cell:
            for left, right in zip(edges, edges[1:], strict=False):
                page.draw_rect((left, y, right, y + 16), width=0.6)
        y += 16
    if not by_cell:
        for line in range(len(rows) + 1):
            page.draw_line((edges[0], top + 16 * line), (edges[-1], top + 16 * line), width=0.6)
        for x in edges:
            page.draw_line((x, top), (x, y), width=0.6)
    return y


@pytest.mark.parametrize("by_cell", [False, True])
def test_a_ruled_grid_of_words_and_a_figure_becomes_rows_under_its_header_row(by_cell):
    """A contract's fee schedule: one figure a row beside words (the test for aligned figures wants two)."""

    def draw(page):
        page.insert_text((72, 60), "Table 1: Fee Schedule", fontsize=SIZE)
        y = draw_grid(page, FEES, top=72, by_cell=by_cell)
        wrapped(page, PROSE, left=72, top=y + 20, width=440)

    blocks = one_page(draw)
    (table,) = tables(blocks)
    assert table.text.splitlines() == [" | ".join(row) for row in FEES]
    assert table.header_rows == 1
    assert [b.text for b in blocks if not b.table] == ["Table 1: Fee Schedule", PROSE]


def test_a_grid_both_tests_find_is_one_table_the_grid():
    """Rows ending in two figures and rows of words beside one: both tests find the table. The aligned figures
    alone take "Billing basis" for the labels' column and lose the row names; the grid's lines give every cell."""
    rows = [
        ("Service", "Billing basis", "2024", "2023"),
        ("Hosting", "per month", "4,500", "4,200"),
        ("Support", "per month", "2,750", "2,600"),
        ("Call-out", "per incident", "300", "none"),
        ("Backup", "per month", "650", "included"),
    ]
    blocks = one_page(lambda page: draw_grid(page, rows, top=72))
    (table,) = tables(blocks)
    assert table.text.splitlines() == [" | ".join(row) for row in rows]
    assert table.header_rows == 1
    assert not [b for b in blocks if not b.table]


@pytest.mark.skipif(not (TABLE_FIXTURES / "chinese-tables.pdf").is_file(), reason=f"no {TABLE_FIXTURES}")
def test_a_ruled_grid_has_the_cells_pymupdf_expects():
    """PyMuPDF's own fixture: its expected cells (the pickle) for the page's grid of figures. The page's other grid
    holds no figure but years, so it is no table here."""
    import pickle

    expected = pickle.loads((TABLE_FIXTURES / "chinese-tables.pickle").read_bytes())["extracts"][1]
    with pymupdf.open(TABLE_FIXTURES / "chinese-tables.pdf") as doc:
        page = doc[0]
        (table,) = ruled_tables(page, page.get_textpage(flags=TEXT_FLAGS))
    assert [row_cells(line) for line in table.lines] == [[c.replace("\n", "") for c in row] for row in expected]
    assert table.header_rows == 1


def test_a_box_a_grid_without_figures_or_a_grid_of_prose_is_no_table():
    described = "Supports the archiving and storage of large volumes of data for the reporting of every office abroad."

    def draw(page):
        y = wrapped(page, PROSE, left=80, top=90, width=400)
        page.draw_rect((72, 72, 523, y), width=0.6)  # a boxed note: two vertical lines, no columns
        terms = [
            ("Term", "Meaning", "Where"),
            ("Charges", "the fees", "Section 5"),
            ("Term", "the period", "Section 12"),
        ]
        y = draw_grid(page, terms, top=y + 30)
        # A form laying out prose beside a figure: each description in one cell, written over several lines.
        top = y + 30
        for n in range(3):
            for left, right in ((72, 330), (330, 440), (440, 523)):
                page.draw_rect((left, top, right, top + 40), width=0.6)
            page.insert_textbox((76, top + 2, 326, top + 40), f"Data store {n}. {described}", fontsize=SIZE)
            page.insert_text((334, top + 12), "Back office", fontsize=SIZE)
            page.insert_text((444, top + 12), f"{10 * (n + 1)}", fontsize=SIZE)
            top += 40

        # A grid ruling the values of a table whose row labels stand outside it, on the left.
        top += 20
        for n, label in enumerate(("Sensitivity", "Specificity", "Accuracy")):
            page.insert_text((72, top + 16 * n + 11), label, fontsize=SIZE)
        draw_grid(
            page,
            [
                ("All studies", "93% (86-98)", "0.460"),
                ("Nurses", "88% (78-95)", "0.145"),
                ("GPs", "95% (92-97)", "0.737"),
            ],
            top=top,
            edges=(222, 307, 382, 523),
        )

    blocks = one_page(draw)
    assert not tables(blocks)
    assert PROSE in [b.text for b in blocks]
    assert any(described in b.text for b in blocks)


# --- chunking --------------------------------------------------------------------


def source() -> SourceFile:
    return SourceFile(document_id="statements.pdf", path="/corpus/statements.pdf", version="v1")


def table_doc(tmp_path: Path, rows_per_page: tuple[int, int]) -> ExtractedDocument:
    """An income statement over two pages: the header row of years on the first page only."""
    doc = pymupdf.open()
    rows = [(f"Line item {n} of the statement", f"{1000 + n:,}", f"({900 + n:,})") for n in range(sum(rows_per_page))]
    first = doc.new_page()
    first.insert_text((72, 60), "Consolidated Statement of Income", fontsize=SIZE)
    draw_table(first, rows[: rows_per_page[0]], top=90)
    draw_table(doc.new_page(), rows[rows_per_page[0] :], top=72, header=None)
    path = tmp_path / "statements.pdf"
    doc.save(path)
    return extract_document(source_for(path, tmp_path))


def test_a_table_over_a_page_break_keeps_its_header_and_cites_both_pages(tmp_path, embedder):
    extracted = table_doc(tmp_path, (40, 12))
    assert [b.table for b in extracted.pages[1].blocks] == [True]
    chunks = chunk_document(extracted, count_tokens=embedder.count_tokens, max_tokens=128).chunks
    rows = [c for c in chunks if "Line item" in c.text]
    assert len(rows) >= 4
    for chunk in rows:
        lines = chunk.text.splitlines()
        assert lines[0] == "| 2024 | 2023", chunk.text  # the header on every chunk
        assert chunk.heading == "Consolidated Statement of Income"  # the caption in the heading path
        assert embedder.count_tokens(chunk.embedding_text) <= 128
        # Embedded: the heading path, then the header and rows without their cell separators.
        plain = "\n".join(" ".join(c for c in row_cells(line) if c) for line in lines)
        assert chunk.embedding_text == f"{chunk.heading}\n{plain}"
        assert chunk.embedding_text.startswith(f"{chunk.heading}\n2024 2023\nLine item ")
    second_page = [c for c in rows if "Line item 45 of" in c.text]
    assert [(c.page_start, c.page_end) for c in second_page] == [(1, 2)]
    # Every row lands whole in exactly one chunk, in order.
    found = [line for c in rows for line in c.text.splitlines()[1:]]
    assert found == [f"Line item {n} of the statement | {1000 + n:,} | ({900 + n:,})" for n in range(52)]


def test_a_ruled_grid_over_a_page_break_keeps_its_header_row_and_cites_both_pages(tmp_path, embedder):
    rows = [(f"Service item {n}", "per month", f"{1000 + n:,}.00", f"Level {n} support") for n in range(60)]
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_text((72, 60), "Table 1: Fee Schedule", fontsize=SIZE)
    draw_grid(first, [FEES[0], *rows[:39]], top=72)
    draw_grid(doc.new_page(), rows[39:], top=72)  # no header row of its own
    doc.save(tmp_path / "fees.pdf")
    extracted = extract_document(source_for(tmp_path / "fees.pdf", tmp_path), ocr=False)
    chunks = chunk_document(extracted, count_tokens=embedder.count_tokens, max_tokens=200).chunks
    assert len(chunks) >= 4
    for chunk in chunks:
        assert chunk.text.splitlines()[0] == " | ".join(FEES[0]), chunk.text
        assert chunk.heading == "Table 1: Fee Schedule"
    assert [(c.page_start, c.page_end) for c in chunks if "Service item 45 " in c.text] == [(1, 2)]
    found = [line for c in chunks for line in c.text.splitlines()[1:]]
    assert found == [" | ".join(row) for row in rows]  # every row once, whole, in order


def test_a_table_after_text_does_not_take_headers_from_an_earlier_table():
    blocks = [
        Block("| 2024 | 2023\nRevenue | 10 | 9", page=1, table=True, header_rows=1),
        Block("The figures above are unaudited and may change.", page=1),
        Block("Other | 1 | 2", page=1, table=True),
    ]
    extracted = ExtractedDocument(source(), (Page(1, tuple(blocks), "text"),), (), "test")
    chunks = chunk_document(extracted, count_tokens=lambda t: len(t.split()) + 2, max_tokens=64).chunks
    assert [c.text for c in chunks] == [blocks[0].text, blocks[1].text, blocks[2].text]


def test_a_title_and_its_units_line_are_the_tables_caption():
    blocks = [
        Block("Net sales rose in every segment, as the table below shows.", page=1),
        Block("Consolidated Statements of Earnings", page=1),
        Block("(in millions)", page=1),
        Block("| 2024 | 2023\nRevenue | 10 | 9\nCost of sales | (6) | (5)", page=1, table=True, header_rows=1),
    ]
    extracted = ExtractedDocument(source(), (Page(1, tuple(blocks), "text"),), (), "test")
    chunks = chunk_document(extracted, count_tokens=lambda t: len(t.split()) + 2, max_tokens=64).chunks
    assert [(c.heading, c.text) for c in chunks] == [
        ("", blocks[0].text),
        ("Consolidated Statements of Earnings (in millions)", blocks[3].text),
    ]


# --- real pages ------------------------------------------------------------------


def page_tables(file: str, number: int, folder: Path = FINANCEBENCH) -> list[list[str]]:
    with pymupdf.open(folder / file) as doc:
        return [b.text.splitlines() for b in text_blocks(doc[number - 1]) if b.table]


def page_findings(file: str, number: int, holding: str, folder: Path = FINANCEBENCH) -> list[str]:
    """The row findings of the table on the page whose text holds ``holding``."""
    (table,) = [t for t in page_tables(file, number, folder) if holding in "\n".join(t)]
    return list(row_findings("\n".join(table)).values())


@needs_financebench
def test_3m_net_debt_table_unruled():
    net_debt, working_capital = page_tables("3M_2018_10K.pdf", 44)
    assert "(Millions) | 2018 | 2017 | 2017" in net_debt
    assert "Total debt | $14,622 | $13,949 | $673" in net_debt
    assert "Less: Cash, cash equivalents and marketable securities | 3,270 | 4,156 | (886)" in net_debt
    assert "Working capital (non-GAAP measure) | $6,465 | $6,590 | $(125)" in working_capital


@needs_financebench
def test_boeing_capital_keeps_its_last_years_name_and_percent_sign():
    (table,) = page_tables("BOEING_2022_10K.pdf", 41)
    assert table[0] == "Years ended December 31, | 2022 | 2021 | 2020"
    assert table[-1] == "Operating margins | 15 % | 39 % | 24 %"


@needs_financebench
def test_lockheed_labels_broken_before_a_year_are_read_whole():
    (table,) = [t for t in page_tables("LOCKHEEDMARTIN_2022_10K.pdf", 64) if "Comprehensive income" in "\n".join(t)]
    assert (
        "Other, net, net of tax of $2 million in 2022, $11 million in 2021 and $5 million in 2020 | (115) | (76) | 60"
        in table
    )


@needs_financebench
def test_3m_cash_flow_statement():
    (cash_flows,) = page_tables("3M_2018_10K.pdf", 60)
    assert cash_flows[0] == "(Millions) | 2018 | 2017 | 2016"
    assert "Purchases of property, plant and equipment (PP&E) | (1,577) | (1,373) | (1,420)" in cash_flows
    assert "Cash and cash equivalents at end of period | $2,853 | $3,053 | $2,398" in cash_flows


@needs_financebench
def test_amazon_balance_sheet():
    (balance_sheet,) = page_tables("AMAZON_2017_10K.pdf", 40)
    assert balance_sheet[:2] == ["| December 31, |", "| 2016 | 2017"]
    assert "Total assets | $83,402 | $131,310" in balance_sheet
    assert "Long-term debt | 7,694 | 24,743" in balance_sheet


@needs_financebench
def test_a_currency_sign_past_the_last_column_makes_no_cell_of_its_own():
    # GENERALMILLS_2022_10K p.59: each row's last "$ -" is set right of the columns the table found; its "$" was
    # a cell of its own ("$15.1 $"), its figure outside the table.
    securities = page_tables("GENERALMILLS_2022_10K.pdf", 59)[0]
    assert "Total | $252.4 | $437.2 | $257.6 | $442.5 | $5.2 | $5.3 | $15.1" in securities
    assert "debt securities | $2.3 | $76.9 | $2.3 | $76.9 | $- | $- | $-" in securities
    cells = [cell for line in securities for cell in row_cells(line)]
    assert not [cell for cell in cells if cell == "$" or cell.endswith(" $") or " $" in cell]


@needs_mmlongbench
def test_a_currency_sign_keeps_its_figure_set_past_the_columns():
    # BESTBUY_2023_10K p.53: the 2021 amortization "$ 80" stands further right than the column it is in.
    # It is a table of its own, under "Amortization expense was as follows ($ in millions):".
    (amortization,) = [t for t in page_tables("BESTBUY_2023_10K.pdf", 53, MMLONGBENCH) if "SG&A" in "\n".join(t)]
    assert amortization == [
        "| Statement of Earnings Location |  | 2023 | 2022 | 2021",
        "Amortization expense SG&A |  |  | $86 | $82 | $80",
    ]


@needs_mmlongbench
def test_best_buy_store_counts_name_each_year_of_their_group():
    # BESTBUY_2023_10K p.26: "2022" stands over the middle of its three columns; "Stores Opened 13" is fiscal 2022's.
    findings = page_findings("BESTBUY_2023_10K.pdf", 26, "Yardbird", MMLONGBENCH)
    assert (
        "Total Domestic segment stores: 2021 Total Stores at End of Fiscal Year 991; 2022 Stores Opened 13; 2022"
        " Stores Closed(1) (20); 2022 Total Stores at End of Fiscal Year 984; 2023 Stores Opened 9; 2023 Stores"
        " Closed (15); 2023 Total Stores at End of Fiscal Year 978" in findings
    )


@needs_financebench
def test_verizon_benefit_obligations_name_the_plan_of_every_year():
    # VERIZON_2021_10K p.89: "Pension" and "Health Care and Life" each stand over the second of their two years.
    assert (
        "Service cost (dollars in millions): Pension 2021 282; Pension 2020 305; Health Care and Life 2021 112;"
        " Health Care and Life 2020 110" in page_findings("VERIZON_2021_10K.pdf", 89, "Service cost")
    )
    # p.90: "Pension" over the last of its three years, "Health Care and Life" over the middle one.
    assert (
        "Service cost (dollars in millions): Pension 2021 282; Pension 2020 305; Pension 2019 247; Health Care and"
        " Life 2021 112; Health Care and Life 2020 110; Health Care and Life 2019 96"
        in page_findings("VERIZON_2021_10K.pdf", 90, "Service cost")
    )


@needs_financebench
def test_a_heading_above_a_table_is_not_taken_into_its_header():
    # BESTBUY_2024Q2_10Q p.17: the running "Table of Contents" link, the section heading, a sub-heading and the
    # table's caption stand over the columns; the header is the two rows that name the columns.
    with pymupdf.open(FINANCEBENCH / "BESTBUY_2024Q2_10Q.pdf") as doc:
        blocks = text_blocks(doc[16])
    domestic = next(b.text.splitlines() for b in blocks if b.table)
    assert domestic[:4] == [
        "| Three Months Ended |  | Six Months Ended |",
        "| July 29, 2023 | July 30, 2022 | July 29, 2023 | July 30, 2022",
        "Revenue | $8,890 | $9,569 | $17,691 | $19,463",
        "Revenue % change | (7.1)% | (13.1)% | (9.1)% | (10.9)%",
    ]
    assert {"Segment Performance Summary", "Domestic Segment"} <= {b.text.strip() for b in blocks if not b.table}


def statement_chunk(embedder, file: str, row: str):
    extracted = extract_document(source_for(FINANCEBENCH / file, FINANCEBENCH), ocr=False)
    chunks = chunk_document(extracted, count_tokens=embedder.count_tokens, max_tokens=200).chunks
    return next(c for c in chunks if row in c.text.splitlines())


@needs_financebench
def test_a_statements_title_and_units_line_end_its_heading_path(embedder):
    # LOCKHEEDMARTIN_2022_10K p.63: the title and "(in millions, except per share data)" are two short lines
    # over the table; AMAZON_2017_10K p.38 sets both as headings of one size, so the units line replaced the title.
    earnings = statement_chunk(embedder, "LOCKHEEDMARTIN_2022_10K.pdf", "Total net sales | 65,984 | 67,044 | 65,398")
    title = "Lockheed Martin Corporation Consolidated Statements of Earnings (in millions, except per share data)"
    assert earnings.heading.endswith(f" > {title}")
    operations = statement_chunk(embedder, "AMAZON_2017_10K.pdf", "Total net sales | 107,006 | 135,987 | 177,866")
    assert operations.heading.endswith(
        " > CONSOLIDATED STATEMENTS OF OPERATIONS > (in millions, except per share data)"
    )


# --- sentences and findings ------------------------------------------------------

NET_DEBT = (
    "The following table provides net debt.\n\n"
    "| 2018 | 2017\n"
    "Total debt | $14,622 | $13,949\n"
    "Less: Cash | 3,270 | 4,156\n"
    "Net debt | $11,352 | $9,793"
)


def test_each_table_row_is_a_sentence_of_its_own():
    assert sentences(NET_DEBT) == [
        "The following table provides net debt.",
        "| 2018 | 2017",
        "Total debt | $14,622 | $13,949",
        "Less: Cash | 3,270 | 4,156",
        "Net debt | $11,352 | $9,793",
    ]
    assert sentences("Paid | in part. Held | 2\nTaken | in full. Left | 3") == [
        "Paid | in part. Held | 2",  # a row line is one piece whatever it holds
        "Taken | in full. Left | 3",
    ]
    # A lone line with a "|" in running text (a 10-K's running header) is no table row.
    assert sentences("3M | 2018 Form 10-K. Sales rose. Costs fell.") == [
        "3M | 2018 Form 10-K.",
        "Sales rose.",
        "Costs fell.",
    ]


def test_a_row_finding_is_checked_against_its_row():
    assert row_findings(NET_DEBT)[("Total debt", "$14,622", "$13,949")] == "Total debt: 2018 $14,622; 2017 $13,949"
    assert finding_supported(NET_DEBT, "Total debt: 2018 $14,622; 2017 $13,949")
    assert finding_supported(NET_DEBT, "Net debt: 2017 $9,793")
    assert not finding_supported(NET_DEBT, "Total debt: 2018 $14,623; 2017 $13,949")  # a wrong value
    assert not finding_supported(NET_DEBT, "Total debt: 2017 $14,622")  # a value under the wrong year
    assert not finding_supported(NET_DEBT, "Net debt: 2018 $14,622")  # another row's value
    texts = {"c1": NET_DEBT}
    good = CitedSentence("Total debt: 2018 $14,622; 2017 $13,949", ("c1",))
    wrong = CitedSentence("Total debt: 2018 $14,000; 2017 $13,949", ("c1",))
    assert validate(Draft((good,), ""), texts, verbatim=True).ok
    assert not validate(Draft((wrong,), ""), texts, verbatim=True).ok
    assert not validate(Draft((wrong,), ""), texts, verbatim=False).ok


CASH_FLOWS = (
    "| | Year Ended December 31, |\n"  # one cell over the three years, set in the middle column
    "| 2015 | 2016 | 2017\n"
    "Accounts payable | 4,294 | 5,030 | 7,175\n"
    "\n"
    "(Millions) | 2018 | | 2017 | \n"  # each year a column to the left of its values
    "Beginning balance | | $30 | | $20"
)


def test_a_header_over_several_columns_qualifies_the_row_and_a_name_beside_its_values_moves_to_them():
    findings = set(row_findings(CASH_FLOWS).values())
    assert findings == {
        "Accounts payable (Year Ended December 31): 2015 4,294; 2016 5,030; 2017 7,175",
        "Beginning balance: 2018 $30; 2017 $20",
    }
    assert all(finding_supported(CASH_FLOWS, f) for f in findings)
    assert not finding_supported(CASH_FLOWS, "Accounts payable (Year Ended December 31): 2015 5,030")


MEMBERSHIPS = (
    "| Domestic | International | Domestic |\n"
    "| Streaming | Streaming | DVD | Consolidated\n"
    "|  | (in thousands) |  |\n"  # a unit in brackets already, over every column
    "Total memberships at end of period | 44,738 | 30,024 | 4,904 | —"
)


def test_a_spanning_header_in_brackets_is_not_bracketed_twice():
    (found,) = row_findings(MEMBERSHIPS).values()
    assert found == (
        "Total memberships at end of period (in thousands): Domestic Streaming 44,738; International Streaming"
        " 30,024; Domestic DVD 4,904; Consolidated —"
    )
    assert finding_supported(MEMBERSHIPS, found)
    unit_first = MEMBERSHIPS.replace("(in thousands) |", "(in thousands) Year End |")
    (found,) = row_findings(unit_first).values()
    assert found.startswith("Total memberships at end of period (in thousands) Year End: Domestic Streaming 44,738;")


STORES = (
    "| 2021 |  | 2022 |  |  | 2023 |\n"  # each year over its group, set in the group's middle column
    "| Total Stores |  |  | Total Stores |  |  | Total Stores\n"  # one label thrice: the names below go on
    "| at End of | Stores | Stores | at End of | Stores | Stores | at End of\n"
    "| Fiscal Year | Opened | Closed(1) | Fiscal Year | Opened | Closed | Fiscal Year\n"
    "Total Domestic segment stores | 991 | 13 | (20) | 984 | 9 | (15) | 978"
)
PLANS = (
    "|  | Qualified Defined |  | Retiree Medical and\n"  # a label on two lines, each over the second of its pair
    "|  | Benefit Pension Plans |  | Life Insurance Plans\n"
    "At December 31, | 2021 | 2020 | 2021 | 2020\n"
    "Settlements paid | (1,330) | (1,288) | — | —"
)
CHANGE = (
    "|  |  |  | Percentage | Percentage\n"  # labels that begin the column names below, not groups
    "|  |  |  | Change 2016 | Change 2015\n"
    "(In millions) | 2016 | 2015 | 2014 | Versus 2015 | Versus 2014\n"
    "Revenue | $ 85,320 | $ 93,580 | $ 86,833 | (9)% | 8%"
)


def test_a_label_over_a_group_of_columns_names_each_column_of_the_group():
    (stores,) = row_findings(STORES).values()
    assert stores == (
        "Total Domestic segment stores: 2021 Total Stores at End of Fiscal Year 991; 2022 Stores Opened 13; 2022"
        " Stores Closed(1) (20); 2022 Total Stores at End of Fiscal Year 984; 2023 Stores Opened 9; 2023 Stores"
        " Closed (15); 2023 Total Stores at End of Fiscal Year 978"
    )
    (plans,) = row_findings(PLANS).values()
    assert plans == (
        "Settlements paid: Qualified Defined Benefit Pension Plans 2021 (1,330); Qualified Defined Benefit Pension"
        " Plans 2020 (1,288); Retiree Medical and Life Insurance Plans 2021 —; Retiree Medical and Life Insurance"
        " Plans 2020 —"
    )
    assert finding_supported(PLANS, plans)
    assert not finding_supported(PLANS, "Settlements paid: 2021 —")
    (change,) = row_findings(CHANGE).values()
    assert change == (
        "Revenue: 2016 $ 85,320; 2015 $ 93,580; 2014 $ 86,833; Percentage Change 2016 Versus 2015 (9)%; Percentage"
        " Change 2015 Versus 2014 8%"
    )


WRAPPED = (
    "(Millions) | 2018 | 2017\n"
    "NET INCREASE IN CASH AND | |\n"  # the label ran onto the next line, beside its figures
    "CASH EQUIVALENTS | 655 | (200)\n"
    "At May 31, | |\n"  # a heading over the rows below, not a cut label
    "Cash and equivalents | 1 | 2\n"
    "Cost of products | |\n"  # goes on below in lower case
    "sold | 3 | 4"
)


def test_a_column_name_whose_line_stops_short_names_its_column_only():
    change = "|  |  | Increase /\n| 2021 | 2020 | (Decrease)\nCash and cash equivalents | $2,921 | $22,171 | $(19,250)"
    assert list(row_findings(change).values()) == [
        "Cash and cash equivalents: 2021 $2,921; 2020 $22,171; Increase / (Decrease) $(19,250)"
    ]
    # Lines of one name stacked over the last column (AMAZON_2017_10K p.33), not a qualifier of every column.
    stacked = (
        "|  |  | Estimated Fair\n|  |  | Value as of\n|  |  | December 31,\n| 2018 | Total | 2017\n"
        "Money market funds | $11,343 | $11,343 | $11,343"
    )
    assert list(row_findings(stacked).values()) == [
        "Money market funds: 2018 $11,343; Total $11,343; Estimated Fair Value as of December 31, 2017 $11,343"
    ]
    spanning = "| Year Ended December 31, |\n| 2021 | 2020\nRevenue | 5 | 4"
    assert list(row_findings(spanning).values()) == ["Revenue (Year Ended December 31): 2021 5; 2020 4"]


def test_a_label_cut_off_at_the_end_of_its_line_is_read_whole():
    assert set(row_findings(WRAPPED).values()) == {
        "NET INCREASE IN CASH AND CASH EQUIVALENTS: 2018 655; 2017 (200)",
        "Cash and equivalents: 2018 1; 2017 2",
        "Cost of products sold: 2018 3; 2017 4",
    }
    assert finding_supported(WRAPPED, "NET INCREASE IN CASH AND CASH EQUIVALENTS: 2018 655")
    assert not finding_supported(WRAPPED, "CASH EQUIVALENTS: 2018 655")
    below_a_row = "Net income | 5 | 6\n" + WRAPPED.split("\n", 1)[1]  # no header: the cut label follows a row
    assert "NET INCREASE IN CASH AND CASH EQUIVALENTS: 655; (200)" in row_findings(below_a_row).values()


def test_a_fee_schedule_in_a_grid_is_quoted_by_its_row(tmp_path, embedder):
    """Extracted, chunked and summarized: the row that answers, not the grid run into the next paragraph."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "Table 1: Fee Schedule", fontsize=SIZE)
    y = draw_grid(page, FEES, top=72)
    wrapped(page, "Charges for professional services are invoiced monthly in arrears.", left=72, top=y + 20, width=440)
    doc.save(tmp_path / "agreement.pdf")
    extracted = extract_document(source_for(tmp_path / "agreement.pdf", tmp_path), ocr=False)
    chunks = chunk_document(extracted, count_tokens=embedder.count_tokens, max_tokens=200).chunks
    ev = evidence(*(c.text for c in chunks))
    request = SynthesisRequest("How much is application support?", tuple(ev), 3)
    draft = ExtractiveSynthesizer(embedder).synthesize(request)
    finding = (
        "Application support: Billing basis per month; Fee (EUR) 2,750.00; Service level P1 response in 30 minutes"
    )
    assert finding in [s.text for s in draft.sentences], draft.raw
    assert not any("|" in s.text or ("Application" in s.text and "Out-of-hours" in s.text) for s in draft.sentences)
    assert validate(draft, {e.label: e.candidate.chunk.text for e in ev}, verbatim=True).ok


def test_the_extractive_synthesizer_quotes_a_row_as_its_finding(embedder):
    ev = evidence(NET_DEBT)
    draft = ExtractiveSynthesizer(embedder).synthesize(SynthesisRequest("What was total debt?", tuple(ev), 3))
    texts = [s.text for s in draft.sentences]
    assert "Total debt: 2018 $14,622; 2017 $13,949" in texts, draft.raw
    assert not any("|" in t for t in texts)  # no row quoted raw, no table run together into one sentence
    assert validate(draft, {e.label: e.candidate.chunk.text for e in ev}, verbatim=True).ok


SEGMENT = (  # 3M_2018_10K p.34: each year's percentages one column right of its amounts
    "| 2018 |  | 2017 |  | 2016\n"
    "Sales (millions) | $6,827 |  | $6,235 |  | $5,948\n"
    "Organic local-currency |  | 5.1 % |  | 6.3 % |\n"
    "Acquisitions | 7.3 |  | 2.2 |  |\n"
    "Percent of sales |  | 25.2 % |  | 33.1 % | 23.6"
)


def test_figures_set_a_column_apart_from_their_years_name_take_its_name():
    findings = row_findings(SEGMENT)
    assert findings[("Organic local-currency", "", "5.1 %", "", "6.3 %", "")] == (
        "Organic local-currency: 2018 5.1 %; 2017 6.3 %"
    )
    assert findings[("Percent of sales", "", "25.2 %", "", "33.1 %", "23.6")] == (
        "Percent of sales: 2018 25.2 %; 2017 33.1 %; 2016 23.6"
    )
    assert finding_supported(SEGMENT, "Percent of sales: 2017 33.1 %")
    # a row with figures in both columns of a year keeps them apart: they are two columns, one without a name
    beside = row_findings(SEGMENT + "\nChange | 1.0 | 2.0 | 3.0 | 4.0 | 5.0")
    assert beside[("Change", "1.0", "2.0", "3.0", "4.0", "5.0")] == "Change: 2018 1.0; 2.0; 2017 3.0; 4.0; 2016 5.0"


def draw_at(page: pymupdf.Page, y: float, cells: list[tuple[float, str]], right: list[tuple[float, str]] = ()) -> None:
    """Text starting at each x of ``cells``, and figures right-aligned at each x of ``right``, on one line."""
    for x, text in cells:
        page.insert_text((x, y), text, fontsize=SIZE)
    for x, text in right:
        right_aligned(page, x, y, text)


def test_a_label_broken_over_two_lines_at_a_tables_end_is_in_the_table_only():
    # CORNING_2021_10K p.28: the last row's label ends on the line of its figures ("net $ (38) $ (29)"); the table's
    # bounds ended at the label's first line, and that line stood as text after the table too
    def draw(page):
        y = draw_table(page, INCOME[:3], top=100)
        page.insert_text((72, y), "Total translated earnings contract gain (loss),", fontsize=SIZE)
        draw_at(page, y + 14, [(72, "net")], [(420, "354"), (500, "273")])

    blocks = one_page(draw)
    (table,) = tables(blocks)
    assert table.text.endswith("Total translated earnings contract gain (loss), net | 354 | 273")
    assert not [b.text for b in blocks if not b.table and "354" in b.text]


def test_values_set_on_the_line_under_their_label_are_its_row():
    # 3M_2018_10K p.81, JOHNSON_JOHNSON_2023_8K p.19: values set on the last line of a label that MuPDF reads as one
    # line came out as a row without a label ("| 273 | 277") under a label without values
    def draw(page):
        y = draw_table(page, INCOME[:2], top=100)
        page.insert_text((72, y), "Property, sales-related and other taxes", fontsize=SIZE)
        draw_at(page, y + 12, [], [(420, "273"), (500, "277")])
        draw_at(page, y + 26, [(72, "Pension and postretirement benefits")], [(420, "76"), (500, "69")])

    (table,) = tables(one_page(draw))
    assert table.text.splitlines()[-2:] == [
        "Property, sales-related and other taxes | 273 | 277",
        "Pension and postretirement benefits | 76 | 69",
    ]
    assert "Property, sales-related and other taxes: 2024 273; 2023 277" in row_findings(table.text).values()


def test_a_rows_values_set_one_line_under_its_first_are_its_row():
    # GENERALMILLS_2019_10K p.18: each row's first figure on its label's line, the other years' a line below; the
    # second line had been a row without a label ("|  | 30,624.0 | 21,812.6 ..."), and "Net sales 16,865.2", above the
    # first line of two figures, the table's header
    columns = (380, 450, 520)

    def draw(page):
        draw_at(page, 100, [], list(zip(columns, ("2024", "2023", "2022"), strict=True)))
        draw_at(page, 114, [(72, "Net sales")], [(columns[0], "16,865.2")])
        signs = [(columns[1] - 52, "$"), (columns[2] - 52, "$")]
        draw_at(page, 126, signs, [(columns[1], "15,740.4"), (columns[2], "15,619.8")])
        draw_at(page, 140, [(72, "Gross margin")], list(zip(columns, ("5,756.8", "5,435.6", "5,567.8"), strict=True)))
        draw_at(page, 154, [(72, "Total assets")], [(columns[0], "30,111.2")])
        draw_at(page, 166, [], [(columns[1], "30,624.0"), (columns[2], "21,812.6")])
        draw_at(page, 180, [(72, "Total debt")], list(zip(columns, ("14,490.0", "15,818.6", "9,481.7"), strict=True)))
        # a figure under a row that holds most of its own is no rest of it: a cell spanning rows (2303.08559v2.pdf p.15)
        draw_at(page, 194, [(72, "Backlog")], [(columns[1], "7.5"), (columns[2], "9.5")])
        draw_at(page, 206, [], [(columns[0], "4")])
        draw_at(page, 220, [(72, "Orders")], list(zip(columns, ("1.5", "2.5", "3.5"), strict=True)))

    (table,) = tables(one_page(draw))
    assert table.text.splitlines() == [
        "| 2024 | 2023 | 2022",
        "Net sales | 16,865.2 | $15,740.4 | $15,619.8",
        "Gross margin | 5,756.8 | 5,435.6 | 5,567.8",
        "Total assets | 30,111.2 | 30,624.0 | 21,812.6",
        "Total debt | 14,490.0 | 15,818.6 | 9,481.7",
        "Backlog |  | 7.5 | 9.5",
        "| 4 |  |",
        "Orders | 1.5 | 2.5 | 3.5",
    ]
    assert table.header_rows == 1
    assert "Total assets: 2024 30,111.2; 2023 30,624.0; 2022 21,812.6" in row_findings(table.text).values()


@needs_financebench
def test_general_mills_selected_data_keeps_each_years_figure_in_its_row():
    (table,) = [t for t in page_tables("GENERALMILLS_2019_10K.pdf", 18) if any("Total assets" in r for r in t)]
    assert "Total assets | 30,111.2 | 30,624.0 | 21,812.6 | 21,712.3 | 21,832.0" in table
    assert "Total debt (c) | 14,490.0 | 15,818.6 | 9,481.7 | 8,430.9 | 9,191.5" in table
    assert [r for r in table if r.startswith("Net sales")] == [
        "Net sales | 16,865.2 | $$ 15,740.4 | $15,619.8 | $16,563.1 | $17,630.3"
    ]
    # p.43: the first year's taxes on the label's line, its earnings and the other years' figures a line below
    (taxes,) = [t for t in page_tables("GENERALMILLS_2019_10K.pdf", 43) if any("Tax items" in r for r in t)]
    assert "Tax items (b) | - | 72.9 | - | (40.9) | - | - | - | - | - | (78.6)" in taxes
    assert (
        "Restructuring charges (e) | 77.6 | 14.6 | 82.7 | 21.4 | 224.1 | 70.2 | 229.8 | 69.0 | 343.5 | 125.8" in taxes
    )


def test_figures_with_a_percent_sign_set_apart_share_a_column_with_plain_figures():
    # GENERALMILLS_2019_10K p.92: "Discount rate 3.91 % 4.20 %" over "Rate of salary increases 4.17 4.27", two rows
    # whose figures' right edges differed by the "%" sign set after them, found no column and stood as text
    columns = (380, 450, 520)

    def draw(page):
        draw_at(page, 100, [], list(zip(columns, ("2024", "2023", "2022"), strict=True)))
        draw_at(page, 114, [(72, "Discount rate")], list(zip(columns, ("3.91", "4.20", "3.79"), strict=True)))
        draw_at(page, 114, [(x + 3, "%") for x in columns])
        draw_at(
            page, 128, [(72, "Rate of salary increases")], list(zip(columns, ("4.17", "4.27", "4.47"), strict=True))
        )

    (table,) = tables(one_page(draw))
    assert table.text.splitlines() == [
        "| 2024 | 2023 | 2022",
        "Discount rate | 3.91 % | 4.20 % | 3.79 %",
        "Rate of salary increases | 4.17 | 4.27 | 4.47",
    ]


@needs_financebench
def test_general_mills_rates_with_percent_signs_set_apart_are_a_table():
    (table,) = [t for t in page_tables("GENERALMILLS_2019_10K.pdf", 92) if any("3.91" in r for r in t)]
    assert "Discount rate | 3.91 % | 4.20 % | 3.79 % | 4.17 % | 3.10 % | 3.60 %" in table
    assert "Rate of salary increases | 4.17 | 4.27 | - | - | 4.47 | 4.44" in table


@needs_financebench
def test_percentages_whose_sign_stands_past_the_column_keep_the_columns_of_the_amounts():
    # Their signs had made columns of their own, every row beside them split over twice the columns
    (sales,) = [t for t in page_tables("JOHNSON_JOHNSON_2022_10K.pdf", 28) if any("Volume" in r for r in t)]
    assert sales[:3] == [
        "Sales increase/(decrease) due to: | 2022 | 2021",
        "Volume | 6.9 % | 12.9 %",
        "Price | (0.8) | (0.7)",
    ]
    (cost,) = [t for t in page_tables("LOCKHEEDMARTIN_2020_10K.pdf", 40) if any("% of product sales" in r for r in t)]
    assert "% of product sales | 89.2 % | 89.1 % | 89.5 %" in cost
    assert "Cost of sales – services | (9,371) | (8,731) | (7,738)" in cost
    # a sign set close, one word with its figure ("(3.7)%"), beside signs set apart ("4.8 %")
    (immunology,) = [t for t in page_tables("JOHNSON_JOHNSON_2022_10K.pdf", 30) if any("REMICADE" in r for r in t)]
    assert "Total Immunology | $16,935 | 16,750 | 1.1 % | 4.8 % | (3.7)%" in immunology
    assert "REMICADE | 2,343 | 3,190 | (26.6) | (25.3) | (1.3)" in immunology


def test_a_table_under_the_next_heading_is_a_table_of_its_own():
    # BOEING_2022_10K p.80: Note 7's inventory table, two lines under Note 6's table, became rows of it, its years a
    # body row and its figures named by Note 6's columns ("Long-term contracts in progress: financing Other Assets
    # 2022 $582; Total 2021 $872")
    def draw(page):
        y = draw_table(page, INCOME[:3], top=100, header=("Receivables", "Total"))
        page.insert_text((72, y), "Note 7 - Inventories", fontsize=SIZE)
        page.insert_text((72, y + 14), "Inventories at December 31 consisted of the following:", fontsize=SIZE)
        draw_table(
            page,
            [("Long-term contracts in progress", "$582", "$872"), ("Commercial programs", "67,702", "68,106")],
            top=y + 28,
        )

    blocks = one_page(draw)
    first, second = tables(blocks)
    assert first.text.splitlines()[-1] == "Gross profit | 13,431 | 10,123"
    assert second.text.splitlines() == [
        "| 2024 | 2023",
        "Long-term contracts in progress | $582 | $872",
        "Commercial programs | 67,702 | 68,106",
    ]
    assert [b.text for b in blocks if "Note 7" in b.text] == ["Note 7 - Inventories"]
    assert "Long-term contracts in progress: 2024 $582; 2023 $872" in row_findings(second.text).values()


def test_the_sentence_that_introduces_a_table_is_text_not_its_header_row():
    # MICROSOFT_2016_10K p.94: under a "Year Ended June 30," header the figures of two tables are one run, cut where
    # prose crosses the columns; the paragraph's last line and the sentence introducing the second table, both short
    # of the columns, had become its first header rows, repeated on each of its chunks
    lead_in = "Other operating income (loss) activity was as follows in the years presented:"

    def draw(page):
        y = draw_table(page, INCOME[:3], top=100)
        y = wrapped(page, PROSE, left=72, top=y, width=440)
        page.insert_text((72, y), lead_in, fontsize=SIZE)
        page.insert_text((72, y + 14), "Year Ended June 30,", fontsize=SIZE)
        draw_table(page, [("Impairment", "(1,110)", "(127)"), ("Other amounts", "(6,669)", "275")], top=y + 14)

    blocks = one_page(draw)
    first, second = tables(blocks)
    assert second.text.splitlines() == [
        "Year Ended June 30, | 2024 | 2023",
        "Impairment | (1,110) | (127)",
        "Other amounts | (6,669) | 275",
    ]
    assert second.header_rows == 1
    assert [b.text for b in blocks if not b.table] == [f"{PROSE} {lead_in}"]


def test_a_line_that_introduces_a_table_ends_the_one_above_and_its_rows_take_their_own_header():
    # WALMART_2020_10K p.75: with no row of years alone between them, a tax rate table, "Deferred Taxes", "The
    # significant components ... are as follows:" and the deferred tax table were one table, and its rows were
    # named by the first table's years ("Property and equipment: 2019 2020 4,621; 2018 2019 4,175")
    lead_in = "The components of deferred taxes are as follows:"

    def draw(page):
        page.insert_text((72, 100), "Year Ended June 30,", fontsize=SIZE)
        y = draw_table(page, INCOME[:3], top=100)
        page.insert_text((72, y), "Deferred Taxes", fontsize=SIZE)
        page.insert_text((72, y + 14), lead_in, fontsize=SIZE)
        page.insert_text((72, y + 28), "(Amounts in millions)", fontsize=SIZE)
        draw_table(page, [("Property and equipment", "4,621", "4,175")], top=y + 28, header=("2022", "2021"))

    blocks = one_page(draw)
    first, second = tables(blocks)
    assert first.text.splitlines()[-1] == "Gross profit | 13,431 | 10,123"
    assert second.text.splitlines() == ["(Amounts in millions) | 2022 | 2021", "Property and equipment | 4,621 | 4,175"]
    assert list(row_findings(second.text).values()) == ["Property and equipment: 2022 4,621; 2021 4,175"]
    assert [b.text for b in blocks if not b.table] == ["Deferred Taxes", lead_in]


@needs_financebench
def test_a_paragraphs_last_line_above_a_table_stays_in_its_paragraph():
    # BOEING_2022_10K p.97: "... and the net periodic benefit cost for the subsequent year." headed the assumptions table
    assumptions = [t for t in page_tables("BOEING_2022_10K.pdf", 97) if "Discount rate: |  |  |" in t]
    assert [t[0] for t in assumptions] == ["December 31, | 2022 | 2021 | 2020"]


def test_a_group_label_set_left_of_the_labels_does_not_hide_the_years_above_it():
    # BESTBUY_2019_10K p.78, AMAZON_2017_10K p.69: "Numerator" or "Net sales:" set left of the row labels, under the
    # years, ended the search for the table's header, and its rows were quoted without their years. The label is a
    # row of the table: skipped, it was lost inside the table's bounds (ACTIVISIONBLIZZARD_2019_10K p.69's "Assets").
    def draw(page):
        for right, year in zip((420, 500), ("2024", "2023"), strict=True):
            right_aligned(page, right, 100, year)
        page.insert_text((60, 114), "Numerator", fontsize=SIZE)
        draw_table(page, INCOME[:3], top=128, left=80, header=None)

    (table,) = tables(one_page(draw))
    assert table.text.splitlines()[:3] == ["| 2024 | 2023", "Numerator |  |", "Revenue | 32,833 | 28,787"]
    assert row_findings(table.text)[("Revenue", "32,833", "28,787")] == "Revenue: 2024 32,833; 2023 28,787"


@needs_financebench
def test_boeing_inventories_are_a_table_of_their_own():
    assert page_findings("BOEING_2022_10K.pdf", 80, "Long-term contracts")[:2] == [
        "Long-term contracts in progress: 2022 $582; 2021 $872",
        "Commercial aircraft programs: 2022 67,702; 2021 68,106",
    ]


@needs_financebench
def test_a_broken_label_ending_a_table_on_a_real_page_is_in_its_table_only():
    blocks = text_blocks(pymupdf.open(FINANCEBENCH / "CORNING_2021_10K.pdf")[27])
    assert [b.table for b in blocks if "$ (286)" in b.text or "$(286)" in b.text] == [True]


@needs_financebench
def test_amazon_net_sales_by_group_and_best_buy_earnings_per_share_keep_their_years():
    assert page_findings("AMAZON_2017_10K.pdf", 69, "Online stores")[0] == (
        "Online stores (1) (Year Ended December 31): 2015 $76,863; 2016 $91,431; 2017 $108,354"
    )
    assert page_findings("BESTBUY_2019_10K.pdf", 78, "Net earnings from")[0] == (
        "Net earnings from continuing operations: 2019 $1,464; 2018 $999; 2017 $1,207"
    )


@needs_financebench
def test_a_balance_sheets_assets_label_set_left_of_its_rows_stays_in_its_table():
    (table,) = page_tables("ACTIVISIONBLIZZARD_2019_10K.pdf", 69)
    assert table[:3] == ["| At December 31, 2019 | At December 31, 2018", "Assets |  |", "Current assets: |  |"]
    # and among the rows: Best Buy's "Denominator", under its earnings per share's "Numerator" row
    (eps,) = [t for t in page_tables("BESTBUY_2019_10K.pdf", 78) if "Numerator |  |  |" in t]
    assert eps[eps.index("Numerator |  |  |") + 2] == "Denominator |  |  |"
