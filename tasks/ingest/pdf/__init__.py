"""PDF text extraction with PyMuPDF.

``extract.extract_document`` reads one PDF; ``sandbox.extract_with_time_limit`` runs it in a
child process. ``open`` opens and unlocks the file, ``page`` reads one page (``layout`` for its
text blocks, ``ocr`` when it has none), ``headings`` finds heading levels.

PyMuPDF is first imported here, before any module of this package imports it.
"""

from __future__ import annotations

import sys

# PyMuPDF 2.0 imports its add-ons pymupdf.layout (onnxruntime) and pymupdf4llm when they
# are installed: 1.6 s of its 2 s import, paid again by every process that imports it.
# Neither is used here, and importing pymupdf4llm turns MuPDF's glyph box ("quad")
# corrections off for the whole process, which changes extracted blocks. Skip both.
for _addon in ("pymupdf.layout", "pymupdf4llm"):
    sys.modules.setdefault(_addon, None)

import pymupdf  # noqa: E402

# MuPDF reports failures as FzErrorBase subclasses (e.g. FzErrorFormat for a cyclic
# page tree) and PyMuPDF wraps some as RuntimeError (FileDataError).
MUPDF_ERRORS = (RuntimeError, pymupdf.mupdf.FzErrorBase)
