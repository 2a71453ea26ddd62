"""The extractive synthesizer copies evidence sentences verbatim and cites where each came from."""

from __future__ import annotations

from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.summarize.synthesizers.extractive import (
    MAX_WORDS,
    ExtractiveSynthesizer,
    evidence_sentences,
    word_count,
)
from citesum.tasks.summarize.validate import validate
from citesum.tasks.text import normalize_space
from tests.summary_fixtures import FILING_CONTENTS, evidence, evidence_of

TERMINATION = (
    "12.1 Either party may terminate this Agreement for convenience on ninety days' written notice. "
    "Termination does not relieve the Customer of fees already due."
)
FEES = "The Customer shall pay each invoice within thirty days of receipt. Late payments accrue interest at 1% a month."
CONVENIENCE = (  # four sentences on terminating for convenience, the first the best match to "how ... terminated"
    "Either party may terminate this Agreement for convenience on ninety days' written notice. "
    "A notice of termination for convenience must be signed by an officer of the terminating party. "
    "Termination for convenience takes effect at the end of the notice period. "
    "The terminating party must confirm the termination date in its notice."
)
WEATHER = "The office kitchen is cleaned every Friday afternoon by the facilities team of the building."


def test_sentences_are_verbatim_cited_and_relevant(embedder):
    ev = evidence(TERMINATION, FEES, WEATHER)
    synth = ExtractiveSynthesizer(embedder)
    draft = synth.synthesize(SynthesisRequest("How can the agreement be terminated?", tuple(ev), max_sentences=2))

    assert draft.sentences, draft.raw
    texts = {e.label: e.candidate.chunk.text for e in ev}
    assert validate(draft, texts, verbatim=True).ok
    for sentence in draft.sentences:
        (label,) = sentence.citations
        assert normalize_space(sentence.text) in normalize_space(texts[label])
    assert "c1" in {c for s in draft.sentences for c in s.citations}
    assert "c3" not in {c for s in draft.sentences for c in s.citations}


def test_merge_keeps_points_and_their_citations(embedder):
    synth = ExtractiveSynthesizer(embedder)
    first = synth.synthesize(SynthesisRequest("termination and payment", tuple(evidence(TERMINATION, FEES)), 4))
    merged = synth.merge(MergeRequest("termination and payment", first.sentences, max_sentences=2))
    assert 0 < len(merged.sentences) <= 2
    assert set(merged.sentences) <= set(first.sentences)


LONG = (
    "On termination the Supplier shall return every document of the Customer within ten days; it shall "
    "delete all copies of the Customer data held on its systems and confirm the deletion in writing; it "
    "shall hand over the configuration of the hosted services to the new supplier named by the Customer; "
    "and it shall (a) invoice the fees due up to the termination date and (b) refund any fees paid in "
    "advance for services that will not be performed after the termination date takes effect."
)


def test_a_sentence_over_the_word_cap_is_quoted_by_its_clauses(embedder):
    assert len(LONG.split()) > 80
    ev = evidence(LONG, FEES)
    synth = ExtractiveSynthesizer(embedder)
    draft = synth.synthesize(SynthesisRequest("What must the Supplier do on termination?", tuple(ev), max_sentences=4))

    quoted = [s for s in draft.sentences if s.citations == ("c1",)]
    assert len(quoted) >= 2, draft.raw  # clauses of the long sentence, not nothing
    assert all(s.text in LONG and len(s.text) < len(LONG) for s in quoted)
    assert validate(draft, {e.label: e.candidate.chunk.text for e in ev}, verbatim=True).ok


def test_the_best_sentence_of_each_leading_chunk_is_cited_before_more_of_the_first(embedder):
    # c1 holds several termination sentences; c2 and c3 one each, about other ways it ends.
    first = CONVENIENCE
    second = (
        "Company profile and history of the supplier since 1998. "
        "The Customer may terminate the Agreement at once if the Supplier becomes insolvent."
    )
    third = "The Supplier may end the Agreement if an invoice stays unpaid for sixty days after a reminder."
    ev = evidence(first, second, third)
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("How can the Agreement be terminated?", tuple(ev), max_sentences=4)
    )
    cited = [c for s in draft.sentences for c in s.citations]
    assert set(cited) == {"c1", "c2", "c3"}, draft.raw
    assert "insolvent" in draft.raw and "Company profile" not in draft.raw  # c2's best sentence, not its first
    assert len(draft.sentences) <= 4


