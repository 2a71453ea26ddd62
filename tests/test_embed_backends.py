"""The OpenVINO embedding backend against sentence-transformers on torch, on real chunks of the sample corpus:
the same vectors (cosine >= 0.999) and token counts, the same retrieval whichever backend wrote or queries a store,
an export made once and reused, and torch whenever OpenVINO cannot run, saying why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from citesum.tasks.embed import (
    SentenceTransformerEmbedder,
    counts_add_up,
    length_batches,
    load_embedder,
    model_folder,
)
from citesum.tasks.embed_openvino import OpenVINOEmbedder, Unsupported, cache_key, read_layout
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.ingest.chunk import chunk_document
from citesum.tasks.ingest.pdf.extract import extract_document
from citesum.tasks.ingest.sources import source_for
from citesum.tasks.records import DocumentRecord
from citesum.tasks.settings import DEFAULT_EMBED_MODEL
from citesum.tasks.store.lance import LanceStore
from citesum.tasks.summarize.retrieve import retrieve

QUESTIONS = [
    "What are the termination obligations?",
    "How much notice is needed to end the agreement?",
    "What were the results of the benchmark?",
    "Which limitations does the report list?",
    "What does the memo ask staff to do?",
    "Who pays the fees and when?",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embed-cache")


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return load_embedder(DEFAULT_EMBED_MODEL, 32, "torch")


@pytest.fixture(scope="module")
def fast(cache) -> OpenVINOEmbedder:
    return OpenVINOEmbedder(DEFAULT_EMBED_MODEL, model_folder(DEFAULT_EMBED_MODEL), cache)


@pytest.fixture(scope="module")
def chunked(tmp_path_factory, sample, torch_embedder):
    """The sample corpus, extracted and chunked as ingestion does."""
    folder = tmp_path_factory.mktemp("corpus")
    sample.write_sample_corpus(folder)
    documents = []
    for path in sorted(folder.glob("*.pdf")):
        extracted = extract_document(source_for(path, folder))
        documents.append(
            chunk_document(extracted, count_tokens=torch_embedder.count_tokens, max_tokens=torch_embedder.max_tokens)
        )
    return documents


def texts_of(chunked) -> list[str]:
    return [c.embedding_text for doc in chunked for c in doc.chunks]


def test_openvino_vectors_and_token_counts_match_torch_on_sample_chunks(chunked, torch_embedder, fast):
    texts = texts_of(chunked)
    assert len(texts) >= 20
    mine, theirs = fast.embed(texts), torch_embedder.embed(texts)
    assert mine.shape == theirs.shape and mine.dtype == np.float32
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(mine * theirs, axis=1))) >= 0.999
    # chunking counts with the embedder, and the fingerprint does not name the backend: the counts must agree
    assert [fast.count_tokens(t) for t in texts] == [torch_embedder.count_tokens(t) for t in texts]
    assert (fast.name, fast.dimension, fast.max_tokens) == (
        torch_embedder.name,
        torch_embedder.dimension,
        torch_embedder.max_tokens,
    )
    assert fast.backend == f"openvino {fast.precision}" and fast.precision in ("bf16", "fp32", "fp16")


def test_batches_run_on_parallel_streams_land_in_their_own_rows(cache, chunked, fast):
    """Small batches, so that the inference streams run several at once and finish out of order: each text's
    vector is the one it gets alone."""
    texts = texts_of(chunked)
    small = OpenVINOEmbedder(DEFAULT_EMBED_MODEL, model_folder(DEFAULT_EMBED_MODEL), cache, batch_size=3)
    together = small.embed(texts)
    alone = np.vstack([fast.embed([text]) for text in texts])
    assert float(np.min(np.sum(together * alone, axis=1))) >= 0.999
    assert (np.argmax(together @ alone.T, axis=1) == np.arange(len(texts))).all()


def test_counts_add_up_for_the_packaged_model_and_not_for_a_sentencepiece_tokenizer(chunked, torch_embedder, fast):
    """Both backends say the packaged model's counts add up over text joined at whitespace, and they do over the
    sample's chunks; a SentencePiece-style tokenizer (its pre-tokenizer marks where words begin) is not taken
    to add up."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    assert fast.counts_add_up and torch_embedder.counts_add_up
    texts = [c.text for doc in chunked for c in doc.chunks]
    special = fast.count_tokens("")
    for a, b in zip(texts, texts[1:], strict=False):
        assert fast.count_tokens(f"{a}\n\n{b}") == fast.count_tokens(a) + fast.count_tokens(b) - special
    pieces = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##a": 2}, unk_token="[UNK]"))
    pieces.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert counts_add_up(pieces)
    pieces.pre_tokenizer = pre_tokenizers.Metaspace()
    assert not counts_add_up(pieces)
    pieces.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    pieces.add_tokens(["a a"])  # an added token matches before pre-tokenizing, across a join of "a" and "a"
    assert not counts_add_up(pieces)


