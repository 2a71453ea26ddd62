"""Injection quarantine: text that addresses an AI system is never a finding of a summary.

Two layers, in every mode and with either synthesizer:

1. Evidence (``quarantine``): before synthesis, each selected chunk's sentences that match the detector
   (``citesum.tasks.injection.flagged_spans``) are cut out of the text the synthesizer sees and validation
   checks against (``Evidence.text``); a chunk with nothing else left, or flagged at ingest though the
   detector no longer finds a sentence (its heading, an older detector), leaves the evidence. The decision
   is per sentence, not per chunk: a notices clause holding one injected sentence still lets its real
   sentences be cited, and an injected sentence cannot silence the clauses around it by its presence.
   Cut sentences are whole sentences of the one splitter the extractive synthesizer quotes by, so what
   remains re-splits into the same sentences as before, each still verbatim in the stored chunk.
2. Output (``screen``): any sentence a synthesizer returns that matches the detector is dropped before
   validation (a model may repeat an instruction it saw elsewhere, or be fooled into writing one).

Both record a ``Quarantined`` passage with its document and pages; the summary names them in one warning
(``warning``) and the run record lists them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from citesum.tasks import injection
from citesum.tasks.summarize.evidence import CitedSentence, Evidence
from citesum.tasks.text import content_words, evidence_label, normalize_space


@dataclass(frozen=True)
class Quarantined:
    """A passage left out of a summary because it addresses an AI system."""

    text: str  # whitespace-normalised
    patterns: tuple[str, ...]  # the detector's pattern names (``injection.PATTERNS``)
    document_id: str
    pages: tuple[int, ...]  # the flagged pages of its chunk when ingestion flagged them, else the chunk's span
    chunk_id: str | None  # None: a synthesizer's sentence citing no known evidence
    found_in: str  # "evidence" (cut before synthesis) or "summary" (a synthesizer's sentence, dropped)

    @property
    def reference(self) -> str:
        pages = self.pages
        if not pages:
            return f"[{self.document_id or 'no document'}]"
        where = f"p.{pages[0]}" if len(pages) == 1 else f"pp.{pages[0]}-{pages[-1]}"
        return f"[{self.document_id} {where}]"


def _pages(evidence: Evidence) -> tuple[int, ...]:
    chunk = evidence.candidate.chunk
    return tuple(chunk.injection) or tuple(sorted({chunk.page_start, chunk.page_end}))


def _passage(text: str, evidence: Evidence | None, found_in: str) -> Quarantined:
    plain = normalize_space(text)
    chunk = evidence.candidate.chunk if evidence else None
    return Quarantined(
        text=plain,
        patterns=injection.patterns_in(plain),
        document_id=chunk.document_id if chunk else "",
        pages=_pages(evidence) if evidence else (),
        chunk_id=chunk.chunk_id if chunk else None,
        found_in=found_in,
    )


def quarantine(evidence: Sequence[Evidence]) -> tuple[tuple[Evidence, ...], tuple[Quarantined, ...]]:
    """The evidence with flagged sentences cut out (relabelled c1..cN), and what was cut."""
    kept: list[Evidence] = []
    found: list[Quarantined] = []
    for item in evidence:
        text = item.text
        spans = injection.flagged_spans(text)
        if not spans and (item.redacted is not None or not item.candidate.chunk.injection):  # clean, or cut already
            kept.append(item)
            continue
        found += [_passage(text[s:e], item, "evidence") for s, e in spans] or [_passage(text, item, "evidence")]
        rest = _without(text, spans) if spans else ""
        if content_words(rest):
            kept.append(replace(item, redacted=rest))
    relabelled = tuple(replace(e, label=evidence_label(i)) for i, e in enumerate(kept, 1))
    return relabelled, tuple(found)


def _without(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` less the spans, the pieces left joined by a blank line (as a chunk joins its blocks)."""
    pieces, at = [], 0
    for start, end in spans:
        pieces.append(text[at:start].strip())
        at = end
    pieces.append(text[at:].strip())
    return "\n\n".join(p for p in pieces if p)


def screen(
    sentences: Iterable[CitedSentence], evidence: Sequence[Evidence]
) -> tuple[tuple[CitedSentence, ...], tuple[Quarantined, ...]]:
    """The sentences that do not address an AI system, and a passage for each that does."""
    by_label = {e.label: e for e in evidence}
    kept: list[CitedSentence] = []
    found: list[Quarantined] = []
    for sentence in sentences:
        if not injection.addresses_ai(sentence.text):
            kept.append(sentence)
            continue
        cited = next((by_label[x] for x in sentence.citations if x in by_label), None)
        found.append(_passage(sentence.text, cited, "summary"))
    return tuple(kept), tuple(found)


def distinct(passages: Iterable[Quarantined]) -> list[Quarantined]:
    """Each passage once (by document, text and pages: overlapping chunks repeat a sentence), in order."""
    seen: dict[tuple[str, str, tuple[int, ...]], Quarantined] = {}
    for p in passages:
        seen.setdefault((p.document_id, p.text.lower(), p.pages), p)
    return list(seen.values())


def warning(passages: Sequence[Quarantined]) -> str | None:
    """One warning naming how many passages were left out, with where each is."""
    passages = distinct(passages)
    if not passages:
        return None
    count = len(passages)
    where = ", ".join(dict.fromkeys(p.reference for p in passages))
    what = "passage that addresses" if count == 1 else "passages that address"
    verb = "was" if count == 1 else "were"
    return f"{count} {what} an AI system {verb} left out: {where}"
