"""Text extraction with PyMuPDF: pages in reading order, headings, OCR, every failure recorded.

``extract_document`` turns one PDF into ``Page`` records (1-based physical page
numbers) of ``Block`` records. A page whose text cannot be read is OCRed when
Tesseract is installed, else kept as a "lost" page with a ``Problem``; a page
that fails does not discard its document. Whole-document failures raise
``DocumentError``. ``extract_with_time_limit`` runs the same function in a
spawned child process, so a hang or a crash inside MuPDF costs one document.

Only light imports here (PyMuPDF, stdlib, records, errors): the spawned child
imports this module.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import multiprocessing.connection
import re
import shutil
import stringprep
import subprocess
import sys
import traceback
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from citesum.tasks.errors import DocumentError
from citesum.tasks.records import Block, ExtractedDocument, Page, PageMethod, Problem, SourceFile

# PyMuPDF 2.0 imports its add-ons pymupdf.layout (onnxruntime) and pymupdf4llm when they
# are installed: 1.6 s of its 2 s import, paid again by every spawned extraction child.
# Neither is used here, and importing pymupdf4llm turns MuPDF's glyph box ("quad")
# corrections off for the whole process, which changes extracted blocks. Skip both.
for _addon in ("pymupdf.layout", "pymupdf4llm"):
    sys.modules.setdefault(_addon, None)

import pymupdf  # noqa: E402

# MuPDF reports failures as FzErrorBase subclasses (e.g. FzErrorFormat for a cyclic
# page tree) and PyMuPDF wraps some as RuntimeError (FileDataError).
MUPDF_ERRORS = (RuntimeError, pymupdf.mupdf.FzErrorBase)

# Unknown glyphs come out as U+FFFD (no TEXT_USE_CID_FOR_UNKNOWN_UNICODE) so that
# unreadable text is detectable; ligatures are expanded so "ﬁ" is searchable as "fi".
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
BOLD_FLAG = 16  # span["flags"] bit 4
HEADER_BYTES = 1024  # readers accept "%PDF" anywhere in the first 1024 bytes (PDF Reference 1.7, H.3)

OCR_DPI = 300  # Tesseract is trained on ~300 dpi scans; 150 dpi loses small print
BLANK_DPI = 36  # enough to see any ink on a page
OSD_DPI = 150  # orientation detection: as right as at 300 dpi on scanned/, in half the time
OSD_MIN_CONFIDENCE = 1.5  # below this Tesseract's orientation guesses were wrong (test_4090.pdf)
UNREADABLE_SHARE = 0.5  # share of U+FFFD / private-use characters that makes a page unreadable

HEADING_SIZE_RATIO = 1.15  # a heading's font is at least this much larger than body text
HEADING_MAX_WORDS = 15
MIN_OUTLINE_HEADINGS = 2
COLUMN_WIDTH = (0.3, 0.55)  # a column block's width as a share of the text area's width
COLUMN_MIN_SHARE = 0.2  # each column holds at least this share of the page's characters


# --- sources -----------------------------------------------------------------


def hash_file(path: Path | str, chunk_size: int = 1 << 20) -> str:
    """sha256 hex digest of a file's bytes, read in chunks (PDFs can be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def is_current(source: SourceFile) -> bool:
    """Whether the file still holds the bytes it was read with (another run or an upload may have changed it)."""
    path = Path(source.path)
    return path.is_file() and hash_file(path) == source.version


def source_for(path: Path, root: Path) -> SourceFile:
    """The ``SourceFile`` of one PDF; its id is its path relative to ``root``."""
    path, root = path.absolute(), root.absolute()
    return SourceFile(document_id=path.relative_to(root).as_posix(), path=str(path), version=hash_file(path))


def discover_sources(root: Path) -> list[SourceFile]:
    """Every ``*.pdf`` (any case) under ``root``, recursively, sorted by document id."""
    root = root.absolute()
    files = [p for p in root.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()]
    return sorted((source_for(p, root) for p in files), key=lambda s: s.document_id)


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


# --- opening -----------------------------------------------------------------


