"""Crash safety of ingestion: SIGKILL ``citesum ingest`` at random points, rerun, check the store.

    python tests/benchmarks/crash_safety.py [--kills 20] [--seed 7] [--workdir DIR]

Builds a small corpus from the sample generator (two agreements and the technical report) and, for each
round, changes it (an agreement regenerated with another notice period or extra clause, so versions change
and sometimes revert to an earlier one; the second agreement sometimes removed or restored), starts
``citesum ingest`` in its own process group (the CLI, its extraction children and Prefect's temporary server)
and kills the whole group with SIGKILL, either after a random delay or a random moment after a chosen task's
log line ("Task run 'write-..." and the like). Then it reruns the ingestion to completion and checks the store:

- every document in the chunks table has exactly one version, and it is the documents table's version;
- no chunk belongs to a document the documents table does not know (an orphan);
- each document's chunk count equals the count in its record; chunk ids are unique;
- the documents table holds exactly the corpus files, at the sha256 of their current bytes.

A rerun that does not finish in time is a failure too. If the killed run held the ``citesum-writer`` slot,
the slot stays taken (Prefect's temporary server keeps leases in memory, and they die with it): the script then
records the limit's active slots, frees the slot with ``prefect gcl update citesum-writer --active-slots 0``
and reruns, so the store is still checked.

A run that finished before its kill is counted apart (not a kill); the series goes on until ``--kills`` kills
hit a running ingestion. A last clean run ends the series. Prints the figures as JSON; exits 1 if any check
failed or a rerun did not finish in time.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CITESUM = [sys.executable, "-c", "from citesum.deployments.cli import main; main()"]
PREFECT = str(Path(sys.executable).with_name("prefect"))
MISSED = "run finished before the kill"
TASKS = ("extract", "chunk", "embed", "write", "delete-missing", "refresh-indexes")
# What a killed run was doing, judged from the last task that finished before the kill.
PHASE_AFTER = {
    None: "startup/extract",  # server start, model load, first extractions
    "discover": "startup/extract",
    "extract": "extract/chunk",
    "chunk": "embed",
    "embed": "embed/write",
    "write": "write",
    "delete-missing": "indexes",
    "refresh-indexes": "finishing",
}


def load_sample_generator():
    spec = importlib.util.spec_from_file_location("sample_corpus", ROOT / "data" / "sample_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["sample_corpus"] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


class Corpus:
    """The corpus folder and how each round changes it."""

    CLAUSES = (None, "The escrow clause obliges quarterly deposits.", "The audit clause obliges yearly reviews.")

    def __init__(self, folder: Path, rng: random.Random):
        self.folder, self.rng, self.sample = folder, rng, load_sample_generator()
        self.variant: dict[str, tuple] = {}
        folder.mkdir(parents=True, exist_ok=True)
        self.sample.technical_report(folder / "technical_report.pdf")
        self.agreement("agreement_a.pdf")
        self.agreement("agreement_b.pdf")

    def agreement(self, name: str) -> None:
        """Write the agreement in a variant other than its current one (earlier variants recur)."""
        variants = [(days, clause) for days in (30, 60) for clause in self.CLAUSES]
        current = self.variant.get(name) if (self.folder / name).exists() else None
        days, clause = self.rng.choice([v for v in variants if v != current])
        self.sample.services_agreement(self.folder / name, notice_days=days, extra_clause=clause)
        self.variant[name] = (days, clause)

    def change(self) -> list[str]:
        """Regenerate one or both agreements; sometimes remove or restore the second one."""
        changes = []
        for name in self.rng.sample(["agreement_a.pdf", "agreement_b.pdf"], k=self.rng.choice((1, 2))):
            if name == "agreement_b.pdf" and self.rng.random() < 0.25:
                path = self.folder / name
                if path.exists():
                    path.unlink()
                    changes.append(f"removed {name}")
                    continue
            self.agreement(name)
            changes.append(f"wrote {name}")
        return changes

    def versions(self) -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(self.folder.glob("*.pdf"))}


@dataclass
class Run:
    """One ``citesum ingest`` process group, with the task log lines it printed."""

    process: subprocess.Popen
    started: float
    finished_tasks: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    seen: threading.Condition = field(default_factory=threading.Condition)
    ended: bool = False  # its stderr closed: the process group is exiting
    flow_finished: bool = False  # the flow reported its final state: nothing left to interrupt

    def follow(self) -> None:
        for line in self.process.stderr:
            task = finished_task(line)
            with self.seen:
                self.lines.append(line.rstrip())
                self.flow_finished |= "Flow run '" in line and "Finished in state" in line
                if task:
                    self.finished_tasks.append(task)
                self.seen.notify_all()
        with self.seen:
            self.ended = True
            self.seen.notify_all()

    def wait_for_task(self, task: str, timeout: float) -> bool:
        """Wait until ``task`` has finished once more than before, or the run ended."""
        with self.seen:
            before = self.finished_tasks.count(task)
            return self.seen.wait_for(lambda: self.finished_tasks.count(task) > before or self.ended, timeout)

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # the CLI, extraction children, the Prefect server
        except ProcessLookupError:
            pass
        self.process.wait()


def finished_task(line: str) -> str | None:
    """The task name of a "Task run 'write-3fa' - Finished in state ..." log line."""
    marker = "Task run '"
    if marker not in line:
        return None
    name = line.split(marker, 1)[1].split("'", 1)[0].rsplit("-", 1)[0]
    return name if name in TASKS or name == "discover" else None


def start(corpus: Path, db: Path, env: dict) -> Run:
    process = subprocess.Popen(
        [*CITESUM, "ingest", str(corpus), "--db", str(db), "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so one killpg reaches every child
    )
    run = Run(process, time.monotonic())
    threading.Thread(target=run.follow, daemon=True).start()
    return run


def kill_somewhere(corpus: Path, db: Path, env: dict, rng: random.Random, typical_seconds: float) -> dict:
    """Start an ingestion and kill it: after a random delay, or at a random moment after a task's log line."""
    run = start(corpus, db, env)
    if rng.random() < 0.4:
        delay = rng.uniform(3, 0.9 * typical_seconds)
        trigger = {"kind": "delay", "seconds": round(delay, 1)}
    else:
        # Writes start once every embedding is done: the moments after an embed or a write are the risky ones.
        task = rng.choice(("extract", "chunk", "embed", "embed", "write", "write"))
        run.wait_for_task(task, timeout=typical_seconds * 2)
        delay = rng.uniform(0, 3.0 if task == "embed" else 1.5)
        trigger = {"kind": "after log line", "task": task, "seconds": round(delay, 2)}
    time.sleep(delay)
    ended_before_kill = run.flow_finished or run.process.poll() is not None
    run.kill()
    last = run.finished_tasks[-1] if run.finished_tasks else None
    return {
        "trigger": trigger,
        "seconds": round(time.monotonic() - run.started, 1),
        "last_finished_task": last,
        "phase": MISSED if ended_before_kill else PHASE_AFTER[last],
    }


