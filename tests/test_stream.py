"""The ingestion stream's bookkeeping, without the engine."""

from __future__ import annotations

from types import SimpleNamespace

from citesum.flows.stream import STEPS, StepTracker


def test_progress_is_published_at_most_every_interval_and_when_the_last_step_is_done():
    # Published on every document-step, the artifact's update was a request the flow thread waited for between steps.
    published, counted, now = [], [], [0.0]
    tracker = StepTracker(
        2, lambda step, document, done, total: counted.append(done), published.append, every=1.0, clock=lambda: now[0]
    )
    job = SimpleNamespace(document_id="a.pdf")
    for moment in (0.2, 0.5, 1.1, 1.6, 1.9, 2.3, 2.4, 2.5):
        now[0] = moment
        tracker.advance("extract", job, steps=1)
    assert counted == [1, 2, 3, 4, 5, 6, 7, 8]  # the callback (the CLI's progress bar) gets every step
    assert published == [37.5, 75.0, 100.0]  # at 1.1 s, at 2.3 s (over 1 s after), and the last step


def test_a_failed_document_counts_its_remaining_steps_and_so_ends_the_progress():
    published = []
    tracker = StepTracker(1, None, published.append, every=60.0, clock=lambda: 0.0)
    tracker.advance("extract", SimpleNamespace(document_id="a.pdf"), steps=1)
    assert published == []
    tracker.advance("chunk", SimpleNamespace(document_id="a.pdf"), steps=len(STEPS) - STEPS.index("chunk"))
    assert published == [100.0]