def test_a_question_asking_for_a_quantity_prefers_the_sentence_holding_the_figure(embedder):
    chunk = (
        "Revenue for fiscal 2023 grew strongly, driven by the demand for the cloud services of the company. "
        "Net sales were $4,512 million in the year, up from $3,980 million a year earlier."
    )
    ev = evidence(chunk)
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("How much revenue did the company report for fiscal 2023?", tuple(ev), max_sentences=1)
    )
    assert [s.text for s in draft.sentences] == [
        "Net sales were $4,512 million in the year, up from $3,980 million a year earlier."
    ], draft.raw
    # The same chunk asked about something else than a quantity: the figure is no signal then.
    other = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("What drove revenue growth in fiscal 2023?", tuple(ev), max_sentences=1)
    )
    assert "grew strongly" in other.raw, other.raw


def test_a_short_piece_is_a_candidate_when_it_names_what_was_asked():
    chunk = (
        "Geographic markets of the search service, grouped by state. Little Rock AR01 2. Fort Smith AR02 3. "
        "Each market code is listed once, with the number of its enlarged map."
    )
    ev = evidence(chunk)
    question = "What is the geographic market name for EPS code AR01?"
    pool = [s.text for s in evidence_sentences(ev, question)]
    assert "Little Rock AR01 2." in pool
    assert "Fort Smith AR02 3." not in pool  # short and naming nothing asked: a fragment, as before


def test_a_running_title_in_capitals_is_no_answer_though_it_names_what_was_asked():
    # A 10-K's running title, left in a chunk, named the company asked about and was quoted as a finding.
    chunk = "Boeing Capital's portfolio totaled $1.6 billion at December 31, 2022.\nTHE BOEING COMPANY"
    pool = [s.text for s in evidence_sentences(evidence(chunk), "What was Boeing Capital's portfolio in 2022?")]
    assert pool == ["Boeing Capital's portfolio totaled $1.6 billion at December 31, 2022."]


def test_a_header_that_echoes_the_question_is_no_answer(embedder):
    # MMLongBench-Doc's market list: the column header, a chunk of its own ranked first, holds every word of the
    # question but the code, and was quoted as the best match instead of the market the code names.
    ev = (
        evidence_of("c1", "EPS Geographic Market Name Code", pages=(8, 8), score=1.0),
        evidence_of(
            "c2",
            "1. Little Rock AR01 2. Northern Arkansas AR02 New Mexico (NM)\n\n"
            "1. Albuquerque and Northern New Mexico NM01 2. Southern New Mexico NM02",
            pages=(8, 8),
            score=0.5,
        ),
    )
    question = "What is the geographic market name for EPS code AR01?"
    assert "EPS Geographic Market Name Code" not in [s.text for s in evidence_sentences(ev, question)]
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest(question, ev, max_sentences=5, is_question=True)
    )
    assert draft.sentences[0].text == "Little Rock AR01 2.", draft.raw


def test_a_sentence_is_read_under_its_chunks_heading(embedder):
    # MMLongBench-Doc's market list: the item the code names held one keyword of the question's six ("AR01"), the
    # line that ran the column header into another state's item held five, and the summary quoted only that line.
    # Under its heading ("EPS Geographic Market Name Code > Arkansas (AR)") the item holds all six.
    ev = (
        evidence_of(
            "c1",
            '5. Kalamazoo and Grand Rapids MI05 6. "The Thumb" MI06 7. Northern Michigan MI07 '
            "EPS Geographic Market Name Code",
            pages=(5, 5),
            heading="Enrollment Planning Service > EPS Geographic Market Name Code > Michigan (MI)",
            score=0.94,
        ),
        evidence_of(
            "c2",
            "1. Little Rock AR01 2. Northern Arkansas AR02 New Mexico (NM)\n\n"
            "1. Albuquerque and Northern New Mexico NM01 2. Southern New Mexico NM02",
            pages=(8, 8),
            heading="Enrollment Planning Service > EPS Geographic Market Name Code > Arkansas (AR)",
            score=0.38,
        ),
    )
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("What's the geographic market name for EPS Code AR01?", ev, max_sentences=5, is_question=True)
    )
    assert "Little Rock AR01 2." in [s.text for s in draft.sentences], draft.raw


