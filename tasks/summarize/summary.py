"""A finished summary: its sections, one citation table, metrics, and how it renders.

Each section cites labels of its own evidence; the summary relabels them once,
in order of first citation, so a chunk cited by two sections has one label.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from citesum.tasks.records import to_json
from citesum.tasks.summarize.compose import EXTRACTIVE_FALLBACK, Section
from citesum.tasks.summarize.evidence import Candidate, Citation
from citesum.tasks.summarize.quarantine import Quarantined, distinct
from citesum.tasks.summarize.quarantine import warning as quarantine_warning
from citesum.tasks.summarize.validate import LIMITED_COVERAGE, is_not_stated
from citesum.tasks.text import evidence_label, normalize_space

QUERY_CAVEAT = (
    "Retrieval is not proof of coverage: this summary covers the passages most relevant to the question, "
    "not every section. Use --mode exhaustive to read every chunk."
)


@dataclass(frozen=True)
class SummaryPart:
    """A section retrieved and written for one query (a topic, or the question itself)."""

    section: Section
    query: str
    candidates: tuple[Candidate, ...]  # what retrieval proposed, before reranking


@dataclass
class Summary:
    run_id: str
    question: str | None
    mode: str  # "query" | "topics" | "exhaustive"
    mode_reason: str
    synthesizer: str
    synthesizer_reason: str
    parts: list[SummaryPart]
    metrics: dict[str, float | int]
    warnings: list[str] = field(default_factory=list)

    def citations(self) -> tuple[dict[tuple[int, str], str], dict[str, Citation]]:
        """Global labels: (part index, local label) -> global label, and global label -> citation."""
        by_chunk: dict[str, str] = {}
        local: dict[tuple[int, str], str] = {}
        table: dict[str, Citation] = {}
        for index, part in enumerate(self.parts):
            evidence = {e.label: e for e in part.section.evidence}
            for sentence in part.section.sentences:
                for label in sentence.citations:
                    chunk_id = evidence[label].chunk_id
                    if chunk_id not in by_chunk:
                        by_chunk[chunk_id] = evidence_label(len(by_chunk) + 1)
                        table[by_chunk[chunk_id]] = Citation.of(evidence[label])
                    local[(index, label)] = by_chunk[chunk_id]
        return local, table

    def sections_json(self) -> list[dict]:
        local, _ = self.citations()
        return [
            {
                "title": part.section.title,
                "extractive_fallback": part.section.fallback is not None,
                "not_stated_because": part.section.reason or None,
                "closest_passages": [to_json(c, exclude={"label"}) for c in closest_passages(part)],
                "sentences": [
                    {"text": s.text, "citations": [local[(i, label)] for label in s.citations]}
                    for s in part.section.sentences
                ],
            }
            for i, part in enumerate(self.parts)
        ]

    def markdown(self, *, links: bool = False) -> str:
        """Citations as ``[document p.N]``; with links, each points at ``source.pdf#page=N``."""
        local, table = self.citations()
        lines = [f"# {self.question or 'Summary'}", "", f"_Mode: {self.mode} ({self.mode_reason})._"]
        lines += [f"_Synthesizer: {self.synthesizer} ({self.synthesizer_reason})._", ""]
        lines += [f"> **Warning:** {w}" for w in self.warnings] + ([""] if self.warnings else [])
        if self.mode == "query":
            lines += [f"_{QUERY_CAVEAT}_", ""]
        # A deeply sectioned filing's exhaustive summary says that nothing bears on the request of most of its
        # sections (106 of Lockheed Martin 2020's 150): one line names them all.
        quiet = [i for i, p in enumerate(self.parts) if self.mode == "exhaustive" and p.section.bears_nothing]
        for i, part in enumerate(self.parts):
            if len(quiet) > 1 and i in quiet:
                continue
            lines += [f"## {part.section.title}", ""]
            if part.section.fallback is not None:
                lines += [f"_{FALLBACK_NOTE}_", ""]
            for s in part.section.sentences:
                refs = "".join(_reference(table[local[(i, label)]], links) for label in s.citations)
                lines.append(f"- {s.text} {refs}".rstrip())
            if not part.section.sentences:
                lines.append("- No validly cited sentence for this part.")
            if closest := closest_passages(part):
                refs = ", ".join(_reference(c, links) for c in closest)
                why = part.section.reason or ABSTAINED_NOTE
                lines += ["", f"_{why} Closest passages, not findings: {refs}._"]
            lines.append("")
        if len(quiet) > 1:
            titles = "; ".join(self.parts[i].section.title for i in quiet)
            lines += [f"## {len(quiet)} sections nothing bears on", "", f"- {NOTHING_BEARS_ANY}: {titles}."]
        return "\n".join(lines).rstrip() + "\n"

    def to_json(self) -> dict:
        _, table = self.citations()
        return {
            "question": self.question,
            "mode": self.mode,
            "synthesizer": self.synthesizer,
            "summary_markdown": self.markdown(),
            "sections": self.sections_json(),
            "citations": {label: to_json(c, exclude={"label"}) for label, c in table.items()},
            "metrics": self.metrics,
            "warnings": self.warnings,
            "run_id": self.run_id,
        }


