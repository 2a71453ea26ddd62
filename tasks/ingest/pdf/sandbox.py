"""``extract_document`` in a child process under a time and a memory limit, with MuPDF's errors kept.

A hang, a crash or a memory blow-up inside MuPDF costs one document. Children are forked from a forkserver
that has imported this module, so it and the modules it imports stay light (PyMuPDF, stdlib, records, errors).
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.connection
import os
import resource
import traceback
from dataclasses import replace

import pymupdf

from citesum.tasks.errors import DocumentError
from citesum.tasks.ingest.pdf.extract import extract_document
from citesum.tasks.ingest.pdf.open import document_error
from citesum.tasks.records import ExtractedDocument, Problem, SourceFile


def extract_with_time_limit(
    source: SourceFile,
    *,
    password: str | None = None,
    ocr: bool = True,
    ocr_language: str = "eng",
    timeout: float,
    memory_mb: int | None = None,
    max_pages: int | None = None,
    ocr_max_pixels: int = 25_000_000,
    tables: bool = True,
) -> ExtractedDocument:
    """``extract_document`` in a child process that is killed after ``timeout`` seconds.

    The caller is never forked: it has threads (Prefect, the model) and a forked copy of
    their locks can deadlock; the child is forked from the forkserver instead, and runs in
    the caller's environment and working folder as they are now. A hang or a crash in MuPDF
    becomes a ``DocumentError`` (kind "timeout" or "crashed") for this document alone. With
    ``memory_mb`` the child's address space is limited (RLIMIT_AS, inherited by the tesseract
    it runs): a document that needs more fails with kind "memory_limit".
    """
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    options = {"password": password, "ocr": ocr, "ocr_language": ocr_language}
    options |= {"max_pages": max_pages, "ocr_max_pixels": ocr_max_pixels, "tables": tables}
    process = context.Process(
        target=_extract_in_child,
        args=(sender, source, options, memory_mb, dict(os.environ)),
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
    return _unpack(outcome, source, timeout, process.exitcode, memory_mb)


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """Children forked from a server process that has already imported this module (and PyMuPDF): a fork of a
    process with no threads is safe. Measured here on a one-page PDF: 15 ms a document, where a spawned child
    took 0.47 s and 0.7 s of CPU to start (its imports), on cores the embedding model is using."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def limit_memory(memory_mb: int) -> None:
    """Cap this process's address space; allocations past it fail (MemoryError, MuPDF's FzErrorMemory)."""
    limit = memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit if hard == resource.RLIM_INFINITY else min(limit, hard)))


def _extract_in_child(
    sender: multiprocessing.connection.Connection,
    source: SourceFile,
    options: dict,
    memory_mb: int | None,
    environment: dict[str, str],
) -> None:
    # The forkserver has the caller's environment of when it started (multiprocessing carries the working folder).
    os.environ.clear()
    os.environ.update(environment)
    # MuPDF prints its errors to stderr, where they name no file; kept instead, with the document they concern.
    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    if memory_mb is not None:
        limit_memory(memory_mb)
    try:
        document = extract_document(source, **options)
        reported = mupdf_errors()
        if reported:
            document = replace(document, problems=(*document.problems, Problem("mupdf_errors", reported)))
        outcome: tuple = ("ok", document)
    except DocumentError as exc:  # sent as fields: its constructor takes keyword arguments
        reported = mupdf_errors()
        outcome = ("document_error", exc.kind, f"{exc.message} ({reported})" if reported else exc.message)
    except MemoryError:
        outcome = ("memory_limit",)
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


def _unpack(
    outcome: tuple, source: SourceFile, timeout: float, exitcode: int | None, memory_mb: int | None
) -> ExtractedDocument:
    match outcome:
        case ("memory_limit",):
            raise document_error(
                source,
                "memory_limit",
                f"extraction needed more than its memory limit of {memory_mb} MiB (CITESUM_EXTRACT_MEMORY_MB)",
            )
        case ("ok", document):
            return document
        case ("document_error", kind, message):
            raise document_error(source, kind, message)
        case ("timeout",):
            raise document_error(source, "timeout", f"extraction took longer than {timeout:g} s")
        case ("exception", text):
            raise RuntimeError(f"{source.document_id}: extraction failed in its child process:\n{text}")
    limit = f" under its memory limit of {memory_mb} MiB" if memory_mb is not None else ""
    raise document_error(source, "crashed", f"the extraction process died{limit} (exit code {exitcode})")
