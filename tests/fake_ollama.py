"""A local HTTP server that answers like Ollama's API (/api/chat, /api/tags), from a script.

Every request is recorded with its arrival time, so tests can check request shape
and retry timing; replies can carry a status, headers (Retry-After) and a delay.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "llama3.2"


@dataclass
class Reply:
    """One scripted answer. ``body`` None means a normal chat answer with ``content``."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content: str = "- The notice period is 30 days [c1]."


@dataclass
class Recorded:
    path: str
    body: dict[str, Any] | None
    at: float  # time.monotonic() when the request arrived


class FakeOllama:
    """Answers /api/chat and /api/tags from a script (then defaults), recording every request."""

    def __init__(self, server: ThreadingHTTPServer):
        self.server = server
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.models = [f"{MODEL}:latest", "nomic-embed-text:latest"]
        self.stop = threading.Event()  # ends delayed replies when the test is over
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self, path: str, body: dict[str, Any] | None) -> Reply:
        with self.lock:
            self.requests.append(Recorded(path, body, time.monotonic()))
            return self.replies.popleft() if self.replies else Reply()

    def chat_body(self, reply: Reply, request: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "model": (request or {}).get("model", MODEL),
            "created_at": "2026-12-01T10:00:00.000000Z",
            "message": {"role": "assistant", "content": reply.content},
            "done": True,
            "done_reason": "stop",
            "total_duration": 1_200_000_000,
            "load_duration": 50_000_000,
            "prompt_eval_count": 412,
            "prompt_eval_duration": 800_000_000,
            "eval_count": 24,
            "eval_duration": 350_000_000,
        }

    def tags_body(self) -> dict[str, Any]:
        models = [
            {
                "name": name,
                "model": name,
                "modified_at": "2026-11-20T09:00:00.000000+00:00",
                "size": 2_019_393_189,
                "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
                "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
            }
            for name in self.models
        ]
        return {"models": models}


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_GET(self) -> None:
        self.answer(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.answer(json.loads(self.rfile.read(length)) if length else None)

    def answer(self, request: dict[str, Any] | None) -> None:
        fake: FakeOllama = self.server.fake  # type: ignore[attr-defined]
        reply = fake.next_reply(self.path, request)
        if reply.delay and fake.stop.wait(reply.delay):
            return  # the test ended while this reply was held back
        body = reply.body
        if body is None:
            body = fake.tags_body() if self.path == "/api/tags" else fake.chat_body(reply, request)
        if self.path not in ("/api/chat", "/api/tags"):
            reply, body = Reply(status=404), "404 page not found"
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_fake_ollama() -> Iterator[FakeOllama]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False
    fake = FakeOllama(server)
    server.fake = fake  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