@pytest.mark.parametrize("backend", ["fast", "torch_embedder"])
def test_batches_group_texts_by_word_pieces_not_characters(backend, request):
    """A table's figures take several word pieces a character: batches made by characters pad prose to the
    length of figures. Ordered by word pieces (``length_batches``, which each embedder calls with its own counts),
    the figures go together and so does the prose; each embedder, reordering its texts so, still returns each
    text's vector in its own row. That embedding is faster so is the benchmark's to show (README, Benchmark)."""
    embedder = request.getfixturevalue(backend)
    texts = [
        "The agreement may be ended by either party on thirty days written notice to the other party.",
        "Total debt: 2018 $14,622; 2017 $13,949; 2016 $1,577.3; 2015 (2,081); 8.2% 3,010",
        "Either party may end this agreement by giving notice to the other one.",
        "Net sales: 2018 $32,765; 2017 $31,657; 2016 $30,109; 2015 (2.1%)",
    ]  # longest first by characters: prose, figures, prose, figures
    pieces = [embedder.count_tokens(text) for text in texts]
    assert min(pieces[1], pieces[3]) > max(pieces[0], pieces[2])  # the premise: the figures take more pieces
    assert sorted(map(sorted, length_batches(pieces, 2))) == [[0, 2], [1, 3]]
    # and each text's vector, wherever its batch put it, is its own
    alone = np.vstack([embedder.embed([text]) for text in texts])
    assert float(np.min(np.sum(embedder.embed(texts) * alone, axis=1))) >= 0.999


def run_pieces(lengths: list[int], batches: list[list[int]], batch_cost: int) -> int:
    """Word pieces a batching runs through the model, each batch padded to its longest text, plus its call."""
    return sum(batch_cost + len(batch) * max(lengths[i] for i in batch) for batch in batches)


def test_a_few_short_texts_get_a_batch_of_their_own_rather_than_padding_to_long_ones():
    """Cut every 32 texts, the 33rd long chunk of a document shares its batch with the 31 short ones, each padded to
    200 pieces: 6,400 pieces run for 510 real ones."""
    lengths = [200] * 33 + [10] * 31
    batches = length_batches(lengths, 32)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert all(len(batch) <= 32 for batch in batches)
    assert all(len({lengths[i] for i in batch}) == 1 for batch in batches)  # no short text padded to 200


def contiguous_cuts(count: int, size: int):
    """Every way to cut ``count`` ordered texts into consecutive batches of at most ``size``."""
    if count == 0:
        yield []
        return
    for first in range(1, min(size, count) + 1):
        for rest in contiguous_cuts(count - first, size):
            yield [first, *rest]


@given(st.lists(st.integers(1, 256), max_size=9), st.integers(1, 4), st.sampled_from([0, 1, 48, 500]))
def test_batches_run_the_fewest_word_pieces_longest_first(lengths, size, batch_cost):
    """Each text once, batches of at most ``size``, longest first, and no cut of the texts in that order into
    batches runs fewer pieces (with its calls): the cheapest batching of any texts is such a cut."""
    batches = length_batches(lengths, size, batch_cost)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert all(0 < len(batch) <= size for batch in batches)
    order = [i for batch in batches for i in batch]
    assert [lengths[i] for i in order] == sorted(lengths, reverse=True)
    longest = sorted(lengths, reverse=True)
    best = min(
        sum(batch_cost + sizes[k] * longest[sum(sizes[:k])] for k in range(len(sizes)))
        for sizes in contiguous_cuts(len(lengths), size)
    )
    assert run_pieces(lengths, batches, batch_cost) == best


def store_with(tmp: Path, chunked, embedder) -> LanceStore:
    store = LanceStore.open_or_create(str(tmp), embedder.name, embedder.dimension)
    for doc in chunked:
        source = doc.chunks[0]
        record = DocumentRecord(
            source.document_id, source.version, source.source, 1, len(doc.chunks), "ok", embed_model=embedder.name
        )
        store.supersede(record, doc.chunks, embedder.embed([c.embedding_text for c in doc.chunks]))
    return store


def top10(store: LanceStore, embedder, question: str) -> list[tuple[str, str, int, int]]:
    return [
        (c.chunk.chunk_id, c.chunk.document_id, c.chunk.page_start, c.chunk.page_end)
        for c in retrieve(store, embedder, question, k=10)
        if not c.page_mate  # the ten candidates proper; their pages' other chunks follow them
    ]


