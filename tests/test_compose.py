"""Validation with scripted model answers, through the real Ollama adapter and a local fake server."""

from __future__ import annotations

import json

from citesum.tasks.settings import Settings
from citesum.tasks.summarize import mapreduce
from citesum.tasks.summarize.compose import EXTRACTIVE_FALLBACK, NO_CLAIMS, write_section
from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
from citesum.tasks.summarize.runs import run_record
from citesum.tasks.summarize.summary import FALLBACK_NOTE, Summary, SummaryPart, failure_warnings
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.synthesizers.ollama import OllamaSynthesizer
from citesum.tasks.summarize.validate import LIMITED_COVERAGE, validate
from tests.fake_ollama import MODEL, FakeOllama, Reply
from tests.summary_fixtures import evidence_of

NOTICE = "Either party may terminate this Agreement for convenience on ninety (90) days' written notice."
FEES = "The Customer shall pay each invoice within thirty (30) days of receipt."


def evidence(label: str, text: str, page: int) -> Evidence:
    return evidence_of(label, text, document_id="services_agreement.pdf", pages=(page, page), heading="12 Termination")


EVIDENCE = [evidence("c1", NOTICE, 5), evidence("c2", FEES, 3)]


def ollama(fake: FakeOllama) -> OllamaSynthesizer:
    return OllamaSynthesizer(model=MODEL, host=fake.url, timeout=5, retries=0, backoff_seconds=0.01)


def user_messages(fake: FakeOllama) -> list[str]:
    return [next(m["content"] for m in r.body["messages"] if m["role"] == "user") for r in fake.requests]


def test_valid_answer_passes_first_time(fake_ollama: FakeOllama):
    fake_ollama.script(Reply(content="- Either party may terminate for convenience on 90 days' written notice [c1]."))
    section = write_section("Termination", "termination obligations", EVIDENCE, ollama(fake_ollama))

    assert len(fake_ollama.requests) == 1
    assert len(section.attempts) == 1 and section.warning is None
    assert [s.citations for s in section.sentences] == [("c1",)]


def test_invalid_id_then_valid_on_retry_names_the_failure(fake_ollama: FakeOllama):
    fake_ollama.script(
        Reply(content="- Either party may terminate for convenience on 90 days' written notice [c7]."),
        Reply(content="- Either party may terminate for convenience on 90 days' written notice [c1]."),
    )
    section = write_section("Termination", "termination obligations", EVIDENCE, ollama(fake_ollama))

    assert len(fake_ollama.requests) == 2
    retry = user_messages(fake_ollama)[1]
    assert "failed validation" in retry and "cites c7, which is not in the evidence" in retry
    assert not section.attempts[0].validation.ok and section.attempts[1].validation.ok
    assert section.warning is None and section.removed == ()
    assert [s.citations for s in section.sentences] == [("c1",)]


def test_invalid_twice_removes_unsupported_sentences_with_the_warning(fake_ollama: FakeOllama):
    bad = (
        "- Either party may terminate for convenience on 90 days' written notice [c1].\n"
        "- The supplier must pay a termination fee of 250,000 euros [c2].\n"
        "- Late payments carry interest [c9]."
    )
    fake_ollama.script(Reply(content=bad), Reply(content=bad))
    section = write_section("Termination", "termination obligations", EVIDENCE, ollama(fake_ollama))

    assert len(fake_ollama.requests) == 2
    assert section.warning == LIMITED_COVERAGE
    assert [s.text for s in section.sentences] == [
        "Either party may terminate for convenience on 90 days' written notice."
    ]
    removed = [s.text for s in section.removed]
    assert removed == ["The supplier must pay a termination fee of 250,000 euros.", "Late payments carry interest."]
    problems = [c.problems for c in section.attempts[-1].validation.checks]
    assert problems[1] == ("not supported by c2",)
    assert problems[2] == ("cites c9, which is not in the evidence",)


