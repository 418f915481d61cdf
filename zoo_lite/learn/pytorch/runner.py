"""The per-worker torch runner: lives in one Ray actor of the worker group.

Every step, the gradients are combined by :mod:`zoo_lite.learn.pytorch.exchange` into the exact
gradient of the mean loss over the step's global rows, the same on every worker. What every
runner shares is :class:`~zoo_lite.learn.base.runner.RunnerBase`.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
import torch.distributed as dist

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.callbacks import CallbackList, restore_callback_states
from zoo_lite.learn.base.framework import Framework
from zoo_lite.learn.base.ports import bind_first_free
from zoo_lite.learn.base.runner import EpochPlan, FitPlan, RunnerBase
from zoo_lite.learn.base.worker_group import WorkerInfo
from zoo_lite.learn.pytorch.exchange import (FlatExchange, NoExchange, gradient_exchange, join_process_group, rendezvous_store,
                                             sum_floats_over_workers, sum_over_workers)
from zoo_lite.learn.pytorch.feeds import ArrayFeed, Batch, DatasetFeed
from zoo_lite.learn.pytorch.specs import TargetRule, TorchSpec, build_model, model_dtype

__all__ = ["TorchRunner", "encode_state", "decode_state_into"]


def encode_state(model: torch.nn.Module, extras: dict[str, Any]) -> bytes:
    """The state codec's encoder: a ``torch.save`` dict of ``model_state`` and ``extras`` (the
    checkpoint format)."""
    buffer = io.BytesIO()
    torch.save({"model_state": model.state_dict(), **extras}, buffer)
    return buffer.getvalue()


def decode_state_into(model: torch.nn.Module, blob: bytes) -> dict[str, Any]:
    """The state codec's decoder: the weights into ``model``; optimizer, scheduler state and
    counters back (a bare ``state_dict`` file has none)."""
    state = torch.load(io.BytesIO(blob), weights_only=False)
    if not isinstance(state, dict) or "model_state" not in state:
        state = {"model_state": state}   # a weights-only file
    model.load_state_dict(state["model_state"])
    return {"optimizer_state": state.get("optimizer_state"), "scheduler_state": state.get("scheduler_state"),
            "epoch": int(state.get("epoch", 0)), "global_step": int(state.get("global_step", 0))}


def _match_target(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A per-row scalar target next to a ``(rows, 1)`` output gets the output's shape, so that a
    regression loss does not broadcast ``(n,)`` against ``(n, 1)`` into an ``(n, n)`` matrix."""
    if isinstance(output, torch.Tensor) and target.dim() == 1 and output.dim() == 2 and output.shape[1] == 1:
        return target.unsqueeze(1)
    return target


class _Metrics:
    """Metrics aggregated exactly over all workers: torchmetrics objects merge their states across
    the process group; a callable ``(preds, target)`` is taken as a per-row mean and weighted by rows."""

    def __init__(self, metrics: dict[str, Any]) -> None:
        self.metrics = metrics
        self.sums = {name: 0.0 for name in metrics}

    def reset(self) -> None:
        for name, metric in self.metrics.items():
            if hasattr(metric, "reset"):
                metric.reset()
            self.sums[name] = 0.0

    def update(self, output: torch.Tensor, target: torch.Tensor, rows: int) -> None:
        for name, metric in self.metrics.items():
            if hasattr(metric, "compute"):
                metric.update(output, target)
            else:
                self.sums[name] += float(metric(output, target)) * rows

    def compute(self, total_rows: int, reduce_sums: Callable[[list[float]], list[float]]) -> dict[str, float]:
        """Every worker must call this (torchmetrics' compute is a collective)."""
        names = [name for name in self.metrics if not hasattr(self.metrics[name], "compute")]
        reduced = dict(zip(names, reduce_sums([self.sums[name] for name in names])))
        results = {}
        for name, metric in self.metrics.items():
            value = metric.compute() if hasattr(metric, "compute") else reduced[name] / max(total_rows, 1)
            results[name] = float(value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value)
        return results


