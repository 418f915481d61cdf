"""The training workers' rendezvous ports: any free one, or one of a range the user opened
(``WorkerConfig(rendezvous_ports=(first, last))``, for firewalled clusters).

A port is bound by the process that uses it where the framework allows (torch's rendezvous store
is served by rank 0 itself). TensorFlow must be told every worker's port before it binds any, so
each worker holds a bound socket on its port (:func:`reserve_port`) until the addresses are
exchanged and lets it go just before TensorFlow binds it: two workers on one host never pick the
same port (they did, from a range of 9 ports, in CI), and no other process can take it while the
addresses travel. If another process takes it in the moment between, the worker group is started
again (``start_worker_group``).
"""

from __future__ import annotations

import random
import socket
from typing import Callable, Optional, TypeVar, Union

from zoo_lite.errors import PortRangeExhaustedError

__all__ = ["PORT_TAKEN_SIGNS", "bind_first_free", "free_port", "is_port_taken", "reserve_port"]

T = TypeVar("T")

#: what a bind says when its port is taken (the OS, gloo and torch's store, gRPC in TensorFlow)
PORT_TAKEN_SIGNS = ("Address already in use", "address already in use", "EADDRINUSE", "Could not start gRPC server")


def is_port_taken(error: Union[BaseException, str]) -> bool:
    """Whether ``error`` (or an error's text, e.g. a worker's traceback) says that the port it
    tried to bind was taken.

    Examples
    --------
    >>> is_port_taken(OSError(98, "Address already in use")), is_port_taken(OSError(13, "Permission denied"))
    (True, False)
    >>> is_port_taken("UnknownError: Could not start gRPC server")
    True
    """
    return any(sign in str(error) for sign in PORT_TAKEN_SIGNS)


def bind_first_free(host: str, ports: Optional[tuple[int, int]], bind: Callable[[int], T]) -> T:
    """``bind(port)`` with the ports of the range ``ports`` (both ends included) in a random order
    until one is not taken (so that workers starting at once rarely try the same ones); with
    ``ports=None``, ``bind(0)``: the system picks one as it binds.

    Examples
    --------
    >>> held = socket.create_server(("127.0.0.1", 0))
    >>> taken = held.getsockname()[1]
    >>> bind_first_free("127.0.0.1", (taken, taken), lambda port: socket.create_server(("127.0.0.1", port)))
    Traceback (most recent call last):
    ...
    zoo_lite.errors.PortRangeExhaustedError: no free port on 127.0.0.1 in WorkerConfig(rendezvous_ports=(...)): all 1 are taken; widen the range or end what holds them
    >>> held.close()
    """
    if ports is None:
        return bind(0)
    first, last = ports
    candidates = list(range(first, last + 1))
    random.shuffle(candidates)
    for port in candidates:
        try:
            return bind(port)
        except Exception as error:  # noqa: BLE001 - frameworks raise their own types for a taken port
            if not is_port_taken(error):
                raise
    raise PortRangeExhaustedError(f"no free port on {host} in WorkerConfig(rendezvous_ports=({first}, {last})): "
                                  f"all {len(candidates)} are taken; widen the range or end what holds them")


def reserve_port(host: str, ports: Optional[tuple[int, int]] = None) -> socket.socket:
    """A socket bound (not listening) to a port free on ``host``, from ``ports`` if given, that
    holds the port for a framework that binds it itself later (TensorFlow's gRPC server): close
    it just before the framework binds.

    Examples
    --------
    >>> held = reserve_port("127.0.0.1", (20000, 20009))
    >>> port = held.getsockname()[1]
    >>> 20000 <= port <= 20009, port != reserve_port("127.0.0.1", (port, port + 1)).getsockname()[1]
    (True, True)
    >>> held.close()
    """
    def bind(port: int) -> socket.socket:
        holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            holder.bind((host, port))
        except BaseException:
            holder.close()
            raise
        return holder

    return bind_first_free(host, ports, bind)


def free_port(host: str, ports: Optional[tuple[int, int]] = None) -> int:
    """A port free on ``host`` now, from ``ports`` if given, for a worker whose framework binds
    nothing (see :func:`reserve_port` to hold one until it is bound).

    Examples
    --------
    >>> 20000 <= free_port("127.0.0.1", (20000, 20009)) <= 20009
    True
    """
    with reserve_port(host, ports) as held:
        return int(held.getsockname()[1])
