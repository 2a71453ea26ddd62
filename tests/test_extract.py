"""Extraction against real tricky PDFs (../shared/eval/robustness) and PDFs made here.

The robustness matrix runs every file of cases.jsonl through the time-limited path
(a child process per file, two at a time); OCR is off there because the scanned
forms take minutes to OCR; dedicated tests OCR a few small scans.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import pickle
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymupdf
import pytest

from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest.pdf.extract import extract_document, parser_version
from citesum.tasks.ingest.pdf.layout import join_lines
from citesum.tasks.ingest.pdf.sandbox import extract_with_time_limit
from citesum.tasks.ingest.sources import discover_sources, hash_file, source_for
from citesum.tasks.records import ExtractedDocument, Page, SourceFile

ROBUSTNESS = Path(__file__).resolve().parents[2] / "shared/eval/robustness"
CASES = (
    [json.loads(line) for line in (ROBUSTNESS / "cases.jsonl").read_text().splitlines()] if ROBUSTNESS.is_dir() else []
)
CASE_BY_FILE = {case["file"]: case for case in CASES}
DOCUMENT_KINDS = {"empty_file", "unreadable", "not_pdf", "corrupt", "encrypted", "no_pages", "timeout", "crashed"}
MATRIX_TIMEOUT = 120.0  # s per document; the largest (352 pages) takes about 2 s

needs_corpus = pytest.mark.skipif(not CASES, reason=f"robustness corpus not found at {ROBUSTNESS}")
needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="Tesseract is not installed")

LOREM = (
    "Either party may end this agreement by written notice to the other party. The notice "
    "takes effect thirty days after it is received, unless the notice names a later date. "
)


# --- helpers -------------------------------------------------------------------


def robustness_source(file: str) -> SourceFile:
    return source_for(ROBUSTNESS / file, ROBUSTNESS)


def extracted(file: str, **options) -> ExtractedDocument:
    return extract_document(robustness_source(file), **options)


def page_texts(page: Page) -> list[str]:
    return [block.text for block in page.blocks]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))


def save(doc: pymupdf.Document, path: Path) -> SourceFile:
    doc.save(path)
    return source_for(path, path.parent)


def write_file(path: Path, data: bytes) -> SourceFile:
    path.write_bytes(data)
    return source_for(path, path.parent)


def image_of_text(text: str) -> pymupdf.Pixmap:
    """A 200 dpi picture of a line of large text: a page with no text layer."""
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=100)
    page.insert_text((20, 60), text, fontsize=28)
    return page.get_pixmap(dpi=200)


# --- the robustness matrix -----------------------------------------------------


@pytest.fixture(scope="module")
def matrix() -> dict[str, ExtractedDocument | DocumentError]:
    """Every robustness file through extract_with_time_limit, two children at a time."""

    def run(case: dict) -> ExtractedDocument | DocumentError:
        try:
            return extract_with_time_limit(
                robustness_source(case["file"]), password=case["password"] or None, ocr=False, timeout=MATRIX_TIMEOUT
            )
        except DocumentError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip([case["file"] for case in CASES], pool.map(run, CASES), strict=True))


def expected_error(case: dict) -> str | None:
    """What cases.jsonl says MuPDF does with the file, as the DocumentError kind expected."""
    if case.get("mupdf_pages") is None:  # open() or page_count failed
        return "corrupt"
    if (
        case["category"] == "corrupt"
        and case["mupdf_repaired"]
        and case["mupdf_pages"]
        and not case["mupdf_text_chars_first3"]
    ):
        return "corrupt"  # repaired into blank pages
    return "no_pages" if case["mupdf_pages"] == 0 else None


@needs_corpus
@pytest.mark.parametrize("file", [case["file"] for case in CASES])
def test_robustness_file_gives_pages_or_a_clear_error(matrix, file):
    case, outcome = CASE_BY_FILE[file], matrix[file]
    if isinstance(outcome, DocumentError):
        assert outcome.kind == expected_error(case), str(outcome)
        assert file in str(outcome) and outcome.message
        return
    assert expected_error(case) is None, f"expected {expected_error(case)}, got a document"
    assert [page.number for page in outcome.pages] == list(range(1, case["mupdf_pages"] + 1))
    for page in outcome.pages:
        assert_page_accounted_for(page, outcome)


def assert_page_accounted_for(page: Page, document: ExtractedDocument) -> None:
    """A page has text, or a problem says why not: never a silent empty page."""
    assert all(block.page == page.number and block.text.strip() for block in page.blocks)
    problems = [p for p in document.problems if p.page == page.number]
    if page.method == "lost":
        assert not page.blocks and problems, f"page {page.number} lost without a problem"
    else:
        assert page.blocks, f"page {page.number} ({page.method}) has no text"


@needs_corpus
@pytest.mark.parametrize(
    "file", [c["file"] for c in CASES if c["category"].startswith("encrypted") and c["mupdf_text_chars_first3"]]
)
def test_encrypted_file_opened_with_its_password_gives_text(matrix, file):
    document = matrix[file]
    assert isinstance(document, ExtractedDocument), str(document)
    assert any(page.method == "text" and page.blocks for page in document.pages)


@needs_corpus
def test_saslprep_password_is_prepared_before_use(matrix):
    # cases.jsonl gives the password unprepared ("SªSL\u00adprep"); MuPDF accepts only "SaSLprep"
    assert CASE_BY_FILE["encrypted/saslprep-r6.pdf"]["password"] != "SaSLprep"
    assert matrix["encrypted/saslprep-r6.pdf"].pages[0].blocks


@needs_corpus
@pytest.mark.parametrize("password", [None, "not the password"])
def test_encrypted_file_without_its_password_is_an_encrypted_error(password):
    with pytest.raises(DocumentError) as caught:
        extracted("encrypted/issue6010_1.pdf", password=password)
    assert caught.value.kind == "encrypted"
    assert "encrypted/issue6010_1.pdf" in str(caught.value)
    assert ("none was given" if password is None else "wrong") in caught.value.message


@needs_corpus
def test_encrypted_error_crosses_the_process_boundary():
    with pytest.raises(DocumentError) as caught:
        extract_with_time_limit(robustness_source("encrypted/issue6010_1.pdf"), timeout=MATRIX_TIMEOUT)
    assert caught.value.kind == "encrypted" and caught.value.source == "encrypted/issue6010_1.pdf"


@needs_corpus
def test_cyclic_page_tree_keeps_the_good_page_and_reports_the_bad_one(matrix):
    document = matrix["corrupt/Pages-tree-refs.pdf"]
    good, bad = document.pages
    assert good.method == "text" and good.blocks
    assert bad.method == "lost" and not bad.blocks
    (problem,) = [p for p in document.problems if p.page == 2]
    assert problem.kind == "page_error" and "cycle in page tree" in problem.message


@needs_corpus
def test_file_without_a_header_in_its_first_kilobyte_still_opens(matrix):
    assert b"%PDF" not in (ROBUSTNESS / "corrupt/bug1606566.pdf").read_bytes()[:1024]
    assert page_texts(matrix["corrupt/bug1606566.pdf"].pages[0]) == ["Bug 1606566"]


@needs_corpus
def test_garbled_text_layer_is_reported_not_indexed(matrix):
    document = matrix["encoding/ThuluthFeatures.pdf"]  # every glyph maps to U+FFFD
    assert document.pages[0].method == "lost"
    assert [p.kind for p in document.problems] == ["unreadable_text"]


@needs_corpus
def test_blank_page_is_reported_as_blank(matrix):
    document = matrix["encrypted_owner_only/empty_protected.pdf"]
    assert [(p.kind, p.page) for p in document.problems] == [("blank_page", 1)]


@needs_corpus
def test_two_columns_are_read_left_column_first(matrix):
    texts = page_texts(matrix["multicolumn/tracemonkey.pdf"].pages[0])
    order = [
        next(i for i, text in enumerate(texts) if text.startswith(start))
        for start in ("Abstract", "Dynamic languages such as JavaScript are", "1. Introduction", "and is used for")
    ]
    assert order == sorted(order)


@needs_corpus
def test_outline_gives_heading_levels(matrix):
    headings = [
        (block.text, block.heading_level)
        for page in matrix["misc/bookmark_sample.pdf"].pages
        for block in page.blocks
        if block.heading_level
    ]
    assert ("PART I - DEFINITIONS", 1) in headings and ("3.1 Payment Schedule", 3) in headings


@needs_corpus
def test_time_limited_result_equals_in_process_result(matrix):
    assert matrix["multicolumn/tracemonkey.pdf"] == extracted("multicolumn/tracemonkey.pdf", ocr=False)


# --- OCR -----------------------------------------------------------------------


@needs_corpus
@needs_tesseract
@pytest.mark.parametrize("file", ["scanned/ocr_test.pdf", "scanned/ocr_test_rotated_90.pdf"])
def test_scanned_page_is_ocred_like_the_ground_truth(file):
    document = extract_with_time_limit(robustness_source(file), timeout=MATRIX_TIMEOUT)
    (page,) = document.pages
    truth = (ROBUSTNESS / "gt_docling/ocr/tesseract/full_page/ocr_test.tesseract.full_page.md").read_text()
    found = words(" ".join(page_texts(page)))
    assert page.method == "ocr"
    assert len(found & words(truth)) / len(words(truth)) > 0.5
    assert [(p.kind, p.page) for p in document.problems] == [("ocr", 1)]
    assert "tesseract" in document.parser


@needs_corpus
def test_scanned_page_without_ocr_is_recorded_as_lost(matrix):
    document = matrix["scanned/ocr_test.pdf"]
    assert document.pages[0].method == "lost"
    (problem,) = document.problems
    assert (problem.kind, problem.page) == ("no_text_layer", 1) and "OCR is turned off" in problem.message


@needs_corpus
@needs_tesseract
def test_unreadable_text_layer_is_replaced_by_ocr():
    document = extracted("encoding/issue215.pdf")  # small capitals mapped to private-use code points
    assert page_texts(document.pages[0]) == ["OPENMAGAZIN"] and document.pages[0].method == "ocr"
    assert "unreadable_text" in [p.kind for p in document.problems]


# --- PDFs made here --------------------------------------------------------------


def test_empty_file_is_an_empty_file_error(tmp_path):
    with pytest.raises(DocumentError) as caught:
        extract_document(write_file(tmp_path / "empty.pdf", b""))
    assert caught.value.kind == "empty_file" and "empty.pdf" in str(caught.value)


@pytest.mark.parametrize(
    "data",
    [b"Quarterly notes, not a PDF.\n" * 50, image_of_text("a picture").tobytes("png")],
    ids=["text", "png"],
)
def test_other_format_renamed_pdf_is_not_a_pdf(tmp_path, data):
    with pytest.raises(DocumentError) as caught:
        extract_document(write_file(tmp_path / "renamed.pdf", data))
    assert caught.value.kind == "not_pdf" and "renamed.pdf" in str(caught.value)


@needs_corpus
def test_truncated_pdf_is_reported_not_raised_blindly(tmp_path):
    data = (ROBUSTNESS / "multicolumn/tracemonkey.pdf").read_bytes()
    with pytest.raises(DocumentError) as caught:
        extract_document(write_file(tmp_path / "half.pdf", data[: len(data) // 2]))
    assert caught.value.kind == "no_pages" and "truncated" in caught.value.message


def test_pdf_missing_its_cross_reference_table_is_repaired(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Still readable")
    data = doc.tobytes()
    document = extract_document(write_file(tmp_path / "cut.pdf", data[: data.rindex(b"xref")]))
    assert page_texts(document.pages[0]) == ["Still readable"]
    assert [p.kind for p in document.problems] == ["repaired"]


def test_bigger_bold_line_is_a_heading(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "12 Termination", fontsize=16, fontname="hebo")
    page.insert_text((72, 100), "12.2 Notice", fontsize=12, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 110, 520, 400), LOREM * 3, fontsize=11)
    document = extract_document(save(doc, tmp_path / "headings.pdf"))
    levels = [(b.text[:14], b.heading_level) for b in document.pages[0].blocks]
    assert levels == [("12 Termination", 1), ("12.2 Notice", 2), ("Either party m", 0)]


def test_cover_page_identifiers_addresses_bullets_and_amounts_are_no_headings(tmp_path):
    """A filing's cover sets its registrant's details in bold, and a bold bullet or total is no title either:
    taken for headings, they named sections of a brief and stood over every chunk after them."""
    lines = [
        ("ACME HOLDINGS INC", True),
        ("Delaware 91-0425694", False),
        ("Commission File Number 001-37845", False),
        ("One Acme Way, Springfield, Illinois 62701", False),
        ("www.acme.example/investor", False),
        ("arXiv:2303.08559v2 [cs.CL] 21 Oct 2023", False),
        ("· Company maintains its quarterly dividend of $1.19 per share", False),  # the font has no "•"
        ("Total $1,581", False),
        ("ISO 27001 Certification", True),
        ("Consolidated Statements of Cash Flows $ in millions", True),
    ]
    doc = pymupdf.open()
    page = doc.new_page()
    for i, (line, _) in enumerate(lines):
        page.insert_text((72, 60 + 22 * i), line, fontsize=12, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(72, 300, 520, 700), LOREM * 4, fontsize=10)
    document = extract_document(save(doc, tmp_path / "cover.pdf"))
    found = {b.text: b.heading_level > 0 for b in document.pages[0].blocks if b.text in dict(lines)}
    assert found == dict(lines)


@pytest.mark.parametrize(
    ("pages", "toc", "expected"),
    [
        (
            [["1 Scope"], ["2 Termination", "2.1 Notice"]],
            [[1, "Scope", 1], [1, "Termination", 2], [2, "Notice", 2]],
            [(1, "1 Scope", 1), (2, "2 Termination", 1), (2, "2.1 Notice", 2)],
        ),
        # A paper set in IEEE style numbers its sections in roman numerals and letters, which its outline leaves
        # out (2312.10997v5.pdf): without the outline, set in body font, no section of it was found.
        (
            [["I. INTRODUCTION"], ["II. OVERVIEW OF RAG", "A. Naive RAG"]],
            [[1, "Introduction", 1], [1, "Overview of RAG", 2], [2, "Naive RAG", 2]],
            [(1, "I. INTRODUCTION", 1), (2, "II. OVERVIEW OF RAG", 1), (2, "A. Naive RAG", 2)],
        ),
        # An appendix lettered without a stop (STEPBACK.pdf): its sections had stayed under "9 CONCLUSION".
        (
            [["9 CONCLUSION"], ["A ADDITIONAL ERROR ANALYSIS", "A.1 TIMEQA ERROR ANALYSIS"]],
            [[1, "Conclusion", 1], [1, "Additional Error Analysis", 2], [2, "TimeQA Error Analysis", 2]],
            [(1, "9 CONCLUSION", 1), (2, "A ADDITIONAL ERROR ANALYSIS", 1), (2, "A.1 TIMEQA ERROR ANALYSIS", 2)],
        ),
    ],
)
def test_outline_titles_become_headings_even_in_body_font(tmp_path, pages, toc, expected):
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page()
        for i, line in enumerate(lines):
            page.insert_text((72, 72 + 120 * i), line, fontsize=11)
            page.insert_textbox(pymupdf.Rect(72, 90 + 120 * i, 520, 180 + 120 * i), LOREM, fontsize=11)
    doc.set_toc(toc)
    document = extract_document(save(doc, tmp_path / "outline.pdf"))
    headings = [(b.page, b.text, b.heading_level) for p in document.pages for b in p.blocks if b.heading_level]
    assert headings == expected


def test_running_header_and_footer_are_blocks_of_their_own(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 50), "ACME Master Services Agreement", fontsize=8)
    page.insert_textbox(pymupdf.Rect(72, 54, 520, 300), LOREM * 2, fontsize=11)
    page.insert_text((290, 800), "Page 1 of 9", fontsize=8)
    texts = page_texts(extract_document(save(doc, tmp_path / "header.pdf")).pages[0])
    assert texts[0] == "ACME Master Services Agreement" and texts[-1] == "Page 1 of 9"
    assert texts[1].startswith("Either party") and len(texts) == 3


def test_two_column_page_reads_down_each_column(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "A page in two columns", fontsize=16)
    for column, x in (("Left", 72), ("Right", 310)):
        for row, y in enumerate((90, 300, 510), start=1):
            text = f"{column} paragraph {row}. " + LOREM
            page.insert_textbox(pymupdf.Rect(x, y, x + 215, y + 190), text, fontsize=10)
    texts = page_texts(extract_document(save(doc, tmp_path / "columns.pdf")).pages[0])
    starts = [" ".join(text.split()[:3]) for text in texts]
    assert starts == ["A page in", *[f"{c} paragraph {r}." for c in ("Left", "Right") for r in (1, 2, 3)]]


def image_only_second_page(tmp_path: Path) -> SourceFile:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Page one has a text layer")
    doc.new_page().insert_image(pymupdf.Rect(72, 72, 472, 172), pixmap=image_of_text("Invoice total due"))
    return save(doc, tmp_path / "scan.pdf")


@pytest.mark.parametrize(
    ("options", "reason"),
    [({"ocr": False}, "OCR is turned off"), ({"ocr_language": "zzz"}, "no language data for zzz")],
)
def test_image_only_page_without_ocr_is_lost_with_the_reason(tmp_path, options, reason):
    document = extract_document(image_only_second_page(tmp_path), **options)
    assert [page.method for page in document.pages] == ["text", "lost"]
    (problem,) = document.problems
    assert (problem.kind, problem.page) == ("no_text_layer", 2) and reason in problem.message


@needs_tesseract
def test_image_only_page_is_ocred(tmp_path):
    document = extract_document(image_only_second_page(tmp_path))
    assert [page.method for page in document.pages] == ["text", "ocr"]
    assert page_texts(document.pages[1]) == ["Invoice total due"]
    assert [(p.kind, p.page) for p in document.problems] == [("ocr", 2)]


def test_blank_page_is_not_counted_as_lost_text(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Before the blank page")
    doc.new_page()
    document = extract_document(save(doc, tmp_path / "blank.pdf"))
    assert [(p.kind, p.page) for p in document.problems] == [("blank_page", 2)]


def test_records_survive_pickling(tmp_path):
    document = extract_document(image_only_second_page(tmp_path), ocr=False)
    assert pickle.loads(pickle.dumps(document)) == document


# --- time limit ------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0.001, 0.5])
@needs_corpus
def test_time_limit_stops_the_child_and_says_so(timeout):
    source = robustness_source("large/freeculture.pdf")  # 352 pages: about 2 s
    with pytest.raises(DocumentError) as caught:
        extract_with_time_limit(source, ocr=False, timeout=timeout)
    assert caught.value.kind == "timeout"
    assert str(caught.value) == f"large/freeculture.pdf: extraction took longer than {timeout:g} s"
    assert multiprocessing.active_children() == []


# --- sources, lines, versions ------------------------------------------------------


def test_discover_sources_finds_pdfs_in_any_case_recursively(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("b.pdf", "sub/A.PDF", "notes.txt"):
        (tmp_path / name).write_bytes(name.encode())
    sources = discover_sources(tmp_path).sources
    assert [s.document_id for s in sources] == ["b.pdf", "sub/A.PDF"]
    assert sources[1].path == str(tmp_path / "sub/A.PDF")
    assert sources[1].version == hashlib.sha256(b"sub/A.PDF").hexdigest() == hash_file(tmp_path / "sub/A.PDF")


@pytest.mark.parametrize(
    ("lines", "joined"),
    [
        (["notice of termi-", "nation  by", "either party"], "notice of termination by either party"),
        (["COVID-", "19 cases"], "COVID-19 cases"),
        (["a just-in-", "time delivery"], "a just-in-time delivery"),
        (["soft\u00ad", "Hyphen"], "softHyphen"),
        (["中文", "字符"], "中文字符"),
        (["", "  one  ", "two"], "one two"),
    ],
)
def test_join_lines(lines, joined):
    assert join_lines(lines) == joined


def test_parser_version_names_pymupdf_and_mupdf():
    assert parser_version(include_ocr=False) == f"pymupdf {pymupdf.VersionBind} (mupdf {pymupdf.VersionFitz})"


@needs_tesseract
def test_parser_version_names_tesseract_only_when_ocr_is_on():
    # the installed Tesseract's own first line, e.g. "tesseract 5.3.0"
    run = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=True)
    first_line = (run.stdout or run.stderr).splitlines()[0]  # older versions print it to stderr
    tesseract = first_line.split()[1].removeprefix("v")
    without_ocr = parser_version(include_ocr=False)
    assert parser_version() == f"{without_ocr}, tesseract {tesseract}" != without_ocr


def test_the_child_runs_in_the_callers_folder_and_environment_of_the_call(tmp_path, monkeypatch):
    """Children are forked from a server process started by an earlier extraction: they still see the folder
    and the environment the caller has when it extracts, as a process started anew would."""
    extract_with_time_limit(image_only_second_page(tmp_path), ocr=False, timeout=60)  # the forkserver runs now
    later = tmp_path / "later"
    later.mkdir()
    empty = tmp_path / "no-tessdata"
    empty.mkdir()
    scan = image_only_second_page(later)
    monkeypatch.chdir(later)
    monkeypatch.setenv("TESSDATA_PREFIX", str(empty))  # where PyMuPDF looks for Tesseract's language data
    relative = SourceFile(document_id="scan.pdf", path="scan.pdf", version=scan.version)

    document = extract_with_time_limit(relative, timeout=60)

    assert page_texts(document.pages[0]) == ["Page one has a text layer"]
    (problem,) = document.problems
    assert (problem.kind, problem.page) == ("no_text_layer", 2) and "no language data for eng" in problem.message


def test_mupdf_errors_are_kept_with_their_document_not_printed(tmp_path, capfd):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A page whose content stream is damaged")
    doc.new_page().insert_text((72, 72), "A page that reads fine")
    broken = doc[0].get_contents()[0]
    doc.update_stream(broken, b"not deflate data", compress=False)
    doc.xref_set_key(broken, "Filter", "/FlateDecode")  # inflating it fails: a zlib error
    path = tmp_path / "damaged.pdf"
    doc.save(path)

    document = extract_with_time_limit(source_for(path, tmp_path), ocr=False, timeout=60)

    reported = [p for p in document.problems if p.kind == "mupdf_errors"]
    assert len(reported) == 1 and reported[0].page is None
    assert reported[0].message.startswith("MuPDF: ") and "zlib error" in reported[0].message
    assert page_texts(document.pages[1]) == ["A page that reads fine"]
    assert "MuPDF error" not in capfd.readouterr().err  # the child printed nothing that names no file