def test_after_the_leading_chunks_two_more_sentences_come_by_relevance(embedder):
    # One chunk of four sentences on the question: its best covers it, then two more by relevance.
    chunk = CONVENIENCE
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("How can the Agreement be terminated?", tuple(evidence(chunk)), max_sentences=5)
    )
    assert len(draft.sentences) == 3, draft.raw


def test_a_chunk_whose_best_sentence_is_far_from_the_best_gives_no_cover(embedder):
    # The second chunk's one sentence is about the term, not termination: its cosine with the question is
    # about 0.72 of the best sentence's, under the cover cosine (0.75), and the first chunk's sentences are
    # more relevant extras, so it is not quoted.
    termination = CONVENIENCE
    term = "The term of the Agreement is three years from the Effective Date."
    ev = (
        evidence_of("c1", termination, pages=(1, 1), score=1.0),
        evidence_of("c2", term, pages=(2, 2), score=0.5),
        evidence_of("c3", WEATHER, pages=(3, 3), score=0.0),
    )
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("How can the Agreement be terminated?", ev, max_sentences=5, is_question=True)
    )
    assert draft.sentences, draft.raw
    assert {c for s in draft.sentences for c in s.citations} == {"c1"}, draft.raw


def test_a_chunk_the_reranker_scored_far_below_the_first_gives_no_cover_to_a_question(embedder):
    # c2's sentence is on the question, but the reranker scored its chunk at a fifth of the way from the last to
    # the first (under COVER_SCORE): asked, it is no cover, and the room it leaves goes to c1's sentences, the more
    # relevant extras. On the development sets such chunks' cover sentences were rarely on a gold page.
    termination = CONVENIENCE + (
        " Either party may terminate this Agreement for material breach not cured within thirty days. "
        "On termination of this Agreement each party returns the other party's property."
    )
    insolvency = "The Customer may terminate the Agreement at once if the Supplier becomes insolvent."

    def cited(second_score: float) -> list[str]:
        ev = (
            evidence_of("c1", termination, pages=(1, 1), score=1.0),
            evidence_of("c2", insolvency, pages=(2, 2), score=second_score),
            evidence_of("c3", WEATHER, pages=(3, 3), score=0.0),
        )
        draft = ExtractiveSynthesizer(embedder).synthesize(
            SynthesisRequest("How can the Agreement be terminated?", ev, max_sentences=5, is_question=True)
        )
        return [c for s in draft.sentences for c in s.citations]

    assert cited(0.2) == ["c1"] * 5  # the best match, the two extras and the places c2 and c3 left
    assert set(cited(0.6)) == {"c1", "c2"}  # scored near the first, it covers its chunk


def test_a_chunk_with_nothing_to_quote_gives_its_place_to_an_extra_however_it_scored(embedder):
    # c2, scored near the first, holds only a caption under the word floor: it gives no cover but its place, as c3,
    # scored low, does. So the best match, two extras and two more, all of c1.
    termination = CONVENIENCE + (
        " Either party may terminate this Agreement for material breach not cured within thirty days. "
        "On termination of this Agreement each party returns the other party's property."
    )
    ev = (
        evidence_of("c1", termination, pages=(1, 1), score=1.0),
        evidence_of("c2", "Schedule 4.", pages=(2, 2), score=0.9),
        evidence_of("c3", WEATHER, pages=(3, 3), score=0.0),
    )
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("How can the Agreement be terminated?", ev, max_sentences=5, is_question=True)
    )
    assert [c for s in draft.sentences for c in s.citations] == ["c1"] * 5, draft.raw


