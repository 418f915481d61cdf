"""A simulated Spark standalone cluster of several hosts on this machine.

One driver host runs the Spark master (and, later, the driver process); each worker host runs one
Spark worker. Every host is a set of namespaces (:mod:`tests.cluster.namespaces`): its own
address, host name, ``/tmp``, ``/dev/shm`` and ``/etc/hosts``. The cluster's state (hosts, PIDs,
master URL) is kept in ``state.json`` in the cluster's folder, which every host sees at the same
path, with ``logs/`` (each daemon's output) and ``shared/`` (a folder standing for NFS or HDFS).

Built by the pytest session fixture of ``tests/cluster/conftest.py``, or by hand with
``scripts/test-cluster.sh up|run|down``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

from tests.cluster import bare as bare_hosts
from tests.cluster.namespaces import (Host, HostSpec, end_host, end_processes, hosts_file, kept_below_tmp, make_bridge,
                                      namespaces_with_prefix, pids_in_namespace, remove_namespace, set_link, start_host)
from tests.jvm_settings import suite_jvm_environment

__all__ = ["SimulatedCluster", "ROOT", "VENV_PYTHON", "NAMESPACE_PREFIX", "remove_stale_clusters"]

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = sys.executable
#: every namespace of a simulated cluster starts with this, then the PID of the process that made it
NAMESPACE_PREFIX = "zlc"
_SUBNET = "10.213.0"
_PREFIX_LEN = 24
_DRIVER_OCTET = 10
MASTER_PORT = 7077
_START_TIMEOUT_S = 90.0
_LOG_TAIL_LINES = 40
#: the environment variables a host's processes must not take over from the test process
_NOT_INHERITED = ("SPARK_", "PYSPARK_", "RAY_", "TMPDIR", "VIRTUAL_ENV", "PYTEST_", "PYTHONPATH")


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_stale_clusters() -> list[str]:
    """Delete the namespaces (and end the processes) of simulated clusters whose maker is gone (a
    test run killed with SIGKILL); returns the namespaces removed."""
    removed = []
    for netns in namespaces_with_prefix(NAMESPACE_PREFIX):
        match = re.match(rf"{NAMESPACE_PREFIX}(\d+)-", netns)
        if match and not _pid_alive(int(match.group(1))):
            remove_namespace(netns)
            removed.append(netns)
    return removed


@dataclass
class Daemon:
    """A process started on a host for the cluster (a Spark master or worker)."""

    host: str
    role: str
    pid: int
    log: str


@dataclass
class SimulatedCluster:
    """Hosts, the Spark standalone daemons on them, and where their files are; see the module docstring.

    Examples
    --------
    Needs root (see :func:`tests.cluster.namespaces.why_unavailable`)::

        cluster = SimulatedCluster.up(Path("/var/tmp/c"), worker_hosts=2)
        print(cluster.run("host1", ["hostname"]).stdout)   # host1
        cluster.down()
    """

    folder: Path
    namespace_prefix: str
    hosts_style: str
    hosts: dict[str, Host] = field(default_factory=dict)
    bridge_netns: str = ""
    master_url: str = ""
    daemons: list[Daemon] = field(default_factory=list)
    cores_per_worker: int = 1
    worker_memory: str = "2g"
    #: the worker hosts are bare (:mod:`tests.cluster.bare`): Java, a Spark of their own and the
    #: system's Python, without the checkout or its environment; the driver runs a venv of that Python
    bare: bool = False

    # -- layout ----------------------------------------------------------------------------------

    @property
    def driver(self) -> Host:
        return self.hosts["driver"]

    @property
    def workers(self) -> list[Host]:
        return [host for name, host in self.hosts.items() if name != "driver"]

    @property
    def shared(self) -> Path:
        """A folder every host sees at this same path (it stands for NFS or HDFS)."""
        return self.folder / "shared"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def is_bare(self, host: str) -> bool:
        """Whether ``host`` is a bare worker host (see :attr:`bare`)."""
        return self.bare and host != "driver"

    def python(self, host: str) -> str:
        """The Python that ``host`` runs: this one, or on a bare cluster the system's (worker hosts)
        and a venv of it holding this environment's packages (the driver host)."""
        if not self.bare:
            return VENV_PYTHON
        if self.is_bare(host):
            return bare_hosts.SYSTEM_PYTHON
        return str(bare_hosts.driver_environment() / "bin" / "python")

    def spark_home(self, host: str) -> str:
        """The Spark installation that ``host``'s daemons run: pyspark's, or a bare host's own."""
        from zoo_lite.standalone import spark_home

        return str(bare_hosts.spark_installation()) if self.is_bare(host) else spark_home()

    def environment(self, host: str, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """The environment of a process started on ``host``: this one's, less what belongs to this
        process's own Spark and Ray but the suite's JVM settings, with ``SPARK_LOCAL_IP`` set to
        the host's address (as a cluster's ``spark-env.sh`` sets it). A bare host's ``PATH`` names
        nothing it cannot see, and its Spark reads its own ``conf/``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_NOT_INHERITED)}
        env.update(suite_jvm_environment())
        env.update(SPARK_LOCAL_IP=self.hosts[host].address, PYSPARK_PYTHON=self.python(host))
        if self.is_bare(host):
            hidden = bare_hosts.hidden_on_bare_hosts()
            env["PATH"] = os.pathsep.join(entry for entry in env.get("PATH", "").split(os.pathsep)
                                          if not any(entry == h or entry.startswith(h + "/") for h in hidden))
            env.update(SPARK_HOME=self.spark_home(host), SPARK_CONF_DIR=str(Path(self.spark_home(host)) / "conf"))
        env.update(extra or {})
        return env

    # -- life --------------------------------------------------------------------------------------

    @classmethod
    def up(cls, folder: Path, worker_hosts: int = 2, hosts_style: str = "cluster", cores_per_worker: int = 1,
           worker_memory: str = "2g", owned: bool = True, bare: bool = False) -> "SimulatedCluster":
        """Make the hosts and start the Spark master and workers; on any failure, end what started.
        With ``bare``, the worker hosts are bare (see :attr:`SimulatedCluster.bare`).

        An ``owned`` cluster's namespaces carry this process's PID, so that a later run removes
        them once this process is gone (a test session killed before its teardown); one made by
        hand (``owned=False``) stays until ``down``."""
        remove_stale_clusters()
        folder.mkdir(parents=True, exist_ok=True)
        for sub in ("logs", "shared", "etc"):
            (folder / sub).mkdir(exist_ok=True)
        owner = os.getpid() if owned else "m"
        prefix = f"{NAMESPACE_PREFIX}{owner}-{folder.name[-6:]}-"
        cluster = cls(folder, prefix, hosts_style, cores_per_worker=cores_per_worker, worker_memory=worker_memory,
                      bare=bare)
        try:
            cluster.save()   # first, so that a reaper finds the namespaces' prefix whatever happens next
            cluster._make_hosts(worker_hosts)
            cluster.save()
            cluster._start_spark()
            cluster.save()
        except BaseException:
            cluster.down()
            raise
        return cluster

    def _make_hosts(self, worker_hosts: int) -> None:
        names = ["driver", *(f"host{i}" for i in range(1, worker_hosts + 1))]
        specs = [HostSpec(f"{self.namespace_prefix}{name}", name, f"{_SUBNET}.{_DRIVER_OCTET + i}", _PREFIX_LEN,
                          str(self.folder / "etc" / f"hosts.{name}")) for i, name in enumerate(names)]
        for spec in specs:
            Path(spec.hosts_file).write_text(hosts_file(self.hosts_style, spec, specs))
        self.bridge_netns = f"{self.namespace_prefix}net"
        make_bridge(self.bridge_netns)
        # the software every host runs: the checkout, its venv and the interpreter it links to
        kept = kept_below_tmp([str(ROOT), sys.prefix, sys.base_prefix])
        for spec in specs:
            bare_host = self.is_bare(spec.hostname)
            self.hosts[spec.hostname] = start_host(spec, self.bridge_netns, str(self.folder / "anchors" / spec.hostname),
                                                   () if bare_host else kept,
                                                   bare_hosts.hidden_on_bare_hosts() if bare_host else ())

    def _spark_class(self, host: str, role: str, main_class: str, args: Sequence[str]) -> Daemon:
        log = self.logs / f"{host}-{role}.log"
        env = self.environment(host, {"SPARK_LOG_DIR": str(self.logs), "SPARK_NO_DAEMONIZE": "1"})
        process = self.hosts[host].popen([str(Path(self.spark_home(host)) / "bin" / "spark-class"), main_class, *args],
                                         env=env, log=log, start_new_session=True, cwd="/")
        daemon = Daemon(host, role, process.pid, str(log))
        self.daemons.append(daemon)
        return daemon

    def _start_spark(self) -> None:
        driver = self.driver
        self.master_url = f"spark://{driver.address}:{MASTER_PORT}"
        master = self._spark_class("driver", "master", "org.apache.spark.deploy.master.Master",
                                   ["--host", driver.address, "--port", str(MASTER_PORT), "--webui-port", "8080"])
        for host in self.workers:
            self._spark_class(host.name, "worker", "org.apache.spark.deploy.worker.Worker",
                              ["--host", host.address, "--cores", str(self.cores_per_worker), "--memory", self.worker_memory,
                               "--webui-port", "8081", "--work-dir", self.work_dir(host.name), self.master_url])
        self._wait_for_workers(master, len(self.workers))

    def _wait_for_workers(self, master: Daemon, count: int) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            registered = len(re.findall(r"Registering worker", _tail(Path(master.log), 10_000)))
            if registered >= count:
                return
            dead = [d for d in self.daemons if not _pid_alive(d.pid) or _zombie(d.pid)]
            if dead or time.monotonic() > deadline:
                culprit = dead[0] if dead else master
                raise RuntimeError(
                    f"the simulated cluster's Spark {culprit.role} on {culprit.host} "
                    f"{'exited' if dead else f'saw {registered} of {count} workers within {_START_TIMEOUT_S:.0f} s'}; "
                    f"its log {culprit.log}:\n{_tail(Path(culprit.log))}")
            time.sleep(0.2)

    def work_dir(self, host: str) -> str:
        """Where ``host``'s Spark worker puts its applications' folders (fetched files, unpacked
        archives): its own ``/tmp``, or on a bare host a folder on disk (an unpacked environment
        in memory, per host, would crowd this machine)."""
        return str(self.folder / "work" / host) if self.is_bare(host) else "/tmp/spark-work"

    def down(self) -> list[str]:
        """Stop the Spark daemons, end every process on every host (by PID), delete the namespaces.
        Returns what had to be killed beyond the daemons (``host: command``), for the caller to report."""
        left: list[str] = []
        for daemon in reversed(self.daemons):
            end_processes([daemon.pid])
        for name, host in self.hosts.items():
            for pid in pids_in_namespace(host.spec.netns):
                if pid != host.holder_pid:
                    left.append(f"{name}: {_command_line(pid)}")
            end_host(host)
        if self.bridge_netns:
            remove_namespace(self.bridge_netns)
        for netns in namespaces_with_prefix(self.namespace_prefix):   # one made before its host was recorded
            remove_namespace(netns)
        return left

    def set_hosts_style(self, style: str) -> None:
        """Rewrite every host's ``/etc/hosts`` in ``style`` (see :func:`hosts_file`), in place: the
        hosts see it at once, as after an administrator's edit."""
        specs = [host.spec for host in self.hosts.values()]
        for spec in specs:
            with open(spec.hosts_file, "w") as file:   # the same file: it stays bind-mounted
                file.write(hosts_file(style, spec, specs))

    @contextlib.contextmanager
    def link_cut(self, host: str) -> Iterator[None]:
        """``host`` cut off from the others (its link down) for the block; up again after it, also
        on failure."""
        set_link(self.bridge_netns, host, up=False)
        try:
            yield
        finally:
            set_link(self.bridge_netns, host, up=True)

    # -- running things on hosts ---------------------------------------------------------------------

    def run(self, host: str, argv: Sequence[str], env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
            timeout_s: float = 300.0) -> subprocess.CompletedProcess:
        """Run ``argv`` on ``host`` to its end, with the host's environment (plus ``env``)."""
        where = cwd or ("/" if self.is_bare(host) else str(ROOT))
        return self.hosts[host].run(argv, self.environment(host, env), where, timeout_s)

    def processes(self, host: str) -> list[str]:
        """``pid command`` of every process on ``host`` but its holder and the Spark daemons."""
        known = {self.hosts[host].holder_pid, *(d.pid for d in self.daemons if d.host == host)}
        return [f"{pid} {_command_line(pid)}" for pid in pids_in_namespace(self.hosts[host].spec.netns) if pid not in known
                and not _is_daemon_child(pid, known)]

    def leftovers(self, host: str, allowed_processes: Sequence[int] = ()) -> list[str]:
        """What zoo_lite, Spark's applications or Ray left on ``host``: processes (but the Spark
        daemons and ``allowed_processes`` with their children), socket files below ``/tmp``, files in
        ``/dev/shm``, Ray nodes' temp folders, callbacks' staging folders and TensorFlow's
        autograph files."""
        allowed = set(allowed_processes)
        found = [f"process {line}" for line in self.processes(host)
                 if int(line.split()[0]) not in allowed and _parent(int(line.split()[0])) not in allowed]
        tmp = self.hosts[host].path("/tmp")
        found += [f"socket file {path}" for path in _sockets_below(tmp)]
        found += [f"/dev/shm/{name}" for name in self.files(host, "/dev/shm")]
        found += [f"Ray temp folder /tmp/{name}" for name in self.files(host, "/tmp", "zl-ray-*")]
        found += [f"callback staging folder /tmp/{name}" for name in self.files(host, "/tmp", "zoo_lite-relay-*")]
        found += [f"autograph file /tmp/{name}" for name in self.files(host, "/tmp", "__autograph_generated_file*")]
        return found

    def leftovers_after(self, host: str, allowed_processes: Sequence[int] = (), timeout_s: float = 60.0) -> list[str]:
        """:meth:`leftovers` once they are gone, or when ``timeout_s`` has passed (the Spark workers
        end an ended application's executors, and their processes, in their own time)."""
        deadline = time.monotonic() + timeout_s
        while (left := self.leftovers(host, allowed_processes)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return left

    def files(self, host: str, folder: str, pattern: str = "*") -> list[str]:
        """The entries of ``folder`` on ``host`` (its own ``/tmp`` or ``/dev/shm``) that match ``pattern``."""
        seen = self.hosts[host].path(folder)
        return sorted(path.name for path in seen.glob(pattern)) if seen.is_dir() else []

    # -- state ---------------------------------------------------------------------------------------

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"

    def save(self) -> None:
        state = {"folder": str(self.folder), "namespace_prefix": self.namespace_prefix, "hosts_style": self.hosts_style,
                 "bridge_netns": self.bridge_netns, "master_url": self.master_url,
                 "cores_per_worker": self.cores_per_worker, "worker_memory": self.worker_memory, "bare": self.bare,
                 "hosts": {name: host.to_dict() for name, host in self.hosts.items()},
                 "daemons": [vars(daemon) for daemon in self.daemons]}
        self.state_file.write_text(json.dumps(state, indent=1))

    @classmethod
    def load(cls, folder: Path) -> "SimulatedCluster":
        state = json.loads((folder / "state.json").read_text())
        return cls(Path(state["folder"]), state["namespace_prefix"], state["hosts_style"],
                   {name: Host.from_dict(host) for name, host in state["hosts"].items()}, state["bridge_netns"],
                   state["master_url"], [Daemon(**daemon) for daemon in state["daemons"]], state["cores_per_worker"],
                   state["worker_memory"], state.get("bare", False))


def _sockets_below(folder: Path) -> list[str]:
    import stat

    found = []
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                if stat.S_ISSOCK(os.lstat(os.path.join(root, name)).st_mode):
                    found.append(os.path.join(root, name)[len(str(folder)):] or name)
            except OSError:
                continue
    return ["/tmp" + path for path in found]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except OSError:
        return True


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _is_daemon_child(pid: int, daemons: set[int]) -> bool:
    """Whether ``pid`` is what a daemon's launcher runs (``spark-class`` execs into a JVM through
    ``bash``: the JVM is the launcher's child)."""
    return _parent(pid) in daemons and "java" in _command_line(pid) and "deploy" in _command_line(pid)