def complete_run(corpus: Path, db: Path, env: dict, timeout: float) -> dict:
    run = start(corpus, db, env)
    try:
        code = run.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        run.kill()
        return {"exit": None, "seconds": round(time.monotonic() - run.started, 1), "timed_out": True}
    result = {"exit": code, "seconds": round(time.monotonic() - run.started, 1), "timed_out": False}
    if code != 0:
        result["stderr_tail"] = run.lines[-15:]
    return result


def writer_slots(env: dict) -> int | None:
    """Active slots of the writer limit, read through the Prefect CLI (it starts its own temporary server)."""
    shown = subprocess.run(
        [PREFECT, "gcl", "inspect", "citesum-writer", "--output", "json"], env=env, capture_output=True, text=True
    )
    try:
        return json.loads(shown.stdout[shown.stdout.index("{") : shown.stdout.rindex("}") + 1])["active_slots"]
    except ValueError:
        return None


def free_writer_slot(env: dict) -> None:
    subprocess.run([PREFECT, "gcl", "update", "citesum-writer", "--active-slots", "0"], env=env, capture_output=True)


def rerun(corpus: Path, db: Path, env: dict, timeout: float) -> dict:
    """A complete run; if it hangs, the writer slot the killed run held is read, freed, and the run repeated."""
    result = complete_run(corpus, db, env, timeout)
    if result["timed_out"]:
        result["writer_active_slots"] = writer_slots(env)
        free_writer_slot(env)
        result["after_freeing_the_slot"] = complete_run(corpus, db, env, timeout)
    return result


