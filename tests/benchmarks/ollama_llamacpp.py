"""An Ollama-compatible server over llama-cpp-python, for trying ``--synth ollama`` with a real model by hand.

    python tests/benchmarks/ollama_llamacpp.py MODEL.gguf [--port 11435] [--name gemma3:270m]
        [--ctx 8192] [--threads 1] [--ignore-format] [--record answers.jsonl]

Then, in another shell: ``CITESUM_OLLAMA_HOST=http://127.0.0.1:11435 CITESUM_OLLAMA_MODEL=gemma3:270m
citesum summarize "..." --synth ollama``.

It speaks the part of Ollama's API the synthesizer uses: ``POST /api/chat`` (``stream: false`` only;
``format`` as "json" or a JSON schema; ``think``; ``options`` temperature, top_p, top_k, seed, stop,
repeat_penalty, num_predict, num_ctx) and ``GET /api/tags``, plus ``/api/show`` and ``/api/version``.
A ``format`` schema is enforced with llama.cpp's JSON-schema grammar, as Ollama does; ``--ignore-format``
drops it (the model answers freely), as servers without structured output do. ``think: true`` on this
non-thinking model is refused with 400, like Ollama; ``think: false`` is accepted. A different ``num_ctx``
reloads the model with that window (Ollama does the same); a prompt longer than the window is refused
with 400. ``--record`` appends every exchange (messages, format, answer, seconds) as a JSON line: the
captured answers behind tests/test_ollama_real.py came from it.

Needs llama-cpp-python, which is not a project dependency: install it in a separate venv (see README,
Summarizing). Requests are answered one at a time (the model is not thread-safe); a client that gave up
waiting leaves its request to finish unseen.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from llama_cpp import Llama  # type: ignore[import-not-found]


class Model:
    """One loaded GGUF model; reloaded when a request asks for another context window."""

    def __init__(self, path: Path, *, ctx: int, threads: int):
        self.path = path
        self.threads = threads
        self.lock = threading.Lock()
        self.ctx = 0
        self.llm: Any = None
        self._load(ctx)

    def _load(self, ctx: int) -> None:
        self.llm = None  # free the old context before allocating the new one
        self.llm = Llama(str(self.path), n_ctx=ctx, n_threads=self.threads, verbose=False)
        self.ctx = ctx

    def chat(self, messages: list[dict[str, str]], options: dict[str, Any], fmt: Any) -> dict[str, Any]:
        with self.lock:
            ctx = int(options.get("num_ctx") or self.ctx)
            if ctx != self.ctx:
                self._load(ctx)
            kwargs: dict[str, Any] = {"temperature": float(options.get("temperature", 0.8))}
            for ours, theirs in (("top_p", "top_p"), ("top_k", "top_k"), ("seed", "seed"), ("stop", "stop")):
                if theirs in options:
                    kwargs[ours] = options[theirs]
            if "repeat_penalty" in options:
                kwargs["repeat_penalty"] = float(options["repeat_penalty"])
            predict = int(options.get("num_predict", -1))
            kwargs["max_tokens"] = predict if predict > 0 else None
            if fmt == "json":
                kwargs["response_format"] = {"type": "json_object"}
            elif isinstance(fmt, dict):
                kwargs["response_format"] = {"type": "json_object", "schema": fmt}
            return self.llm.create_chat_completion(messages=messages, **kwargs)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: Model, *, name: str, ignore_format: bool, record: Path | None):
        super().__init__(address, Handler)
        self.model = model
        self.name = name
        self.ignore_format = ignore_format
        self.record = record


class Handler(BaseHTTPRequestHandler):
    server: Server

    def do_GET(self) -> None:
        if self.path == "/api/tags":
            self.send_json(200, {"models": [self.model_entry()]})
        elif self.path == "/api/version":
            self.send_json(200, {"version": "0.12.0"})
        elif self.path in ("/", ""):
            self.send_text(200, "Ollama is running")
        else:
            self.send_text(404, "404 page not found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length)) if length else {}
        except ValueError:
            self.send_json(400, {"error": "invalid JSON body"})
            return
        if self.path == "/api/chat":
            self.chat(request)
        elif self.path == "/api/show":
            entry = self.model_entry()
            self.send_json(200, {"modelfile": "", "parameters": "", "template": "", "details": entry["details"]})
        else:
            self.send_text(404, "404 page not found")

    def model_entry(self) -> dict[str, Any]:
        path = self.server.model.path
        return {
            "name": self.server.name,
            "model": self.server.name,
            "modified_at": datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(),
            "size": path.stat().st_size,
            "digest": "0" * 64,
            "details": {"format": "gguf", "family": "llama.cpp", "parameter_size": "", "quantization_level": ""},
        }

    def chat(self, request: dict[str, Any]) -> None:
        model = request.get("model", "")
        if model not in (self.server.name, self.server.name.removesuffix(":latest")):
            self.send_json(404, {"error": f"model '{model}' not found"})
            return
        if request.get("stream", True):
            self.send_json(400, {"error": "this server answers stream: false requests only"})
            return
        if request.get("think") is True:
            self.send_json(400, {"error": f'"{model}" does not support thinking'})
            return
        fmt = None if self.server.ignore_format else request.get("format")
        messages = [{"role": m["role"], "content": m.get("content", "")} for m in request.get("messages", [])]
        started = time.monotonic()
        try:
            completion = self.server.model.chat(messages, request.get("options") or {}, fmt)
        except ValueError as exc:  # llama-cpp: "Requested tokens (N) exceed context window of M"
            self.send_json(400, {"error": str(exc)})
            return
        seconds = time.monotonic() - started
        choice = completion["choices"][0]
        content = choice["message"].get("content") or ""
        usage = completion.get("usage") or {}
        self.log_exchange(request, fmt, content, seconds, usage)
        self.send_json(
            200,
            {
                "model": model,
                "created_at": datetime.now(UTC).isoformat(),
                "message": {"role": "assistant", "content": content},
                "done": True,
                "done_reason": "length" if choice.get("finish_reason") == "length" else "stop",
                "total_duration": int(seconds * 1e9),
                "prompt_eval_count": usage.get("prompt_tokens", 0),
                "eval_count": usage.get("completion_tokens", 0),
            },
        )

    def log_exchange(self, request: dict[str, Any], fmt: Any, content: str, seconds: float, usage: dict) -> None:
        print(
            f"chat: {usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} answer tokens, "
            f"{seconds:.1f} s, format {'schema' if isinstance(fmt, dict) else fmt or 'none'}",
            flush=True,
        )
        if self.server.record is None:
            return
        line = {
            "messages": request.get("messages", []),
            "format": fmt,
            "options": request.get("options"),
            "think": request.get("think"),
            "answer": content,
            "seconds": round(seconds, 2),
            "usage": usage,
        }
        with self.server.record.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        self.send(status, json.dumps(body).encode(), "application/json")

    def send_text(self, status: int, text: str) -> None:
        self.send(status, text.encode(), "text/plain")

    def send(self, status: int, data: bytes, kind: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a GGUF model file")
    parser.add_argument("--port", type=int, default=11435)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--name", default="gemma3:270m", help="the model name clients ask for")
    parser.add_argument("--ctx", type=int, default=8192, help="context window until a request sets num_ctx")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ignore-format", action="store_true", help="answer without the `format` constraint")
    parser.add_argument("--record", type=Path, help="append every exchange to this JSON-lines file")
    args = parser.parse_args()
    model = Model(args.model, ctx=args.ctx, threads=args.threads)
    server = Server((args.host, args.port), model, name=args.name, ignore_format=args.ignore_format, record=args.record)
    print(f"serving {args.model.name} as {args.name} at http://{args.host}:{args.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