def test_a_topic_quotes_each_of_its_first_chunks(embedder):
    """A topic's first chunks are the leads of its sections (``tasks.by_section``): each is quoted, however far its
    sentences are from the topic's title. "6 Confidentiality; ...; 9 Warranties" had said nothing of warranties."""
    ev = (
        evidence_of("c1", "Each party keeps the other's confidential information secret for five years.", score=1.0),
        evidence_of(
            "c2", "Supplier processes personal data only on the documented instructions of Customer.", score=0.6
        ),
        evidence_of(
            "c3", "The Services shall be performed with reasonable skill and care by qualified staff.", score=0.1
        ),
    )
    draft = ExtractiveSynthesizer(embedder).synthesize(
        SynthesisRequest("Confidentiality; Data Protection; Warranties", ev, max_sentences=5)
    )
    assert {c for s in draft.sentences for c in s.citations} == {"c1", "c2", "c3"}, draft.raw


def summarize_ranked(embedder, question: str, texts: tuple[str, ...]):
    """A five-sentence summary of one chunk per text, the reranker's scores falling in the texts' order."""
    ev = [evidence_of(f"c{i}", t, pages=(i, i), score=1.0 - 0.15 * (i - 1)) for i, t in enumerate(texts, 1)]
    return ExtractiveSynthesizer(embedder).synthesize(SynthesisRequest(question, tuple(ev), max_sentences=5))


def test_the_best_matching_sentence_is_quoted_even_from_the_last_evidence_chunk(embedder):
    # The reranker put the one chunk that states the notice period last: the first chunks' sentences on
    # termination in general are more relevant once their chunks' scores count, yet the answer is quoted.
    texts = (
        "Termination of this Agreement ends every licence granted under it. On termination the Customer shall "
        "stop using the Software and return its copies. Termination rights of the Customer are set out in this clause.",
        "Termination for breach requires a written notice describing the breach in detail.",
        "The Supplier may suspend the services while an invoice stays unpaid after termination.",
        "Obligations of confidentiality survive the termination of this Agreement for five years.",
        "Notices under this Agreement are given in writing to the addresses in the order form.",
        "Either party may terminate this Agreement for convenience on ninety days' written notice.",
    )
    draft = summarize_ranked(embedder, "What is the notice period for termination for convenience?", texts)
    assert (texts[-1], ("c6",)) in [(s.text, s.citations) for s in draft.sentences], draft.raw
    assert len(draft.sentences) <= 5


def test_a_question_asking_two_things_gets_the_best_match_to_each(embedder):
    # Fees fill the leading chunks; the one sentence on when invoices are due sits in the last chunk, and against
    # the whole question it loses to the fee sentences. Asked apart, "when are invoices due?" is its own best match.
    texts = (
        "The monthly fees for managed hosting are 4,500 euros. The fees for application support are 2,750 euros.",
        "Fees for professional services are 1,100 euros a day. Fees are fixed for the first twelve months.",
        "Out-of-hours call-outs are charged at 300 euros per incident on top of the monthly fees.",
        "The fees for backup and recovery are 650 euros a month, and fees rise with the index each year.",
        "Service credits reduce the fees of the following month when availability falls short.",
        "Customer shall pay each valid invoice within thirty days of its receipt.",
    )
    draft = summarize_ranked(embedder, "How much are the fees and when are invoices due?", texts)
    quoted = [(s.text, s.citations) for s in draft.sentences]
    assert (texts[-1], ("c6",)) in quoted, draft.raw
    assert any(c == ("c1",) for _, c in quoted)  # the fees are still answered
    assert len(draft.sentences) <= 5


