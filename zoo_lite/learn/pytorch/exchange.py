"""Gradient exchange: after every step each worker holds the gradient of the mean loss over the
step's global rows, bit-identical on every worker.

Each worker scales its mean-loss gradient by its row count, the scaled gradients and the counts
are summed over the workers, and the sum is divided by the global count. So N workers take
exactly the step one process would take on the union of their rows, also when a worker's share of
a step is small or empty (DistributedDataParallel averages over workers instead, which is only
exact for equal shares). A loss with ``reduction="sum"`` is summed as it is.

All gradients travel in one flat buffer per step. How it is summed:

- every worker on one host: through shared memory (:mod:`zoo_lite.learn.base.host_exchange`),
  unless ``config["shared_memory_exchange"]`` is False or ``/dev/shm`` is missing or too small;
- otherwise by :func:`sum_over_workers` over the gloo group: between two workers a small buffer
  goes by one send and one receive each way (gloo's all_reduce costs about 2 ms per call on this
  kind of machine whatever the size, a send/receive pair about 0.3 ms when the machine is idle,
  measured in issue 4; ``a + b == b + a`` exactly, so both workers hold the same sum); otherwise
  all_reduce, which is bandwidth-optimal for large buffers and more workers.

Sending each parameter's gradient as backward produces it (DDP's overlap) was measured too: on 2
cores the transfers compete with backward for the CPU, and an epoch took 1.7x as long.
"""

from __future__ import annotations

import uuid
from typing import Callable, Optional, Sequence

import torch
import torch.distributed as dist

from zoo_lite.learn.base.host_exchange import HostSum, host_key, open_host_sum, shared_memory_directory, slots_nbytes

__all__ = ["gradient_exchange", "sum_over_workers", "host_sum_for_group", "FlatExchange", "NoExchange"]

#: largest buffer (elements) summed by a direct exchange between two workers; above, all_reduce's
#: bandwidth wins (measured crossover 128k to 256k float32 elements)
_DIRECT_EXCHANGE_MAX_ELEMENTS = 1 << 17

Summer = Callable[[torch.Tensor], torch.Tensor]


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


def _all_agree(ok: bool) -> bool:
    """True on every worker exactly when every worker passed True."""
    flag = torch.tensor([0 if ok else 1], dtype=torch.int32)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return int(flag.item()) == 0


def host_sum_for_group(size: int, dtype: torch.dtype, rank: int, world_size: int,
                       timeout_s: float) -> Optional[HostSum]:
    """A shared-memory sum of ``size`` elements when every worker of the gloo group runs on this
    host and ``/dev/shm`` has room, else None (the same answer on every worker). A collective:
    every worker calls it."""
    try:
        numpy_dtype = torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:   # bfloat16 and other dtypes NumPy lacks: the same on every worker
        return None
    directory = shared_memory_directory(slots_nbytes(world_size, size, numpy_dtype))
    facts: list[Optional[tuple[str, Optional[str], str]]] = [None] * world_size
    dist.all_gather_object(facts, (host_key(), directory, uuid.uuid4().hex[:12]))
    if directory is None or len({(host, place) for host, place, _ in facts}) != 1:
        return None
    return open_host_sum(directory, facts[0][2], rank, world_size, size, numpy_dtype, timeout_s, _all_agree)


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
                      timeout_s: float, shared_memory: bool = True) -> "NoExchange | FlatExchange":
    """The exchange for this group (a collective: every worker calls it once the gloo group is up):
    none for one worker, else one flat buffer per step summed through shared memory when every
    worker is on this host (and ``shared_memory``), over gloo otherwise."""
    trainable = [p for p in parameters if p.requires_grad]
    if world_size == 1 or not trainable:
        return NoExchange()
    size = sum(p.numel() for p in trainable) + 1   # the gradients and the row count
    host_sum = host_sum_for_group(size, trainable[0].dtype, rank, world_size, timeout_s) if shared_memory else None
    if host_sum is None:
        return FlatExchange(trainable, lambda flat: sum_over_workers(flat, rank, world_size), summed_loss)
    return FlatExchange(trainable, lambda flat: torch.from_numpy(host_sum.sum(flat.numpy())), summed_loss, host_sum)