def _open(source: SourceFile) -> pymupdf.Document:
    """Open the PDF or raise the ``DocumentError`` that says why it cannot be."""
    head = _read_head(source)
    try:
        # filetype="pdf": never read another format (an image renamed .pdf) as a document
        doc = pymupdf.open(source.path, filetype="pdf")
    except MUPDF_ERRORS as exc:
        if b"%PDF" in head:
            raise _error(source, "corrupt", "damaged beyond repair: MuPDF cannot open it") from exc
        raise _error(source, "not_pdf", "not a PDF: no %PDF header and MuPDF cannot open it") from exc
    if not doc.is_pdf:
        doc.close()
        raise _error(source, "not_pdf", "not a PDF (MuPDF reads it as another format)")
    return doc


def _read_head(source: SourceFile) -> bytes:
    try:
        with open(source.path, "rb") as file:
            head = file.read(HEADER_BYTES)
    except OSError as exc:
        raise _error(source, "unreadable", f"cannot read the file: {exc.strerror}") from exc
    if not head:
        raise _error(source, "empty_file", "the file is empty (0 bytes)")
    return head


def _authenticate(doc: pymupdf.Document, password: str | None, source: SourceFile) -> None:
    # PyMuPDF 2.0: reading needs_pass after authenticate() makes get_text() return ''
    # (issue6010_1.pdf), so it is read exactly once, here, before authenticating.
    if not doc.needs_pass:
        return
    if password is None:
        raise _error(source, "encrypted", "encrypted: a password is needed and none was given")
    if not any(doc.authenticate(candidate) for candidate in _password_forms(password)):
        raise _error(source, "encrypted", "encrypted: the given password is wrong")


def _password_forms(password: str) -> list[str]:
    """The password as given, then its SASLprep form (RFC 4013).

    AES-256 revision 6 hashes the SASLprep-ed password (ISO 32000-2, 7.6.4.3.3),
    which MuPDF does not do itself: saslprep-r6.pdf opens only with "SaSLprep".
    """
    mapped = "".join(
        " " if stringprep.in_table_c12(char) else char
        for char in password
        if not stringprep.in_table_b1(char)  # "commonly mapped to nothing", e.g. soft hyphen
    )
    return list(dict.fromkeys([password, unicodedata.normalize("NFKC", mapped)]))


def _page_count(doc: pymupdf.Document, source: SourceFile) -> int:
    try:
        count = doc.page_count
    except MUPDF_ERRORS as exc:
        raise _error(source, "corrupt", f"its page tree cannot be read ({exc})") from exc
    if count == 0:
        damaged = ": MuPDF repaired a damaged (truncated?) file and found none" if doc.is_repaired else ""
        raise _error(source, "no_pages", f"the PDF has no pages{damaged}")
    return count


def _error(source: SourceFile, kind: str, message: str) -> DocumentError:
    return DocumentError(kind, message, source=source.document_id)


# --- the document ------------------------------------------------------------


@dataclass(frozen=True)
class _TextBlock:
    """A block's text and the font facts heading detection needs."""

    text: str
    bbox: tuple[float, float, float, float]
    size: float  # the font size of most of its characters
    bold: bool  # most of its characters are bold
    chars: int


@dataclass(frozen=True)
class _PageText:
    number: int
    method: PageMethod
    blocks: tuple[_TextBlock, ...]
    problems: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class _Ocr:
    """How to OCR a page, or why it cannot be."""

    language: str
    tessdata: str | None
    unavailable: str = ""  # why there is no OCR, e.g. "OCR is turned off"
    osd: bool = False  # orientation detection with the tesseract command


def extract_document(
    source: SourceFile,
    *,
    password: str | None = None,
    ocr: bool = True,
    ocr_language: str = "eng",
) -> ExtractedDocument:
    """Every page's text in reading order, with headings and a record of what went wrong.

    Raises ``DocumentError`` when the file cannot be read as a PDF at all (kinds:
    empty_file, unreadable, not_pdf, corrupt, encrypted, no_pages), including a
    damaged file that MuPDF repaired into nothing but blank pages (a truncated
    upload): storing it would supersede a good version with nothing. Otherwise a
    document whose pages are all lost is returned: each lost page carries a ``Problem``.
    """
    # MuPDF's default, in case pymupdf4llm was imported before this module and unset it
    pymupdf.TOOLS.unset_quad_corrections(False)
    doc = _open(source)
    try:
        _authenticate(doc, password, source)
        count = _page_count(doc, source)
        pages = [_extract_page(doc, index, ocr, ocr_language) for index in range(count)]
        levels = _heading_levels(pages, _toc(doc))
        problems = _document_problems(doc) + tuple(p for page in pages for p in page.problems)
        if doc.is_repaired and all(_is_blank_result(page) for page in pages):
            raise _error(source, "corrupt", "damaged file (truncated?): repaired by MuPDF, but no page has text")
    finally:
        doc.close()
    return ExtractedDocument(
        source=source,
        pages=tuple(_page_record(page, levels) for page in pages),
        problems=problems,
        parser=parser_version(include_ocr=any(page.method == "ocr" for page in pages)),
    )