def test_a_question_naming_what_no_document_mentions_is_not_put_to_the_model(fake_ollama: FakeOllama):
    fake_ollama.script(Reply(content="- Either party may terminate for convenience on 90 days' written notice [c1]."))
    question = "What notice must Initech give to terminate in 2031?"
    section = write_section(
        "Summary", question, EVIDENCE, ollama(fake_ollama), is_question=True, unmentioned=["Initech", "2031"]
    )
    assert not fake_ollama.requests and not section.attempts
    assert [s.text for s in section.sentences] == ["Not stated in the evidence."]
    assert section.reason == "No document of the evidence mentions “Initech” or “2031”."
    # A topic's words are a heading's: it is written whatever they name.
    topic = write_section("12 Termination", question, EVIDENCE, ollama(fake_ollama), unmentioned=["Initech"])
    assert len(fake_ollama.requests) == 1 and not topic.reason


def test_not_stated_needs_no_citation(fake_ollama: FakeOllama):
    fake_ollama.script(Reply(content="- Not stated in the evidence."))
    section = write_section("Governing law", "Which law governs?", EVIDENCE, ollama(fake_ollama))
    assert len(fake_ollama.requests) == 1 and section.warning is None
    assert [s.text for s in section.sentences] == ["Not stated in the evidence."]


def test_verbatim_support_is_exact_and_generated_support_checks_numbers():
    texts = {"c1": NOTICE}
    copied = Draft((CitedSentence(NOTICE, ("c1",)),), raw="")
    edited = Draft((CitedSentence(NOTICE.replace("ninety", "sixty"), ("c1",)),), raw="")
    assert validate(copied, texts, verbatim=True).ok
    assert not validate(edited, texts, verbatim=True).ok

    paraphrase = Draft((CitedSentence("Either party may terminate on 90 days written notice.", ("c1",)),), raw="")
    wrong_figure = Draft((CitedSentence("Either party may terminate on 60 days written notice.", ("c1",)),), raw="")
    off_topic = Draft((CitedSentence("The supplier keeps all intellectual property rights.", ("c1",)),), raw="")
    assert validate(paraphrase, texts, verbatim=False).ok
    assert not validate(wrong_figure, texts, verbatim=False).ok
    assert not validate(off_topic, texts, verbatim=False).ok
    assert validate(Draft((CitedSentence("No citation here.", ()),), raw=""), texts, verbatim=False).failures


# -- what is a claim, and what happens when none holds -----------------------

WRONG = json.dumps(
    {
        "sentences": [
            {"text": "The supplier must pay a termination fee of 250,000 euros.", "citations": ["c2"]},
            {"text": "Late payments carry interest.", "citations": ["c9"]},
        ]
    }
)


def summary_of(*sections) -> Summary:
    parts = [SummaryPart(section, section.title, tuple(e.candidate for e in section.evidence)) for section in sections]
    return Summary("run-1", "q", "topics", "chosen", "ollama:llama3.2", "chosen", parts, {}, [])


def test_a_json_answer_of_the_schema_passes_first_time(fake_ollama: FakeOllama):
    answer = {"sentences": [{"text": "Either party may terminate on 90 days' written notice.", "citations": ["c1"]}]}
    fake_ollama.script(Reply(content=json.dumps(answer)))
    section = write_section("Termination", "termination obligations", EVIDENCE, ollama(fake_ollama))
    assert len(fake_ollama.requests) == 1 and section.warning is None
    assert [s.citations for s in section.sentences] == [("c1",)]


def test_prose_think_blocks_and_echoed_prompt_lines_are_not_removed_one_by_one(fake_ollama: FakeOllama):
    answer = (
        "<think>\nThe fee clause [c2] says 30 days; maybe - Fees are 5% [c2].\n</think>\n"
        "Here is the answer, drawn from [c1] and [c2]:\n"
        "Task: termination obligations\n"
        "- Either party may terminate for convenience on 90 days' written notice [c1].\n"
        "- Late payments carry interest [c9].\n"
        "Let me know if you need more."
    )
    fake_ollama.script(Reply(content=answer), Reply(content=answer))
    section = write_section("Termination", "termination obligations", EVIDENCE, ollama(fake_ollama))
    checked = [c.sentence.text for c in section.attempts[-1].validation.checks]
    assert checked == [
        "Either party may terminate for convenience on 90 days' written notice.",
        "Late payments carry interest.",
    ]
    assert [s.text for s in section.removed] == ["Late payments carry interest."]
    assert "1 sentence removed as unsupported; see the run record" in failure_warnings(
        [SummaryPart(section, "q", ())], None
    )


