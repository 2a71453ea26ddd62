"""The citesum deployments and the process that serves them (``citesum serve``).

- ``ingest/reindex``: the whole corpus, on a cron schedule (``reindex_cron``, default daily 02:00).
- ``ingest/ingest-upload``: one file, started by the event ``citesum.document.uploaded`` that
  ``citesum watch`` emits; the file's path comes from the event's payload.
- ``summarize/summarize``: on demand, with the flow's parameters (question, documents, mode, synth).
- ``maintain/maintain``: weekly (``maintain_cron``).

Deployment parameters carry only what a run is asked to do (a path, a question). The flows build
their ``Settings`` from the CITESUM_* environment of the process that runs them: ``serve`` exports
its validated settings, with local paths made absolute, to its own environment, which every run it
starts inherits. A worker started for ``prefect.yaml`` reads the worker's environment the same way.
"""

from __future__ import annotations

import os
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from prefect.deployments.runner import EntrypointType, RunnerDeployment
from prefect.events import DeploymentEventTrigger
from prefect.schedules import Cron, Schedule

from citesum.deployments.watch import EVENT
from citesum.flows.ingest import ingest
from citesum.flows.maintain import maintain as maintain_flow
from citesum.flows.summarize import summarize
from citesum.tasks.errors import ConfigurationError
from citesum.tasks.settings import Settings

TAGS = ["citesum"]
# entrypoints name the installed module (citesum.flows.ingest:ingest), not a file relative to the cwd
BY_MODULE = EntrypointType.MODULE_PATH
LOCAL_PATHS = ("corpus", "inbox", "runs_dir", "passwords_file")


def build_deployments(settings: Settings) -> list[RunnerDeployment]:
    """Every citesum deployment, with the schedules the settings ask for."""
    return [reindex(settings), ingest_upload(), summarize_on_demand(), maintain(settings)]


def reindex(settings: Settings) -> RunnerDeployment:
    # One at a time: a second full run would only find the first one's work done.
    return ingest.to_deployment(
        entrypoint_type=BY_MODULE,
        name="reindex",
        schedules=[schedule(settings.service.reindex_cron, settings.service.schedule_timezone)],
        concurrency_limit=1,
        description="Ingest the whole corpus: new and changed PDFs, deletions of removed ones.",
        tags=TAGS,
    )


def ingest_upload() -> RunnerDeployment:
    # One at a time: each run loads the embedding model (about 700 MB) and writes are serialized anyway;
    # a burst of uploads queues instead of starting a process per file.
    trigger = DeploymentEventTrigger(
        name="citesum-document-uploaded",
        expect={EVENT},
        match={"prefect.resource.id": "citesum.document.*"},
        parameters={"path": "{{ event.payload.path }}"},
    )
    return ingest.to_deployment(
        entrypoint_type=BY_MODULE,
        name="ingest-upload",
        triggers=[trigger],
        concurrency_limit=1,
        description=f"Ingest one uploaded PDF; started by the event {EVENT} from `citesum watch`.",
        tags=TAGS,
    )


def summarize_on_demand() -> RunnerDeployment:
    return summarize.to_deployment(
        entrypoint_type=BY_MODULE,
        name="summarize",
        description="A cited summary; run it with a question, document ids, mode and synthesizer.",
        tags=TAGS,
    )


def maintain(settings: Settings) -> RunnerDeployment:
    # One at a time: maintenance holds the writer limit for whole-table work.
    return maintain_flow.to_deployment(
        entrypoint_type=BY_MODULE,
        name="maintain",
        schedules=[schedule(settings.service.maintain_cron, settings.service.schedule_timezone)],
        concurrency_limit=1,
        description="Weekly store maintenance.",
        tags=TAGS,
    )


def schedule(cron: str, timezone: str) -> Schedule:
    """A cron schedule; a ConfigurationError names a bad expression or time zone (Prefect accepts any zone
    name, so the zone is checked here)."""
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigurationError(f"unknown time zone {timezone!r}") from exc
    try:
        return Cron(cron, timezone=timezone)
    except ValueError as exc:
        raise ConfigurationError(f"not a cron expression: {cron!r}") from exc


def run_environment(settings: Settings) -> dict[str, str]:
    """CITESUM_* variables that rebuild these settings in a run started from another folder.

    Flat names (CITESUM_DB): they win over nested ones (CITESUM_STORE__DB) left in the environment.
    """
    values = settings.flat_values(mode="json", exclude_none=True)
    for field in LOCAL_PATHS:
        if field in values:
            values[field] = os.path.abspath(values[field])
    if "://" not in values["db"]:  # a local LanceDB folder, not an object-store URI
        values["db"] = os.path.abspath(values["db"])
    return {f"CITESUM_{name.upper()}": str(value) for name, value in values.items()}


def serve(settings: Settings, deployments: list[RunnerDeployment], limit: int | None = None) -> None:
    """Register the deployments with the Prefect API in use and run their flow runs until stopped."""
    from prefect import serve as prefect_serve

    os.environ.update(run_environment(settings))  # what each run's Settings() reads
    prefect_serve(*deployments, limit=limit)
