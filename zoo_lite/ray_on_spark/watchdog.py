"""The watchdog that runs beside each Ray node started on a Spark executor.

It is started (in its own session, so Spark's clean-up of Python workers does not take it along)
by the barrier task that launches the node. It then:

1. connects to the driver's lease server and says hello; without that connection no Ray starts;
2. starts ``ray start --block`` as its child, and becomes a child subreaper so that every Ray
   process the node spawns stays its descendant even when its parent exits;
3. sends the driver a heartbeat byte every second, by which the driver tells a host that is cut
   off or stalled (it closes nothing) from a live one; while the executor JVM is stopped (SIGSTOP,
   a frozen container) the byte says so, and the driver gives the node and its executor up after
   the same timeout: Spark could run nothing there, and its own timeout is minutes;
4. ends the whole process tree when any of these happens: the driver asks it to stop, the
   driver's connection drops or is refused (the driver died, or gave this node up as silent and
   closed it), the executor JVM it belongs to exits, or ``ray start`` exits on its own.

The driver sends no heartbeats of its own: user code on the driver may hold the GIL for minutes
(a large pandas step), and that must not end the cluster. A driver that is gone for good is
found by its closed connection, or by the reset that answers the next heartbeat.

It imports only the standard library and psutil, so it starts in a fraction of a second.
Run as ``python -m zoo_lite.ray_on_spark.watchdog SPEC_JSON_FILE``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import BinaryIO, Optional

__all__ = ["WatchdogSpec", "STOP", "STOPPED", "HEARTBEAT", "EXECUTOR_STOPPED", "HEARTBEAT_INTERVAL_S", "RAY_LOGS_MARKER", "ray_process_log_tails", "remove_empty_folders",
           "run_watchdog"]

STOP = b"stop\n"
STOPPED = b"stopped\n"
#: the byte a watchdog sends the driver every :data:`HEARTBEAT_INTERVAL_S`; a node that sends
#: nothing for the driver's ``heartbeat_timeout_s`` counts as lost (a cut link sends no close)
HEARTBEAT = b"."
#: sent instead of :data:`HEARTBEAT` while the executor JVM is stopped: the watchdog lives, the
#: executor does not run, and the driver counts that as silence (of the executor alone)
EXECUTOR_STOPPED = b"s"
HEARTBEAT_INTERVAL_S = 1.0
#: the line after which a failed node's log holds the tails of Ray's own process logs
RAY_LOGS_MARKER = "zoo_lite watchdog: the last lines of the node's Ray process logs"
#: Ray's process logs worth keeping when a node ends other than by a stop (the session dir goes)
_RAY_PROCESS_LOGS = ("gcs_server.err", "gcs_server.out", "raylet.err", "raylet.out")
_RAY_LOG_TAIL_LINES = 12
_RAY_LOG_LINE_CHARS = 400
_POLL_S = 0.25
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class WatchdogSpec:
    """Everything one watchdog needs; written as JSON by the launching task."""

    command: list[str]
    env: dict[str, str]
    log_path: str
    temp_dir: str
    node_name: str
    lease_host: str
    lease_port: int
    lease_secret: str
    executor_pid: int
    executor_create_time: float
    kill_deadline_s: float = 15.0
    connect_timeout_s: float = 30.0
    #: how long the driver's host may leave the heartbeats unacknowledged (a cut link) before the
    #: node ends itself: the driver counts the node as lost after the same time (heartbeat_timeout_s)
    driver_silence_timeout_s: float = 30.0
    extra: dict[str, str] = field(default_factory=dict)
    #: folders removed at a clean stop if they are empty then: the nodes' log folder, and those
    #: the node's processes may leave empty in the temp dir (absent when it was launched)
    remove_if_empty: list[str] = field(default_factory=list)

    def dump(self, path: str) -> None:
        with open(path, "w") as handle:
            json.dump(asdict(self), handle)

    @classmethod
    def load(cls, path: str) -> "WatchdogSpec":
        with open(path) as handle:
            return cls(**json.load(handle))


def _prctl(option: int, value: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(option, value)


def _die_with_watchdog() -> None:
    """In ``ray start`` before exec: SIGTERM it if the watchdog itself is killed."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _process_alive(pid: int, create_time: float) -> bool:
    import psutil

    try:
        process = psutil.Process(pid)
        return abs(process.create_time() - create_time) < 1.0 and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _process_stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, a debugger, a frozen container): alive, running nothing."""
    import psutil

    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def _connect(spec: WatchdogSpec) -> socket.socket:
    lease = socket.create_connection((spec.lease_host, spec.lease_port), timeout=spec.connect_timeout_s)
    # a cut link closes nothing: the kernel gives the connection up once the heartbeats sent
    # go unacknowledged this long, and the watchdog ends its node (a stalled driver process
    # still has its kernel acknowledge them, and loses no node for it)
    lease.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, int(spec.driver_silence_timeout_s * 1000))
    hello = {"secret": spec.lease_secret, "node_name": spec.node_name, "pid": os.getpid()}
    lease.sendall(json.dumps(hello).encode() + b"\n")
    lease.settimeout(None)
    return lease


def _wait_for_reason(ray: subprocess.Popen, lease: socket.socket, spec: WatchdogSpec) -> str:
    """Block until the node must end, sending heartbeats meanwhile; return why."""
    received = b""
    last_sent = time.monotonic()
    while True:
        readable, _, _ = select.select([lease], [], [], _POLL_S)
        now = time.monotonic()
        if readable:
            try:
                chunk = lease.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                return "the driver's connection closed"
            if STOP in received + chunk:
                return "stop"
            received = (received + chunk)[-len(STOP):]   # a STOP split over two reads
        if now - last_sent >= HEARTBEAT_INTERVAL_S:
            last_sent = now
            beat = EXECUTOR_STOPPED if _process_stopped(spec.executor_pid) else HEARTBEAT
            try:
                lease.send(beat, socket.MSG_DONTWAIT)
            except BlockingIOError:
                pass   # the driver has not read for a long while; the connection decides
            except OSError:
                return "the driver's connection broke"
        if ray.poll() is not None:
            return f"ray start exited with code {ray.returncode}"
        if not _process_alive(spec.executor_pid, spec.executor_create_time):
            return f"the executor process {spec.executor_pid} exited"


def _end_process_tree(deadline_s: float) -> None:
    """SIGKILL every descendant until none is left; as a subreaper this also reaches processes
    whose parents already exited. Ray keeps no state worth a graceful stop here (the session dir
    is removed next), and a graceful ``ray stop`` takes seconds per node."""
    import psutil

    me = psutil.Process()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:  # bounded: a process stuck in D state cannot be helped
        descendants = me.children(recursive=True)
        if not descendants:
            return
        for process in descendants:
            try:
                process.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(descendants, timeout=0.5)


def ray_process_log_tails(temp_dir: str) -> str:
    """The last lines of the GCS' and the raylet's logs in a node's temp dir ("" when it has none).

    ``ray start`` itself only says that a node "timed out during startup"; why (a port taken, a
    full object store, a crashed raylet) is in these logs, which go with the node's temp dir.

    Examples
    --------
    >>> import os, tempfile
    >>> temp_dir = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(temp_dir, "session_latest", "logs"))
    >>> with open(os.path.join(temp_dir, "session_latest", "logs", "raylet.err"), "w") as log:
    ...     _ = log.write("Check failed: plasma store\\n")
    >>> print(ray_process_log_tails(temp_dir))
    --- raylet.err
    Check failed: plasma store
    """
    logs_dir = os.path.join(temp_dir, "session_latest", "logs")
    sections = []
    for name in _RAY_PROCESS_LOGS:
        try:
            with open(os.path.join(logs_dir, name), errors="replace") as handle:
                lines = handle.read().splitlines()[-_RAY_LOG_TAIL_LINES:]
        except OSError:
            continue
        if lines:
            sections.append("\n".join([f"--- {name}", *(line[:_RAY_LOG_LINE_CHARS] for line in lines)]))
    return "\n".join(sections)


def _keep_ray_process_logs(log: BinaryIO, temp_dir: str) -> None:
    tails = ray_process_log_tails(temp_dir)
    if tails:
        log.write(f"{RAY_LOGS_MARKER}\n{tails}\n".encode())


def remove_empty_folders(folders: list[str]) -> None:
    """Remove each of ``folders`` that is empty; one that holds anything (another node's log, a
    cache a library wrote) stays, and so does one another process removed or filled first.

    Examples
    --------
    >>> import os, tempfile
    >>> empty, full = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> open(os.path.join(full, "kept.log"), "w").close()
    >>> remove_empty_folders([empty, full, empty])
    >>> os.path.exists(empty), os.path.exists(full)
    (False, True)
    """
    for folder in folders:
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def run_watchdog(spec: WatchdogSpec) -> int:
    """Run one node's watchdog until the node must end; return the exit code."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open(spec.log_path, "ab", buffering=0) as log:
        try:
            lease = _connect(spec)
        except OSError as error:
            log.write(f"zoo_lite watchdog: cannot reach the driver at {spec.lease_host}:{spec.lease_port}: {error}\n".encode())
            return 2
        reason = "starting"
        try:
            ray = subprocess.Popen(
                spec.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **spec.env}, preexec_fn=_die_with_watchdog,
            )
            reason = _wait_for_reason(ray, lease, spec)
        finally:
            log.write(f"\nzoo_lite watchdog: ending the node ({reason})\n".encode())
            _end_process_tree(spec.kill_deadline_s)
            if reason != "stop":
                _keep_ray_process_logs(log, spec.temp_dir)
            shutil.rmtree(spec.temp_dir, ignore_errors=True)
            if reason == "stop":  # a clean stop keeps no log; any other end keeps it for diagnosis
                with contextlib.suppress(OSError):
                    os.unlink(spec.log_path)
                remove_empty_folders(spec.remove_if_empty)
                try:
                    lease.sendall(STOPPED)
                except OSError:
                    pass
            lease.close()
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m zoo_lite.ray_on_spark.watchdog SPEC_JSON_FILE", file=sys.stderr)
        return 2
    return run_watchdog(WatchdogSpec.load(args[0]))


if __name__ == "__main__":
    sys.exit(main())
