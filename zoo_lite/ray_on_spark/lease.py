"""The driver's lease server: every Ray node's watchdog holds one TCP connection to it.

The connection is the driver's liveness signal. When the driver process dies for any reason, even
SIGKILL, the kernel closes its sockets and each watchdog ends its node. A clean stop sends
``stop`` on every connection and waits for each watchdog's ``stopped``.
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

from zoo_lite.ray_on_spark.watchdog import STOP, STOPPED

__all__ = ["LeaseServer"]

_HELLO_TIMEOUT_S = 10.0


class LeaseServer:
    """Accepts watchdog connections on ``host``; :meth:`stop_all` ends every node it leases.

    Examples
    --------
    >>> server = LeaseServer.start("127.0.0.1")
    >>> server.port > 0
    True
    >>> server.stop_all(timeout_s=1.0)
    []
    """

    def __init__(self, listener: socket.socket, host: str) -> None:
        self.host = host
        self.port = int(listener.getsockname()[1])
        self.secret = secrets.token_hex(16)
        self._listener = listener
        self._leases: dict[str, socket.socket] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="zoo_lite-ray-lease", daemon=True)

    @classmethod
    def start(cls, host: str) -> "LeaseServer":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((host, 0))
        listener.listen(64)
        server = cls(listener, host)
        server._thread.start()
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
            self._leases[str(hello["node_name"])] = connection

    def node_names(self) -> list[str]:
        """Names of the nodes whose watchdogs are connected."""
        with self._lock:
            return sorted(self._leases)

    def lost_nodes(self) -> list[str]:
        """Names of the leased nodes whose watchdog closed its connection without being asked to:
        the node's processes, or the executor they belonged to, are gone. A watchdog sends nothing
        until it is told to stop, so a readable lease can only be a closed one.

        Examples
        --------
        >>> server = LeaseServer.start("127.0.0.1")
        >>> server.lost_nodes()
        []
        >>> _ = server.stop_all(timeout_s=1.0)
        """
        with self._lock:
            leases = dict(self._leases)
        if not leases:
            return []
        readable, _, _ = select.select(list(leases.values()), [], [], 0)
        lost = []
        for name, connection in leases.items():
            if connection in readable:
                try:
                    closed = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True   # reset by the peer
                if closed:
                    lost.append(name)
        return sorted(lost)

    def stop_others(self, keep: set[str], timeout_s: float) -> list[str]:
        """End every leased node not named in ``keep``; return their names.

        A barrier stage that Spark retried (an executor lost during the start) leaves the nodes of
        the failed attempt running; the driver keeps only those the successful attempt reported."""
        with self._lock:
            others = {name: connection for name, connection in self._leases.items() if name not in keep}
            for name in others:
                del self._leases[name]
        _stop(others, timeout_s)
        return sorted(others)

    def stop_all(self, timeout_s: float) -> list[str]:
        """Ask every watchdog to end its node and wait for each to confirm; close the server.

        Returns the names of the nodes that did not confirm within ``timeout_s`` (their
        watchdogs still end them, since the connection is closed as well)."""
        with self._lock:
            self._closed = True
            leases, self._leases = dict(self._leases), {}
        self._listener.close()
        return _stop(leases, timeout_s)


def _stop(leases: dict[str, socket.socket], timeout_s: float) -> list[str]:
    """Send ``stop`` on every lease, wait for the confirmations, close; return the unconfirmed."""
    for connection in leases.values():
        try:
            connection.sendall(STOP)
        except OSError:
            pass
    deadline = time.monotonic() + timeout_s
    unconfirmed = [name for name, connection in leases.items() if not _confirmed(connection, deadline)]
    for connection in leases.values():
        connection.close()
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
