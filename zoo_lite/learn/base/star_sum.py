"""Summing small float64 arrays over a group's workers through rank 0, over TCP, with no framework.

A Keras group whose workers share one host sums its gradients through shared memory
(:mod:`zoo_lite.learn.base.host_exchange`), and needs a collective only for the few small sums
of a fit (agreement, row counts, metrics, batch statistics). TensorFlow's collectives can be set up
once per process, so a process that used them cannot serve a later group; this star can: rank 0
accepts one connection from each other worker on the port it already holds for the group
(:meth:`~zoo_lite.learn.base.runner.RunnerBase.listen`), and each sum is one message in and one
out per worker. Rank 0 adds the arrays in rank order, so every worker gets the same bits.

Every wait is bounded by ``timeout_s``; a peer that died ends the sum at once (its connection
closes) with :class:`~zoo_lite.errors.WorkerTimeoutError`.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Optional

import numpy as np

from zoo_lite.errors import WorkerTimeoutError

__all__ = ["StarSum"]

#: the first bytes of a worker's connection: the protocol's name, then its rank (a port scanner's
#: connection is dropped)
_HELLO = b"zoo_lite-star-sum/1 "
_RANK = struct.Struct("!I")
_LENGTH = struct.Struct("!Q")
#: how often a worker tries rank 0's port again while rank 0 is not listening yet
_CONNECT_RETRY_S = 0.01
#: how long rank 0's close waits for the others to close first (they do as they close their runners)
_CLOSE_WAIT_S = 2.0


class StarSum:
    """The element-wise sum of float64 arrays over ``world_size`` workers (a collective: every
    worker calls :meth:`sum` with arrays of the same length, the same number of times).

    Parameters
    ----------
    rank, world_size : int
        This worker's place in the group.
    root : tuple of (str, int)
        Rank 0's address, where it listens.
    listener : socket.socket, optional
        On rank 0: a socket bound to ``root`` (not yet listening); it is closed once every peer
        has connected. Ignored on the other ranks.
    timeout_s : float
        Bound on the set-up and on each sum.

    Examples
    --------
    >>> import threading
    >>> from zoo_lite.learn.base.ports import reserve_port
    >>> held = reserve_port("127.0.0.1")
    >>> root = ("127.0.0.1", held.getsockname()[1])
    >>> results = {}
    >>> def worker(rank):
    ...     star = StarSum(rank, 2, root, held if rank == 0 else None, timeout_s=10)
    ...     results[rank] = star.sum(np.array([1.0, float(rank)])).tolist()
    ...     star.close()
    >>> threads = [threading.Thread(target=worker, args=(rank,)) for rank in (0, 1)]
    >>> for thread in threads: thread.start()
    >>> for thread in threads: thread.join()
    >>> sorted(results.items())
    [(0, [2.0, 1.0]), (1, [2.0, 1.0])]
    """

    def __init__(self, rank: int, world_size: int, root: tuple[str, int], listener: Optional[socket.socket],
                 timeout_s: float) -> None:
        self.rank, self.world_size, self.timeout_s = rank, world_size, timeout_s
        #: rank 0: the connection of each other rank, by rank; another rank: its one connection to rank 0
        self._peers: dict[int, socket.socket] = {}
        deadline = time.monotonic() + timeout_s
        try:
            if rank == 0:
                if listener is None:
                    raise ValueError("StarSum: rank 0 needs the listener socket bound to its address")
                self._accept_peers(listener, deadline)
            else:
                self._peers[0] = _connect(root, rank, deadline)
        except BaseException:
            self.close()
            raise

    def _accept_peers(self, listener: socket.socket, deadline: float) -> None:
        listener.listen(self.world_size)
        try:
            while len(self._peers) < self.world_size - 1:
                listener.settimeout(_left(deadline, self._timeout_message("connect")))
                connection, _ = listener.accept()
                try:
                    connection.settimeout(_left(deadline, self._timeout_message("connect")))
                    hello = _receive(connection, len(_HELLO) + _RANK.size)
                except (OSError, ConnectionError):
                    connection.close()
                    continue
                peer = _RANK.unpack(hello[len(_HELLO):])[0] if hello.startswith(_HELLO) else 0
                if not 0 < peer < self.world_size or peer in self._peers:
                    connection.close()   # not a worker of this group
                    continue
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._peers[peer] = connection
        except socket.timeout:
            missing = sorted(set(range(1, self.world_size)) - set(self._peers))
            raise WorkerTimeoutError(f"{self._timeout_message('connect')}: ranks {missing} did not connect") from None
        finally:
            listener.close()

    def sum(self, values: np.ndarray) -> np.ndarray:
        """``values`` (float64) summed over the workers, in rank order: the same bits on every worker."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        deadline = time.monotonic() + self.timeout_s
        try:
            if self.rank != 0:
                _send(self._peers[0], values.tobytes(), deadline)
                return np.frombuffer(_receive_message(self._peers[0], deadline), dtype=np.float64).copy()
            total = values.copy()
            for peer in range(1, self.world_size):
                total += np.frombuffer(_receive_message(self._peers[peer], deadline), dtype=np.float64)
            for peer in range(1, self.world_size):
                _send(self._peers[peer], total.tobytes(), deadline)
            return total
        except (OSError, ConnectionError, ValueError) as error:
            raise WorkerTimeoutError(f"{self._timeout_message('sum')}: {type(error).__name__}: {error}") from None

    def close(self) -> None:
        """Close the connections (idempotent). Rank 0 first waits a moment for the others to close
        theirs (they close at once), so that no TIME_WAIT holds its port, which a later group may
        want (a reset instead would drop a last sum a peer has not read yet)."""
        peers, self._peers = self._peers, {}
        deadline = time.monotonic() + _CLOSE_WAIT_S
        for connection in peers.values():
            if self.rank == 0:
                try:
                    connection.settimeout(max(0.001, deadline - time.monotonic()))
                    connection.recv(1)   # b"": the peer closed
                except OSError:
                    pass
            connection.close()

    def _timeout_message(self, what: str) -> str:
        return (f"the small sums of {self.world_size} workers (rank {self.rank}, {what}) did not complete within "
                f"{self.timeout_s:.0f} s: a worker died or is stalled (raise WorkerConfig(collective_timeout_s=...) "
                f"if its steps are that slow)")


