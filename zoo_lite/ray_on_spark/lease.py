"""The driver's lease server: every Ray node's watchdog holds one TCP connection to it.

The connection is the liveness signal of both sides. When the driver process dies for any reason,
even SIGKILL, the kernel closes its sockets and each watchdog ends its node; when a node's
processes or executor end, its watchdog's connection closes. A host that is cut off or stalled
closes nothing, so every watchdog also sends a heartbeat byte each second, and a node the driver
hears nothing from for the silence timeout counts as lost. So does a node whose watchdog reports
its executor JVM stopped for as long: the node runs, but Spark can run nothing on that executor.
A clean stop sends ``stop`` on every connection and waits for each watchdog's ``stopped``.
"""

from __future__ import annotations

import hmac
import json
import secrets
import select
import socket
import threading
import time
from typing import Optional

from zoo_lite.ray_on_spark.watchdog import EXECUTOR_STOPPED, HEARTBEAT_INTERVAL_S, STOP, STOPPED
from zoo_lite.waiting import announced_wait

__all__ = ["LeaseServer", "DEFAULT_SILENCE_TIMEOUT_S"]

_HELLO_TIMEOUT_S = 10.0
#: how long a node's watchdog may send nothing before the node counts as lost
DEFAULT_SILENCE_TIMEOUT_S = 30.0
_CLOSED = "its watchdog's connection closed (its processes or its executor ended)"


