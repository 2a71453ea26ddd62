"""Small builders for summarization records used across tests."""

from __future__ import annotations

from tasks.evidence import Candidate, Evidence


def candidate(text: str, *, chunk_id: str, page: int = 1, heading: str = "", document_id: str = "doc.pdf") -> Candidate:
    return Candidate(
        chunk_id=chunk_id,
        document_id=document_id,
        version="v1",
        source=f"/corpus/{document_id}",
        page_start=page,
        page_end=page,
        heading=heading,
        text=text,
        ordinal=page,
        rank=page,
        score=0.0,
    )


def evidence(*texts: str, heading: str = "") -> list[Evidence]:
    """Evidence c1..cN, one chunk per text on pages 1..N."""
    return [
        Evidence(f"c{i}", candidate(t, chunk_id=f"chunk-{i}", page=i, heading=heading), 1.0)
        for i, t in enumerate(texts, 1)
    ]
