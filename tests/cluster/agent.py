"""A Python process on a simulated host that runs the test's functions there, one at a time.

The multi-host tests run in the test process, on this machine's own namespaces; the code under
test must run on the driver host, as a user's driver would. The agent is that driver: it runs on
the host, listens on a Unix socket in the cluster's folder (which every host sees), and for each
request runs ``function(*args, **kwargs)`` on its main thread and sends back the value or the
exception. Functions are sent by reference (module-level functions of the test modules), so the
agent imports the test module as the test process did; the zoo_lite context it starts stays alive
between calls, and one agent serves all the tests of a module.

Run as ``python -m tests.cluster.agent SOCKET`` (the client, :class:`Agent`, starts it).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

__all__ = ["Agent", "Pending", "RemoteFailure", "serve"]

_START_TIMEOUT_S = 60.0
_AUTHKEY_ENV = "ZOO_LITE_AGENT_KEY"


class RemoteFailure(Exception):
    """An exception of the agent's that could not travel back as itself; its traceback is in the message."""


def serve(socket_path: str) -> None:
    """The agent's loop: accept the test process's connection, run what it sends until it closes."""
    key = os.environ.pop(_AUTHKEY_ENV).encode()
    with Listener(socket_path, family="AF_UNIX", authkey=key) as listener:
        print("agent ready", flush=True)
        with listener.accept() as connection:
            while True:
                try:
                    request = connection.recv()
                except EOFError:
                    return
                connection.send(_run(*request))


def _run(function: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> tuple[str, Any, str]:
    try:
        return "ok", function(*args, **kwargs), ""
    except BaseException as error:  # noqa: BLE001 - every failure goes back to the test
        text = traceback.format_exc()
        try:
            import pickle

            pickle.loads(pickle.dumps(error))
            return "error", error, text
        except Exception:  # noqa: BLE001 - an exception that cannot be pickled travels as its text
            return "error", RemoteFailure(f"{type(error).__name__}: {error}"), text


class Agent:
    """The test process's handle on an agent running on ``host`` of ``cluster``."""

    def __init__(self, cluster: Any, host: str, name: str, env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None, python: Optional[str] = None) -> None:
        self.cluster, self.host = cluster, host
        self.socket_path = str(cluster.folder / f"{name}.sock")
        self.log = cluster.logs / f"{name}.log"
        key = secrets.token_hex(16)
        for stale in (Path(self.socket_path), self.log):
            stale.unlink(missing_ok=True)
        self.process = cluster.hosts[host].popen(
            [python or cluster.python(host), "-m", "tests.cluster.agent", self.socket_path],
            env=cluster.environment(host, {**(env or {}), _AUTHKEY_ENV: key}),
            cwd=cwd or str(_ROOT), log=self.log)
        self.connection = self._connect(key.encode())
        self.pending: Optional[Pending] = None

    def _connect(self, key: bytes) -> Connection:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while "agent ready" not in self.log_tail():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError(f"the agent on {self.host} did not start; its output:\n{self.log_tail()}")
            time.sleep(0.05)
        return Client(self.socket_path, family="AF_UNIX", authkey=key)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def call(self, function: Callable[..., Any], *args: Any, timeout_s: float = 300.0, **kwargs: Any) -> Any:
        """``function(*args, **kwargs)`` run on the agent's host; its value, or its exception raised
        here with the agent's traceback attached."""
        return self.submit(function, *args, **kwargs).result(timeout_s)

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> "Pending":
        """Start ``function(*args, **kwargs)`` on the agent's host and return at once (the test
        process can drive another agent meanwhile); one call at a time per agent."""
        if self.pending is not None:   # a call whose result nobody read (its test failed first)
            try:
                self.pending.result()
            except Exception:  # noqa: BLE001 - that test already failed for its own reason
                pass
        self.connection.send((function, args, kwargs))
        self.pending = Pending(self, function.__name__)
        return self.pending

    def close(self, kill: bool = False, timeout_s: float = 60.0) -> None:
        """End the agent: close its connection (it returns from its loop and exits, which stops a
        zoo_lite context it holds at interpreter exit), or kill it."""
        try:
            self.connection.close()
        except OSError:
            pass
        if kill:
            self.process.kill()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout_s)


class Pending:
    """A call sent to an agent, whose result has not been read yet."""

    def __init__(self, agent: Agent, name: str) -> None:
        self.agent, self.name = agent, name

    def result(self, timeout_s: float = 300.0) -> Any:
        """The call's value, or its exception raised here, waiting at most ``timeout_s``."""
        agent = self.agent
        agent.pending = None
        if not agent.connection.poll(timeout_s):
            agent.close(kill=True)
            raise TimeoutError(f"{self.name} did not return within {timeout_s:.0f} s on {agent.host}; "
                               f"the agent was killed. Its output:\n{agent.log_tail()}")
        status, value, text = agent.connection.recv()
        if status == "ok":
            return value
        value.add_note(f"raised on {agent.host}:\n{text}")
        raise value


_ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    # run the imported module's loop, so that the exceptions it sends are tests.cluster.agent's
    from tests.cluster.agent import serve as serve_imported

    serve_imported(sys.argv[1])
