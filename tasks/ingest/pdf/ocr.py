"""OCR of one page with MuPDF's built-in Tesseract: whether it can run, rendering, and turning scans upright."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pymupdf

from citesum.tasks.ingest.pdf.layout import TextBlock, text_blocks

OCR_DPI = 300  # Tesseract is trained on ~300 dpi scans; 150 dpi loses small print
OSD_DPI = 150  # orientation detection: as right as at 300 dpi on scanned/, in half the time
OSD_MIN_CONFIDENCE = 1.5  # below this Tesseract's orientation guesses were wrong (test_4090.pdf)


@dataclass(frozen=True)
class Ocr:
    """How to OCR a page, or why it cannot be."""

    language: str
    tessdata: str | None
    unavailable: str = ""  # why there is no OCR, e.g. "OCR is turned off"
    osd: bool = False  # orientation detection with the tesseract command
    max_pixels: int = 25_000_000  # most pixels of one rendering (Settings.ocr_max_pixels)


@cache  # looked up on the first page that needs OCR, once per process
def ocr_engine(enabled: bool, language: str, max_pixels: int = 25_000_000) -> Ocr:
    """How to OCR, or the reason OCR cannot run."""
    if not enabled:
        return Ocr(language, None, "OCR is turned off", max_pixels=max_pixels)
    tessdata = _tessdata()
    if tessdata is None:
        return Ocr(language, None, "Tesseract is not installed", max_pixels=max_pixels)
    missing = [lang for lang in language.split("+") if not (tessdata / f"{lang}.traineddata").is_file()]
    if missing:
        return Ocr(language, None, f"Tesseract has no language data for {'+'.join(missing)}", max_pixels=max_pixels)
    osd = shutil.which("tesseract") is not None and (tessdata / "osd.traineddata").is_file()
    return Ocr(language, str(tessdata), osd=osd, max_pixels=max_pixels)


def capped_dpi(page: pymupdf.Page, dpi: float, max_pixels: int) -> float:
    """``dpi``, or less when the page rendered at it would exceed ``max_pixels``.

    A PDF may declare a page of 200 x 200 inches (14,400 pt, the format's limit): at 300 dpi that
    is 3.6 billion pixels, about 11 GB as RGB. Memory must not depend on what the file declares.
    """
    width, height = abs(page.rect.width) / 72, abs(page.rect.height) / 72
    if width * height == 0:
        return dpi
    return min(dpi, math.sqrt(max_pixels / (width * height)))


@cache
def _tessdata() -> Path | None:
    """Tesseract's language data folder; MuPDF's built-in Tesseract reads it."""
    try:
        folder = Path(pymupdf.get_tessdata())
    except RuntimeError:  # PyMuPDF's way of saying it found no Tesseract installation
        return None
    return folder if folder.is_dir() else None


def ocr_blocks(page: pymupdf.Page, engine: Ocr) -> list[TextBlock]:
    """Text blocks from OCR of the page rendered at ``OCR_DPI`` (less for a page past the pixel cap),
    turned upright first."""
    rotation = _orientation(page, engine.max_pixels) if engine.osd else 0
    pixmap = _render(page, rotation, capped_dpi(page, OCR_DPI, engine.max_pixels))
    pdf = pixmap.pdfocr_tobytes(language=engine.language, tessdata=engine.tessdata)
    del pixmap  # the page's largest allocation: freed before the OCR result is parsed
    with pymupdf.open(stream=pdf, filetype="pdf") as ocr_doc:
        return text_blocks(ocr_doc[0])


def _render(page: pymupdf.Page, rotation: int, dpi: float) -> pymupdf.Pixmap:
    # RGB: MuPDF's OCR returns no text at all for a greyscale pixmap
    zoom = dpi / 72
    return page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom).prerotate(rotation))


def _orientation(page: pymupdf.Page, max_pixels: int) -> int:
    """Degrees to turn a scan so its text is upright, from Tesseract's orientation detection.

    MuPDF's OCR reads only upright text: ocr_test_rotated_90.pdf gives garbage unturned.
    0 when the detection is unsure or finds too little text to judge.
    """
    zoom = capped_dpi(page, OSD_DPI, max_pixels) / 72
    grey = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), colorspace=pymupdf.csGRAY)
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
