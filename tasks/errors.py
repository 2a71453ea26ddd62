"""Errors that carry their retry policy and where they happened.

Prefect retries only errors whose ``retryable`` is true (see ``is_retryable``).
Each class also carries what the CLI makes of it: ``exit_code`` (1 a failed run,
2 unusable input or settings) and ``kind``, a word for the reason (``--json``).
"""

from __future__ import annotations


class CitesumError(Exception):
    """Base error. ``retryable`` says whether trying again can help."""

    retryable = False
    exit_code = 1
    kind = "failed"

    def __init__(self, message: str, *, source: str | None = None, page: int | None = None):
        self.message = message
        self.source = source
        self.page = page
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.source or ""
        if self.page is not None:
            where = f"{where} page {self.page}" if where else f"page {self.page}"
        return f"{where}: {self.message}" if where else self.message


class DocumentError(CitesumError):
    """A document that cannot be read as given (bad input: never retried).

    ``kind`` names the reason in a word: empty_file, unreadable, not_pdf, corrupt,
    encrypted, no_pages, timeout, crashed.
    """

    def __init__(self, kind: str, message: str, *, source: str, page: int | None = None):
        self.kind = kind
        super().__init__(message, source=source, page=page)


class TransientError(CitesumError):
    """A failure that may pass on its own (a store commit conflict, a busy service)."""

    retryable = True
    kind = "transient"


class ConfigurationError(CitesumError):
    """Unusable input or settings: a path that is not there, a model that does not match the store, a bad
    cron expression. Nothing was done, so the fix is the user's (exit 2, like a usage error)."""

    exit_code = 2
    kind = "configuration"


def is_retryable(exc: BaseException) -> bool:
    return bool(getattr(exc, "retryable", False))
