"""Answers a real small model gave, replayed through the fake Ollama server.

Captured with tests/benchmarks/ollama_llamacpp.py serving gemma3 270M (Q4_K_M, llama-cpp-python 0.3.36,
temperature 0) to ``citesum summarize`` on the sample corpus. With ``format`` honoured the model copies the
system prompt's JSON example, placeholder and all; with ``format`` ignored it writes a made-up evidence block
until the output cap (tests/recorded/gemma3-270m-ignoring-format*.txt, whole answers).
"""

from __future__ import annotations

from pathlib import Path

from citesum.tasks.summarize import mapreduce
from citesum.tasks.summarize.compose import EXTRACTIVE_FALLBACK, write_section
from citesum.tasks.summarize.metrics import summary_metrics
from citesum.tasks.summarize.summary import SummaryPart, failure_warnings
from citesum.tasks.summarize.synthesizers.base import SynthesisRequest
from citesum.tasks.summarize.synthesizers.extractive import ExtractiveSynthesizer
from citesum.tasks.summarize.synthesizers.ollama import OllamaSynthesizer
from citesum.tasks.summarize.synthesizers.prompts import build_messages, parse_draft, render_prompt
from tests.fake_ollama import MODEL, FakeOllama, Reply
from tests.summary_fixtures import evidence_of

# Its first answer to "What are the termination obligations?", then its answer to the retry.
PLACEHOLDER = '{"sentences": [{"text": "...", "citations": ["c2"]}] } '
PLACEHOLDER_AGAIN = '{"sentences": [{"text": "...", "citations": ["c2"]}]}'
RECORDED = Path(__file__).parent / "recorded"
IGNORING_FORMAT = (RECORDED / "gemma3-270m-ignoring-format.txt").read_text()
# Its first answer to the topic "Definitions; Services": a made-up evidence block holding a 120-line list.
IGNORING_FORMAT_LIST = (RECORDED / "gemma3-270m-ignoring-format-list.txt").read_text()

TERMINATION = (
    "On termination or expiry, Supplier shall provide reasonable assistance for up to ninety days to transfer "
    "the Services to Customer or to a replacement supplier, at the rates in the Fee Schedule."
)
SURVIVAL = "Sections 6, 7, 8 and 10 survive the termination or expiry of this Agreement."
EVIDENCE = [
    evidence_of("c1", TERMINATION, document_id="services_agreement.pdf", pages=(5, 5), heading="12 Termination"),
    evidence_of("c2", SURVIVAL, document_id="services_agreement.pdf", pages=(5, 5), heading="12 Termination"),
]


def ollama(fake: FakeOllama) -> OllamaSynthesizer:
    return OllamaSynthesizer(model=MODEL, host=fake.url, timeout=5, retries=0, backoff_seconds=0.01)


def section_from_placeholders(fake: FakeOllama, embedder, title: str = "Summary"):
    fake.script(Reply(content=PLACEHOLDER), Reply(content=PLACEHOLDER_AGAIN))
    extractive = ExtractiveSynthesizer(embedder)
    section = write_section(title, "What are the termination obligations?", EVIDENCE, ollama(fake), fallback=extractive)
    return SummaryPart(section, "What are the termination obligations?", tuple(e.candidate for e in EVIDENCE))


def test_a_copied_placeholder_falls_back_and_the_metrics_say_the_model_wrote_nothing(fake_ollama: FakeOllama, embedder):
    part = section_from_placeholders(fake_ollama, embedder)
    assert len(fake_ollama.requests) == 2
    assert part.section.warning == EXTRACTIVE_FALLBACK and part.section.removed == ()
    assert {s.text for s in part.section.sentences} <= {TERMINATION, SURVIVAL}
    figures = summary_metrics("query", [part])
    # The placeholder is no claim, so the rate of what the model proposed stays 1.0: the fallback count says why.
    assert figures["citation_rate"] == 1.0 and figures["removed"] == 0
    assert figures["fallback"] == 1