def _is_blank_result(page: _PageText) -> bool:
    return page.method == "lost" and [p.kind for p in page.problems] == ["blank_page"]


def _document_problems(doc: pymupdf.Document) -> tuple[Problem, ...]:
    if not doc.is_repaired:
        return ()
    return (Problem("repaired", "MuPDF repaired a damaged file structure; some text may be missing"),)


def _page_record(page: _PageText, levels: dict[tuple[int, int], int]) -> Page:
    blocks = tuple(
        Block(text=b.text, page=page.number, heading_level=levels.get((page.number, i), 0))
        for i, b in enumerate(page.blocks)
    )
    return Page(number=page.number, blocks=blocks, method=page.method)


# --- one page ----------------------------------------------------------------


def _extract_page(doc: pymupdf.Document, index: int, ocr: bool, ocr_language: str) -> _PageText:
    number = index + 1
    try:
        page = doc.load_page(index)
        blocks = _text_blocks(page)
        if blocks and _unreadable_share(blocks) < UNREADABLE_SHARE:
            return _PageText(number, "text", tuple(blocks))
        return _without_text_layer(page, number, blocks, _ocr_engine(ocr, ocr_language))
    except MUPDF_ERRORS as exc:
        problem = Problem("page_error", f"MuPDF cannot read this page ({exc}): page not indexed", number)
        return _PageText(number, "lost", (), (problem,))


def _without_text_layer(page: pymupdf.Page, number: int, blocks: list[_TextBlock], engine: _Ocr) -> _PageText:
    """OCR a page whose text layer is missing or unreadable, or record it as lost.

    Unreadable text (U+FFFD / private-use glyphs from fonts without a Unicode map)
    is OCRed like a scan: the glyphs are drawn correctly even when their codes are
    meaningless, so OCR recovers the words (issue215.pdf: "OPENMAGAZIN").
    """
    if not blocks and _is_blank(page):
        return _lost(number, "blank_page", "blank page: nothing to extract")
    kind, reason = _missing_text(blocks)
    if engine.tessdata is None:
        return _lost(number, kind, f"{reason} and {engine.unavailable}: page not indexed")
    try:
        ocr_blocks = _ocr_blocks(page, engine)
    except MUPDF_ERRORS as exc:
        return _lost(number, kind, f"{reason} and OCR failed ({exc}): page not indexed")
    if not ocr_blocks:
        return _lost(number, kind, f"{reason} and OCR found no text: page not indexed")
    problem = Problem("ocr" if kind == "no_text_layer" else kind, f"{reason}; text from OCR", number)
    return _PageText(number, "ocr", tuple(ocr_blocks), (problem,))


def _missing_text(blocks: list[_TextBlock]) -> tuple[str, str]:
    """The problem kind and reason for a page without usable text."""
    if not blocks:
        return "no_text_layer", "no text layer"
    share = _unreadable_share(blocks)
    return "unreadable_text", f"text layer unreadable ({share:.0%} U+FFFD or private-use characters)"


def _lost(number: int, kind: str, message: str) -> _PageText:
    return _PageText(number, "lost", (), (Problem(kind, message, number),))


def _is_blank(page: pymupdf.Page) -> bool:
    # A page that renders in one colour has nothing to OCR and nothing was lost
    return page.get_pixmap(dpi=BLANK_DPI, colorspace=pymupdf.csGRAY).is_unicolor


def _unreadable_share(blocks: list[_TextBlock]) -> float:
    """The share of characters that are U+FFFD (no Unicode known) or private-use."""
    chars = [c for b in blocks for c in b.text if not c.isspace()]
    bad = sum(1 for c in chars if c == "\ufffd" or unicodedata.category(c) == "Co")
    return bad / len(chars) if chars else 0.0


