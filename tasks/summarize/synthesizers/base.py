"""The synthesizer seam: evidence in, cited sentences out.

Two implementations: ``citesum.tasks.summarize.synthesizers.ollama.OllamaSynthesizer`` (an LLM writes bullets
citing ``[cN]``) and ``citesum.tasks.summarize.synthesizers.extractive.ExtractiveSynthesizer`` (verbatim
sentences of the evidence, no text of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.text import is_contents

PART_SENTENCES = 5  # sentences a part of a summary (a query's answer, a topic) may have


@dataclass(frozen=True)
class SynthesisRequest:
    """One section to write: what it is about and the evidence it may cite."""

    instruction: str  # the question, or the topic ("Termination") in topic mode
    evidence: tuple[Evidence, ...]
    feedback: str = ""  # on a retry: what failed validation last time, said to the model
    max_sentences: int = PART_SENTENCES
    # The instruction is the user's question or request, which the evidence may not answer ("Not stated in the
    # evidence."); a topic or "summarize this section" always has something to say.
    is_question: bool = False

    @property
    def readable(self) -> tuple[Evidence, ...]:
        """The evidence a part reads first: one written unasked (a topic, an exhaustive section) skips tables of
        contents (``text.is_contents``), which only say where things are, while a question may ask that. Empty
        when that is all the part has: both synthesizers then read all of it."""
        if self.is_question:
            return self.evidence
        return tuple(e for e in self.evidence if not is_contents(e.text))


@dataclass(frozen=True)
class MergeRequest:
    """Reduce step of map-reduce: merge cited points into fewer, keeping their citations."""

    instruction: str  # e.g. "Summarize the section '12 Termination'"
    points: tuple[CitedSentence, ...]
    max_sentences: int
    feedback: str = ""


class Synthesizer(Protocol):
    name: str  # recorded with the run, e.g. "ollama:llama3.2" or "extractive"
    verbatim: bool  # True when every sentence is copied from the evidence (validation checks exact support)
    context_tokens: int  # how much evidence text one call can take, in word pieces (map-reduce batch size)

    def synthesize(self, request: SynthesisRequest) -> Draft: ...

    def merge(self, request: MergeRequest) -> Draft:
        """Fewer sentences than ``request.points`` where possible, citing only the points' labels."""
        ...
