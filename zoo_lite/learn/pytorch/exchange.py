"""Gradient exchange: after every step each worker holds the gradient of the mean loss over the
step's global rows, bit-identical on every worker.

Each worker scales its mean-loss gradient by its row count, the scaled gradients and the counts
are summed over the workers, and the sum is divided by the global count. So N workers take
exactly the step one process would take on the union of their rows, also when a worker's share of
a step is small or empty (DistributedDataParallel averages over workers instead, which is only
exact for equal shares). A loss with ``reduction="sum"`` is summed as it is.

All gradients travel in one flat buffer per step. How it is summed:

- every worker on one host: through shared memory (:mod:`zoo_lite.learn.base.host_exchange`),
  unless ``WorkerConfig(shared_memory_exchange=False)`` or ``/dev/shm`` is missing or too small;
- otherwise by :func:`sum_over_workers` over the gloo group: between two workers a small buffer
  goes by one send and one receive each way (gloo's all_reduce costs about 2 ms per call on this
  kind of machine whatever the size, a send/receive pair about 0.3 ms when the machine is idle,
  measured in issue 4; ``a + b == b + a`` exactly, so both workers hold the same sum); otherwise
  all_reduce, which is bandwidth-optimal for large buffers and more workers.

Sending each parameter's gradient as backward produces it (DDP's overlap) was measured too: on 2
cores the transfers compete with backward for the CPU, and an epoch took 1.7x as long.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Callable, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist

from zoo_lite.learn.base.host_exchange import HostSum

__all__ = ["gradient_exchange", "sum_over_workers", "sum_floats_over_workers", "FlatExchange", "NoExchange",
           "join_process_group", "rendezvous_store", "GLOO_ON_ADDRESS"]

#: the name of gloo bound to a given address (:func:`join_process_group`), as torch.distributed knows it
GLOO_ON_ADDRESS = "zoo_lite_gloo"
#: the address the next process group of this process binds; read by the backend's creator
_bind_address: Optional[str] = None

#: largest buffer (elements) summed by a direct exchange between two workers; above, all_reduce's
#: bandwidth wins (measured crossover 128k to 256k float32 elements)
_DIRECT_EXCHANGE_MAX_ELEMENTS = 1 << 17

Summer = Callable[[torch.Tensor], torch.Tensor]


def _gloo_on_bind_address(store: "dist.Store", rank: int, world_size: int, timeout: timedelta) -> "dist.ProcessGroup":
    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=_bind_address)]
    options._timeout = timeout
    return dist.ProcessGroupGloo(store, rank, world_size, options)


def rendezvous_store(host: str, port: int, world_size: int, timeout_s: float,
                     serve: Optional[bool] = None) -> "dist.TCPStore":
    """The store of a process group's rendezvous: with ``serve=True``, served by this process on
    ``host:port`` (with ``port=0``, a port the system picks as it binds, so no other process can
    take it in between: read it from ``.port``); else the store served at ``host:port``.
    ``serve`` defaults to ``port == 0``.

    Examples
    --------
    >>> served = rendezvous_store("127.0.0.1", 0, world_size=2, timeout_s=10)
    >>> reached = rendezvous_store("127.0.0.1", served.port, world_size=2, timeout_s=10)
    >>> reached.set("rank 1", "here"); served.get("rank 1")
    b'here'
    """
    serves = port == 0 if serve is None else serve
    return dist.TCPStore(host, port, world_size, serves, timeout=timedelta(seconds=timeout_s), wait_for_workers=False)


def join_process_group(store: "dist.Store", rank: int, world_size: int, timeout_s: float, address: str) -> None:
    """Join the gloo process group of ``store`` (:func:`rendezvous_store`) with this worker's
    gloo transport bound to ``address``, the address Ray and Spark use for this host.

    Plain ``init_process_group("gloo")`` binds the address the host's *name* resolves to: on
    Debian's and Ubuntu's default ``/etc/hosts`` that is ``127.0.1.1``, where no host name
    resolves it is ``127.0.0.1``, and peers on other hosts are refused. gloo bound to an explicit
    address is registered once per process as the backend :data:`GLOO_ON_ADDRESS`; it is gloo in
    every other respect (its transport binds its own ports).

    Examples
    --------
    >>> store = rendezvous_store("127.0.0.1", 0, world_size=1, timeout_s=10)
    >>> join_process_group(store, rank=0, world_size=1, timeout_s=10, address="127.0.0.1")
    >>> dist.get_backend(), dist.get_world_size()
    ('zoo_lite_gloo', 1)
    >>> dist.destroy_process_group()
    """
    global _bind_address
    if not hasattr(dist.Backend, GLOO_ON_ADDRESS.upper()):
        dist.Backend.register_backend(GLOO_ON_ADDRESS, _gloo_on_bind_address, devices=["cpu"])
    _bind_address = address
    dist.init_process_group(GLOO_ON_ADDRESS, store=store, rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=timeout_s))


def sum_over_workers(buffer: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """``buffer`` summed element-wise over the process group, bit-identical on every worker."""
    if world_size == 1:
        return buffer
    if world_size == 2 and buffer.numel() <= _DIRECT_EXCHANGE_MAX_ELEMENTS:
        other = torch.empty_like(buffer)
        for work in (dist.isend(buffer, 1 - rank), dist.irecv(other, 1 - rank)):
            work.wait()
        return buffer + other
    dist.all_reduce(buffer)
    return buffer


def sum_floats_over_workers(values: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """``values`` (float64) summed element-wise over the process group."""
    return sum_over_workers(torch.from_numpy(np.asarray(values, dtype=np.float64)), rank, world_size).numpy()


class NoExchange:
    """One worker: its gradient already is the step's."""

    def begin(self, rows: int) -> None:
        pass

    def finish(self) -> None:
        pass

    def close(self) -> None:
        pass


