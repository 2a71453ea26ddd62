"""The named failure modes a summary warns about: a retrieval miss and a coverage collapse, and neither.

Parts are written as the flow writes them (write_section over reranked evidence, then the metrics), with a
scripted synthesizer passed in, so each warning comes from what the section really holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from citesum.tasks.summarize.compose import write_section
from citesum.tasks.summarize.evidence import Draft
from citesum.tasks.summarize.metrics import collapse_warning, summary_metrics
from citesum.tasks.summarize.rerank import load_reranker
from citesum.tasks.summarize.summary import SummaryPart, failure_warnings
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.summarize.synthesizers.prompts import parse_draft
from tests.summary_fixtures import evidence

TEXTS = (
    "Rent is due monthly in advance.",
    "Notice must be given in writing.",
    "The deposit is two months of rent.",
    "The landlord insures the building.",
    "Pets are not allowed.",
    "The tenant repairs minor damage.",
    "Keys are returned on the last day.",
    "Sub-letting needs written consent.",
)


@dataclass
class Citing:
    """Quotes the first ``n`` pieces of evidence it is given, each citing its label; none: "not stated"."""

    n: int
    name: str = "citing"
    verbatim: bool = True
    context_tokens: int = 4096

    def synthesize(self, request: SynthesisRequest) -> Draft:
        lines = [f"- {e.candidate.chunk.text} [{e.label}]" for e in request.evidence[: self.n]]
        return parse_draft("\n".join(lines) or "- Not stated in the evidence.", prompt="")

    def merge(self, request: MergeRequest) -> Draft:
        raise AssertionError("not used")


def part(query: str, texts: tuple[str, ...], cited: int, embedder) -> SummaryPart:
    """Retrieval found ``texts`` (none: a miss); reranked, written and validated as in the flow."""
    candidates = tuple(e.candidate for e in evidence(*texts))
    selected = load_reranker("local", embedder).rerank(query, list(candidates), 8)
    return SummaryPart(write_section(query, query, selected, Citing(cited)), query, candidates)


def warnings_of(mode: str, parts: list[SummaryPart]) -> list[str]:
    return failure_warnings(parts, collapse_warning(mode, parts))


def test_a_topic_that_retrieves_nothing_is_a_retrieval_miss(embedder):
    parts = [part("rent", TEXTS[:2], 1, embedder), part("quarterly dividends", (), 1, embedder)]
    # half the topics cited is not under the 0.5 floor: the miss is the only warning
    assert warnings_of("topics", parts) == ["Retrieval miss: nothing was retrieved for 'quarterly dividends'"]


def test_most_topics_without_a_cited_sentence_is_a_coverage_collapse(embedder):
    parts = [
        part("rent", TEXTS[:2], 1, embedder),
        part("pets", TEXTS[:2], 0, embedder),
        part("keys", TEXTS[:2], 0, embedder),
    ]
    assert warnings_of("topics", parts) == ["Coverage collapse: only 33% of the topics is cited"]


def test_topics_citing_under_a_quarter_of_their_evidence_collapse(embedder):
    parts = [part("rent", TEXTS, 1, embedder)]  # the topic is covered, by 1 of its 8 pieces of evidence
    assert summary_metrics("topics", parts)["coverage"] == 1.0
    assert warnings_of("topics", parts) == ["Coverage collapse: only 12% of the selected evidence is cited"]


def test_neither_warning_for_cited_topics_a_short_answer_or_an_abstention(embedder):
    topics = [part("rent", TEXTS[:2], 1, embedder), part("notice", TEXTS[:2], 1, embedder)]
    assert warnings_of("topics", topics) == []
    short = [part("the lease terms", TEXTS, 1, embedder)]  # 1 of 8 cited: an answer, not a collapse
    assert summary_metrics("query", short)["coverage"] == 0.125
    assert warnings_of("query", short) == []
    abstains = [part("the lease terms", TEXTS, 0, embedder)]  # "not stated": nothing is claimed
    assert warnings_of("query", abstains) == []


def test_a_part_that_says_not_stated_lists_its_closest_passages_apart_from_findings(embedder):
    from citesum.tasks.summarize.summary import Summary, closest_passages

    abstained = part("Who audits the accounts?", TEXTS, 0, embedder)
    answered = part("When is rent due?", TEXTS, 2, embedder)
    assert [s.text for s in abstained.section.sentences] == ["Not stated in the evidence."]
    closest = closest_passages(abstained)
    assert [c.chunk_id for c in closest] == [e.chunk_id for e in abstained.section.evidence[:3]]
    assert closest_passages(answered) == []

    summary = Summary("r1", "Who audits the accounts?", "query", "a question", "scripted", "", [abstained], {})
    text = summary.markdown()
    assert "- Not stated in the evidence." in text and "Closest passages, not findings: [doc.pdf p." in text
    assert summary.citations()[1] == {}  # listed, not cited: the summary makes no claim on them
    (section,) = summary.sections_json()
    assert len(section["closest_passages"]) == 3 and section["sentences"][0]["citations"] == []
