"""A Spark standalone cluster on the loopback interface: one master and N workers, started from
the pip package's JVM classes and stopped with every process they started.

``init_orca_context(cluster_mode="standalone")`` without a ``master`` starts one; it is how a
laptop runs the same code path as a real standalone cluster.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from zoo_lite.errors import ClusterStartError
from zoo_lite.waiting import announced_wait

__all__ = ["LoopbackStandaloneCluster", "spark_home"]

_LOOPBACK = "127.0.0.1"
_LOG_TAIL_LINES = 30


def spark_home() -> str:
    """The Spark installation that pyspark uses (SPARK_HOME, or the pip package's own folder)."""
    from pyspark.find_spark_home import _find_spark_home

    return _find_spark_home()


#: the master's log lines that say which ports it bound (it is started on port 0 for both)
_MASTER_PORT_LINE = re.compile(r"Starting Spark master at spark://[^\s:]+:(\d+)")
_WEBUI_PORT_LINE = re.compile(r"Bound MasterWebUI to \S+ and started at https?://[^\s:]+:(\d+)")


def _end_daemons(daemons: list[_Daemon], timeout_s: float) -> None:
    """Wait ``timeout_s`` in all for the (terminated) daemons to end; SIGKILL the rest and wait for
    them 5 s more in all, without raising: the caller cleans up after them either way."""
    deadline = time.monotonic() + timeout_s
    for daemon in reversed(daemons):
        with contextlib.suppress(subprocess.TimeoutExpired):
            daemon.process.wait(timeout=max(0.0, deadline - time.monotonic()))
    killed_deadline = time.monotonic() + 5.0
    for daemon in daemons:
        if daemon.process.poll() is None:
            daemon.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.process.wait(timeout=max(0.0, killed_deadline - time.monotonic()))


def master_ports(log_text: str) -> Optional[tuple[int, int]]:
    """The RPC and web UI ports a master started with port 0 bound, from its log; None until it
    has logged both.

    Examples
    --------
    >>> started = "INFO Master: Starting Spark master at spark://127.0.0.1:54659"
    >>> bound = "INFO MasterWebUI: Bound MasterWebUI to 127.0.0.1, and started at http://localhost:34291"
    >>> master_ports(started) is None, master_ports(started + "\\n" + bound)
    (True, (54659, 34291))
    """
    master, webui = _MASTER_PORT_LINE.search(log_text), _WEBUI_PORT_LINE.search(log_text.replace(",", ""))
    return (int(master.group(1)), int(webui.group(1))) if master and webui else None


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the starting process dies, even by SIGKILL.

    Linux sends this signal when the *thread* that started the child ends, so every daemon is
    started from :data:`_SPAWNER`'s thread, which lives as long as the process."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


#: the one thread that starts daemons (see :func:`_die_with_parent`): a cluster started from a
#: short-lived thread, such as a web server's request thread, would otherwise die with that thread
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zoo_lite-standalone-spawner")


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


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
        cluster = cls("", "", work_dir)
        deadline = time.monotonic() + timeout_s
        with announced_wait(f"the loopback Spark standalone master and its {num_workers} worker(s) to start", timeout_s):
            try:
                # port 0: the master binds ports of its own, so parallel starts never race for one
                master = cluster._launch(
                    "master", "org.apache.spark.deploy.master.Master", ["--host", _LOOPBACK, "--port", "0", "--webui-port", "0"],
                )
                cluster._wait_for(master, lambda: master_ports(_log_text(master.log_path)), deadline, "did not start")
                master_port, webui_port = master_ports(_log_text(master.log_path)) or (0, 0)
                cluster.master_url, cluster.webui_url = f"spark://{_LOOPBACK}:{master_port}", f"http://{_LOOPBACK}:{webui_port}"
                cluster._wait_for(master, lambda: cluster._alive_workers() is not None, deadline, "did not serve its status page")
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
            process = _SPAWNER.submit(
                subprocess.Popen, [launcher, main_class, *args], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent,
            ).result()
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
        """Stop workers, then the master, then anything they left (executors); remove the work dir.
        The daemons get ``timeout_s`` in all to end after SIGTERM; those still running then are
        SIGKILLed and waited for 5 s more in all."""
        import psutil

        leftovers: list[psutil.Process] = []
        for daemon in reversed(self.daemons):
            try:
                leftovers.extend(psutil.Process(daemon.process.pid).children(recursive=True))
            except psutil.Error:
                pass
            if daemon.process.poll() is None:
                daemon.process.terminate()
        with announced_wait(f"the loopback Spark standalone cluster's {len(self.daemons)} daemon(s) to stop", timeout_s + 5):
            _end_daemons(self.daemons, timeout_s)
        _, alive = psutil.wait_procs(leftovers, timeout=5)
        for process in alive:
            process.kill()
        self.daemons.clear()
        shutil.rmtree(self.work_dir, ignore_errors=True)