def test_evidence_holding_no_word_of_the_question_is_not_stated(embedder):
    # Asked of a services agreement, the question's words are nowhere in the evidence: quoting its least unrelated
    # sentences would be a confident, cited answer to a question the documents do not touch.
    synth = ExtractiveSynthesizer(embedder)
    ev = tuple(evidence(TERMINATION, FEES, WEATHER, heading="12 Termination"))
    asked = SynthesisRequest("What is the capital of Mongolia and its population?", ev, is_question=True)
    draft = synth.synthesize(asked)
    assert [(s.text, s.citations) for s in draft.sentences] == [("Not stated in the evidence.", ())]
    assert "capital, mongolia, population" in draft.raw

    # One keyword in the evidence, even only in a chunk's heading, is enough to quote it.
    heading_only = tuple(evidence(TERMINATION, heading="Section 12: Mongolia"))
    asked_of_heading = SynthesisRequest("What is the capital of Mongolia?", heading_only, is_question=True)
    assert synth.synthesize(asked_of_heading).sentences[0].citations
    # A topic or "summarize this section" is no question: its evidence is quoted whatever its words.
    assert synth.synthesize(SynthesisRequest("Mongolia", ev)).sentences[0].citations


def test_a_brief_quotes_no_table_of_contents_and_a_question_still_may(embedder):
    """Sentence splitting runs a filing's contents into "Properties 18 Item 3."-like statements: navigation, not
    findings. A question may ask where something is, so only a part written unasked leaves the contents out."""
    ev = evidence(FILING_CONTENTS, "Item 3. Legal Proceedings. Multiple legal actions have been filed against us.")
    synth = ExtractiveSynthesizer(embedder)

    brief = synth.synthesize(SynthesisRequest("Legal proceedings and properties", tuple(ev), max_sentences=4))
    assert brief.sentences and all(s.citations == ("c2",) for s in brief.sentences), brief.raw

    asked = SynthesisRequest("On which page are the legal proceedings?", tuple(ev), 4, is_question=True)
    assert "c1" in {c for s in synth.synthesize(asked).sentences for c in s.citations}

    only = SynthesisRequest("Legal proceedings", tuple(ev[:1]), max_sentences=2)  # nothing else to say
    assert synth.synthesize(only).sentences


def assert_left_out_of_a_brief(embedder, noise: str, statement: str, topic: str, question: str) -> None:
    """A brief of ``topic`` quotes the ``statement`` (c2) and nothing of the ``noise`` (c1); a question may."""
    ev = evidence(noise, statement)
    synth = ExtractiveSynthesizer(embedder)
    brief = synth.synthesize(SynthesisRequest(topic, tuple(ev), max_sentences=4))
    assert [s.citations for s in brief.sentences] == [("c2",)], brief.raw
    asked = SynthesisRequest(question, tuple(ev), 4, is_question=True)
    assert "c1" in {c for s in synth.synthesize(asked).sentences for c in s.citations}


def test_a_brief_quotes_whole_sentences_not_the_parts_of_one(embedder):
    """A chunk that begins inside a sentence, or a sentence that only leads into a list, needs the text around it: a
    brief read "operating income and a $15.8 million decrease ..." as a finding (8% of ten filings' brief sentences
    were such parts). A long sentence is still quoted by its clauses (``LONG``, below)."""
    parts = (
        "operating income and a $15.8 million decrease in net income for the year ended December 31, 2015. "
        "The price of our stock may continue to be volatile due to a number of factors including the following, "
        "some of which are beyond our control:"
    )
    whole = "Our streaming memberships grew to 75 million at the end of the year, and our net income fell."
    assert_left_out_of_a_brief(
        embedder, parts, whole, "Net income and stock price", "How much did net income decrease?"
    )
    only = SynthesisRequest("Net income", tuple(evidence(parts)), max_sentences=2)  # nothing else to say
    assert ExtractiveSynthesizer(embedder).synthesize(only).sentences


def test_a_brief_quotes_no_sentence_that_only_points_elsewhere_nor_a_title(embedder):
    """A filing's sections close with "For more information, see Item 1A." and "... is incorporated herein by
    reference", and a running title reads as a sentence of its own: in a brief of its topics such lines say nothing
    (12% and 4% of ten filings' brief sentences were)."""
    pointers = (
        "For more information on the risks related to our suppliers and raw materials, see Item 1A - Risk Factors. "
        "See Note 1 for a discussion of the factors that may impact the comparability of our segment results. "
        "The information required by this Item is included in the Proxy Statement and is incorporated herein by "
        "reference.\n\nLockheed Martin Corporation Notes to Consolidated Financial Statements"  # the page's running title
    )
    statement = "Our suppliers' disruptions have delayed deliveries and raised the costs of our programs."
    topic, question = "Suppliers and raw materials risks", "Where are the risks of suppliers described?"
    assert_left_out_of_a_brief(embedder, pointers, statement, topic, question)
    only = SynthesisRequest("Suppliers", tuple(evidence(pointers)), max_sentences=2)  # nothing else to say
    assert ExtractiveSynthesizer(embedder).synthesize(only).sentences