# --- text blocks -------------------------------------------------------------


def _text_blocks(page: pymupdf.Page) -> list[_TextBlock]:
    """The page's text blocks in reading order."""
    data = page.get_text("dict", sort=True, flags=TEXT_FLAGS)
    blocks = [b for raw in data["blocks"] if raw["type"] == 0 for b in _split_block(raw)]
    return _reading_order([b for b in blocks if b.text])


def _split_block(raw: dict) -> Iterator[_TextBlock]:
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


def _make_block(lines: list[dict]) -> _TextBlock:
    spans = [span for line in lines for span in line["spans"]]
    size, bold, chars = _font_profile(spans)
    return _TextBlock(
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
    sizes: Counter[float] = Counter()
    bold = 0
    for span in spans:
        chars = len(span["text"].strip())
        sizes[round(span["size"] * 2) / 2] += chars
        bold += chars if span["flags"] & BOLD_FLAG else 0
    chars = sum(sizes.values())
    size = sizes.most_common(1)[0][0] if chars else 0.0
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
    for line in (" ".join(raw.split()) for raw in lines):
        if line:
            text = _join(text, line) if text else line
    return text


def _join(text: str, line: str) -> str:
    if _LINE_END_HYPHEN.search(text):
        if text[-1] == "\u00ad" or (line[0].islower() and not _COMPOUND_END.search(text)):
            return text[:-1] + line  # "termi-" + "nation"
        return text + line  # "COVID-" + "19", "just-in-" + "time": the hyphen belongs
    if _NO_SPACE_SCRIPT.match(text[-1]) and _NO_SPACE_SCRIPT.match(line[0]):
        return text + line
    return f"{text} {line}"


# --- reading order -----------------------------------------------------------


def _reading_order(blocks: list[_TextBlock]) -> list[_TextBlock]:
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


def _is_column(block: _TextBlock, text_width: float) -> bool:
    """A block as wide as a column of a two-column page (titles are wider, labels narrower)."""
    share = (block.bbox[2] - block.bbox[0]) / text_width if text_width > 0 else 0.0
    return COLUMN_WIDTH[0] <= share <= COLUMN_WIDTH[1]


def _gutter(blocks: list[_TextBlock], columns: list[_TextBlock], left: float, right: float) -> float | None:
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


def _column_order(blocks: list[_TextBlock], columns: list[_TextBlock], gutter: float) -> Iterator[_TextBlock]:
    """Blocks that cross the gutter (titles, wide figures) cut the page into bands."""
    band: list[_TextBlock] = []
    for block in blocks:
        if block.bbox[0] < gutter < block.bbox[2]:
            yield from _order_band(band, columns, gutter)
            band = []
            yield block
        else:
            band.append(block)
    yield from _order_band(band, columns, gutter)


def _order_band(band: list[_TextBlock], columns: list[_TextBlock], gutter: float) -> list[_TextBlock]:
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


# --- OCR ---------------------------------------------------------------------


@cache  # looked up on the first page that needs OCR, once per process
def _ocr_engine(enabled: bool, language: str) -> _Ocr:
    """How to OCR, or the reason OCR cannot run."""
    if not enabled:
        return _Ocr(language, None, "OCR is turned off")
    tessdata = _tessdata()
    if tessdata is None:
        return _Ocr(language, None, "Tesseract is not installed")
    missing = [lang for lang in language.split("+") if not (tessdata / f"{lang}.traineddata").is_file()]
    if missing:
        return _Ocr(language, None, f"Tesseract has no language data for {'+'.join(missing)}")
    osd = shutil.which("tesseract") is not None and (tessdata / "osd.traineddata").is_file()
    return _Ocr(language, str(tessdata), osd=osd)


@cache
def _tessdata() -> Path | None:
    """Tesseract's language data folder; MuPDF's built-in Tesseract reads it."""
    try:
        folder = Path(pymupdf.get_tessdata())
    except RuntimeError:  # PyMuPDF's way of saying it found no Tesseract installation
        return None
    return folder if folder.is_dir() else None


def _ocr_blocks(page: pymupdf.Page, engine: _Ocr) -> list[_TextBlock]:
    """Text blocks from OCR of the page rendered at ``OCR_DPI``, turned upright first."""
    rotation = _orientation(page) if engine.osd else 0
    pdf = _render(page, rotation).pdfocr_tobytes(language=engine.language, tessdata=engine.tessdata)
    with pymupdf.open(stream=pdf, filetype="pdf") as ocr_doc:
        return _text_blocks(ocr_doc[0])


def _render(page: pymupdf.Page, rotation: int) -> pymupdf.Pixmap:
    # RGB: MuPDF's OCR returns no text at all for a greyscale pixmap
    zoom = OCR_DPI / 72
    return page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom).prerotate(rotation))


