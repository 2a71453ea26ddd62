"""Validation with scripted model answers, through the real Ollama adapter and a local fake server."""

from __future__ import annotations

from citesum.tasks.summarize.compose import write_section
from citesum.tasks.summarize.evidence import CitedSentence, Draft, Evidence
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