def test_a_brief_quotes_no_label_title_chart_form_field_or_boilerplate(embedder):
    """Ten filings' and six reports' briefs quoted "Article III." (a heading's label, under the topic "ARTICLE 5"),
    "Management's Discussion and Analysis of Financial Condition and Results of Operations." (an item's title with a
    full stop), a chart's labels and values run into one "sentence", a cover page's check boxes ("Large
    Accelerated filer x Accelerated filer ☐ ...") and a filing's standard language; none says anything in a brief."""
    noise = (
        "Article II.\n"
        "Management's Discussion and Analysis of Financial Condition and Results of Operations.\n"
        "% who rate the ethical standards of the article's officials as excellent or good Poor Not good Good "
        "Excellent 39 58 Total 36 9 75 22 Note: Don't know responses not shown.\n"
        "Yes ☒ No ☐ Indicate by check mark whether the registrant is a shell company under this article.\n"
        "The accompanying notes are an integral part of these consolidated financial statements of this article."
    )
    statement = "The Participant is responsible for all taxes due on the shares granted under this Article."
    assert_left_out_of_a_brief(embedder, noise, statement, "Article II Taxation", "Which rating did 58% give them?")


def test_a_brief_quotes_a_sentence_without_the_chart_credit_run_into_it_and_no_question(embedder):
    """A brief of a Pew report read "“Americans and Germans Differ in Their Views of Each Other and the World” PEW
    RESEARCH CENTER Germans view their country’s defense spending differently." (a chart's credit line, a block of
    its own, run into the next paragraph's first sentence) and a survey's question as findings."""
    text = (
        "Note: Don’t know responses not shown. Source: Spring 2019 Global Attitudes Survey. Q50h.\n\n"
        "How important do you think these military bases are for [U.S./German] national security?\n\n"
        "“Americans and Germans Differ in Their Views of Each Other and the World”\n\nPEW RESEARCH CENTER\n\n"
        "Germans view their country’s defense spending differently. The public is divided on whether to increase or "
        "maintain current levels of spending on national defense."
    )
    ev = evidence(text)
    draft = ExtractiveSynthesizer(embedder).synthesize(SynthesisRequest("German defense spending", tuple(ev), 4))
    assert [s.text for s in draft.sentences] == [
        "Germans view their country’s defense spending differently.",
        "The public is divided on whether to increase or maintain current levels of spending on national defense.",
    ], draft.raw
    assert validate(draft, {"c1": text}, verbatim=True).ok


def test_a_brief_quotes_a_sentence_read_alone_before_one_leaning_on_the_sentence_before_it(embedder):
    """The sample report's brief quoted, under "2 Method", "During that period the utility's leakage team carried out
    its usual acoustic survey independently ..." and "It is fed through a single inlet ...": which period, what is
    fed? A sentence that opens on a pronoun, a demonstrative or a connective gives way to one of the same chunk that
    can be read alone; a question may still be answered by one (c2)."""
    text = (
        "The trial ran for twelve weeks from March to May 2024. During that period the utility's leakage team "
        "carried out its usual acoustic survey independently, so that the two leak detection methods could be "
        "compared. It is fed through a single inlet with a flow meter and a leak survey valve."
    )
    ev = evidence(text)
    synth = ExtractiveSynthesizer(embedder)
    brief = synth.synthesize(SynthesisRequest("Leak survey method", tuple(ev), max_sentences=1))
    assert [s.text for s in brief.sentences] == ["The trial ran for twelve weeks from March to May 2024."], brief.raw
    asked = synth.synthesize(SynthesisRequest("Who carried out the acoustic survey?", tuple(ev), 1, is_question=True))
    assert asked.sentences[0].text.startswith("During that period"), asked.raw


