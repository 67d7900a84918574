"""A real `workbench server` process on a loopback port, over a test's PostgreSQL database.

The server is started with ``--port 0`` and says which port it got on its first line; a
restart asks for that port again. Waiting is on the server's own word (the first line, the
health route), bounded by :data:`STARTUP_S`, never a fixed sleep.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.tui.terminal import WORKBENCH

TOKEN = "test-token-0123456789abcdef"
STARTUP_S = 120.0
"""How long a server may take to start or stop on a loaded machine before the test fails."""
_URL = re.compile(r"workbench server on (http://\S+) serving")


def server_config(folder: Path, database: str) -> Path:
    """A config file naming ``database`` as the store."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(f"store: {database}\n", encoding="utf-8")
    return path


def workbench_on(
    url: str, env: dict[str, str], timeout: float
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``workbench --server URL ARGS…`` run here with ``env``, its output captured."""

    def workbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [WORKBENCH, "--server", url, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return workbench


def server_env(home: Path, config: Path, token: str | None = TOKEN) -> dict[str, str]:
    env = {**os.environ, "WORKBENCH_HOME": str(home), "WORKBENCH_CONFIG": str(config)}
    env.pop("WORKBENCH_TOKEN", None)
    if token is not None:
        env["WORKBENCH_TOKEN"] = token
    return env


@dataclass
class ServerProcess:
    """One `workbench server` run; :meth:`restart` stops it and starts it again on its port."""

    home: Path
    config: Path
    env_token: str | None = TOKEN
    """``$WORKBENCH_TOKEN`` of the server (None: unset, and the server makes one)."""
    token: str = ""
    """The token clients send: ``env_token``, or the one the server printed."""
    port: int = 0
    process: subprocess.Popen[str] | None = None
    options: tuple[str, ...] = ()
    """More options of `workbench server`."""
    first_lines: list[str] = field(default_factory=list)
    errors: str = ""
    """What the server wrote on stderr, once stopped."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def start(self) -> None:
        self.process = subprocess.Popen(
            [WORKBENCH, "server", "--port", str(self.port), *self.options],
            env=server_env(self.home, self.config, self.env_token),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the server's first line, or '' when it ended
        match = _URL.search(line)
        assert match, f"workbench server did not start: {line!r} {self._stderr()}"
        self.first_lines = [line.rstrip("\n")]
        self.token = self.env_token or ""
        if self.env_token is None:
            made = self.process.stdout.readline().rstrip("\n")
            self.first_lines.append(made)
            self.token = made.split("): ", 1)[1].split(" ", 1)[0]
        self.port = int(match.group(1).rsplit(":", 1)[1])
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=10.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.process.poll() is None, f"the server ended: {self._stderr()}"
            assert time.monotonic() < deadline, "workbench server never answered"
            time.sleep(0.05)  # the socket listens before the app has started: ask again

    def _stderr(self) -> str:
        if self.process is None or self.process.poll() is None:
            return ""
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the server (SIGTERM: as a supervisor does); its exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=STARTUP_S)
        if self.process.stderr is not None and not self.process.stderr.closed:
            self.errors = self.process.stderr.read()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return code

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def workbench_server(
    folder: Path, database: str, token: str | None = TOKEN, *options: str
) -> Iterator[ServerProcess]:
    """A started server over ``database`` (its workspace and config in ``folder``)."""
    server = ServerProcess(
        folder / "server-home",
        server_config(folder / "server-config", database),
        token,
        options=options,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
