"""A Spark Connect server from the pinned pyspark's own distribution, on loopback, for the tests.

It is the server a user starts for trying (``$SPARK_HOME/sbin/start-connect-server.sh``), run in
the foreground in a process group of its own, so that stopping it ends its JVM and every process
that JVM started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from zoo_lite.learn.base.ports import free_port

_START_TIMEOUT_S = 120.0
_STOP_TIMEOUT_S = 30.0


@dataclass
class ConnectServer:
    """A running Connect server: its URL, its Spark UI (for the count of jobs it ran), its log."""

    process: "subprocess.Popen[bytes]"
    port: int
    ui_port: int
    log_dir: Path

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, master: str = "local[2]") -> "ConnectServer":
        """Start a server on ``master`` and wait (bounded) until it listens."""
        spark_home = Path(pyspark.__file__).parent
        log_dir = Path(tempfile.mkdtemp(prefix="zoo_lite-connect-server-"))
        port, ui_port = free_port("127.0.0.1"), free_port("127.0.0.1")
        env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOG_DIR=str(log_dir), SPARK_PID_DIR=str(log_dir),
                   SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
        env.pop("SPARK_REMOTE", None)
        command = [str(spark_home / "sbin" / "start-connect-server.sh"), "--wait", "--master", master,
                   "--conf", f"spark.connect.grpc.binding.port={port}",
                   "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                   "--conf", f"spark.ui.port={ui_port}", "--conf", "spark.ui.enabled=true"]
        with open(log_dir / "server.out", "wb") as out:
            process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        server = cls(process, port, ui_port, log_dir)
        try:
            server._wait_until_listening()
        except BaseException:
            server.stop()
            raise
        return server

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Connect server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"the Connect server did not listen on {self.port} within {_START_TIMEOUT_S:.0f} s:\n"
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        text = (self.log_dir / "server.out").read_text(errors="replace") if (self.log_dir / "server.out").exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def jobs_run(self) -> int:
        """How many Spark jobs the server's application has run (its UI's REST API)."""
        base = f"http://127.0.0.1:{self.ui_port}/api/v1/applications"
        with urllib.request.urlopen(base, timeout=10) as answer:
            application = json.load(answer)[0]["id"]
        with urllib.request.urlopen(f"{base}/{application}/jobs", timeout=10) as answer:
            return len(json.load(answer))

    def stop(self) -> None:
        """End the server's process group (TERM, then KILL after a bound)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(_STOP_TIMEOUT_S)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)   # anything the JVM started that outlived it
        except ProcessLookupError:
            pass
        shutil.rmtree(self.log_dir, ignore_errors=True)
