"""The two summary metrics, defined once.

citation rate
    Share of the sentences the synthesizer finally proposed (its last attempt, before
    unsupported sentences are removed) that carry at least one valid, supported
    citation. "Not stated in the evidence" sentences make no claim and are not
    counted; with no claim at all the rate is 1.0. Between 0 and 1.
coverage
    topics mode: share of topics with at least one validly cited sentence.
    exhaustive mode: share of the top-level sections of the chosen documents with at
    least one validly cited sentence citing a chunk of that section; a part holding only
    a title or a few words is no section (see ``topics.is_section``), and a section the
    summary says nothing bears on (counted as ``not_bearing``) is left out, not a failure.
    query mode: share of the selected evidence that the summary cites.
coverage collapse (a warning): the summary truly leaves its evidence unused.
    query mode: it cites none of its evidence and does not say the evidence does not
    answer. A short answer citing one or two passages is an answer, not a collapse: the
    evidence is what retrieval proposed, not what the question needs.
    topics mode: under half of the topics are covered, or the topics cite under a quarter
    of the evidence selected for them (all of it was chosen for its topic: a section citing
    1 of 8 leaves it unused).
    exhaustive mode: under half of the sections are covered.
fallback
    sections the extractive fallback wrote because the synthesizer's sentences failed
    validation twice. Beside the citation rate, which judges only what the synthesizer
    proposed: a model whose every answer held no claim has rate 1.0 and fallback = sections.
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


def section_coverage(sections: Sequence[Section]) -> float:
    """Exhaustive mode: topic coverage over the sections that something bears on (1.0 if none does)."""
    bearing = [s for s in sections if not s.bears_nothing]
    return topic_coverage(bearing) if bearing or not sections else 1.0


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
    coverage = {"query": evidence_coverage, "exhaustive": section_coverage}.get(mode, topic_coverage)(sections)
    return {
        "coverage": round(coverage, 4),
        "not_bearing": sum(s.bears_nothing for s in sections),
        "citation_rate": round(citation_rate(sections), 4),
        "candidates": len({c.chunk.chunk_id for part in parts for c in part.candidates}),
        "evidence": len({e.chunk_id for s in sections for e in s.evidence}),
        "sentences": sum(len(s.sentences) for s in sections),
        "removed": sum(len(s.removed) for s in sections),
        "fallback": sum(s.fallback is not None for s in sections),
    }


# Under these shares the summary is reported as a coverage collapse (see the module docstring).
COLLAPSE = 0.5  # of the topics or sections covered
EVIDENCE_UNUSED = 0.25  # of a topic brief's evidence cited


def collapse_warning(mode: str, parts: Sequence[SummaryPart]) -> str | None:
    """The coverage-collapse warning, or None when the summary uses its evidence."""
    sections = [part.section for part in parts]
    if not sections:
        return None
    if mode == "query":
        abstains = any(is_not_stated(s) for section in sections for s in section.sentences)
        used = evidence_coverage(sections)
        return None if used > 0 or abstains else _collapse(used, "of the selected evidence")
    if mode == "exhaustive":
        covered = section_coverage(sections)
        return _collapse(covered, "of the sections") if covered < COLLAPSE else None
    if (covered := topic_coverage(sections)) < COLLAPSE:
        return _collapse(covered, "of the topics")
    used = evidence_coverage(sections)
    return _collapse(used, "of the selected evidence") if used < EVIDENCE_UNUSED else None


def _collapse(share: float, what: str) -> str:
    return f"Coverage collapse: only {share:.0%} {what} is cited"
