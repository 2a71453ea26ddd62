"""Small builders for summarization records and store files, shared by the tests."""

from __future__ import annotations

import os
from pathlib import Path

from citesum.tasks.records import Chunk
from citesum.tasks.summarize.evidence import Candidate, Evidence

# A filing's table of contents as extraction gives it (BOEING_2022_10K p.2).
FILING_CONTENTS = (
    "Item 1. Business 1\n\nItem 1A. Risk Factors 6\n\nItem 1B. Unresolved Staff Comments 17\n\n"
    "Item 2. Properties 18\n\nItem 3. Legal Proceedings 18\n\nItem 4. Mine Safety Disclosures 18"
)


def candidate(
    text: str, *, document_id: str = "doc.pdf", pages: tuple[int, int] = (1, 1), heading: str = ""
) -> Candidate:
    chunk = Chunk(document_id, "v1", f"/corpus/{document_id}", pages[0], pages[1], heading, text, ordinal=pages[0])
    return Candidate(chunk, rank=pages[0], score=0.0)


def evidence_of(
    label: str,
    text: str,
    *,
    document_id: str = "doc.pdf",
    pages: tuple[int, int] = (1, 1),
    heading: str = "",
    score: float = 1.0,
) -> Evidence:
    """One piece of evidence labelled ``label``."""
    return Evidence(label, candidate(text, document_id=document_id, pages=pages, heading=heading), score)


def evidence(*texts: str, heading: str = "") -> list[Evidence]:
    """Evidence c1..cN, one chunk per text on pages 1..N."""
    return [evidence_of(f"c{i}", t, pages=(i, i), heading=heading) for i, t in enumerate(texts, 1)]


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` (data, deletion, index, manifest and transaction files) holding ``needle``."""
    return [
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
        if needle in Path(folder, name).read_bytes()
    ]