class FlatExchange:
    """All parameters' gradients in one buffer, summed once per step after backward by ``summer``."""

    def __init__(self, parameters: Sequence[torch.nn.Parameter], summer: Summer, summed_loss: bool,
                 host_sum: Optional[HostSum] = None) -> None:
        self.parameters = list(parameters)
        self.summer, self.summed = summer, summed_loss
        self.host_sum = host_sum
        self.rows = 0

    def begin(self, rows: int) -> None:
        self.rows = rows

    def finish(self) -> None:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.parameters]
        flat = torch.cat([g.reshape(-1) for g in grads] + [torch.zeros(1, dtype=grads[0].dtype)])
        if not self.summed:
            flat[:-1] *= self.rows
        flat[-1] = self.rows
        flat = self.summer(flat)
        if not self.summed:
            flat[:-1] /= flat[-1]
        offset = 0
        for parameter, grad in zip(self.parameters, grads):
            parameter.grad = flat[offset:offset + grad.numel()].view_as(parameter)
            offset += grad.numel()

    def close(self) -> None:
        if self.host_sum is not None:
            self.host_sum.close()


def gradient_exchange(parameters: Sequence[torch.nn.Parameter], rank: int, world_size: int, summed_loss: bool,
                      open_host_sum: Callable[[int, np.dtype], Optional[HostSum]]) -> "NoExchange | FlatExchange":
    """The exchange for this group (a collective: every worker calls it once the gloo group is up):
    none for one worker, else one flat buffer per step summed through shared memory when
    ``open_host_sum(size, dtype)`` gives a sum (every worker on this host), over gloo otherwise."""
    trainable = [p for p in parameters if p.requires_grad]
    if world_size == 1 or not trainable:
        return NoExchange()
    size = sum(p.numel() for p in trainable) + 1   # the gradients and the row count
    try:
        host_sum = open_host_sum(size, torch.empty(0, dtype=trainable[0].dtype).numpy().dtype)
    except TypeError:   # bfloat16 and other dtypes NumPy lacks: the same on every worker
        host_sum = None
    if host_sum is None:
        return FlatExchange(trainable, lambda flat: sum_over_workers(flat, rank, world_size), summed_loss)
    return FlatExchange(trainable, lambda flat: torch.from_numpy(host_sum.sum(flat.numpy())), summed_loss, host_sum)
