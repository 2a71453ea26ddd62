"""File names as text: a name the file system holds becomes a string every store, report and terminal accepts.

Linux file names are bytes; Python reads the bytes that are not UTF-8 as lone surrogates
("\\udcff"), which LanceDB, JSON and Prefect refuse. ``path_text`` writes each such byte as
``%XX`` (``bad-\\xff.pdf`` -> ``bad-%FF.pdf``); a ``%`` already followed by two hex digits
becomes ``%25`` so that ``text_path`` turns every text back into the exact name. Every other
name, including one with spaces, ``#``, ``%`` or any Unicode, is its own text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_ESCAPES = re.compile(r"%[0-9A-Fa-f]{2}")


def path_text(path: str | os.PathLike[str]) -> str:
    """The path as text: undecodable bytes as ``%XX``, a ``%`` that would read as one as ``%25``."""
    name = os.fspath(path)
    out, i = [], 0
    while i < len(name):
        char = name[i]
        if "\udc80" <= char <= "\udcff":  # surrogateescape's form of the byte 0x80-0xFF
            out.append(f"%{ord(char) - 0xDC00:02X}")
        elif char == "%" and _ESCAPES.match(name, i):
            out.append("%25")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def text_path(text: str) -> Path:
    """The file system path a ``path_text`` string names (its inverse)."""
    return Path(_ESCAPES.sub(_unescape, text))


def _unescape(match: re.Match[str]) -> str:
    byte = int(match.group()[1:], 16)
    if byte == 0x25:
        return "%"
    return chr(0xDC00 + byte) if byte >= 0x80 else match.group()  # "%41" is never written: kept as typed