def _left(deadline: float, message: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise WorkerTimeoutError(message)
    return left


def _connect(root: tuple[str, int], rank: int, deadline: float) -> socket.socket:
    """A connection to rank 0, tried again while rank 0 is not listening yet."""
    while True:
        try:
            connection = socket.create_connection(root, timeout=max(0.1, deadline - time.monotonic()))
            break
        except ConnectionRefusedError:
            if time.monotonic() + _CONNECT_RETRY_S > deadline:
                raise WorkerTimeoutError(f"rank {rank} could not connect to rank 0 at {root[0]}:{root[1]} "
                                         f"for the group's small sums") from None
            time.sleep(_CONNECT_RETRY_S)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    _send_raw(connection, _HELLO + _RANK.pack(rank), deadline)
    return connection


def _send(connection: socket.socket, payload: bytes, deadline: float) -> None:
    _send_raw(connection, _LENGTH.pack(len(payload)) + payload, deadline)


def _send_raw(connection: socket.socket, data: bytes, deadline: float) -> None:
    connection.settimeout(max(0.001, deadline - time.monotonic()))
    connection.sendall(data)


def _receive_message(connection: socket.socket, deadline: float) -> bytes:
    connection.settimeout(max(0.001, deadline - time.monotonic()))
    length = _LENGTH.unpack(_receive(connection, _LENGTH.size))[0]
    return _receive(connection, length)


def _receive(connection: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes (a closed connection is a ``ConnectionError``)."""
    chunks, got = [], 0
    while got < size:
        chunk = connection.recv(min(size - got, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
