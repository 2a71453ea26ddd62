"""Map-reduce: batches fit the budget, citations survive reduction, a reduce that cannot shrink still ends."""

from __future__ import annotations

from dataclasses import dataclass, field

from citesum.tasks.summarize.evidence import CitedSentence, Draft
from citesum.tasks.summarize.mapreduce import batches, reduce_points
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest


@dataclass
class StubbornSynthesizer:
    """Merges by returning every point unchanged: nothing ever shrinks. Records its calls."""

    name: str = "stubborn"
    verbatim: bool = True
    context_tokens: int = 100
    merges: list[int] = field(default_factory=list)

    def synthesize(self, request: SynthesisRequest) -> Draft:
        raise AssertionError("not used")

    def merge(self, request: MergeRequest) -> Draft:
        self.merges.append(len(request.points))
        return Draft(request.points, raw="")


@dataclass
class HalvingSynthesizer(StubbornSynthesizer):
    def merge(self, request: MergeRequest) -> Draft:
        self.merges.append(len(request.points))
        return Draft(request.points[: request.max_sentences], raw="")


def points(n: int) -> list[CitedSentence]:
    return [CitedSentence(f"point {i}", (f"c{i}",)) for i in range(n)]


def test_batches_fit_the_budget_and_keep_order():
    runs = batches(list(range(10)), cost=lambda _: 3, budget=7)
    assert [len(r) for r in runs] == [2, 2, 2, 2, 2]
    assert [x for r in runs for x in r] == list(range(10))
    assert batches([1, 50, 1], cost=lambda x: x, budget=10) == [[1], [50], [1]]  # too big: its own batch


def test_reduce_that_cannot_shrink_ends_with_every_point():
    synth = StubbornSynthesizer()
    result = reduce_points("s", points(40), synth, cost=lambda p: 10, budget=60)
    assert result == points(40)
    assert synth.merges  # it tried, force-split, then stopped


def test_reduce_keeps_citations_and_fits_the_budget():
    synth = HalvingSynthesizer()
    result = reduce_points("s", points(40), synth, cost=lambda p: 10, budget=60)
    # Six points fit a batch and each merge keeps the first half of its batch: 40 -> 20 -> 10 -> 5 points,
    # the first pass that fits the budget; fewer would mean points were lost, not merged.
    assert len(result) == 5 and sum(10 for _ in result) <= 60
    assert synth.merges[:7] == [6, 6, 6, 6, 6, 6, 4]  # the first pass: every point went through a merge
    assert all(p in points(40) for p in result)  # citations travel with their points
    assert [int(p.citations[0][1:]) for p in result] == sorted(int(p.citations[0][1:]) for p in result)  # in order


def test_a_section_without_statements_says_nothing_in_it_bears_on_the_request(embedder):
    from citesum.tasks.summarize.mapreduce import NOTHING_BEARS, summarize_section
    from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
    from tests.summary_fixtures import evidence

    table = evidence("Hosting | 4,500.00 | monthly", "Support | 2,750.00 | monthly")  # cells, no statement
    section = summarize_section("Fees", table, ExtractiveSynthesizer(embedder), lambda text: len(text.split()))
    assert [(s.text, s.citations) for s in section.sentences] == [(NOTHING_BEARS, ())]
    assert not section.removed and section.warning is None


def test_an_exhaustive_section_answers_the_request_not_a_summary_of_itself(embedder):
    from citesum.tasks.summarize.mapreduce import summarize_section
    from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
    from tests.summary_fixtures import evidence

    termination = evidence(
        "Either party may terminate this Agreement for convenience on ninety days' written notice. "
        "A notice of termination must state the date on which termination is to take effect. "
        "Either party may terminate at once if the other becomes insolvent or ceases to trade. "
        "Customer shall then pay the Charges for the Services provided up to the date of termination.",
        "On termination Supplier shall return all Customer Data within thirty days. "
        "Sections 6, 7 and 10 survive the termination or expiry of this Agreement. "
        "Termination does not affect any rights or remedies that have accrued up to the date of termination.",
    )
    synthesizer = ExtractiveSynthesizer(embedder)
    asked = summarize_section(
        "12 Termination", termination, synthesizer, lambda t: len(t.split()), request="What must the Customer pay?"
    )
    texts = [s.text for s in asked.sentences]
    assert texts[0] == "Customer shall then pay the Charges for the Services provided up to the date of termination."
    assert not any("notice" in t for t in texts), texts  # the notice rules answer nothing asked
    summarized = summarize_section("12 Termination", termination, synthesizer, lambda t: len(t.split()))
    assert any("notice" in s.text for s in summarized.sentences)  # without a request, the section is summarized


def test_a_section_holding_no_word_of_the_request_says_nothing_bears_but_is_summarized_unasked(embedder):
    # A memo without headings is one "(front matter)" section; none of its words are in the request, nor in the
    # generic instruction used when there is no request, which must still summarize it.
    from citesum.tasks.summarize.mapreduce import NOTHING_BEARS, summarize_section
    from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
    from tests.summary_fixtures import evidence

    memo = evidence(
        "Label each crate with your name, your team and the number of your new desk. "
        "IT equipment will be moved by the IT team over the weekend."
    )
    synthesizer, count = ExtractiveSynthesizer(embedder), lambda t: len(t.split())
    asked = summarize_section(
        "memo.pdf: (front matter)", memo, synthesizer, count, request="What are the payment terms?"
    )
    assert [(s.text, s.citations) for s in asked.sentences] == [(NOTHING_BEARS, ())]
    unasked = summarize_section("memo.pdf: (front matter)", memo, synthesizer, count)
    assert unasked.sentences and all(s.citations == ("c1",) for s in unasked.sentences), unasked.sentences