def test_every_section_falling_back_is_one_short_warning(fake_ollama: FakeOllama, embedder):
    titles = ["1 Definitions", "5 Fees and Payment", "11 Term and Renewal", "12 Termination"]
    parts = [section_from_placeholders(fake_ollama, embedder, title) for title in titles]
    warnings = failure_warnings(parts, None)
    assert warnings == [f"{EXTRACTIVE_FALLBACK}; verbatim evidence sentences instead in 4 of 4 sections, each marked"]
    assert summary_metrics("topics", parts)["fallback"] == 4


def test_a_made_up_evidence_block_from_a_server_ignoring_format_is_no_claim():
    # The answer holds "[c1] document: ..." headers and evidence-like lines, but no bullet and no JSON answer.
    prompt = render_prompt(build_messages(SynthesisRequest("What are the termination obligations?", tuple(EVIDENCE))))
    assert "[c1] document:" in IGNORING_FORMAT
    assert parse_draft(IGNORING_FORMAT, prompt).sentences == ()


def test_a_list_inside_a_made_up_evidence_block_is_not_120_claims(fake_ollama: FakeOllama):
    assert IGNORING_FORMAT_LIST.count("\n* ") > 100 and "<untrusted_evidence>" in IGNORING_FORMAT_LIST
    fake_ollama.script(Reply(content=IGNORING_FORMAT_LIST))
    request = SynthesisRequest("Definitions; Services", tuple(EVIDENCE), max_sentences=5)
    draft = ollama(fake_ollama).synthesize(request)
    assert draft.sentences == () and draft.raw == IGNORING_FORMAT_LIST


def test_bullets_after_an_evidence_block_the_answer_closes_are_still_claims():
    answer = "<untrusted_evidence>\n[c1] document: a.pdf\n* 1. Hosting\n</untrusted_evidence>\n- " + SURVIVAL + " [c2]"
    prompt = render_prompt(build_messages(SynthesisRequest("q", tuple(EVIDENCE))))
    assert [(s.text, s.citations) for s in parse_draft(answer, prompt).sentences] == [(SURVIVAL, ("c2",))]


def test_an_exhaustive_section_whose_map_kept_no_point_falls_back_without_merging_nothing(
    fake_ollama: FakeOllama, embedder
):
    # The exhaustive run asked 42 merges of no points (2 per section), answered with the merge prompt's example.
    fake_ollama.script(Reply(content=PLACEHOLDER))
    section = mapreduce.summarize_section(
        "12 Termination", EVIDENCE, ollama(fake_ollama), embedder.count_tokens, ExtractiveSynthesizer(embedder)
    )
    assert [r.path for r in fake_ollama.requests] == ["/api/chat"]  # the map's one batch, no merge
    assert section.warning == EXTRACTIVE_FALLBACK and section.fallback is not None and section.attempts == ()
    assert {s.text for s in section.sentences} <= {TERMINATION, SURVIVAL} and section.sentences
    assert summary_metrics("exhaustive", [SummaryPart(section, "12 Termination", ())])["fallback"] == 1


def test_an_exhaustive_section_the_model_says_does_not_answer_the_request_bears_nothing(
    fake_ollama: FakeOllama, embedder
):
    # Asked the user's request of a section that does not answer it, the model says so: no fallback quotes it.
    fake_ollama.script(Reply(content='{"sentences": [{"text": "Not stated in the evidence.", "citations": []}]}'))
    section = mapreduce.summarize_section(
        "12 Termination",
        EVIDENCE,
        ollama(fake_ollama),
        embedder.count_tokens,
        ExtractiveSynthesizer(embedder),
        request="What is the liability cap?",
    )
    assert "What is the liability cap?" in fake_ollama.requests[0].body["messages"][-1]["content"]
    assert [r.path for r in fake_ollama.requests] == ["/api/chat"]  # the map's one batch, nothing to merge
    assert [(s.text, s.citations) for s in section.sentences] == [(mapreduce.NOTHING_BEARS, ())]
    assert section.warning is None and section.fallback is None
    assert summary_metrics("exhaustive", [SummaryPart(section, "12 Termination", ())])["not_bearing"] == 1