def test_a_store_written_with_one_backend_is_searched_alike_with_the_other(tmp_path, chunked, torch_embedder, fast):
    """The same pages in the same order, and nine chunks of ten or more the same. With bf16 (OpenVINO on a CPU with
    AMX) two chunks of one page whose fused scores lie 0.0001 apart (0.0442, 0.0443) may swap, and the page's
    round-robin slot then holds the other one: the page cited is the same."""
    by_torch, by_openvino = (
        store_with(tmp_path / "t", chunked, torch_embedder),
        store_with(tmp_path / "o", chunked, fast),
    )
    for question in QUESTIONS:
        reference = top10(by_torch, torch_embedder, question)
        assert len(reference) == 10
        for found in (top10(by_torch, fast, question), top10(by_openvino, torch_embedder, question)):
            assert [r[1:] for r in found] == [r[1:] for r in reference], question
            assert len({r[0] for r in found} & {r[0] for r in reference}) >= 9, question


def test_the_export_is_made_once_and_reused(cache, fast):
    onnx = fast.cache / "model.onnx"
    made = onnx.stat().st_mtime_ns
    exports = OpenVINOEmbedder.exports
    again = OpenVINOEmbedder(DEFAULT_EMBED_MODEL, model_folder(DEFAULT_EMBED_MODEL), cache)
    assert again.cache == fast.cache
    assert OpenVINOEmbedder.exports == exports and onnx.stat().st_mtime_ns == made
    assert np.allclose(again.embed(["Notice of termination"]), fast.embed(["Notice of termination"]), atol=1e-6)


def test_auto_checks_once_and_later_processes_do_not_load_torch(cache):
    first = load_embedder(DEFAULT_EMBED_MODEL, 32, "auto", cache)
    assert first.backend.startswith("openvino ") and "matches torch on the self-check" in first.backend_reason
    [record] = cache.glob("*/self-check-*.json")
    assert json.loads(record.read_text())["passed"] is True
    probe = (
        "import sys; from pathlib import Path; from citesum.tasks.embed import load_embedder; "
        f"e = load_embedder('{DEFAULT_EMBED_MODEL}', 32, 'auto', Path({str(cache)!r})); "
        "e.embed(['a clause']); print(e.backend, 'torch' in sys.modules, sys.modules.get('openvino.tools.ovc'))"
    )
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    # no torch; and not OpenVINO's conversion tools, whose import sends telemetry from a forked process
    assert shown.stdout.split() == [*first.backend.split(), "False", "None"]


def test_the_cache_key_changes_with_the_model_files(tmp_path, cache, fast):
    copy = tmp_path / "model"
    shutil.copytree(model_folder(DEFAULT_EMBED_MODEL), copy)
    assert cache_key(copy, "2026.4.1", "auto") == cache_key(model_folder(DEFAULT_EMBED_MODEL), "2026.4.1", "auto")
    assert cache_key(copy, "2026.4.1", "auto") != cache_key(copy, "2026.5.0", "auto")
    assert cache_key(copy, "2026.4.1", "auto") != cache_key(copy, "2026.4.1", "f32")
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(config | {"note": "changed"}))
    exports = OpenVINOEmbedder.exports
    changed = OpenVINOEmbedder(str(copy), copy, cache)
    assert changed.cache != fast.cache and OpenVINOEmbedder.exports == exports + 1


def test_auto_falls_back_to_torch_when_the_runtime_cannot_be_imported(tmp_path):
    embedder = load_embedder(DEFAULT_EMBED_MODEL, 32, "auto", tmp_path, runtime="citesum_no_such_runtime")
    assert isinstance(embedder, SentenceTransformerEmbedder) and embedder.backend == "torch fp32"
    assert embedder.backend_reason.startswith("OpenVINO unavailable: the OpenVINO runtime cannot be imported")
    assert "citesum_no_such_runtime" in embedder.backend_reason
    with pytest.raises(ConfigurationError, match="OpenVINO embedding backend cannot run"):
        load_embedder(DEFAULT_EMBED_MODEL, 32, "openvino", tmp_path, runtime="citesum_no_such_runtime")
    assert not any(tmp_path.iterdir())  # nothing exported


def test_a_pooling_openvino_does_not_reproduce_falls_back_to_torch_saying_why(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(model_folder(DEFAULT_EMBED_MODEL), copy)
    pooling = copy / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(
        json.dumps(config | {"pooling_mode_mean_tokens": False, "pooling_mode_mean_sqrt_len_tokens": True})
    )
    with pytest.raises(Unsupported, match="pooling"):
        read_layout(copy)
    embedder = load_embedder(str(copy), 32, "auto", tmp_path / "cache")
    assert embedder.backend == "torch fp32" and "pooling" in embedder.backend_reason
