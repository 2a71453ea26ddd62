"""The metric formulas: citation rate and the three coverages."""

from __future__ import annotations

from dataclasses import replace

import pytest

from citesum.tasks.summarize.compose import Attempt, Section
from citesum.tasks.summarize.evidence import CitedSentence, Draft
from citesum.tasks.summarize.mapreduce import NOTHING_BEARS
from citesum.tasks.summarize.metrics import (
    citation_rate,
    collapse_warning,
    evidence_coverage,
    summary_metrics,
    topic_coverage,
)
from citesum.tasks.summarize.summary import Summary, SummaryPart
from citesum.tasks.summarize.validate import validate
from tests.summary_fixtures import evidence

TEXTS = ("Rent is due monthly in advance.", "Notice must be given in writing.", "The deposit is two months of rent.")


def section(title: str, sentences: list[CitedSentence], n_evidence: int = 3) -> Section:
    ev = tuple(evidence(*TEXTS[:n_evidence]))
    validation = validate(Draft(tuple(sentences), raw=""), {e.label: e.candidate.chunk.text for e in ev}, verbatim=True)
    return Section(title, ev, validation.passing(), (Attempt(Draft(tuple(sentences), ""), validation),))


def test_citation_rate_counts_valid_supported_citations_of_the_last_draft():
    s = section(
        "t",
        [
            CitedSentence(TEXTS[0], ("c1",)),  # valid
            CitedSentence(TEXTS[1], ("c3",)),  # cites the wrong chunk: unsupported
            CitedSentence(TEXTS[2], ()),  # no citation
            CitedSentence("Not stated in the evidence.", ()),  # no claim: not counted
        ],
    )
    assert citation_rate([s]) == pytest.approx(1 / 3)
    assert citation_rate([]) == 1.0


def test_topic_coverage_is_the_share_of_sections_with_a_cited_sentence():
    cited = section("a", [CitedSentence(TEXTS[0], ("c1",))])
    empty = section("b", [CitedSentence(TEXTS[0], ("c2",))])  # its only sentence fails
    assert topic_coverage([cited, empty, cited]) == pytest.approx(2 / 3)
    assert topic_coverage([]) == 0.0


def test_query_coverage_is_the_share_of_selected_evidence_cited():
    s = section("q", [CitedSentence(TEXTS[0], ("c1",)), CitedSentence(TEXTS[2], ("c3",))])
    assert evidence_coverage([s]) == pytest.approx(2 / 3)
    figures = summary_metrics("query", [SummaryPart(s, "q", tuple(e.candidate for e in s.evidence))])
    assert figures["coverage"] == pytest.approx(0.6667, abs=1e-4)
    assert figures["citation_rate"] == 1.0 and figures["evidence"] == 3 and figures["candidates"] == 3


EIGHT = tuple(f"Clause {n} of the lease sets out one more obligation of the tenant." for n in range(1, 9))


def part_citing(title: str, cited: int) -> SummaryPart:
    ev = tuple(evidence(*EIGHT))
    sentences = [CitedSentence(EIGHT[i], (f"c{i + 1}",)) for i in range(cited)]
    validation = validate(Draft(tuple(sentences), ""), {e.label: e.candidate.chunk.text for e in ev}, verbatim=True)
    s = Section(title, ev, validation.passing(), (Attempt(Draft(tuple(sentences), ""), validation),))
    return SummaryPart(s, title, tuple(e.candidate for e in ev))


def test_coverage_collapse_only_where_evidence_is_truly_left_unused():
    # A short answer citing one of eight passages answers the question: no collapse.
    assert collapse_warning("query", [part_citing("Summary", 1)]) is None
    # A query summary citing none of its evidence does collapse.
    assert collapse_warning("query", [part_citing("Summary", 0)]) == (
        "Coverage collapse: only 0% of the selected evidence is cited"
    )
    # A topic brief whose topic cites 1 of the 8 passages chosen for it leaves them unused.
    assert collapse_warning("topics", [part_citing("Rent", 1)]) == (
        "Coverage collapse: only 12% of the selected evidence is cited"
    )
    assert collapse_warning("topics", [part_citing("Rent", 3)]) is None


def test_an_exhaustive_section_nothing_bears_on_is_counted_apart_from_coverage():
    nothing = part_citing("Schedule", 0)
    nothing = SummaryPart(
        replace(nothing.section, sentences=(CitedSentence(NOTHING_BEARS, ()),)), "Schedule", nothing.candidates
    )
    figures = summary_metrics("exhaustive", [part_citing("Rent", 2), nothing])
    assert figures["coverage"] == 1.0 and figures["not_bearing"] == 1
    failing = summary_metrics("exhaustive", [part_citing("Rent", 2), part_citing("Repairs", 0)])
    assert failing["coverage"] == 0.5 and failing["not_bearing"] == 0


def test_sections_nothing_bears_on_are_named_in_one_line():
    """A deeply sectioned filing said "Nothing in this section bears on the request." of 106 of its 150 sections,
    each under a heading of its own."""

    def nothing(title: str) -> SummaryPart:
        empty = part_citing(title, 0)
        return SummaryPart(
            replace(empty.section, sentences=(CitedSentence(NOTHING_BEARS, ()),)), title, empty.candidates
        )

    parts = [nothing("Cover"), part_citing("Rent", 2), nothing("Schedule"), nothing("Signatures")]
    markdown = Summary("run-1", "q", "exhaustive", "asked", "extractive", "chosen", parts, {}, []).markdown()
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings == ["## Rent", "## 3 sections nothing bears on"]
    assert "Nothing in these sections bears on the request: Cover; Schedule; Signatures." in markdown
    assert NOTHING_BEARS not in markdown
    # One such section keeps its part; so does every part outside exhaustive mode.
    single = Summary("run-2", "q", "exhaustive", "asked", "extractive", "chosen", parts[:2], {}, []).markdown()
    assert "## Cover" in single and NOTHING_BEARS in single
