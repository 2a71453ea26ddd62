"""The Ollama synthesizer: a local LLM writes cited bullets from the evidence.

Requests go through the ``ollama`` client (0.6.3). Connection errors, timeouts, 429
and 5xx answers are retried with exponential backoff, honouring ``Retry-After``;
other 4xx answers (404: model not installed) fail at once, since trying again
cannot help. After the last retry a ``TransientError`` is raised. These are the
only retries of an LLM call: the summarization tasks around it do not retry.

Each request asks for JSON of ``ANSWER_SCHEMA`` (``format``) and for no reasoning
(``think=False``); a server that rejects the think flag is asked again without it,
once, and never with it again. Reasoning that arrives anyway is stripped by the parser.
"""

from __future__ import annotations

import email.utils
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
import ollama

from citesum.tasks.errors import CitesumError, ConfigurationError, TransientError
from citesum.tasks.summarize.evidence import Draft
from citesum.tasks.summarize.synthesizers.base import MergeRequest, SynthesisRequest
from citesum.tasks.summarize.synthesizers.prompts import (
    ANSWER_SCHEMA,
    build_merge_messages,
    build_messages,
    parse_draft,
    render_prompt,
)

if TYPE_CHECKING:
    from citesum.tasks.settings import Settings

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
# Where the time limit is set (Settings.summarize.ollama_timeout_seconds), named when it ran out.
TIMEOUT_HINT = "raise CITESUM_OLLAMA_TIMEOUT_SECONDS"

# The ollama client turns httpx.ConnectError into the built-in ConnectionError and lets the other
# transport errors through: a timeout, or a connection dropped mid-answer (Ollama restarting).
_TRANSPORT_ERRORS = (ConnectionError, httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def resolve_ollama_host(configured: str | None) -> str:
    """The configured host, else $OLLAMA_HOST, else Ollama's default address."""
    return configured or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST


class HttpStatusError(Exception):
    """An HTTP error answer from Ollama, with the header the ollama client would drop."""

    def __init__(self, status: int, message: str, retry_after: float | None):
        self.status = status
        self.message = message
        self.retry_after = retry_after
        super().__init__(f"HTTP {status}: {message}")

    @property
    def retryable(self) -> bool:
        return self.status == 429 or self.status >= 500


class _Retry(Exception):
    """One failed attempt that is worth repeating."""

    def __init__(self, reason: str, retry_after: float | None = None):
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP date); None when absent or invalid."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000" dates parse naive; HTTP dates are always UTC
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _raise_for_status(response: httpx.Response) -> None:
    """httpx response hook: raise error answers here, where the headers are still at hand.

    The ollama client turns an error answer into ``ResponseError(message, status)`` and drops the
    headers, so a 429's Retry-After would be lost (ollama 0.6.3, ``Client._request_raw``).
    """
    if response.status_code < 400:
        return
    response.read()
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    raise HttpStatusError(response.status_code, _server_message(response), retry_after)


def _server_message(response: httpx.Response) -> str:
    try:
        message = response.json().get("error")
    except (ValueError, AttributeError):  # not JSON, or JSON without an object
        message = None
    return str(message or response.text.strip()[:300] or response.reason_phrase)


def _client(host: str, timeout: float) -> ollama.Client:
    return ollama.Client(host=host, timeout=timeout, event_hooks={"response": [_raise_for_status]})


def _describe(exc: Exception, timeout: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, ConnectionError):
        return "connection failed"
    return f"{type(exc).__name__}: {exc}"


