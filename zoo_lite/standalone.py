"""A Spark standalone cluster on the loopback interface: one master and N workers, started from
the pip package's JVM classes and stopped with every process they started.

``init_orca_context(cluster_mode="standalone")`` without a ``master`` starts one; it is how a
laptop runs the same code path as a real standalone cluster.
"""

from __future__ import annotations

import ctypes
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from zoo_lite.errors import ClusterStartError

__all__ = ["LoopbackStandaloneCluster", "spark_home"]

_LOOPBACK = "127.0.0.1"
_LOG_TAIL_LINES = 30


def spark_home() -> str:
    """The Spark installation that pyspark uses (SPARK_HOME, or the pip package's own folder)."""
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the starting process dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log written)"


@dataclass
class _Daemon:
    name: str
    process: subprocess.Popen
    log_path: Path

    def failure(self, what: str) -> ClusterStartError:
        return ClusterStartError(
            f"standalone Spark {self.name} {what}; last lines of {self.log_path}:\n{_log_tail(self.log_path)}"
        )


@dataclass
class LoopbackStandaloneCluster:
    """A master and ``num_workers`` workers on 127.0.0.1, owned by this process.

    Examples
    --------
    >>> cluster = LoopbackStandaloneCluster.start(num_workers=1, cores=1, memory_mb=512)
    >>> cluster.master_url.startswith("spark://127.0.0.1:")
    True
    >>> cluster.stop()
    """

    master_url: str
    webui_url: str
    work_dir: Path
    daemons: list[_Daemon] = field(default_factory=list)

    @classmethod
    def start(cls, num_workers: int, cores: int, memory_mb: int, timeout_s: float = 120.0) -> "LoopbackStandaloneCluster":
        """Start the master, then the workers, and wait until every worker has registered.

        Raises
        ------
        ClusterStartError
            A daemon exited or did not register within ``timeout_s``; every process already
            started is stopped, and the message holds the tail of the failing daemon's log.
        """
        work_dir = Path(tempfile.mkdtemp(prefix="zoo_lite-standalone-"))
        master_port, webui_port = _free_port(), _free_port()
        cluster = cls(f"spark://{_LOOPBACK}:{master_port}", f"http://{_LOOPBACK}:{webui_port}", work_dir)
        deadline = time.monotonic() + timeout_s
        try:
            master = cluster._launch(
                "master",
                "org.apache.spark.deploy.master.Master",
                ["--host", _LOOPBACK, "--port", str(master_port), "--webui-port", str(webui_port)],
            )
            cluster._wait_for(master, lambda: cluster._alive_workers() is not None, deadline, "did not start")
            for index in range(num_workers):
                worker_dir = work_dir / f"worker-{index}"
                worker_dir.mkdir()
                cluster._launch(
                    f"worker-{index}",
                    "org.apache.spark.deploy.worker.Worker",
                    ["--host", _LOOPBACK, "--cores", str(cores), "--memory", f"{memory_mb}m",
                     "--webui-port", "0", "--work-dir", str(worker_dir), cluster.master_url],
                )
            cluster._wait_for(
                master, lambda: (cluster._alive_workers() or 0) >= num_workers, deadline,
                f"did not see {num_workers} worker(s) register within {timeout_s:.0f} s",
            )
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _launch(self, name: str, main_class: str, args: list[str]) -> _Daemon:
        log_path = self.work_dir / f"{name}.log"
        env = dict(os.environ, SPARK_LOCAL_IP=_LOOPBACK, SPARK_LOG_DIR=str(self.work_dir),
                   SPARK_PID_DIR=str(self.work_dir), SPARK_WORKER_DIR=str(self.work_dir))
        env.pop("SPARK_MASTER_HOST", None)
        launcher = str(Path(spark_home()) / "bin" / "spark-class")
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [launcher, main_class, *args], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent,
            )
        daemon = _Daemon(name, process, log_path)
        self.daemons.append(daemon)
        return daemon

    def _alive_workers(self) -> Optional[int]:
        """Alive workers the master reports, or None while the master's status page is not up."""
        try:
            with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=2) as response:
                return int(json.load(response).get("aliveworkers", 0))
        except (OSError, ValueError):
            return None

    def _wait_for(self, master: _Daemon, ready, deadline: float, what: str) -> None:
        while not ready():
            for daemon in self.daemons:
                if daemon.process.poll() is not None:
                    raise daemon.failure(f"exited with code {daemon.process.returncode}")
            if time.monotonic() > deadline:
                raise master.failure(what)
            time.sleep(0.2)

    @property
    def pids(self) -> list[int]:
        """Process ids of the daemons (JVMs) this cluster started."""
        return [daemon.process.pid for daemon in self.daemons]

    def stop(self, timeout_s: float = 20.0) -> None:
        """Stop workers, then the master, then anything they left (executors); remove the work dir."""
        import psutil

        leftovers: list[psutil.Process] = []
        for daemon in reversed(self.daemons):
            try:
                leftovers.extend(psutil.Process(daemon.process.pid).children(recursive=True))
            except psutil.Error:
                pass
            if daemon.process.poll() is None:
                daemon.process.terminate()
        for daemon in reversed(self.daemons):
            try:
                daemon.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                daemon.process.kill()
                daemon.process.wait(timeout=timeout_s)
        _, alive = psutil.wait_procs(leftovers, timeout=5)
        for process in alive:
            process.kill()
        self.daemons.clear()
        shutil.rmtree(self.work_dir, ignore_errors=True)