class _Lease:
    """One watchdog's connection, and what the server heard on it."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.last_heard = time.monotonic()
        #: since when the watchdog's beats say that its executor JVM is stopped (None: running)
        self.executor_stopped_since: Optional[float] = None
        self.lost_reason: Optional[str] = None   # set once, when the lease is found lost

    def check_silence(self, silence_timeout_s: float) -> None:
        """Count the lease as lost once its watchdog was silent too long, or reported its executor
        JVM stopped for as long, and close it: the watchdog ends its node as soon as it can hear
        again, instead of rejoining.

        What arrived meanwhile is read first: a driver whose threads could not run for a while
        (user code holding the GIL) finds the heartbeats waiting, and loses no node for it."""
        if self.lost_reason is None:
            _hear(self)
        now = time.monotonic()
        silent_s = now - self.last_heard
        stopped_s = 0.0 if self.executor_stopped_since is None else now - self.executor_stopped_since
        if self.lost_reason is not None:
            return
        if silent_s > silence_timeout_s:
            self.lost_reason = (f"its host was silent for {silent_s:.0f} s (heartbeat_timeout_s={silence_timeout_s:g}): "
                                "cut off, stalled or overloaded")
        elif stopped_s > silence_timeout_s:
            self.lost_reason = (f"its executor JVM was stopped for {stopped_s:.0f} s (heartbeat_timeout_s={silence_timeout_s:g}): "
                                "SIGSTOP, a debugger or a frozen container; Spark could run nothing on it")
        else:
            return
        self.connection.close()


class LeaseServer:
    """Accepts watchdog connections on ``host``; :meth:`stop_all` ends every node it leases.

    Parameters
    ----------
    silence_timeout_s : float
        A node whose watchdog sends nothing for this long counts as lost (:meth:`lost_nodes`).

    Examples
    --------
    >>> server = LeaseServer.start("127.0.0.1")
    >>> server.port > 0, server.silence_timeout_s
    (True, 30.0)
    >>> server.stop_all(timeout_s=1.0)
    []
    """

    def __init__(self, listener: socket.socket, host: str, silence_timeout_s: float = DEFAULT_SILENCE_TIMEOUT_S) -> None:
        self.host = host
        self.port = int(listener.getsockname()[1])
        self.secret = secrets.token_hex(16)
        self.silence_timeout_s = float(silence_timeout_s)
        self._listener = listener
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="zoo_lite-ray-lease", daemon=True)
        self._listener_of_heartbeats = threading.Thread(target=self._heartbeat_loop, name="zoo_lite-ray-lease-heartbeats", daemon=True)

    @classmethod
    def start(cls, host: str, silence_timeout_s: float = DEFAULT_SILENCE_TIMEOUT_S) -> "LeaseServer":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((host, 0))   # the server's own port: bound here, used here
        listener.listen(64)
        server = cls(listener, host, silence_timeout_s)
        server._thread.start()
        server._listener_of_heartbeats.start()
        return server

    def _accept_loop(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            threading.Thread(target=self._register, args=(connection,), daemon=True).start()

    def _register(self, connection: socket.socket) -> None:
        connection.settimeout(_HELLO_TIMEOUT_S)
        try:
            hello = json.loads(connection.makefile("rb").readline() or b"{}")
        except (OSError, ValueError):
            connection.close()
            return
        if not hmac.compare_digest(str(hello.get("secret", "")), self.secret):
            connection.close()
            return
        connection.settimeout(None)
        with self._lock:
            if self._closed:
                connection.close()
                return
            self._leases[str(hello["node_name"])] = _Lease(connection)

    def _heartbeat_loop(self) -> None:
        """Note what every watchdog sent (heartbeats, or a close); each interval, count the
        leases silent for too long as lost."""
        next_check = time.monotonic()
        while True:
            with self._lock:
                if self._closed:
                    return
                open_leases = [lease for lease in self._leases.values() if lease.lost_reason is None]
            readable = _readable([lease.connection for lease in open_leases], max(0.0, next_check - time.monotonic()))
            with self._lock:
                current = set(map(id, self._leases.values()))
                for lease in open_leases:
                    if id(lease) in current and lease.connection in readable:
                        _hear(lease)
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + HEARTBEAT_INTERVAL_S
                    for lease in open_leases:
                        if id(lease) in current and lease.lost_reason is None:
                            lease.check_silence(self.silence_timeout_s)

    def node_names(self) -> list[str]:
        """Names of the nodes whose watchdogs are connected."""
        with self._lock:
            return sorted(self._leases)

    def lost_nodes(self) -> list[str]:
        """Names of the leased nodes that are lost: their watchdog closed its connection without
        being asked to (the node's processes, or the executor they belonged to, are gone), or sent
        nothing for ``silence_timeout_s`` (its host is cut off or stalled).

        Examples
        --------
        >>> server = LeaseServer.start("127.0.0.1")
        >>> server.lost_nodes()
        []
        >>> _ = server.stop_all(timeout_s=1.0)
        """
        return sorted(self.lost_node_reasons())

    def lost_node_reasons(self) -> dict[str, str]:
        """Each lost node (:meth:`lost_nodes`) and why it counts as lost, for messages. A lost
        node stays lost: a host that is heard again after its silence timeout does not rejoin."""
        with self._lock:
            return {name: lease.lost_reason for name, lease in self._leases.items() if lease.lost_reason is not None}

    def silent_nodes(self) -> list[str]:
        """Names of the lost nodes whose host fell silent or whose executor JVM stopped (rather
        than closing the connection): their executors may still look registered to Spark until
        its own timeouts run out."""
        return sorted(name for name, reason in self.lost_node_reasons().items() if reason != _CLOSED)

    def quiet_nodes(self, quiet_s: float) -> list[str]:
        """Names of the leased nodes whose watchdog sent nothing for ``quiet_s``: their host may be
        cut off or stalled, which :meth:`lost_nodes` tells once ``silence_timeout_s`` has passed.
        A node stays quiet once lost (a caller that asked :meth:`lost_nodes` a moment before
        must not take it for a heard one).

        Examples
        --------
        >>> server = LeaseServer.start("127.0.0.1")
        >>> server.quiet_nodes(quiet_s=5.0)
        []
        >>> _ = server.stop_all(timeout_s=1.0)
        """
        now = time.monotonic()
        with self._lock:
            return sorted(name for name, lease in self._leases.items() if now - lease.last_heard > quiet_s)

    def _take(self, names: set[str]) -> dict[str, _Lease]:
        """Remove the leases of ``names`` from the server (its heartbeat loop no longer reads them)."""
        with self._lock:
            taken = {name: lease for name, lease in self._leases.items() if name in names}
            for name in taken:
                del self._leases[name]
        return taken

    def stop_others(self, keep: set[str], timeout_s: float) -> list[str]:
        """End every leased node not named in ``keep``; return their names.

        A barrier stage that Spark retried (an executor lost during the start) leaves the nodes of
        the failed attempt running; the driver keeps only those the successful attempt reported."""
        others = self._take(set(self.node_names()) - keep)
        _stop(others, timeout_s, self.silence_timeout_s)
        return sorted(others)

    def stop_all(self, timeout_s: float) -> list[str]:
        """Ask every watchdog to end its node and wait for each to confirm; close the server.

        Returns the names of the nodes that did not confirm within ``timeout_s`` (their
        watchdogs still end them, since the connection is closed as well). A silent node is not
        waited for: its watchdog ends the node once its host can hear the closed connection."""
        with self._lock:
            self._closed = True
        leases = self._take(set(self.node_names()))
        self._listener.close()
        return _stop(leases, timeout_s, self.silence_timeout_s)


def _readable(connections: list[socket.socket], timeout_s: float) -> list[socket.socket]:
    """The connections with something to read within ``timeout_s``; none where one was closed
    meanwhile by a stop (the caller looks again)."""
    if not connections:
        time.sleep(timeout_s)
        return []
    try:
        return select.select(connections, [], [], timeout_s)[0]
    except (OSError, ValueError):
        return []


def _hear(lease: _Lease) -> None:
    """Read what a watchdog sent (heartbeats, or nothing: it closed)."""
    try:
        chunk = lease.connection.recv(4096, socket.MSG_DONTWAIT)
    except BlockingIOError:
        return
    except OSError:
        chunk = b""
    if chunk:
        lease.last_heard = time.monotonic()
        if not chunk.endswith(EXECUTOR_STOPPED):
            lease.executor_stopped_since = None
        elif lease.executor_stopped_since is None:
            lease.executor_stopped_since = lease.last_heard
    else:
        lease.lost_reason = _CLOSED


def _stop(leases: dict[str, _Lease], timeout_s: float, silence_timeout_s: float) -> list[str]:
    """Send ``stop`` on every lease, wait for the confirmations, close; return the unconfirmed.
    Silent leases are not waited for: a cut-off host could not confirm within any bound."""
    for lease in leases.values():   # before the stop: reading later could take a confirmation
        lease.check_silence(silence_timeout_s)
    send_deadline = time.monotonic() + 1.0   # stalled peers' full windows must not block the stop
    for lease in leases.values():
        try:
            lease.connection.settimeout(max(0.01, send_deadline - time.monotonic()))
            lease.connection.sendall(STOP)
        except OSError:
            pass
    deadline = time.monotonic() + timeout_s
    silent = {name for name, lease in leases.items() if lease.lost_reason not in (None, _CLOSED)}
    with announced_wait(f"{len(leases) - len(silent)} Ray node(s) to confirm that they stopped", timeout_s):
        unconfirmed = [name for name, lease in leases.items() if name in silent or not _confirmed(lease.connection, deadline)]
    for lease in leases.values():
        lease.connection.close()
    return unconfirmed


def _confirmed(connection: socket.socket, deadline: float) -> bool:
    """Whether the watchdog confirmed, or had already ended: a watchdog closes its connection
    only after its node's processes are gone."""
    received = b""
    while STOPPED not in received:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        connection.settimeout(remaining)
        try:
            chunk: Optional[bytes] = connection.recv(64)
        except socket.timeout:
            return False
        except OSError:
            return True  # reset by a watchdog that already ended
        if not chunk:
            return True
        received += chunk
    return True
