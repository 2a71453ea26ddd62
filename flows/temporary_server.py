"""Prefect's temporary server: the one Prefect starts for a run when no API URL names a server.

Prefect starts it at a run's first API call (``SubprocessASGIServer.start``): a uvicorn process that answers
about 5 s later. Begun that way, the process starts only once this process has imported Prefect's server modules
(about 2.7 s of CPU, beside the command's other imports). ``start_early`` begins the process after importing only
Prefect's settings, and hands it over to that class later, once the command has imported what it runs: the
server's start-up overlaps those imports.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from typing import Any


def temporary_server():
    """Prefect's temporary server (a per-process singleton, not started yet) when no API URL names a server;
    the engine starts the same one at a run's first API call, so starting it earlier only moves that wait."""
    from prefect.settings import get_current_settings

    if get_current_settings().api.url:
        return None
    from prefect.server.api.server import SubprocessASGIServer

    return SubprocessASGIServer()


def temporary_server_url() -> str:
    """This process's temporary Prefect server (the one Prefect starts without an API URL), started if needed."""
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # one per process: the instance Prefect's own client uses
    server.start()
    return server.api_url


def start_early() -> Callable[[], None]:
    """Begin the temporary server's process now, when a run would start one; the function returned hands it over
    to Prefect and waits until it answers.

    Handed over, the process is the one Prefect's ``SubprocessASGIServer`` would have begun: Prefect's own start
    then waits for it, begins another if its port was taken meanwhile, and stops it at exit. Until then this
    process stops it at exit (a command that fails first leaves no server behind). Without a server to start,
    or when Prefect has begun its own meanwhile, the function starts nothing more.
    """
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled:
        return lambda: None
    port = free_port()
    process = subprocess.Popen(uvicorn_command(port), env=uvicorn_environment(settings))
    atexit.register(stop, process)

    def hand_over() -> None:
        server = early_server(port, process)
        if getattr(server, "_early", None) is not process:
            stop(process)  # Prefect made its own meanwhile: that is the one its client uses
        server.start()

    return hand_over


def uvicorn_command(port: int) -> list[str]:
    """The command Prefect's ``SubprocessASGIServer`` runs (prefect 3.9.1, ``_run_uvicorn_command``)."""
    import prefect

    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(prefect.__module_path__.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]


def uvicorn_environment(settings: Any) -> dict[str, str]:
    """The environment Prefect gives that command: this one, with the UI off, the server marked temporary and
    the settings set in this process."""
    server = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
    return {**os.environ, **server, **settings.to_environment_variables(exclude_unset=True)}


def free_port() -> int:
    """A loopback port free now (taken before the server binds it, Prefect's start begins another)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def early_server(port: int, process: subprocess.Popen):
    """Prefect's per-process ``SubprocessASGIServer``, made to begin with ``process`` (on ``port``) rather than a
    process of its own; the existing one when Prefect has made it already."""
    from prefect.server.api.server import SubprocessASGIServer

    class EarlyServer(SubprocessASGIServer):
        def _run_uvicorn_command(self) -> subprocess.Popen:
            early, self._early = self._early, None
            if early is not None and early.poll() is None:
                return early
            return super()._run_uvicorn_command()

    server = EarlyServer()  # registers itself as the instance Prefect's client asks for, unless one exists
    if isinstance(server, EarlyServer) and not server.running:
        server.port, server._early = port, process
    return server


def stop(process: subprocess.Popen) -> None:
    """As Prefect stops its temporary server: terminated, killed after 5 s."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
