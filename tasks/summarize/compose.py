"""One summary section: synthesize, validate citations, retry once, then keep what holds.

First failure: one retry with instructions naming what failed (a generated answer
with no claim in the form asked for fails too). Second failure: unsupported
sentences are removed and kept for the record, and the section carries the warning
``LIMITED_COVERAGE`` with both attempts as its trace. When nothing of the second
attempt holds, a fallback synthesizer (the extractive one) writes the section from
the same evidence, marked ``EXTRACTIVE_FALLBACK``, instead of leaving it empty.

A question that names what no document of its evidence mentions (``premise.unmentioned``: a year, a code, a
name) is not put to the synthesizer: its section says "Not stated in the evidence." and why (``Section.reason``).

Injection quarantine (``quarantine``): ``write_section`` cuts what addresses an AI system out of the
evidence before synthesis, and every draft's sentences that address one are dropped before validation;
the section keeps both as ``quarantined``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.summarize.quarantine import Quarantined, quarantine, screen
from citesum.tasks.summarize.synthesizers.base import PART_SENTENCES, SynthesisRequest, Synthesizer
from citesum.tasks.summarize.synthesizers.prompts import NOT_STATED
from citesum.tasks.summarize.validate import LIMITED_COVERAGE, Validation, validate

EXTRACTIVE_FALLBACK = "Extractive fallback: the generated sentences failed validation twice"
NO_CLAIMS = (
    "Your answer held no statement in the form asked for: "
    'a JSON object {"sentences": [{"text": "...", "citations": ["c1"]}]}.'
)


@dataclass(frozen=True)
class Attempt:
    draft: Draft
    validation: Validation


@dataclass(frozen=True)
class Section:
    """A validated section of a summary; its citations are labels of its own evidence."""

    title: str
    evidence: tuple[Evidence, ...]  # what the section could cite (selected evidence)
    sentences: tuple[CitedSentence, ...]  # final: every one validly cited (or "not stated")
    attempts: tuple[Attempt, ...]  # the trace: each draft and its validation
    removed: tuple[CitedSentence, ...] = ()  # sentences dropped after the second failure
    warning: str | None = None
    fallback: Attempt | None = None  # the fallback's draft, when it wrote ``sentences``
    quarantined: tuple[Quarantined, ...] = ()  # passages that address an AI system, left out
    reason: str = ""  # why it says "Not stated in the evidence." without asking the synthesizer

    @property
    def bears_nothing(self) -> bool:
        """The section says that nothing in it bears on the request (exhaustive mode): it has sentences, none citing."""
        return bool(self.sentences) and not any(s.citations for s in self.sentences)

    @property
    def last(self) -> Attempt | None:
        """The synthesizer's own last attempt (a fallback is not one: metrics judge the synthesizer)."""
        return self.attempts[-1] if self.attempts else None


def write_section(
    title: str,
    instruction: str,
    evidence: Sequence[Evidence],
    synthesizer: Synthesizer,
    *,
    max_sentences: int = PART_SENTENCES,
    fallback: Synthesizer | None = None,
    is_question: bool = False,
    unmentioned: Sequence[str] = (),
) -> Section:
    """Synthesize a section from its evidence (quarantined first), validated, with one retry, then the
    fallback if nothing held. ``is_question``: the instruction is the user's question (``SynthesisRequest``);
    ``unmentioned``: what it names that no document of the evidence mentions, which it is then not asked."""
    evidence, cut = quarantine(evidence)
    if is_question and unmentioned and evidence:
        return Section(
            title,
            tuple(evidence),
            (CitedSentence(NOT_STATED, ()),),
            (),
            quarantined=cut,
            reason=f"No document of the evidence mentions {_listed(unmentioned)}.",
        )
    request = SynthesisRequest(instruction, evidence, max_sentences=max_sentences, is_question=is_question)
    section = validated_section(
        title,
        evidence,
        lambda feedback: synthesizer.synthesize(replace(request, feedback=feedback)),
        verbatim=synthesizer.verbatim,
        fallback=(lambda: fallback.synthesize(request)) if fallback else None,
    )
    return replace(section, quarantined=cut + section.quarantined)


def _listed(terms: Sequence[str]) -> str:
    quoted = [f"“{t}”" for t in terms]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def validated_section(
    title: str,
    evidence: Sequence[Evidence],
    produce: Callable[[str], Draft],
    *,
    verbatim: bool,
    fallback: Callable[[], Draft] | None = None,
) -> Section:
    """``produce(feedback)`` drafts the section; feedback is empty on the first attempt.

    ``fallback()`` drafts verbatim evidence sentences, asked only when no sentence of the second attempt holds.
    Every draft's sentences that address an AI system are dropped first; the section records them.
    """
    evidence = tuple(evidence)
    if not evidence:
        return Section(title, evidence, (), ())
    dropped: list[Quarantined] = []

    def screened(draft: Draft) -> Draft:
        kept, found = screen(draft.sentences, evidence)
        dropped.extend(found)
        return replace(draft, sentences=kept) if found else draft

    section = _validated(
        title,
        evidence,
        lambda feedback: screened(produce(feedback)),
        verbatim,
        (lambda: screened(fallback())) if fallback else None,
    )
    return replace(section, quarantined=tuple(dropped)) if dropped else section


def _validated(
    title: str,
    evidence: tuple[Evidence, ...],
    produce: Callable[[str], Draft],
    verbatim: bool,
    fallback: Callable[[], Draft] | None,
) -> Section:
    texts = {e.label: e.text for e in evidence}
    attempts = [_attempt(produce(""), texts, verbatim)]
    if _failed(attempts[0], verbatim):
        attempts.append(_attempt(produce(_feedback(attempts[0])), texts, verbatim))
    final = attempts[-1]
    if not _failed(final, verbatim):
        return Section(title, evidence, final.validation.passing(), tuple(attempts))
    removed = tuple(check.sentence for check in final.validation.checks if not check.supported_by and check.problems)
    kept = final.validation.passing()
    if kept or fallback is None:
        return Section(title, evidence, kept, tuple(attempts), removed, LIMITED_COVERAGE)
    return _fallen_back(title, evidence, fallback, tuple(attempts), removed)


def fallback_section(title: str, evidence: Sequence[Evidence], fallback: Callable[[], Draft]) -> Section:
    """A section the fallback writes without asking the synthesizer, which has nothing to work from
    (exhaustive mode: no point of the map held, and a merge of no points could only fail or invent)."""
    return _fallen_back(title, tuple(evidence), fallback, (), ())


def _fallen_back(
    title: str,
    evidence: tuple[Evidence, ...],
    fallback: Callable[[], Draft],
    attempts: tuple[Attempt, ...],
    removed: tuple[CitedSentence, ...],
) -> Section:
    extracted = _attempt(fallback(), {e.label: e.text for e in evidence}, verbatim=True)
    sentences = extracted.validation.passing()
    warning = EXTRACTIVE_FALLBACK if sentences else LIMITED_COVERAGE
    return Section(title, evidence, sentences, attempts, removed, warning, extracted)


def _failed(attempt: Attempt, verbatim: bool) -> bool:
    # An extractive selection with no sentence would be the same on a retry; a model's empty answer need not.
    return not attempt.validation.ok or (not verbatim and not attempt.draft.sentences)


def _feedback(attempt: Attempt) -> str:
    return attempt.validation.feedback() if attempt.draft.sentences else NO_CLAIMS


def _attempt(draft: Draft, texts: dict[str, str], verbatim: bool) -> Attempt:
    return Attempt(draft, validate(draft, texts, verbatim=verbatim))