def check_store(db: Path, expected_versions: dict[str, str]) -> dict[str, list[str]]:
    """Each check's failures (empty lists when the store is consistent)."""
    from citesum.tasks.store.lance import LanceStore

    store = LanceStore.open(str(db))
    records = store.documents()
    rows = store.chunk_rows(columns=["chunk_id", "document_id", "version"])
    versions: dict[str, set[str]] = {}
    for row in rows:
        versions.setdefault(row["document_id"], set()).add(row["version"])
    counts = Counter(row["document_id"] for row in rows)
    ids = Counter(row["chunk_id"] for row in rows)
    return {
        "one_version_per_document": [f"{d}: {len(v)} versions" for d, v in versions.items() if len(v) != 1],
        "chunk_versions_match_records": [
            f"{d}: chunks at {sorted(v)}, record at {records[d].version}"
            for d, v in versions.items()
            if d in records and v != {records[d].version}
        ],
        "no_orphan_chunks": [f"{d}: {counts[d]} chunks, no record" for d in versions if d not in records],
        "chunk_counts_match_records": [
            f"{d}: {counts.get(d, 0)} chunks, record says {r.chunks}"
            for d, r in records.items()
            if counts.get(d, 0) != r.chunks
        ],
        "unique_chunk_ids": [f"{c}: {n} rows" for c, n in ids.items() if n > 1],
        "records_match_corpus": corpus_mismatches({d: r.version for d, r in records.items()}, expected_versions),
    }


def corpus_mismatches(recorded: dict[str, str], on_disk: dict[str, str]) -> list[str]:
    return [
        f"{d}: record {(recorded.get(d) or '-')[:12]}, file {(on_disk.get(d) or '-')[:12]}"
        for d in sorted(set(recorded) | set(on_disk))
        if recorded.get(d) != on_disk.get(d)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="kills of a running ingestion (misses not counted)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, help="default: a fresh temporary folder")
    parser.add_argument("--rerun-timeout", type=float, default=420.0, help="seconds a rerun may take")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="citesum-crash-"))
    corpus, db = work / "corpus", work / "db"
    env = {
        **os.environ,
        "PREFECT_HOME": str(work / "prefect-home"),  # its own Prefect database, never ~/.prefect
        "HF_HUB_OFFLINE": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PYTHONPATH": str(ROOT),
    }
    sample = Corpus(corpus, rng)
    first = complete_run(corpus, db, env, args.rerun_timeout)  # a stored corpus to supersede
    durations, rounds = [first["seconds"]], []
    while sum(r["kill"]["phase"] != MISSED for r in rounds) < args.kills and len(rounds) < 3 * args.kills:
        changes = sample.change()
        # Delays are drawn within the runs seen lately: runs shorten once Prefect's database is warm.
        kill = kill_somewhere(corpus, db, env, rng, statistics.median(durations[-5:]))
        again = rerun(corpus, db, env, args.rerun_timeout)
        durations += [] if again["timed_out"] else [again["seconds"]]
        failed = {name: problems for name, problems in check_store(db, sample.versions()).items() if problems}
        rounds.append(
            {"round": len(rounds) + 1, "changes": changes, "kill": kill, "rerun": again, "failed_checks": failed}
        )
        print(json.dumps(rounds[-1]), file=sys.stderr, flush=True)
    final = complete_run(corpus, db, env, args.rerun_timeout)
    final_checks = {name: problems for name, problems in check_store(db, sample.versions()).items() if problems}
    figures = summary(rounds, first, final, final_checks, work)
    print(json.dumps(figures, indent=2))
    ok = figures["store_states_consistent"] == figures["store_states_checked"] and all(
        r["rerun"]["exit"] == 0 for r in rounds + [{"rerun": final}]
    )
    return 0 if ok else 1


def summary(rounds: list[dict], first: dict, final: dict, final_checks: dict, work: Path) -> dict:
    kills = [r for r in rounds if r["kill"]["phase"] != MISSED]
    states = [r["failed_checks"] for r in rounds] + [final_checks]
    blocked = [r["round"] for r in rounds if r["rerun"]["timed_out"]]
    return {
        "kills": len(kills),
        "runs_finished_before_their_kill": len(rounds) - len(kills),
        "kills_by_phase": dict(Counter(r["kill"]["phase"] for r in kills)),
        "kills_by_trigger": dict(Counter(r["kill"]["trigger"].get("task", "delay") for r in kills)),
        "store_states_checked": len(states),
        "checks_per_state": 6,
        "store_states_consistent": sum(not failed for failed in states),
        "failed_checks": [{"round": r["round"], **r["failed_checks"]} for r in rounds if r["failed_checks"]]
        + ([{"round": "final", **final_checks}] if final_checks else []),
        "reruns_blocked_by_a_leaked_writer_slot": {"count": len(blocked), "rounds": blocked},
        "final_run": final,
        "run_seconds": {
            "first": first["seconds"],
            "rerun_median": statistics.median(r["rerun"]["seconds"] for r in rounds if not r["rerun"]["timed_out"]),
            "rerun_max_unblocked": max(r["rerun"]["seconds"] for r in rounds if not r["rerun"]["timed_out"]),
        },
        "rounds": rounds,
        "workdir": str(work),
    }


if __name__ == "__main__":
    sys.exit(main())