def test_an_empty_answer_is_retried_saying_so_then_the_section_falls_back_to_extractive(
    fake_ollama: FakeOllama, embedder
):
    fake_ollama.script(Reply(content=""), Reply(content='{"sentences": []}'))
    section = write_section(
        "Termination", "termination notice", EVIDENCE, ollama(fake_ollama), fallback=ExtractiveSynthesizer(embedder)
    )
    assert len(fake_ollama.requests) == 2
    assert NO_CLAIMS.split(":")[0] in user_messages(fake_ollama)[1]
    assert section.warning == EXTRACTIVE_FALLBACK and section.removed == ()
    assert section.fallback is not None and section.sentences
    for sentence in section.sentences:  # verbatim evidence sentences, each citing its own chunk
        (label,) = sentence.citations
        assert sentence.text in {e.label: e.candidate.chunk.text for e in EVIDENCE}[label]


def test_sentences_failing_twice_fall_back_marked_in_the_summary_and_the_run_record(
    fake_ollama: FakeOllama, embedder, tmp_path
):
    fake_ollama.script(Reply(content=WRONG), Reply(content=WRONG))
    section = write_section(
        "Termination", "termination notice", EVIDENCE, ollama(fake_ollama), fallback=ExtractiveSynthesizer(embedder)
    )
    assert len(section.attempts) == 2 and not section.attempts[-1].validation.ok
    assert NOTICE in [s.text for s in section.sentences] and section.warning == EXTRACTIVE_FALLBACK
    assert [s.text for s in section.removed] == [
        "The supplier must pay a termination fee of 250,000 euros.",
        "Late payments carry interest.",
    ]

    summary = summary_of(section)
    summary.warnings = failure_warnings(summary.parts, None)
    assert summary.warnings == [
        f"{EXTRACTIVE_FALLBACK}; verbatim evidence sentences instead in: Termination",
        "2 sentences removed as unsupported; see the run record",
    ]
    assert f"## Termination\n\n_{FALLBACK_NOTE}_\n\n- {NOTICE}" in summary.markdown()
    assert summary.sections_json()[0]["extractive_fallback"] is True
    record = run_record(summary, Settings(runs_dir=tmp_path))
    part = record["parts"][0]
    assert len(part["attempts"]) == 2 and [r["text"] for r in part["removed"]] == [s.text for s in section.removed]
    assert part["fallback"]["validation"] and all(check["ok"] for check in part["fallback"]["validation"])


def test_without_a_fallback_a_section_failing_twice_ends_empty_with_the_warning(fake_ollama: FakeOllama):
    fake_ollama.script(Reply(content=WRONG), Reply(content=WRONG))
    section = write_section("Termination", "termination notice", EVIDENCE, ollama(fake_ollama))
    assert section.sentences == () and section.fallback is None and section.warning == LIMITED_COVERAGE
    warnings = failure_warnings(summary_of(section).parts, None)
    assert warnings == [LIMITED_COVERAGE, "2 sentences removed as unsupported; see the run record"]


def test_an_exhaustive_section_whose_merge_fails_twice_falls_back_too(fake_ollama: FakeOllama, embedder):
    # The map keeps one point, so there is something to merge; both merges fail.
    point = "- Either party may terminate for convenience on 90 days' written notice [c1]."
    fake_ollama.script(Reply(content=point), Reply(content=WRONG), Reply(content=WRONG))
    section = mapreduce.summarize_section(
        "12 Termination", EVIDENCE, ollama(fake_ollama), embedder.count_tokens, ExtractiveSynthesizer(embedder)
    )
    assert len(fake_ollama.requests) == 3 and len(section.attempts) == 2
    assert section.warning == EXTRACTIVE_FALLBACK and NOTICE in [s.text for s in section.sentences]