class TorchRunner(RunnerBase):
    """One training worker (see :class:`~zoo_lite.learn.base.runner.Runner`)."""

    #: close() leaves nothing of the group behind (process group, store, shared memory), and a
    #: new runner sets the seed and the threads again
    process_serves_again = True

    def __init__(self, framework: Framework, spec: TorchSpec, info: WorkerInfo) -> None:
        super().__init__(framework, spec, info)
        torch.set_num_threads(info.num_threads)
        torch.manual_seed(spec.seed)
        self.spec = spec
        self.config = spec.config
        self.model = build_model(spec.model, spec.config)
        self.float_dtype = model_dtype(self.model)
        self.optimizer = spec.build_optimizer(self.model)
        self.loss_fn = spec.build_loss()
        self.label_rule = (self.float_dtype, TargetRule.of(self.loss_fn))   # class indices or floats, decided once
        self.scheduler = spec.build_scheduler(self.optimizer)
        self.metrics = _Metrics(spec.metrics)
        self.exchange: NoExchange | FlatExchange = NoExchange()   # the real one once connected
        self._store: Optional[dist.TCPStore] = None   # rank 0's rendezvous store, served from listen()
        self.global_step = 0
        self.callbacks = CallbackList()
        self.epoch_stats: dict[str, Any] = {}
        self.batch_idx = 0
        self.loss: Optional[float] = None

    @staticmethod
    def warm_up() -> None:
        """What a standby worker imports ahead of its use: torch's compiler front end, which the
        first optimizer built in a process imports (1.8 s of a 1.9 s take-over on 2 cores)."""
        import torch._dynamo  # noqa: F401

    # -- group plumbing ---------------------------------------------------------------------------

    def listen(self, host: str) -> int:
        """Rank 0 serves the rendezvous store on ``host``, at a port it binds itself (any, or one
        of ``WorkerConfig(rendezvous_ports=...)``); its port (the other ranks: 0, they serve nothing)."""
        if self.rank != 0:
            return 0
        settings = self.spec.worker_config

        def serve(port: int) -> "dist.TCPStore":
            return rendezvous_store(host, port, self.world_size, settings.collective_timeout_s, serve=True)

        self._store = bind_first_free(host, settings.rendezvous_ports, serve)
        return int(self._store.port)

    def connect(self, addresses: list[tuple[str, int]]) -> None:
        """Join the gloo process group whose store rank 0 serves at ``addresses[0]``, bound to
        this worker's own address (its Ray node's, ``addresses[rank]``)."""
        timeout_s = self.spec.worker_config.collective_timeout_s
        host, port = addresses[0]
        store = self._store if self._store is not None else rendezvous_store(host, port, self.world_size, timeout_s)
        join_process_group(store, self.rank, self.world_size, timeout_s, addresses[self.rank][0])
        summed_loss = getattr(self.loss_fn, "reduction", "mean") == "sum"
        self.exchange = gradient_exchange(list(self.model.parameters()), self.rank, self.world_size, summed_loss,
                                          self.open_host_sum)

    def exchange_kind(self) -> str:
        """How gradients are summed: "none" (one worker), "shared_memory" or "gloo"."""
        if isinstance(self.exchange, NoExchange):
            return "none"
        return "shared_memory" if self.exchange.host_sum is not None else "gloo"

    def close(self) -> None:
        self.exchange.close()
        if dist.is_initialized():
            dist.destroy_process_group()
        self._store = None

    def sum_floats(self, values: np.ndarray) -> np.ndarray:
        return sum_floats_over_workers(values, self.rank, self.world_size)

    def _sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over the workers (a collective)."""
        return self.sum_floats(np.array(values)).tolist() if values else []

    # -- state ------------------------------------------------------------------------------------

    def checkpoint_state(self) -> dict[str, Any]:
        """Model, optimizer and scheduler state with the epoch and step counters."""
        return {"model_state": self.model.state_dict(), **self.state_extras()}

    def state_extras(self) -> dict[str, Any]:
        return {
            "optimizer_state": self.optimizer.state_dict() if self.optimizer is not None else None,
            "scheduler_state": self.scheduler.state_dict() if self.scheduler is not None else None,
            "epoch": self.epoch,
            "global_step": self.global_step,
        }

    def take_extras(self, extras: dict[str, Any]) -> None:
        if self.optimizer is not None and extras.get("optimizer_state") is not None:
            self.optimizer.load_state_dict(extras["optimizer_state"])
        if self.scheduler is not None and extras.get("scheduler_state") is not None:
            self.scheduler.load_state_dict(extras["scheduler_state"])
        self.epoch = int(extras.get("epoch", 0))
        self.global_step = int(extras.get("global_step", 0))

    # -- data -------------------------------------------------------------------------------------

    def held_feed(self, arrays: dict[str, Any], partition_rows: Sequence[int], held: Sequence[tuple[int, int, int]]) -> ArrayFeed:
        return ArrayFeed(arrays, partition_rows, held, self.world_size, self.float_dtype)

    def dataset_feed(self, data: Any, batch_size: int) -> DatasetFeed:
        """A DataLoader (or a creator of one) every worker holds in full."""
        from zoo_lite.learn.pytorch.data import resolve_dataset

        dataset, collate_fn, shuffle = resolve_dataset(data, self.config, batch_size)
        return DatasetFeed(dataset, collate_fn, shuffle, self.world_size, self.rank)

    def _cast(self, batch: Batch) -> Batch:
        """Floating inputs in the model's dtype (the target is cast by :meth:`_target`)."""
        inputs, target, rows = batch
        cast = tuple(x.to(self.float_dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs)
        return cast, target, rows

    def _target(self, output: Any, target: Any) -> Any:
        """The batch's target as the loss wants it next to ``output``: class indices (int64) for a
        class-index loss, else floats in the model's dtype (see :class:`TargetRule`)."""
        if not isinstance(target, torch.Tensor):
            return target
        float_dtype, rule = self.label_rule
        target = rule.target(output, target, float_dtype)
        # class indices keep their shape: a (rows,) target is right for a (rows, classes) output
        return _match_target(output, target) if rule.class_loss is None else target

    # -- training ---------------------------------------------------------------------------------

    def begin_fit(self, plan: FitPlan) -> None:
        self.start_fit(plan)
        self.fit_callbacks = list(plan.callbacks)
        self.callbacks = CallbackList(self.fit_callbacks)
        self.callbacks.call("before_run", self)
        if plan.resumed_states is not None:   # a fit resumed after a lost worker: the callbacks continue
            restore_callback_states(self.fit_callbacks, plan.resumed_states)

    def end_fit(self, logs: dict[str, Any]) -> None:
        self.callbacks.call("after_run", self)
        self.callbacks = CallbackList()

    def _train_step(self, batch: Batch) -> float:
        inputs, target, rows = self._cast(batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss_value = 0.0
        self.exchange.begin(rows)
        if rows:
            output = self.model(*inputs)
            loss = self.loss_fn(output, self._target(output, target))
            loss.backward()
            loss_value = float(loss.item())
        self.exchange.finish()
        self.optimizer.step()
        return loss_value

    def _sync_buffers(self) -> None:
        """Average floating buffers (e.g. batch-norm statistics) over the workers."""
        buffers = [b for b in self.model.buffers() if b.is_floating_point()]
        if self.world_size > 1 and buffers and self.spec.sync_stats:
            flat = sum_over_workers(torch.cat([b.reshape(-1) for b in buffers]) / self.world_size, self.rank, self.world_size)
            offset = 0
            for buffer in buffers:
                buffer.copy_(flat[offset:offset + buffer.numel()].view_as(buffer))
                offset += buffer.numel()

    # -- the epoch loop's hooks (see RunnerBase.train_epoch) --------------------------------------

    def epoch_begins(self, plan: EpochPlan) -> None:
        if self.loss_fn is None or self.optimizer is None:
            raise InvalidArgumentError("fit needs a loss and an optimizer: pass loss= and optimizer= to Estimator.from_torch")
        self.model.train()
        self._loss_sum, self._rows_sum = 0.0, 0
        self.callbacks.call("before_train_epoch", self)

    def train_step(self, index: int, batch: Batch, plan: EpochPlan) -> None:
        self.batch_idx = index
        self.callbacks.call("before_train_iter", self)
        self.loss = self._train_step(batch)
        self._loss_sum += self.loss * batch[2]
        self._rows_sum += batch[2]
        self.global_step += 1
        self.callbacks.call("after_train_iter", self)

    def running_totals(self) -> tuple[float, float]:
        return self._loss_sum / max(self._rows_sum, 1), float(self._rows_sum)

    def epoch_logs(self) -> dict[str, Any]:
        if self.scheduler is not None:
            self.scheduler.step()
        self._sync_buffers()
        total_loss, total_rows = self._sum([self._loss_sum, float(self._rows_sum)])
        return {"epoch": self.epoch, "num_samples": int(total_rows), "train_loss": total_loss / total_rows}

    def epoch_ends(self, plan: EpochPlan, logs: dict[str, Any], elapsed_s: float) -> bool:
        self.epoch_stats = {**logs, "epoch_time_s": elapsed_s}
        self.callbacks.call("after_train_epoch", self)
        return False

    # -- the validation loop's hooks --------------------------------------------------------------

    def validation_begins(self, prefix: str) -> None:
        self.model.eval()
        self.metrics.reset()
        self._val_loss_sum, self._val_rows = 0.0, 0
        self.callbacks.call("before_val_epoch", self)

    def eval_step(self, index: int, batch: Batch) -> None:
        inputs, target, rows = self._cast(batch)
        if not rows:
            return
        self.batch_idx = index
        self.callbacks.call("before_val_iter", self)
        with torch.no_grad():
            output = self.model(*inputs)
            if target is not None:
                target = self._target(output, target)
                if self.loss_fn is not None:
                    self._val_loss_sum += float(self.loss_fn(output, target).item()) * rows
                self.metrics.update(output, target, rows)
        self._val_rows += rows
        self.callbacks.call("after_val_iter", self)

    def validation_logs(self, prefix: str) -> dict[str, Any]:
        total_loss, total_rows = self._sum([self._val_loss_sum, float(self._val_rows)])
        stats: dict[str, Any] = {"num_samples": int(total_rows)}
        if self.loss_fn is not None:
            stats["val_loss"] = total_loss / max(total_rows, 1)
        stats.update(self.metrics.compute(int(total_rows), self._sum))
        self.callbacks.call("after_val_epoch", self)
        if not prefix:
            return stats
        return {name if name.startswith(prefix) else prefix + name: value for name, value in stats.items() if name != "num_samples"}