def test_a_heading_run_into_a_sentence_is_left_out_of_the_quote(embedder):
    """Extraction runs a bold heading into its paragraph's first sentence: a brief read "Evaluation of Disclosure
    Controls and Procedures We performed an evaluation ..." (13 of 596 sentences of sixteen development briefs)."""
    text = (
        "Evaluation of Disclosure Controls and Procedures We performed an evaluation of the effectiveness of our "
        "disclosure controls and procedures as of December 31, 2022."
    )
    ev = evidence(text)
    synth = ExtractiveSynthesizer(embedder)
    for request in (
        SynthesisRequest("Controls and procedures", tuple(ev), max_sentences=2),
        SynthesisRequest("Were disclosure controls evaluated?", tuple(ev), 2, is_question=True),
    ):
        draft = synth.synthesize(request)
        assert [s.text for s in draft.sentences] == [text[len("Evaluation of Disclosure Controls and Procedures ") :]]
        assert validate(draft, {"c1": text}, verbatim=True).ok


def test_a_filings_standard_language_is_quoted_only_when_its_part_has_nothing_else(embedder):
    """Every filing carries the auditor's standard sentences: a brief quotes a part's own statements before them, and
    them before the titles and labels that say nothing at all."""
    standard = (
        "Those standards require that we plan and perform the audit to obtain reasonable assurance about whether the "
        "financial statements are free of material misstatement."
    )
    title = "Report of Independent Registered Public Accounting Firm on the Consolidated Financial Statements."
    statement = "Deloitte & Touche LLP has served as the Company's auditor since 1959 and audits its statements."
    synth = ExtractiveSynthesizer(embedder)
    brief = synth.synthesize(SynthesisRequest("Audit report", tuple(evidence(f"{title}\n{standard} {statement}")), 4))
    assert [s.text for s in brief.sentences] == [statement], brief.raw
    only = synth.synthesize(SynthesisRequest("Audit report", tuple(evidence(f"{title}\n{standard}")), 4))
    assert [s.text for s in only.sentences] == [standard], only.raw


def test_a_part_of_a_cover_page_and_its_contents_quotes_the_cover_before_the_contents(embedder):
    """A filing's first part may be its cover page run into its table of contents, one chunk the brief leaves out as
    contents: its statement is quoted, not the lines of the contents."""
    cover = "NIKE, Inc. is incorporated in Oregon and its employer identification number is 93-0584541."
    contents = (
        "Item 5. Market for Registrant's Common Equity and Related Stockholder Matters 20\n"
        "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations 29\n"
        "Item 7A. Quantitative and Qualitative Disclosures about Market Risk 51\n"
        "Item 8. Financial Statements and Supplementary Data 53"
    )
    synth = ExtractiveSynthesizer(embedder)
    brief = synth.synthesize(SynthesisRequest("Annual report", tuple(evidence(f"{cover}\n{contents}")), 4))
    assert [s.text for s in brief.sentences] == [cover], brief.raw


def test_the_list_a_filings_notice_opens_is_left_out_with_the_notice(embedder):
    """A forward-looking-statements notice over the word cap is quoted by its clauses: they are the notice too."""
    notice = (
        "These forward-looking statements include, but are not limited to, statements regarding: (a) our core "
        "strategy and the growth of our streaming business in every market we serve; (b) the timing and amount of "
        "our content obligations and the investments in original programming that we make; (c) our future capital "
        "expenditures, the liquidity of our business and the sources of our cash in the coming years; (d) the "
        "adoption of new accounting standards and their effect on the results of our operations; (e) the "
        "competition we face from other providers of entertainment video and the prices they charge their members."
    )
    assert word_count(notice) > MAX_WORDS
    statement = "Our streaming memberships grew to 75 million at the end of the year, and our revenue rose."
    synth = ExtractiveSynthesizer(embedder)
    brief = synth.synthesize(SynthesisRequest("Streaming growth", tuple(evidence(notice, statement)), 4))
    assert [s.citations for s in brief.sentences] == [("c2",)], brief.raw
