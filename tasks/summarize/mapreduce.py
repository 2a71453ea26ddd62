"""Exhaustive summaries: map-reduce over every chunk of every top-level section.

Retrieval is not proof of coverage, so a request that needs every section reads every chunk,
and each section is asked the request (without one, to summarize itself). Per section: map
turns batches of chunks (each batch about 60% of the synthesizer's context) into cited
points; reduce merges batches of points recursively until the section fits, keeping
citations through every pass. A batch that does not shrink is split in two and merged again;
a single point that cannot shrink is kept as it is, and a pass that makes no progress ends
the loop, so it always ends. The final merge is validated like any section, with the same
fallback; a section whose map kept no point is not merged (there is nothing to merge): the
fallback writes it at once. A section that yields no sentence, without any being removed as
unsupported, or whose every batch the synthesizer answered "Not stated in the evidence."
(asked "What must the Customer pay?" of the confidentiality clause), says ``NOTHING_BEARS``
instead; coverage counts it apart from a failure (see ``metrics``). What addresses an AI
system is cut from the evidence before the map (``quarantine``), and map points that address
one are dropped; the section records both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from citesum.tasks.summarize.compose import Section, fallback_section, validated_section
from citesum.tasks.summarize.evidence import CitedSentence, Evidence
from citesum.tasks.summarize.quarantine import Quarantined, quarantine, screen
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest, Synthesizer
from citesum.tasks.summarize.validate import is_not_stated, validate

BATCH_SHARE = 0.6  # of the synthesizer's context, for the evidence or points of one call
POINTS_PER_CHUNK = 2  # what map asks for per chunk of a batch
SECTION_SENTENCES = 5  # what reduce aims for per section
NOTHING_BEARS = "Nothing in this section bears on the request."


def batches(items: Sequence, cost: Callable[[object], int], budget: int) -> list[list]:
    """Consecutive runs whose total cost fits the budget; an item over budget is a run of its own."""
    runs: list[list] = []
    used = budget + 1
    for item in items:
        size = cost(item)
        if used + size > budget:
            runs.append([])
            used = 0
        runs[-1].append(item)
        used += size
    return runs


def summarize_section(
    title: str,
    evidence: Sequence[Evidence],
    synthesizer: Synthesizer,
    count_tokens: Callable[[str], int],
    fallback: Synthesizer | None = None,
    request: str | None = None,
) -> Section:
    """Every chunk of one section mapped to cited points, reduced, validated; ``fallback`` writes it if none holds.
    With ``request`` (the user's: "What are the payment obligations?"), each step asks it of the section;
    without, the section is summarized."""
    evidence, cut = quarantine(evidence)
    budget = int(synthesizer.context_tokens * BATCH_SHARE)
    dropped: list[Quarantined] = list(cut)
    task, asked = instruction(title, request), bool(request and request.strip())
    points = map_points(task, evidence, synthesizer, lambda e: count_tokens(e.text), budget, dropped, asked)
    if points and all(is_not_stated(p) for p in points):  # every batch answered that nothing in it does
        return Section(title, tuple(evidence), (CitedSentence(NOTHING_BEARS, ()),), (), quarantined=tuple(dropped))
    points = [p for p in points if not is_not_stated(p)]
    points = reduce_points(task, points, synthesizer, lambda p: count_tokens(p.text), budget)
    merging = MergeRequest(task, tuple(points), SECTION_SENTENCES)
    extract = (
        (
            lambda: fallback.synthesize(
                SynthesisRequest(task, evidence, max_sentences=SECTION_SENTENCES, is_question=asked)
            )
        )
        if fallback
        else None
    )
    if not points and evidence:
        # Nothing to merge: asking would cost two calls that can only fail or invent (a real small model
        # answered such requests with the prompt's example), so the fallback writes the section, if there is one.
        section = fallback_section(title, evidence, extract) if extract else Section(title, tuple(evidence), (), ())
    else:
        section = validated_section(
            title,
            evidence,
            lambda feedback: synthesizer.merge(replace(merging, feedback=feedback)),
            verbatim=synthesizer.verbatim,
            fallback=extract,
        )
    section = replace(section, quarantined=(*dropped, *section.quarantined))
    if section.sentences or section.removed:
        return section
    return replace(section, sentences=(CitedSentence(NOTHING_BEARS, ()),))


def map_points(
    task: str,
    evidence: Sequence[Evidence],
    synthesizer: Synthesizer,
    cost: Callable[[Evidence], int],
    budget: int,
    quarantined: list[Quarantined] | None = None,
    is_question: bool = False,
) -> list[CitedSentence]:
    """Cited points from every batch of chunks; points failing validation are dropped here, and points that
    address an AI system too (added to ``quarantined``). ``is_question``: ``task`` is the user's request."""
    texts = {e.label: e.text for e in evidence}
    points: list[CitedSentence] = []
    for batch in batches(evidence, cost, budget):
        request = SynthesisRequest(
            task, tuple(batch), max_sentences=POINTS_PER_CHUNK * len(batch), is_question=is_question
        )
        draft = synthesizer.synthesize(request)
        kept, found = screen(draft.sentences, batch)
        if quarantined is not None:
            quarantined.extend(found)
        points.extend(validate(replace(draft, sentences=kept), texts, verbatim=synthesizer.verbatim).passing())
    return points


def reduce_points(
    task: str,
    points: Sequence[CitedSentence],
    synthesizer: Synthesizer,
    cost: Callable[[CitedSentence], int],
    budget: int,
) -> list[CitedSentence]:
    """Merge batches of points until they fit one call; ends when a pass makes no progress."""
    points = list(points)
    while sum(map(cost, points)) > budget:
        merged = [p for batch in batches(points, cost, budget) for p in _merge(task, batch, synthesizer)]
        if len(merged) >= len(points):
            break
        points = merged
    return points


def _merge(task: str, batch: list[CitedSentence], synthesizer: Synthesizer) -> list[CitedSentence]:
    if len(batch) == 1:
        return batch
    allowed = {label for p in batch for label in p.citations}
    request = MergeRequest(task, tuple(batch), max(1, len(batch) // 2))
    merged = [s for s in synthesizer.merge(request).sentences if s.citations and set(s.citations) <= allowed]
    if merged and len(merged) < len(batch):
        return merged
    half = len(batch) // 2  # force split: a batch that did not shrink is merged in halves
    return _merge(task, batch[:half], synthesizer) + _merge(task, batch[half:], synthesizer)


def instruction(title: str, request: str | None = None) -> str:
    """What each call is asked: the user's request as written (the evidence's headers name the section; the
    title in the request would pull the extractive synthesizer's relevance toward the title's words), or, without
    one, a summary of the section."""
    if request and request.strip():
        return request.strip()
    return f"Summarize the section '{title}': its obligations, figures, risks and conclusions."
