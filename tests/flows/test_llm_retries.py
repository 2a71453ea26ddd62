"""One retry layer per LLM call: the Ollama adapter retries a request; the section tasks around it do not.

Through the Prefect engine (a task retry would show only there), against the local fake Ollama server.
"""

from __future__ import annotations

import pytest

from citesum.tasks.errors import TransientError
from citesum.tasks.summarize.synthesizers.ollama import OllamaSynthesizer
from citesum.tasks.summarize.tasks import summarize_section, write_part
from tests.fake_ollama import MODEL, FakeOllama, Reply
from tests.summary_fixtures import evidence_of

RETRIES = 2
NOTICE = "Either party may terminate this Agreement for convenience on ninety (90) days' written notice."
EVIDENCE = [evidence_of("c1", NOTICE, document_id="services_agreement.pdf", pages=(5, 5), heading="12 Termination")]
ANSWER = "- Either party may terminate for convenience on 90 days' written notice [c1]."


def ollama(fake: FakeOllama) -> OllamaSynthesizer:
    return OllamaSynthesizer(model=MODEL, host=fake.url, timeout=5, retries=RETRIES, backoff_seconds=0.01)


def run_section(task: str, fake: FakeOllama, embedder):
    if task == "synthesize":
        return write_part("Termination", "termination", EVIDENCE, ollama(fake), return_state=True)
    return summarize_section("Termination", EVIDENCE, ollama(fake), embedder, return_state=True)


def chat_requests(fake: FakeOllama) -> int:
    return sum(r.path == "/api/chat" for r in fake.requests)


@pytest.mark.parametrize("task", ["synthesize", "summarize-section"])
def test_a_call_failing_past_its_retries_is_not_redone_by_the_task(task, fake_ollama: FakeOllama, embedder):
    # One failure more than the adapter retries, then answers that would pass: a task-level retry would succeed.
    fake_ollama.script(*[Reply(status=503, body={"error": "busy"})] * (RETRIES + 1), Reply(content=ANSWER))
    state = run_section(task, fake_ollama, embedder)
    assert chat_requests(fake_ollama) == RETRIES + 1
    assert state.is_failed()
    assert isinstance(state.result(raise_on_failure=False), TransientError)


def test_transient_failures_within_the_retries_are_absorbed_by_the_call(fake_ollama: FakeOllama, embedder):
    fake_ollama.script(*[Reply(status=503, body={"error": "busy"})] * RETRIES, Reply(content=ANSWER))
    state = run_section("synthesize", fake_ollama, embedder)
    assert state.is_completed(), state
    assert chat_requests(fake_ollama) == RETRIES + 1
    assert [s.citations for s in state.result().sentences] == [("c1",)]
