"""Hostile corpus entries made on the spot (issue 10), and the peak memory of a command's whole process tree."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import psutil
import pymupdf

BAD_NAME = os.fsdecode(b"bad-\xff-name.pdf")  # a byte that is not UTF-8, as Linux file systems allow
GOOD_TEXT = "The indemnity clause survives termination of this agreement."
BAD_NAME_TEXT = "Quarterly revenue rose in the northern region."
SECRET_TEXT = "Zanzibar ledger outside the corpus."


def pdf_bytes(text: str, pages: int = 1) -> bytes:
    doc = pymupdf.open()
    for n in range(pages):
        doc.new_page().insert_text((72, 72), f"{text} (page {n + 1})")
    return doc.tobytes()


def giant_image_page() -> bytes:
    """A 200 x 200 inch page (PDF's largest) holding only an image: no text layer, so it is OCRed."""
    doc = pymupdf.open()
    page = doc.new_page(width=14_400, height=14_400)
    image = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
    image.clear_with(200)
    image.set_rect(pymupdf.IRect(8, 8, 56, 56), (0, 0, 0))
    page.insert_image(page.rect, pixmap=image)
    return doc.tobytes()


def inflating_stream(megabytes: int = 500) -> bytes:
    """One page whose content stream inflates to ``megabytes`` MB (spaces, then one line of text)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Inflated stream text.")
    xref = page.get_contents()[0]
    body = b" " * (megabytes << 20) + doc.xref_stream(xref)
    doc.update_stream(xref, zlib.compress(body, 9), compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    return doc.tobytes()


def place(case: str, corpus: Path, outside: Path) -> None:
    """Put one hostile entry named by ``case`` into ``corpus`` (``outside`` is beside it)."""
    if case == "bad_name":
        (corpus / BAD_NAME).write_bytes(pdf_bytes(BAD_NAME_TEXT))
    elif case == "fifo":
        os.mkfifo(corpus / "fifo.pdf")
    elif case == "folder_named_pdf":
        (corpus / "folder.pdf").mkdir()
    elif case == "symlink_outside":
        outside.mkdir(exist_ok=True)
        (outside / "secret.pdf").write_bytes(pdf_bytes(SECRET_TEXT))
        (corpus / "secret.pdf").symlink_to(outside / "secret.pdf")
    elif case == "symlink_loop":
        (corpus / "loop").symlink_to(corpus)
    elif case == "giant_page":
        (corpus / "giant.pdf").write_bytes(giant_image_page())
    elif case == "inflating_stream":
        (corpus / "inflated.pdf").write_bytes(inflating_stream())
    else:
        raise ValueError(case)


CASES = (
    "bad_name",
    "fifo",
    "folder_named_pdf",
    "symlink_outside",
    "symlink_loop",
    "giant_page",
    "inflating_stream",
)


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:  # exited between the listing and the read
            pass
    return total


def run_measured(
    command: list[str], env: dict[str, str], timeout: float = 900
) -> tuple[subprocess.CompletedProcess, int, float]:
    """Run ``command``; return it, the peak RSS of its process tree (sampled every 50 ms), and its seconds."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, done, process = 0, threading.Event(), psutil.Process(child.pid)

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                peak = max(peak, tree_rss(process))
            except psutil.Error:
                return
            done.wait(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        out, err = child.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    seconds = time.perf_counter() - started
    return subprocess.CompletedProcess(command, child.returncode, out, err), peak, seconds


Runner = Callable[[list[str]], tuple[subprocess.CompletedProcess, int, float]]
