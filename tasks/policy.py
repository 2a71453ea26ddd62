"""Retry presets for Prefect tasks: one retry layer per call, and only for errors marked retryable."""

from __future__ import annotations

from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from citesum.tasks.errors import is_retryable


def retry_transient(task, task_run, state) -> bool:
    """Prefect retry condition: retry only what may pass on its own."""
    try:
        state.result()
    except Exception as exc:  # the state's own exception, re-raised to inspect it
        return is_retryable(exc)
    return False


# Collaborators (model, store) are task inputs: never hash or persist them.
STEP = dict(
    cache_policy=NO_CACHE,
    persist_result=False,
    retries=2,
    retry_delay_seconds=exponential_backoff(backoff_factor=2),
    retry_condition_fn=retry_transient,
)