def _orientation(page: pymupdf.Page) -> int:
    """Degrees to turn a scan so its text is upright, from Tesseract's orientation detection.

    MuPDF's OCR reads only upright text: ocr_test_rotated_90.pdf gives garbage unturned.
    0 when the detection is unsure or finds too little text to judge.
    """
    grey = page.get_pixmap(dpi=OSD_DPI, colorspace=pymupdf.csGRAY)
    run = subprocess.run(
        ["tesseract", "stdin", "stdout", "--psm", "0"],
        input=grey.tobytes("pnm"),
        capture_output=True,
        check=False,
    )
    rotate = re.search(rb"Rotate: (\d+)", run.stdout)
    confidence = re.search(rb"Orientation confidence: ([\d.]+)", run.stdout)
    if not (rotate and confidence) or float(confidence.group(1)) < OSD_MIN_CONFIDENCE:
        return 0
    return int(rotate.group(1))


# --- headings ----------------------------------------------------------------


def _toc(doc: pymupdf.Document) -> list[tuple[int, str, int]]:
    """The outline as (level, title, 1-based page); entries without a page are dropped."""
    try:
        toc = doc.get_toc(simple=True)
    except MUPDF_ERRORS:  # a broken outline only costs outline headings: fonts are used instead
        return []
    return [(level, title, page) for level, title, page, *_ in toc if page >= 1 and title.strip()]


def _heading_levels(pages: list[_PageText], toc: list[tuple[int, str, int]]) -> dict[tuple[int, int], int]:
    """Heading level by (page number, block index): from the outline when its titles
    are found on their pages, otherwise from font size and weight.

    An outline that matches one block is not used: it is typically the title alone
    (2305.03393v1-pg9.pdf), and fonts find the sections it leaves out.
    """
    levels = _outline_levels(pages, toc)
    return levels if len(levels) >= MIN_OUTLINE_HEADINGS else _font_levels(pages)


def _outline_levels(pages: list[_PageText], toc: list[tuple[int, str, int]]) -> dict[tuple[int, int], int]:
    by_number = {page.number: page for page in pages}
    levels: dict[tuple[int, int], int] = {}
    for level, title, number in toc:
        key = _title_key(title)
        page = by_number.get(number)
        if not key or page is None:
            continue
        for index, block in enumerate(page.blocks):
            if (number, index) not in levels and _is_title(block.text, key):
                levels[(number, index)] = level
                break
    return levels


_NUMBERING = re.compile(r"^\s*(\d+(?:\.\d+)*)\.?\s+")


def _title_key(text: str) -> str:
    """A title without its section number, case, spacing and punctuation."""
    return "".join(c for c in _NUMBERING.sub("", text).casefold() if c.isalnum())


def _is_title(text: str, key: str) -> bool:
    """Whether a short block is the outline title ``key``, or begins it or with it."""
    if len(text.split()) > HEADING_MAX_WORDS:
        return False
    found = _title_key(text)
    return bool(found) and (found.startswith(key) or (key.startswith(found) and 2 * len(found) >= len(key)))


def _font_levels(pages: list[_PageText]) -> dict[tuple[int, int], int]:
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


def _body_style(pages: list[_PageText]) -> tuple[float, bool]:
    """The size of most characters in the document, and whether most of those are bold."""
    sizes: Counter[float] = Counter()
    for block in (b for page in pages for b in page.blocks):
        sizes[block.size] += block.chars
    if not sizes:
        return 0.0, False
    size = sizes.most_common(1)[0][0]
    body = [b for page in pages for b in page.blocks if b.size == size]
    return size, 2 * sum(b.chars for b in body if b.bold) > sum(b.chars for b in body)


