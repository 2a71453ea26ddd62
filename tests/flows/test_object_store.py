"""The pipeline on an object store: a moto S3 server on a loopback port, the real flows, model and CLI.

LanceDB reads the endpoint and credentials from the AWS_* environment variables, as a user sets them
(README, Operations, Object store); boto3 lists what really landed in the bucket.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import boto3
import pytest
from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from typer.testing import CliRunner
from werkzeug.serving import make_server

from citesum.deployments.cli import app
from citesum.flows.ingest import run_ingest
from citesum.tasks.errors import ConfigurationError, TransientError
from citesum.tasks.ingest.report import IngestReport
from citesum.tasks.records import Chunk, DocumentRecord
from citesum.tasks.settings import Settings
from citesum.tasks.store.lance import LanceStore

BUCKET = "citesum-test"
REGION = "us-east-1"
AGREEMENT = "services_agreement.pdf"
REPORT = "technical_report.pdf"
OLD_CLAUSE = "The quokka clause obliges weekly status calls."
NEW_CLAUSE = "The wombat clause obliges monthly audits."
MARKER_WORD = "zanzibarquokka"
MARKER = f"The {MARKER_WORD} clause obliges the Supplier to audit every subcontractor twice a year."


class RecordingS3:
    """moto's S3 app, recording every PUT's path and If-None-Match header (how Lance commits a version)."""

    def __init__(self) -> None:
        self.app = DomainDispatcherApplication(create_backend_app)
        self.puts: list[tuple[str, str | None]] = []

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "PUT":
            self.puts.append((environ["PATH_INFO"], environ.get("HTTP_IF_NONE_MATCH")))
        return self.app(environ, start_response)


@dataclass(frozen=True)
class S3:
    client: object  # boto3's S3 client
    recorder: RecordingS3

    def keys(self, prefix: str) -> list[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def holding(self, prefix: str, needle: bytes) -> list[str]:
        """Every object under ``prefix`` (data, deletion, index, manifest, transaction) holding ``needle``."""
        return [k for k in self.keys(prefix) if needle in self.client.get_object(Bucket=BUCKET, Key=k)["Body"].read()]


@contextmanager
def serving(recorder: RecordingS3) -> Iterator[str]:
    """moto's S3 app on a free loopback port; yields its URL, stops on exit."""
    server = make_server("127.0.0.1", 0, recorder, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()  # the socket is bound and listening already: no wait for readiness
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """An S3 server with a bucket, and the variables LanceDB reads; stopped after the module."""
    recorder = RecordingS3()
    with serving(recorder) as endpoint, pytest.MonkeyPatch.context() as env:
        env.setattr(logging.getLogger("werkzeug"), "level", logging.WARNING)  # a line per request otherwise
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT"):
            env.delenv(name, raising=False)
        env.setenv("AWS_ENDPOINT_URL", endpoint)
        env.setenv("AWS_ALLOW_HTTP", "true")  # the endpoint is plain http
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv("AWS_REGION", REGION)
        client = boto3.client("s3", region_name=REGION)  # boto3 reads no AWS_REGION
        client.create_bucket(Bucket=BUCKET)
        yield S3(client, recorder)


def ingested(settings: Settings) -> IngestReport:
    state = run_ingest(None, settings)
    assert state.is_completed(), state.message
    return state.result()


def statuses(report: IngestReport) -> dict[str, str]:
    return {o.document_id: o.status for o in report.outcomes}


def one_version(document_id: str, version: str, texts: list[str]) -> tuple[DocumentRecord, list[Chunk]]:
    chunks = [Chunk(document_id, version, document_id, 1, 1, "", text, i) for i, text in enumerate(texts)]
    return DocumentRecord(document_id, version, document_id, pages=1, chunks=len(chunks), status="ok"), chunks


def chunk_ids(store: LanceStore) -> list[str]:
    return sorted(r["chunk_id"] for r in store.chunk_rows(columns=["chunk_id"]))


def test_the_server_refuses_a_second_conditional_put(s3):
    """Lance's commits are safe here only because the server honours If-None-Match (AWS S3 has since 2024)."""
    s3.client.put_object(Bucket=BUCKET, Key="probe/once", Body=b"first", IfNoneMatch="*")
    with pytest.raises(s3.client.exceptions.ClientError, match="PreconditionFailed"):
        s3.client.put_object(Bucket=BUCKET, Key="probe/once", Body=b"second", IfNoneMatch="*")
    assert s3.client.get_object(Bucket=BUCKET, Key="probe/once")["Body"].read() == b"first"


def test_ingest_reingest_change_remove_and_search_on_s3(s3, corpus, sample, embedder):
    folder, placed = corpus
    sample.services_agreement(folder / AGREEMENT, extra_clause=OLD_CLAUSE)
    settings = Settings(corpus=folder, db=f"s3://{BUCKET}/citesum")

    first = ingested(settings)
    assert set(statuses(first).values()) == {"new"} and len(first.outcomes) == len(placed)
    ids = chunk_ids(LanceStore.open(settings.store.db))
    assert len(ids) == len(set(ids)) == first.totals()["chunks"] > 0
    keys = s3.keys("citesum/")
    for table in ("chunks", "documents"):
        assert any(k.startswith(f"citesum/{table}.lance/data/") for k in keys), keys
        assert any(k.startswith(f"citesum/{table}.lance/_versions/") for k in keys), keys
    assert any("/_indices/" in k for k in keys)  # BTREE and full-text indexes live in the bucket too

    again = ingested(settings)
    assert set(statuses(again).values()) == {"unchanged"} and again.totals()["embedded"] == 0
    assert chunk_ids(LanceStore.open(settings.store.db)) == ids

    sample.services_agreement(folder / AGREEMENT, extra_clause=NEW_CLAUSE)
    (folder / REPORT).unlink()
    changed = ingested(settings)
    assert statuses(changed)[AGREEMENT] == "updated" and statuses(changed)[REPORT] == "deleted"

    store = LanceStore.open(settings.store.db)
    assert REPORT not in store.documents() and store.chunk_count(REPORT) == 0
    versions = {r["version"] for r in store.chunk_rows(f"document_id = '{AGREEMENT}'")}
    assert versions == {store.documents()[AGREEMENT].version}  # the old version's chunks are gone
    assert not store.search_text("quokka")
    assert [r["document_id"] for r in store.search_text("wombat")] == [AGREEMENT]
    nearest = store.search_vector(embedder.embed([NEW_CLAUSE])[0], k=3)
    assert NEW_CLAUSE in nearest[0]["text"]
    assert not any("quokka" in r["text"] for r in store.search_vector(embedder.embed([OLD_CLAUSE])[0], k=50))

    manifests = [(path, condition) for path, condition in s3.recorder.puts if path.endswith(".manifest")]
    assert manifests and all(condition == "*" for _, condition in manifests)  # every commit is put-if-absent

    status = CliRunner().invoke(app, ["status", "--db", settings.store.db, "--json"])
    assert status.exit_code == 0, status.output
    assert {d["document_id"] for d in json.loads(status.stdout)["documents"]} == {AGREEMENT, "scanned_memo.pdf"}


def test_maintain_and_forget_with_purge_on_s3(s3, corpus, sample, embedder, monkeypatch):
    folder, _ = corpus
    sample.services_agreement(folder / AGREEMENT, extra_clause=MARKER)
    db = f"s3://{BUCKET}/erasure"
    monkeypatch.setenv("CITESUM_VERSION_RETENTION_HOURS", "0")  # what the CLI's settings read
    settings = Settings(corpus=folder, db=db)
    ingested(settings)
    sample.services_agreement(folder / AGREEMENT, extra_clause=MARKER, notice_days=60)
    ingested(settings)  # a superseded version: more versions and fragments for maintenance to fold
    assert s3.holding("erasure/", MARKER.encode())  # the sentence is in an object: the scan can see it

    maintained = CliRunner().invoke(app, ["maintain", "--db", db, "--json"])
    assert maintained.exit_code == 0, maintained.output
    tables = {t["table"]: t for t in json.loads(maintained.stdout)["tables"]}
    assert tables["chunks"]["versions"][1] < tables["chunks"]["versions"][0]
    assert tables["chunks"]["fragments"][1] == 1
    assert tables["chunks"]["bytes"] == [None, None]  # sizes are not measured on an object store
    assert all(i["unindexed"] == 0 for t in tables.values() for i in t["indexes"])

    forgot = CliRunner().invoke(app, ["forget", AGREEMENT, "--purge", "--db", db, "--json"])
    assert forgot.exit_code == 0, forgot.output
    assert json.loads(forgot.stdout)["purged"] is True
    assert s3.holding("erasure/", MARKER.encode()) == []
    assert s3.holding("erasure/", MARKER_WORD.encode()) == []
    store = LanceStore.open(db)
    assert set(store.documents()) == {REPORT, "scanned_memo.pdf"}
    assert {r["document_id"] for r in store.search_text("hydrants")} == {REPORT}
    nearest = store.search_vector(embedder.embed(["pressure sensors detect leaks in water pipes"])[0], k=3)
    assert nearest[0]["document_id"] == REPORT


def test_concurrent_writers_lose_no_commit_on_s3(s3, embedder):
    """Four connections, as four processes would have, supersede a document each at once, three times."""
    uri = f"s3://{BUCKET}/concurrent"
    LanceStore.open_or_create(uri, embedder.name, embedder.dimension)
    texts = ["The notice period is thirty days.", "Fees are due monthly."]
    vectors = embedder.embed(texts)
    errors: list[BaseException] = []

    def write(document_id: str) -> None:
        store = LanceStore.open(uri)  # its own connection, as another process would have
        try:
            for version in ("v1", "v2", "v3"):
                store.supersede(*one_version(document_id, version, texts), vectors)
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    writers = [threading.Thread(target=write, args=(f"d{n}.pdf",)) for n in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
    assert not errors and not any(w.is_alive() for w in writers)
    store = LanceStore.open(uri)
    assert {d: r.version for d, r in store.documents().items()} == {f"d{n}.pdf": "v3" for n in range(4)}
    rows = store.chunk_rows(columns=["chunk_id", "version"])
    assert len(rows) == 8 and {r["version"] for r in rows} == {"v3"}


def test_an_unreachable_bucket_is_a_clear_configuration_error(s3):
    with pytest.raises(ConfigurationError, match="cannot open the store at s3://no-such-bucket/db.*NoSuchBucket"):
        LanceStore.open("s3://no-such-bucket/db")
    result = CliRunner().invoke(app, ["status", "--db", "s3://no-such-bucket/db"])
    assert result.exit_code == 2 and "AWS_" in result.output


def test_a_write_while_the_store_is_unreachable_is_transient(s3, embedder, monkeypatch):
    """The write task retries it (TransientError), instead of failing the document for good."""
    texts = ["The warranty lasts one year."]
    with serving(RecordingS3()) as endpoint:  # moto keeps one state per process: this server has the bucket too
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        store = LanceStore.open_or_create(f"s3://{BUCKET}/outage", embedder.name, embedder.dimension)
    with pytest.raises(TransientError, match="LanceError"):
        store.supersede(*one_version("a.pdf", "v1", texts), embedder.embed(texts))
