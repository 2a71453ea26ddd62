"""Opening one PDF: the header check, the password (with its SASLprep form) and the page count.

Each failure raises the ``DocumentError`` that says why the file cannot be read.
"""

from __future__ import annotations

import os
import stringprep
import unicodedata

import pymupdf

from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest.names import text_path
from citesum.tasks.ingest.pdf import MUPDF_ERRORS
from citesum.tasks.ingest.sources import SourceError, open_regular
from citesum.tasks.records import SourceFile

HEADER_BYTES = 1024  # readers accept "%PDF" anywhere in the first 1024 bytes (PDF Reference 1.7, H.3)


def open_pdf(source: SourceFile) -> pymupdf.Document:
    """Open the PDF or raise the ``DocumentError`` that says why it cannot be.

    MuPDF is given the descriptor's /proc path: it cannot take a file name that is not UTF-8, and
    what was checked to be a regular file (a FIFO would block) is what it reads.
    """
    path = text_path(source.path)
    try:
        fd = open_regular(path)
    except SourceError as exc:
        raise document_error(source, exc.kind, exc.message) from exc
    except OSError as exc:
        raise document_error(source, "unreadable", f"cannot read the file: {exc.strerror}") from exc
    try:
        head = _read_head(fd, source)
        by_descriptor = f"/proc/self/fd/{fd}"
        # filetype="pdf": never read another format (an image renamed .pdf) as a document
        doc = pymupdf.open(by_descriptor if os.path.exists(by_descriptor) else os.fspath(path), filetype="pdf")
    except MUPDF_ERRORS as exc:
        if b"%PDF" in head:
            raise document_error(source, "corrupt", "damaged beyond repair: MuPDF cannot open it") from exc
        raise document_error(source, "not_pdf", "not a PDF: no %PDF header and MuPDF cannot open it") from exc
    finally:
        os.close(fd)
    if not doc.is_pdf:
        doc.close()
        raise document_error(source, "not_pdf", "not a PDF (MuPDF reads it as another format)")
    return doc


def _read_head(fd: int, source: SourceFile) -> bytes:
    try:
        head = os.pread(fd, HEADER_BYTES, 0)
    except OSError as exc:
        raise document_error(source, "unreadable", f"cannot read the file: {exc.strerror}") from exc
    if not head:
        raise document_error(source, "empty_file", "the file is empty (0 bytes)")
    return head


def authenticate(doc: pymupdf.Document, password: str | None, source: SourceFile) -> None:
    # PyMuPDF 2.0: reading needs_pass after authenticate() makes get_text() return ''
    # (issue6010_1.pdf), so it is read exactly once, here, before authenticating.
    if not doc.needs_pass:
        return
    if password is None:
        raise document_error(source, "encrypted", "encrypted: a password is needed and none was given")
    if not any(doc.authenticate(candidate) for candidate in _password_forms(password)):
        raise document_error(source, "encrypted", "encrypted: the given password is wrong")


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


def page_count(doc: pymupdf.Document, source: SourceFile) -> int:
    try:
        count = doc.page_count
    except MUPDF_ERRORS as exc:
        raise document_error(source, "corrupt", f"its page tree cannot be read ({exc})") from exc
    if count == 0:
        damaged = ": MuPDF repaired a damaged (truncated?) file and found none" if doc.is_repaired else ""
        raise document_error(source, "no_pages", f"the PDF has no pages{damaged}")
    return count


def document_error(source: SourceFile, kind: str, message: str) -> DocumentError:
    return DocumentError(kind, message, source=source.document_id)
