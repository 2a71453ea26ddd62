"""The OpenVINO embedder: the sentence-transformers model exported once to ONNX and run by the OpenVINO runtime.

Why: on this machine kind it embeds about 3x faster than torch fp32 (the runtime picks bf16 on AMX), with cosine
>= 0.9999 to torch's vectors (../shared/notes/embedding-backends.md). sentence-transformers' own ``backend=``
option needs optimum, which does not work with the pinned packages, so export and runtime are driven here.

Only what sentence-transformers would do is done: its modules.json must be Transformer -> Pooling (cls, mean or
max) -> optional Normalize; anything else is refused (``Unsupported``) and the caller falls back to torch.
Texts are tokenized with the model's own fast tokenizer (tokenizer.json), truncated at its max_seq_length, put
in batches by their number of word pieces and padded to the longest text of the batch; pooling, then L2
normalisation (the protocol's unit vectors, as the torch embedder's ``normalize_embeddings=True``), are applied
to the model's output here.

The export lives in ``cache/<key>/`` where the key hashes the model's files, the runtime version and the
precision requested; OpenVINO keeps its compiled blob there too, and ``self-check-<precision>.json`` records
the parity check against torch, so later runs load neither torch nor the exporter.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from citesum.tasks.embed import counts_add_up, length_batches, token_counter

EXPORT_FORMAT = 1  # bump when the exported graph changes, so caches made by older code are not reused
POOLINGS = ("cls", "mean", "max")
PRECISIONS = {"bf16": "bf16", "f32": "fp32", "f16": "fp16"}  # OpenVINO's element type names -> the usual ones
# Texts the self-check embeds with both backends: prose, numbers, a table row, and one past the model's length.
SELF_CHECK_TEXTS = (
    "Termination. Either party may terminate this Agreement upon thirty (30) days' written notice.",
    "Net sales increased 20% to $177.9 billion in 2017, compared with $136.0 billion in 2016.",
    "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations",
    "Revenue | 2022 | 2021 | 66,608 | 62,286 | (in millions)",
    "short",
    " ".join(["The supplier shall indemnify the customer against all claims, losses and expenses."] * 40),
)
SELF_CHECK_MIN_COSINE = 0.999


class Unsupported(Exception):
    """The OpenVINO backend cannot run this model here; the message says why (the caller falls back to torch)."""


@dataclass(frozen=True)
class ModelLayout:
    """What sentence-transformers does with a model folder, read from its config files."""

    folder: Path
    max_seq_length: int
    do_lower_case: bool
    pooling: str  # one of POOLINGS
    dimension: int


def read_layout(folder: Path) -> ModelLayout:
    """The layout of a sentence-transformers folder; Unsupported for modules this backend does not reproduce."""
    try:
        modules = json.loads((folder / "modules.json").read_text())
        bert = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, ValueError) as exc:
        raise Unsupported(f"{folder} has no readable sentence-transformers config ({exc})") from exc
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or modules[0].get("path"):
        raise Unsupported(f"modules {kinds} (only Transformer, Pooling and Normalize are exported)")
    if not (folder / "tokenizer.json").is_file():
        raise Unsupported(f"{folder} has no fast tokenizer (tokenizer.json)")
    try:
        pooling_config = json.loads((folder / modules[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError) as exc:
        raise Unsupported(f"pooling config not readable ({exc})") from exc
    pooling = pooling_mode(pooling_config)
    dimension = pooling_config.get("word_embedding_dimension") or pooling_config.get("embedding_dimension")
    if not isinstance(dimension, int) or not isinstance(bert.get("max_seq_length"), int):
        raise Unsupported("the config does not give the embedding dimension and max_seq_length")
    return ModelLayout(
        folder=folder,
        max_seq_length=bert["max_seq_length"],
        do_lower_case=bool(bert.get("do_lower_case", False)),
        pooling=pooling,
        dimension=dimension,
    )


def pooling_mode(config: dict) -> str:
    """The one pooling mode of a Pooling config, in either the legacy (``pooling_mode_*_tokens``) or new form."""
    if "pooling_mode" in config:
        modes = config["pooling_mode"] if isinstance(config["pooling_mode"], list) else [config["pooling_mode"]]
    else:
        legacy = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean", "pooling_mode_max_tokens": "max"}
        modes = [legacy.get(key, key) for key, on in config.items() if key.startswith("pooling_mode") and on]
    if len(modes) != 1 or modes[0] not in POOLINGS:
        raise Unsupported(f"pooling {modes} (only one of {', '.join(POOLINGS)})")
    return modes[0]


def files_hash(folder: Path) -> str:
    """Hash of every file of the model folder, names and bytes: a changed file is another model."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def cache_key(folder: Path, runtime_version: str, precision: str) -> str:
    parts = (files_hash(folder), runtime_version, precision, str(EXPORT_FORMAT))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def export_onnx(layout: ModelLayout, target: Path) -> None:
    """``torch.onnx.export`` of the transformer (eager attention, dynamic batch and sequence), written atomically."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(layout.folder), local_files_only=True, attn_implementation="eager")
    model.eval()
    takes_types = "token_type_ids" in inspect.signature(model.forward).parameters

    class Hidden(torch.nn.Module):  # positional inputs, one output: what the exporter wants
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if takes_types else {}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state

    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if takes_types else [])
    sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    axes = {name: {0: "batch", 1: "sequence"} for name in names} | {"hidden": {0: "batch", 1: "sequence"}}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=target.parent, suffix=".onnx.part")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shape-dependent branches: shapes stay dynamic
            torch.onnx.export(
                Hidden(),
                sample,
                partial,
                input_names=names,
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        os.replace(partial, target)  # another process exporting the same model writes the same bytes
    finally:
        Path(partial).unlink(missing_ok=True)


class OpenVINOEmbedder:
    """The Embedder protocol over an OpenVINO compiled model; vectors interchangeable with torch's."""

    exports = 0  # exports done in this process (the cache tests read it)

    def __init__(
        self,
        name: str,
        folder: Path,
        cache_dir: Path,
        *,
        batch_size: int = 32,
        runtime: str = "openvino",
        precision: str = "auto",
    ):
        try:
            ov = import_runtime(runtime)
        except ImportError as exc:
            raise Unsupported(f"the OpenVINO runtime cannot be imported ({exc})") from exc
        from tokenizers import Tokenizer

        self.layout = read_layout(folder)
        self.name, self.batch_size, self.dimension = name, batch_size, self.layout.dimension
        self.backend_reason = "chosen"
        self.loaded_with = (name, batch_size, "openvino", cache_dir, runtime)  # loaded_embedder's, when not from it
        self.max_tokens = self.layout.max_seq_length
        self.cache = cache_dir / cache_key(folder, ov.get_version(), precision)
        onnx = self.cache / "model.onnx"
        if not onnx.is_file():
            try:
                export_onnx(self.layout, onnx)
            except Exception as exc:  # the exporter fails in many ways (ops, versions, disk); torch still works
                raise Unsupported(f"the ONNX export failed ({type(exc).__name__}: {exc})") from exc
            type(self).exports += 1
        # Throughput mode: each core runs an inference stream of its own, one batch each, where latency mode
        # splits every batch over all cores. Alone it is as fast on chunk texts; beside other work on the same
        # cores (extraction, chunking, Prefect's server) a latency-mode batch waits for its slowest core. Beside
        # one busy process on 2 cores, latency mode ran 1.8x slower and throughput mode 1.2x; in two otherwise
        # equal runs the FinanceBench ingest went from 1.31 to 1.25 times its embedding-only time (README, Benchmark).
        config = {"CACHE_DIR": str(self.cache / "compiled"), "PERFORMANCE_HINT": "THROUGHPUT"}
        # The CPU plugin keeps what it prepared for each input shape (batch size x longest text) it has run, 5,000 of
        # them by default. Batches cut to run the fewest word pieces (embed.length_batches) come in more shapes:
        # embedding the FinanceBench chunks a document at a time ran 763 shapes (189 cut every 32 texts) and peaked
        # at 1,487 MB (919); keeping the last 256 peaked at 1,046 MB and was no slower (195.3 s against 197.5). Not
        # among the plugin's listed properties, but compile_model takes it (openvino is pinned; a runtime that refused
        # it would fail the compile, and auto would fall back to torch, saying why).
        config["CPU_RUNTIME_CACHE_CAPACITY"] = "256"
        if precision != "auto":
            config["INFERENCE_PRECISION_HINT"] = precision
        try:
            core = ov.Core()
            self._compiled = core.compile_model(core.read_model(str(onnx)), "CPU", config)
        except RuntimeError as exc:
            raise Unsupported(f"OpenVINO could not compile the model ({exc})") from exc
        self._inputs = {port.get_any_name() for port in self._compiled.inputs}
        self._streams = ov.AsyncInferQueue(
            self._compiled, self._compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
        )
        self._streams.set_callback(self._pooled)
        chosen = self._compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        self.precision = PRECISIONS.get(chosen, chosen)
        self.backend = f"openvino {self.precision}"
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # token_counter counts with a copy of its own: the truncating tokenizer may then be set up on this one.
        self._count, self.counts_add_up = token_counter(tokenizer), counts_add_up(tokenizer)
        self._tokenizer, self._padding = truncating_tokenizer(tokenizer, self.layout)
        self._lock = threading.Lock()  # one embed call at a time: its batches already keep every stream busy

    def __reduce__(self) -> tuple[Callable[..., object], tuple]:
        # Sent to a Dask worker as a handle, like the torch embedder: the worker loads the cached export once.
        from citesum.tasks.embed import loaded_embedder

        return loaded_embedder, self.loaded_with

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encoded = self._encode(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        with self._lock:
            for batch in length_batches([len(e) for e in encoded], self.batch_size):  # waits for a free stream
                feed, mask = self._feed([encoded[i] for i in batch])
                self._streams.start_async(feed, (vectors, batch, mask))
            self._streams.wait_all()
        return vectors

    def _encode(self, texts: Sequence[str]) -> list:
        """The tokenizer's encodings of ``texts`` as the model reads them (lower-cased if it was trained so, truncated)."""
        return self._tokenizer.encode_batch_fast([t.lower() for t in texts] if self.layout.do_lower_case else texts)

    def _pooled(self, request, job: tuple[np.ndarray, list[int], np.ndarray]) -> None:
        vectors, batch, mask = job
        vectors[batch] = pool(
            np.asarray(request.get_output_tensor(0).data, dtype=np.float32), mask, self.layout.pooling
        )

    def _feed(self, encoded: list) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The batch's inputs, each text padded to the longest (``encoded``: the tokenizer's encodings)."""
        shape = (len(encoded), max(len(e) for e in encoded))
        ids = np.full(shape, self._padding["pad_id"], dtype=np.int64)
        types = np.full(shape, self._padding["pad_type_id"], dtype=np.int64)
        mask = np.zeros(shape, dtype=np.int64)
        for row, e in enumerate(encoded):
            ids[row, : len(e)], types[row, : len(e)], mask[row, : len(e)] = e.ids, e.type_ids, 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        return feed, mask

    def self_check(self, reference: Callable[[Sequence[str]], np.ndarray]) -> float:
        """The least cosine between this backend's and ``reference``'s vectors of SELF_CHECK_TEXTS, recorded in the
        cache so that later runs skip the check (and loading the reference)."""
        mine, theirs = self.embed(SELF_CHECK_TEXTS), reference(SELF_CHECK_TEXTS)
        cosine = float(np.min(np.sum(mine * theirs, axis=1)))
        record = {"min_cosine": cosine, "passed": cosine >= SELF_CHECK_MIN_COSINE, "texts": len(SELF_CHECK_TEXTS)}
        write_atomically(self.self_check_path, json.dumps(record))
        return cosine

    @property
    def self_check_path(self) -> Path:
        return self.cache / f"self-check-{self.precision}.json"

    def recorded_self_check(self) -> float | None:
        """The least cosine of an earlier self-check of this export at this precision, if one was made."""
        try:
            return float(json.loads(self.self_check_path.read_text())["min_cosine"])
        except (OSError, ValueError, KeyError, TypeError):
            return None


def truncating_tokenizer(tokenizer, layout: ModelLayout) -> tuple[object, dict[str, int]]:
    """The model's tokenizer truncating at max_seq_length as sentence-transformers calls it, not padding (the shipped
    tokenizer.json may pad to a fixed length), and its padding token's ids, to pad each batch to its longest."""
    tokenizer.enable_truncation(layout.max_seq_length)
    padding = tokenizer.padding
    if padding is None:
        try:
            token = json.loads((layout.folder / "tokenizer_config.json").read_text())["pad_token"]
        except (OSError, ValueError, KeyError) as exc:
            raise Unsupported(f"the tokenizer names no padding token ({exc})") from exc
        padding = {"pad_id": tokenizer.token_to_id(token), "pad_type_id": 0}
    tokenizer.no_padding()
    return tokenizer, {"pad_id": padding["pad_id"], "pad_type_id": padding["pad_type_id"]}


def import_runtime(name: str):
    """The OpenVINO runtime without its model conversion tools, which this backend does not use: importing them
    (``import openvino`` tries to) sends usage telemetry from a forked process and writes files under ~/intel."""
    if name == "openvino":
        sys.modules.setdefault("openvino.tools.ovc", None)  # a None entry makes that import fail; openvino skips it
    return importlib.import_module(name)


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """sentence-transformers' Pooling, then L2 normalisation, over token vectors ``hidden`` [batch, tokens, dim]."""
    weights = mask[..., None].astype(np.float32)
    if mode == "cls":
        pooled = hidden[:, 0]
    elif mode == "max":
        pooled = np.where(weights > 0, hidden, -1e9).max(axis=1)
    else:
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return pooled.astype(np.float32, copy=False)


def write_atomically(path: Path, text: str) -> None:
    fd, partial = tempfile.mkstemp(dir=path.parent, suffix=".part")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(partial, path)