class OllamaSynthesizer:
    """``Synthesizer`` backed by an Ollama server's chat endpoint."""

    verbatim = False  # the model writes its own sentences: validation checks support, not exact copies

    def __init__(
        self,
        *,
        model: str,
        host: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        context_tokens: int = 8192,
        max_output_tokens: int = 1024,
        backoff_seconds: float = 1.0,
        max_wait_seconds: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.model = model
        self.host = resolve_ollama_host(host)
        self.timeout = timeout
        self.retries = retries
        self.context_tokens = context_tokens
        self.max_output_tokens = max_output_tokens  # num_predict: a model that rambles stops instead of timing out
        self.backoff_seconds = backoff_seconds
        self.max_wait_seconds = max_wait_seconds  # a longer Retry-After ends the attempts at once
        self._sleep = sleep  # between attempts; a test passes its own to read the waits without timing them
        self.name = f"ollama:{model}"
        self._client = _client(self.host, timeout)
        self._think: dict[str, bool] = {"think": False}  # emptied once a server rejects the flag

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> OllamaSynthesizer:
        return cls(
            model=settings.summarize.ollama_model,
            host=settings.summarize.ollama_host,
            timeout=settings.summarize.ollama_timeout_seconds,
            retries=settings.summarize.ollama_retries,
            context_tokens=settings.summarize.ollama_context_tokens,
            max_output_tokens=settings.summarize.ollama_max_output_tokens,
            **kwargs,
        )

    def synthesize(self, request: SynthesisRequest) -> Draft:
        messages = build_messages(request)
        return parse_draft(self._chat(messages), render_prompt(messages))

    def merge(self, request: MergeRequest) -> Draft:
        messages = build_merge_messages(request)
        return parse_draft(self._chat(messages), render_prompt(messages))

    def close(self) -> None:
        self._client.close()

    def _chat(self, messages: list[dict[str, str]]) -> str:
        attempt = 0
        while True:
            try:
                return self._chat_once(messages)
            except _Retry as failure:
                asked = failure.retry_after or 0.0
                if attempt == self.retries or asked > self.max_wait_seconds:
                    raise self._gave_up(attempt + 1, failure) from failure
                wait = max(asked, min(self.backoff_seconds * 2**attempt, self.max_wait_seconds))
            self._sleep(wait)
            attempt += 1

    def _gave_up(self, attempts: int, failure: _Retry) -> TransientError:
        asked = f"; it asks to wait {failure.retry_after:g} s" if failure.retry_after else ""
        if isinstance(failure.__cause__, httpx.TimeoutException):
            asked = f"; a model on CPU may need more time: {TIMEOUT_HINT}"
        return TransientError(
            f"Ollama at {self.host} failed {attempts} attempt(s), last: {failure.reason}{asked}", source=self.name
        )

    def _chat_once(self, messages: list[dict[str, str]]) -> str:
        try:
            response = self._send(messages)
        except _TRANSPORT_ERRORS as exc:
            raise _Retry(_describe(exc, self.timeout)) from exc
        except HttpStatusError as exc:
            if exc.retryable:
                raise _Retry(str(exc), exc.retry_after) from exc
            raise self._refusal(exc) from exc
        return response.message.content or ""

    def _send(self, messages: list[dict[str, str]]) -> ollama.ChatResponse:
        try:
            return self._request(messages)
        except HttpStatusError as exc:
            if not (self._think and exc.status == 400 and "think" in exc.message.lower()):
                raise
            self._think = {}  # a server older than the flag, or one that refuses it: the parser strips reasoning
            return self._request(messages)

    def _request(self, messages: list[dict[str, str]]) -> ollama.ChatResponse:
        return self._client.chat(
            model=self.model,
            messages=messages,
            stream=False,
            format=ANSWER_SCHEMA,
            options={"temperature": 0, "num_ctx": self.context_tokens, "num_predict": self.max_output_tokens},
            **self._think,
        )

    def _refusal(self, exc: HttpStatusError) -> CitesumError:
        if exc.status == 404:
            hint = f"; `ollama pull {self.model}` installs the model"
            return ConfigurationError(f"Ollama at {self.host} answered 404: {exc.message}{hint}", source=self.name)
        if exc.status in (401, 403):
            return ConfigurationError(f"Ollama at {self.host} refused access: {exc}", source=self.name)
        return CitesumError(f"Ollama at {self.host} rejected the request: {exc}", source=self.name)


def probe_ollama(host: str | None, model: str, timeout: float = 2.0) -> str | None:
    """None when Ollama answers at ``host`` and has ``model`` installed, else the reason it cannot be used."""
    url = resolve_ollama_host(host)
    try:
        with _client(url, timeout) as client:
            listed = client.list()
    except (ConnectionError, httpx.TransportError):
        return f"Ollama not reachable at {url}"
    except HttpStatusError as exc:
        return f"Ollama at {url} answered {exc}"
    except ValueError:  # an answer that is not Ollama's model list (another server on that port)
        return f"no Ollama API at {url} (unexpected answer to /api/tags)"
    installed = {_with_tag(m.model) for m in listed.models if m.model}
    if _with_tag(model) not in installed:
        return f"model '{model}' is not installed on Ollama at {url}"
    return None


def _with_tag(name: str) -> str:
    # Ollama lists "llama3.2:latest" for a model pulled as "llama3.2".
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
