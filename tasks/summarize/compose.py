"""One summary section: synthesize, validate citations, retry once, then keep what holds.

First failure: one retry with instructions naming what failed. Second failure:
unsupported sentences are removed and listed, and the section carries the
warning ``LIMITED_COVERAGE`` with both attempts as its trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.summarize.synthesizers.base import SynthesisRequest, Synthesizer
from citesum.tasks.summarize.validate import LIMITED_COVERAGE, Validation, validate


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

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None


def write_section(
    title: str, instruction: str, evidence: Sequence[Evidence], synthesizer: Synthesizer, *, max_sentences: int = 5
) -> Section:
    """Synthesize a section from its evidence, validated, with one retry."""
    request = SynthesisRequest(instruction, tuple(evidence), max_sentences=max_sentences)
    return validated_section(
        title,
        evidence,
        lambda feedback: synthesizer.synthesize(replace(request, feedback=feedback)),
        verbatim=synthesizer.verbatim,
    )


def validated_section(
    title: str, evidence: Sequence[Evidence], produce: Callable[[str], Draft], *, verbatim: bool
) -> Section:
    """``produce(feedback)`` drafts the section; feedback is empty on the first attempt."""
    evidence = tuple(evidence)
    if not evidence:
        return Section(title, evidence, (), ())
    texts = {e.label: e.candidate.text for e in evidence}
    attempts = [_attempt(produce(""), texts, verbatim)]
    if not attempts[0].validation.ok:
        attempts.append(_attempt(produce(attempts[0].validation.feedback()), texts, verbatim))
    final = attempts[-1].validation
    if final.ok:
        return Section(title, evidence, final.passing(), tuple(attempts))
    removed = tuple(check.sentence for check in final.checks if not check.supported_by and check.problems)
    return Section(title, evidence, final.passing(), tuple(attempts), removed, LIMITED_COVERAGE)


def _attempt(draft: Draft, texts: dict[str, str], verbatim: bool) -> Attempt:
    return Attempt(draft, validate(draft, texts, verbatim=verbatim))
