"""Gradient exchange: after every step each worker holds the gradient of the mean loss over the
step's global rows, bit-identical on every worker.

Each worker scales its mean-loss gradient by its row count, the scaled gradients and the counts
are summed over the workers, and the sum is divided by the global count. So N workers take
exactly the step one process would take on the union of their rows, also when a worker's share of
a step is small or empty (DistributedDataParallel averages over workers instead, which is only
exact for equal shares). A loss with ``reduction="sum"`` is summed as it is.

Two ways to sum, picked by :func:`gradient_exchange`:

- :class:`PairExchange` (two workers, small parameters): each parameter's gradient is sent to the
  peer as soon as backward has produced it, so the transfer overlaps the rest of backward; one
  send and one receive per parameter, matched by tag. gloo's all_reduce costs about 2 ms per call
  on this kind of machine whatever the size, a send/receive pair about 0.3 ms (measured in
  issue 4), and ``a + b == b + a`` exactly, so both workers end with the same sum.
- :class:`FlatExchange` (otherwise): one flat buffer per step, summed by all_reduce (bandwidth-
  optimal for large models and more workers).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.distributed as dist

__all__ = ["gradient_exchange", "sum_over_workers", "PairExchange", "FlatExchange", "NoExchange"]

#: largest buffer (elements) summed by a direct exchange between two workers; above, all_reduce's
#: bandwidth wins (measured crossover 128k to 256k float32 elements)
_DIRECT_EXCHANGE_MAX_ELEMENTS = 1 << 17


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


class NoExchange:
    """One worker: its gradient already is the step's."""

    def begin(self, rows: int) -> None:
        pass

    def finish(self) -> None:
        pass


class FlatExchange:
    """All parameters' gradients in one buffer, summed once per step after backward."""

    def __init__(self, parameters: Sequence[torch.nn.Parameter], rank: int, world_size: int, summed_loss: bool) -> None:
        self.parameters = list(parameters)
        self.rank, self.world_size, self.summed = rank, world_size, summed_loss
        self.rows = 0

    def begin(self, rows: int) -> None:
        self.rows = rows

    def finish(self) -> None:
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.parameters]
        flat = torch.cat([g.reshape(-1) for g in grads] + [torch.zeros(1, dtype=grads[0].dtype)])
        if not self.summed:
            flat[:-1] *= self.rows
        flat[-1] = self.rows
        flat = sum_over_workers(flat, self.rank, self.world_size)
        if not self.summed:
            flat[:-1] /= flat[-1]
        offset = 0
        for parameter, grad in zip(self.parameters, grads):
            parameter.grad = flat[offset:offset + grad.numel()].view_as(parameter)
            offset += grad.numel()


class PairExchange:
    """Two workers: each gradient travels to the peer while backward goes on (see the module docstring)."""

    _COUNT_TAG = 0

    def __init__(self, parameters: Sequence[torch.nn.Parameter], rank: int, summed_loss: bool) -> None:
        self.parameters = list(parameters)
        self.peer, self.summed = 1 - rank, summed_loss
        self.position = {id(p): i for i, p in enumerate(self.parameters)}
        self.in_flight: dict[int, tuple[dist.Work, dist.Work, torch.Tensor]] = {}
        self.rows, self.active = 0, False
        self.count_works: tuple[dist.Work, dist.Work] = ()  # type: ignore[assignment]
        self.counts = torch.zeros(2, dtype=torch.float64)
        for parameter in self.parameters:
            parameter.register_post_accumulate_grad_hook(self._gradient_ready)

    def begin(self, rows: int) -> None:
        self.rows, self.active, self.in_flight = rows, True, {}
        self.counts = torch.tensor([float(rows), 0.0], dtype=torch.float64)
        self.count_works = (dist.isend(self.counts[:1], self.peer, tag=self._COUNT_TAG),
                            dist.irecv(self.counts[1:], self.peer, tag=self._COUNT_TAG))

    def _gradient_ready(self, parameter: torch.nn.Parameter) -> None:
        if self.active:
            self._send(self.position[id(parameter)], parameter)

    def _send(self, index: int, parameter: torch.nn.Parameter) -> None:
        if parameter.grad is None:
            parameter.grad = torch.zeros_like(parameter)   # unused here, maybe not on the peer
        elif not self.summed:
            parameter.grad.mul_(self.rows)
        incoming = torch.empty_like(parameter.grad)
        tag = index + 1
        self.in_flight[index] = (dist.isend(parameter.grad, self.peer, tag=tag),
                                 dist.irecv(incoming, self.peer, tag=tag), incoming)

    def finish(self) -> None:
        for index, parameter in enumerate(self.parameters):
            if index not in self.in_flight:   # no backward here (no rows) or an unused parameter
                self._send(index, parameter)
        self.active = False
        for work in self.count_works:
            work.wait()
        total = float(self.counts.sum())
        for index, parameter in enumerate(self.parameters):
            sent, received, incoming = self.in_flight[index]
            sent.wait()
            received.wait()
            parameter.grad.add_(incoming)
            if not self.summed:
                parameter.grad.div_(total)


def gradient_exchange(parameters: Sequence[torch.nn.Parameter], rank: int, world_size: int,
                      summed_loss: bool) -> "NoExchange | FlatExchange | PairExchange":
    """The exchange for this group: none for one worker, overlapped pairs for two workers with
    small parameters, one all_reduce per step otherwise."""
    trainable = [p for p in parameters if p.requires_grad]
    if world_size == 1 or not trainable:
        return NoExchange()
    if world_size == 2 and all(p.numel() <= _DIRECT_EXCHANGE_MAX_ELEMENTS for p in trainable):
        return PairExchange(trainable, rank, summed_loss)
    return FlatExchange(trainable, rank, world_size, summed_loss)
