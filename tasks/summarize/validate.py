"""Citation validation: every sentence cites selected evidence that supports it.

A sentence passes when it carries at least one citation, every label it cites is
one of the selected evidence, and the cited chunks support it: verbatim for
extractive output (a table row's finding, "Total debt: 2018 $14,622; 2017 $13,949",
by a row of the chunk with that label and each of those values under those columns);
for generated text, most of its content words and every number it states appear in
the cited chunks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from citesum.tasks.summarize.evidence import CitedSentence, Draft
from citesum.tasks.summarize.synthesizers.prompts import is_not_stated as says_not_stated
from citesum.tasks.tables import finding_supported
from citesum.tasks.text import content_words, normalize_space, tokens

LIMITED_COVERAGE = "Limited coverage: some citations could not be verified"

MIN_WORD_SUPPORT = 0.6  # share of a generated sentence's content words found in what it cites


def is_not_stated(sentence: CitedSentence) -> bool:
    """The synthesizer's way of saying the evidence does not answer: needs no citation."""
    return says_not_stated(sentence.text)


@dataclass(frozen=True)
class SentenceCheck:
    sentence: CitedSentence
    problems: tuple[str, ...]  # empty when the sentence passes
    supported_by: tuple[str, ...]  # labels that are valid and support the sentence

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class Validation:
    checks: tuple[SentenceCheck, ...]

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failures(self) -> tuple[SentenceCheck, ...]:
        return tuple(check for check in self.checks if not check.ok)

    def feedback(self) -> str:
        """What failed, said to the synthesizer on its retry."""
        lines = [f'- "{check.sentence.text}": {"; ".join(check.problems)}' for check in self.failures]
        return "These sentences failed citation checks:\n" + "\n".join(lines)

    def passing(self) -> tuple[CitedSentence, ...]:
        """The sentences that pass, each keeping only the citations that support it."""
        return tuple(
            replace(check.sentence, citations=check.supported_by)
            for check in self.checks
            if check.supported_by or is_not_stated(check.sentence)
        )


def validate(draft: Draft, evidence_text: Mapping[str, str], *, verbatim: bool) -> Validation:
    """Check each sentence of a draft against the evidence it may cite (label -> chunk text)."""
    return Validation(tuple(check_sentence(s, evidence_text, verbatim=verbatim) for s in draft.sentences))


def check_sentence(sentence: CitedSentence, evidence_text: Mapping[str, str], *, verbatim: bool) -> SentenceCheck:
    if is_not_stated(sentence):
        return SentenceCheck(sentence, (), ())
    if not sentence.citations:
        return SentenceCheck(sentence, ("no citation",), ())
    problems = [f"cites {x}, which is not in the evidence" for x in sentence.citations if x not in evidence_text]
    known = tuple(x for x in sentence.citations if x in evidence_text)
    supporting = tuple(x for x in known if supports(evidence_text[x], sentence.text, verbatim=verbatim))
    if not supporting and known:
        # A generated sentence may combine two cited chunks: together they support it.
        together = " ".join(evidence_text[x] for x in known)
        supporting = known if supports(together, sentence.text, verbatim=verbatim) else ()
        if not supporting:
            problems.append(f"not supported by {', '.join(known)}")
    return SentenceCheck(sentence, tuple(problems), supporting)


def supports(chunk_text: str, sentence: str, *, verbatim: bool) -> bool:
    if verbatim:
        quoted = normalize_space(sentence).lower() in normalize_space(chunk_text).lower()
        return quoted or finding_supported(chunk_text, sentence)
    return word_support(chunk_text, sentence) >= MIN_WORD_SUPPORT and numbers_supported(chunk_text, sentence)


def word_support(chunk_text: str, sentence: str) -> float:
    """Share of the sentence's content words (or their 5-letter stems) found in the chunk."""
    words = content_words(sentence)
    if not words:
        return 0.0
    available = set(content_words(chunk_text))
    stems = {w[:5] for w in available}
    return sum(w in available or w[:5] in stems for w in words) / len(words)


def numbers(text: str) -> set[str]:
    return {t.replace(",", "").rstrip(".") for t in tokens(text) if t[0].isdigit()}


def numbers_supported(chunk_text: str, sentence: str) -> bool:
    """Every number the sentence states appears in the chunk: a changed figure is unsupported."""
    return numbers(sentence) <= numbers(chunk_text)
