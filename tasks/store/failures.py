"""Store failures translated once, at the store's boundary: what may pass becomes a TransientError.

Every public ``LanceStore`` method is wrapped by ``boundary``: a lost commit race or a failed I/O request is
raised again as a ``TransientError`` (carrying the document, when the method has one), which the tasks'
retry condition retries; anything else is raised as is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from citesum.tasks.errors import TransientError

# LanceDB 0.40 reports a lost commit race as a plain RuntimeError, e.g. "lance error: Retryable commit
# conflict for version 39: This Rewrite transaction was preempted by concurrent transaction Delete at
# version 39. Please retry." (seen when optimize() races a writer; reproduced in tests/test_maintain.py).
COMMIT_CONFLICT = "Retryable commit conflict"

# An object store's failed request, after the object-store client's own retries (about 5 s), is a plain
# RuntimeError too, e.g. "lance error: LanceError(IO): Generic S3 error: Error performing list request: ..."
# (seen with the S3 server stopped, tests/flows/test_object_store.py). A local disk's failures are OSError.
STORE_IO_FAILURE = "LanceError(IO)"

P = ParamSpec("P")
R = TypeVar("R")


def is_commit_conflict(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and COMMIT_CONFLICT in str(exc)


def is_io_failure(exc: BaseException) -> bool:
    return isinstance(exc, OSError) or (isinstance(exc, RuntimeError) and STORE_IO_FAILURE in str(exc))


@contextmanager
def failures_are_transient(what: str, source: str | None = None) -> Iterator[None]:
    """Re-raise a lost commit race (retried on the latest version) or a failed I/O request as a TransientError;
    anything else as is."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        if is_commit_conflict(exc) or is_io_failure(exc):
            raise TransientError(f"{what}: {exc}", source=source) from exc
        raise


def boundary(what: str, document: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Translate the method's failures (``failures_are_transient``); ``document`` names the parameter holding
    the document id, or a record with a ``document_id``, which the error then carries."""

    def wrap(method: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(method)

        @functools.wraps(method)
        def translated(*args: P.args, **kwargs: P.kwargs) -> R:
            source = None
            if document is not None:
                value = signature.bind(*args, **kwargs).arguments[document]
                source = getattr(value, "document_id", value)
            with failures_are_transient(what, source=source):
                return method(*args, **kwargs)

        return translated

    return wrap
