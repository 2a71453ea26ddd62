"""The records of summarization: candidates, selected evidence, cited sentences.

Three states stay distinct: the stored chunk (source text), a ``Candidate`` (what
retrieval proposed, with its scores and ranks) and ``Evidence`` (the candidates
the reranker selected, labelled ``c1``..``cN`` for the synthesizer). Evidence is
always a subset of the candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from citesum.tasks.records import Chunk


@dataclass(frozen=True)
class Candidate:
    """A stored chunk proposed by retrieval for one query."""

    chunk: Chunk
    rank: int  # 1-based rank in the fused candidate list (a page mate: in the fused lists, before the round-robin)
    score: float  # fused retrieval score
    dense_rank: int | None = None  # rank in the vector search; None = not found by it
    lexical_rank: int | None = None  # rank in the full-text search; None = not found by it
    vector: np.ndarray | None = field(default=None, repr=False, compare=False)
    # Another chunk of a candidate's page, which the page round-robin left out: the reranker may quote it in the place
    # of its page's candidate, and never for a page of its own (``retrieve.page_mates``).
    page_mate: bool = False

    def covers(self, document_id: str, page: int) -> bool:
        c = self.chunk
        return c.document_id == document_id and c.page_start <= page <= c.page_end


@dataclass(frozen=True)
class Evidence:
    """A candidate selected by the reranker, labelled for citation."""

    label: str  # "c1".."cN", in rerank order
    candidate: Candidate
    score: float  # rerank score
    signals: dict[str, float] = field(default_factory=dict)  # what the score was made of
    redacted: str | None = None  # the chunk's text less what addresses an AI system (``quarantine``)

    @property
    def chunk_id(self) -> str:
        return self.candidate.chunk.chunk_id

    @property
    def text(self) -> str:
        """What synthesis may use and validation checks against: the chunk's text, less quarantined sentences."""
        return self.candidate.chunk.text if self.redacted is None else self.redacted


@dataclass(frozen=True)
class Citation:
    """Where a cited label points: chunk, document and pages."""

    label: str
    chunk_id: str
    document_id: str
    source: str
    page_start: int
    page_end: int

    @classmethod
    def of(cls, evidence: Evidence) -> Citation:
        c = evidence.candidate.chunk
        return cls(evidence.label, c.chunk_id, c.document_id, c.source, c.page_start, c.page_end)

    @property
    def pages(self) -> str:
        return f"p.{self.page_start}" if self.page_start == self.page_end else f"pp.{self.page_start}-{self.page_end}"


@dataclass(frozen=True)
class CitedSentence:
    """One sentence (or bullet) of a summary and the evidence labels it cites."""

    text: str
    citations: tuple[str, ...]


@dataclass(frozen=True)
class Draft:
    """What a synthesizer returned for one section: parsed sentences and the raw output."""

    sentences: tuple[CitedSentence, ...]
    raw: str  # the model's output as received (or the extractive selection, rendered)
    prompt: str = ""  # what was sent; empty for extractive synthesis
