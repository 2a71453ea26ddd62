"""The two summary metrics, defined once.

citation rate
    Share of the sentences the synthesizer finally proposed (its last attempt, before
    unsupported sentences are removed) that carry at least one valid, supported
    citation. "Not stated in the evidence" sentences make no claim and are not
    counted; with no claim at all the rate is 1.0. Between 0 and 1.
coverage
    topics mode: share of topics with at least one validly cited sentence.
    exhaustive mode: share of the top-level sections of the chosen documents with at
    least one validly cited sentence citing a chunk of that section.
    query mode: share of the selected evidence that the summary cites.
"""

from __future__ import annotations

from collections.abc import Sequence

from citesum.tasks.summarize.compose import Section
from citesum.tasks.summarize.summary import SummaryPart
from citesum.tasks.summarize.validate import is_not_stated


def citation_rate(sections: Sequence[Section]) -> float:
    checks = [c for s in sections if s.last for c in s.last.validation.checks if not is_not_stated(c.sentence)]
    if not checks:
        return 1.0
    return sum(bool(c.supported_by) for c in checks) / len(checks)


def cited_chunk_ids(section: Section) -> set[str]:
    by_label = {e.label: e.chunk_id for e in section.evidence}
    return {by_label[label] for s in section.sentences for label in s.citations if label in by_label}


def topic_coverage(sections: Sequence[Section]) -> float:
    """Share of sections (one per topic) with a validly cited sentence."""
    if not sections:
        return 0.0
    return sum(bool(cited_chunk_ids(s)) for s in sections) / len(sections)


def evidence_coverage(sections: Sequence[Section]) -> float:
    """Share of the selected evidence (distinct chunks) that the summary cites."""
    selected = {e.chunk_id for s in sections for e in s.evidence}
    if not selected:
        return 0.0
    cited = set().union(*(cited_chunk_ids(s) for s in sections))
    return len(cited & selected) / len(selected)


def summary_metrics(mode: str, parts: Sequence[SummaryPart]) -> dict[str, float | int]:
    """The metrics recorded with every run; which coverage applies depends on the mode."""
    sections = [part.section for part in parts]
    # Exhaustive mode writes one section per top-level section of the documents.
    coverage = evidence_coverage(sections) if mode == "query" else topic_coverage(sections)
    return {
        "coverage": round(coverage, 4),
        "citation_rate": round(citation_rate(sections), 4),
        "candidates": len({c.chunk.chunk_id for part in parts for c in part.candidates}),
        "evidence": len({e.chunk_id for s in sections for e in s.evidence}),
        "sentences": sum(len(s.sentences) for s in sections),
        "removed": sum(len(s.removed) for s in sections),
    }