def _is_heading(block: _TextBlock, body_size: float, body_bold: bool) -> bool:
    words = block.text.split()
    if not words or len(words) > HEADING_MAX_WORDS or block.text[-1] in ".,;":
        return False
    if sum(c.isalpha() for c in block.text) < 2:  # page numbers, table figures, drop capitals
        return False
    larger = block.size >= HEADING_SIZE_RATIO * body_size
    return larger or (block.bold and not body_bold and block.size >= body_size)


def _heading_rank(block: _TextBlock) -> tuple[float, bool, int]:
    """Sorts the most prominent first: larger, then bold, then shallower numbering."""
    numbering = _NUMBERING.match(block.text)
    depth = numbering.group(1).count(".") + 1 if numbering else 1
    return (-block.size, not block.bold, depth)


# --- time limit --------------------------------------------------------------


def extract_with_time_limit(
    source: SourceFile,
    *,
    password: str | None = None,
    ocr: bool = True,
    ocr_language: str = "eng",
    timeout: float,
) -> ExtractedDocument:
    """``extract_document`` in a child process that is killed after ``timeout`` seconds.

    The child is spawned, never forked: the caller has threads (Prefect, torch) and
    a forked copy of their locks can deadlock. A hang or a crash in MuPDF becomes a
    ``DocumentError`` (kind "timeout" or "crashed") for this document alone. The
    limit includes the child's start-up, about 0.35 s.
    """
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(
        target=_extract_in_child,
        args=(sender, source, password, ocr, ocr_language),
        name=f"extract {source.document_id}",
        daemon=True,
    )
    process.start()
    sender.close()  # the child now holds the only sending end: its death reads as EOF
    try:
        outcome = _receive(receiver, timeout)
    finally:
        receiver.close()
        process.kill()  # a child that has sent its result is exiting anyway
        process.join()
    return _unpack(outcome, source, timeout, process.exitcode)


def _extract_in_child(
    sender: multiprocessing.connection.Connection,
    source: SourceFile,
    password: str | None,
    ocr: bool,
    ocr_language: str,
) -> None:
    # MuPDF prints its errors to stderr, where they name no file; kept instead, with the document they concern.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    try:
        document = extract_document(source, password=password, ocr=ocr, ocr_language=ocr_language)
        reported = mupdf_errors()
        if reported:
            document = replace(document, problems=(*document.problems, Problem("mupdf_errors", reported)))
        outcome: tuple = ("ok", document)
    except DocumentError as exc:  # sent as fields: its constructor takes keyword arguments
        reported = mupdf_errors()
        outcome = ("document_error", exc.kind, f"{exc.message} ({reported})" if reported else exc.message)
    except Exception:  # any other failure goes to the parent, which raises it there
        outcome = ("exception", traceback.format_exc())
    sender.send(outcome)
    sender.close()


def mupdf_errors(most: int = 3) -> str:
    """MuPDF's errors since the last call (its warnings about repairs are left out), e.g. for a report."""
    text = pymupdf.TOOLS.mupdf_warnings(reset=True)
    lines = text.encode("utf-8", "backslashreplace").decode().splitlines()  # it may quote raw bytes (surrogates)
    errors = list(dict.fromkeys(line for line in lines if "error" in line))
    if not errors:
        return ""
    more = f"; {len(errors) - most} more" if len(errors) > most else ""
    return "MuPDF: " + "; ".join(errors[:most]) + more


def _receive(receiver: multiprocessing.connection.Connection, timeout: float) -> tuple:
    if not receiver.poll(timeout):
        return ("timeout",)
    try:
        return receiver.recv()
    except EOFError:  # the child died without sending anything
        return ("died",)


def _unpack(outcome: tuple, source: SourceFile, timeout: float, exitcode: int | None) -> ExtractedDocument:
    match outcome:
        case ("ok", document):
            return document
        case ("document_error", kind, message):
            raise _error(source, kind, message)
        case ("timeout",):
            raise _error(source, "timeout", f"extraction took longer than {timeout:g} s")
        case ("exception", text):
            raise RuntimeError(f"{source.document_id}: extraction failed in its child process:\n{text}")
    raise _error(source, "crashed", f"the extraction process died (exit code {exitcode})")