def without_repeats(parts: list[SummaryPart]) -> list[SummaryPart]:
    """Each cited sentence once per summary: one already in an earlier part is dropped from later ones.

    Sentences are compared whitespace-normalised and case-insensitively. Sentences that cite
    nothing (such as "Not stated in the evidence.") are statements about a part, kept in each.
    """
    seen: set[str] = set()
    kept = []
    for part in parts:
        fresh = []
        for sentence in part.section.sentences:
            key = normalize_space(sentence.text).lower()
            if sentence.citations and key in seen:
                continue
            seen.add(key)
            fresh.append(sentence)
        if len(fresh) < len(part.section.sentences):
            part = replace(part, section=replace(part.section, sentences=tuple(fresh)))
        kept.append(part)
    return kept


def _reference(citation: Citation, links: bool) -> str:
    text = f"{citation.document_id} {citation.pages}"
    return f"[{text}]({citation.source}#page={citation.page_start})" if links else f"[{text}]"


NOTHING_BEARS_ANY = "Nothing in these sections bears on the request"
ABSTAINED_NOTE = "The synthesizer found nothing in the selected evidence that answers this."
CLOSEST = 3  # passages listed beside "Not stated in the evidence.", so a reader can check the claim


def closest_passages(part: SummaryPart) -> list[Citation]:
    """For a part that abstains (its only sentences say "not stated"), its best evidence, for the reader to check."""
    sentences = part.section.sentences
    if not sentences or not all(is_not_stated(s) for s in sentences):
        return []
    return [Citation.of(e) for e in part.section.evidence[:CLOSEST]]


FALLBACK_NOTE = "The generated sentences failed validation twice: these are verbatim evidence sentences."


def failure_warnings(parts: list[SummaryPart], collapse: str | None) -> list[str]:
    """Named failure modes, made visible: passages that address an AI system (one warning for the summary),
    retrieval miss, unverifiable citations, coverage collapse (``metrics.collapse_warning``)."""
    injected = quarantine_warning(quarantined(parts))
    warnings = [injected] if injected else []
    warnings += [f"Retrieval miss: nothing was retrieved for {p.query!r}" for p in parts if not p.candidates]
    if any(p.section.warning == LIMITED_COVERAGE for p in parts):
        warnings.append(LIMITED_COVERAGE)
    if fell_back := [p.section.title for p in parts if p.section.warning == EXTRACTIVE_FALLBACK]:
        warnings.append(f"{EXTRACTIVE_FALLBACK}; verbatim evidence sentences instead {_where(fell_back, parts)}")
    # Counted, not listed: the run record holds each removed sentence with what failed.
    if removed := sum(len(p.section.removed) for p in parts):
        warnings.append(
            f"{removed} {'sentence' if removed == 1 else 'sentences'} removed as unsupported; see the run record"
        )
    return warnings + ([collapse] if collapse else [])


FALLBACK_NAMED = 3  # sections named in the fallback warning; beyond, a count (each section carries its note)


def _where(titles: list[str], parts: list[SummaryPart]) -> str:
    if len(titles) <= FALLBACK_NAMED:
        return "in: " + ", ".join(titles)
    return f"in {len(titles)} of {len(parts)} sections, each marked"


def quarantined(parts: list[SummaryPart]) -> list[Quarantined]:
    """Every passage the summary's parts left out as addressing an AI system, each once."""
    return distinct(q for part in parts for q in part.section.quarantined)


def candidate_rows(summary: Summary) -> list[dict]:
    """Each part's candidates proper, and the page mates its evidence quotes: a page's other chunks, a few hundred
    for a question over a filing, would bury the table a reader scans (the run record keeps them all)."""
    return [row for part in summary.parts for row in _candidate_rows(part)]


def _candidate_rows(part: SummaryPart) -> list[dict]:
    quoted = {e.chunk_id for e in part.section.evidence}
    return [
        {
            "part": part.section.title,
            "rank": c.rank,
            "page_mate": c.page_mate,
            "score": round(c.score, 4),
            "dense_rank": c.dense_rank,
            "lexical_rank": c.lexical_rank,
            "document": c.chunk.document_id,
            "pages": f"{c.chunk.page_start}-{c.chunk.page_end}",
            "heading": c.chunk.heading,
        }
        for c in part.candidates
        if not c.page_mate or c.chunk.chunk_id in quoted
    ]


def evidence_rows(summary: Summary) -> list[dict]:
    return [
        {
            "part": part.section.title,
            "label": e.label,
            "score": round(e.score, 4),
            "document": e.candidate.chunk.document_id,
            "pages": f"{e.candidate.chunk.page_start}-{e.candidate.chunk.page_end}",
            "heading": e.candidate.chunk.heading,
            "text": e.text[:200],
        }
        for part in summary.parts
        for e in part.section.evidence
    ]
