"""The per-worker torch runner: lives in one Ray actor of the worker group.

Every step, the gradients are combined by :mod:`zoo_lite.learn.pytorch.exchange` into the exact
gradient of the mean loss over the step's global rows, the same on every worker.
"""

from __future__ import annotations

import io
import time
from datetime import timedelta
from typing import Any, Callable, Optional

import numpy as np
import torch
import torch.distributed as dist

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.callbacks import CallbackList
from zoo_lite.learn.base.worker_group import WorkerInfo
from zoo_lite.learn.pytorch.exchange import FlatExchange, NoExchange, gradient_exchange, sum_over_workers
from zoo_lite.learn.pytorch.feeds import ArrayFeed, Batch, DatasetFeed
from zoo_lite.learn.pytorch.specs import TargetRule, TorchSpec, build_model, model_dtype

__all__ = ["TorchRunner", "state_to_bytes", "state_from_bytes"]

#: seconds between progress snapshots sent to the driver
_PUBLISH_INTERVAL_S = 0.2


def state_to_bytes(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def state_from_bytes(blob: bytes) -> dict[str, Any]:
    return torch.load(io.BytesIO(blob), weights_only=False)


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


class TorchRunner:
    """One training worker. The Estimator calls its methods through the worker group."""

    def __init__(self, spec: TorchSpec, info: WorkerInfo) -> None:
        torch.set_num_threads(info.num_threads)
        torch.manual_seed(spec.seed)
        self.spec = spec
        self.rank = info.rank
        self.world_size = info.world_size
        self.config = spec.config
        self.model = build_model(spec.model, spec.config)
        self.float_dtype = model_dtype(self.model)
        self.optimizer = spec.build_optimizer(self.model)
        self.loss_fn = spec.build_loss()
        self.target_rule = TargetRule.of(self.loss_fn)   # class indices or floats, decided once
        self.scheduler = spec.scheduler_creator(self.optimizer, spec.config) if spec.scheduler_creator and self.optimizer else None
        self.metrics = _Metrics(spec.metrics)
        self.exchange: NoExchange | FlatExchange = NoExchange()   # the real one once connected
        self.epoch = 0
        self.global_step = 0
        self.feeds: dict[str, Any] = {}
        self.callbacks = CallbackList()
        self.epoch_stats: dict[str, Any] = {}
        self.batch_idx = 0
        self.loss: Optional[float] = None
        self.progress: dict[str, Any] = {}
        self.info = info
        self._published_at = 0.0

    # -- group plumbing ---------------------------------------------------------------------------

    def connect(self, addresses: list[tuple[str, int]]) -> None:
        """Join the gloo process group that rank 0's address hosts."""
        host, port = addresses[0]
        timeout_s = float(self.config.get("collective_timeout_s", 1800))
        dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=self.rank,
                                world_size=self.world_size, timeout=timedelta(seconds=timeout_s))
        summed_loss = getattr(self.loss_fn, "reduction", "mean") == "sum"
        self.exchange = gradient_exchange(list(self.model.parameters()), self.rank, self.world_size, summed_loss,
                                          timeout_s, bool(self.config.get("shared_memory_exchange", True)))

    def exchange_kind(self) -> str:
        """How gradients are summed: "none" (one worker), "shared_memory" or "gloo"."""
        if isinstance(self.exchange, NoExchange):
            return "none"
        return "shared_memory" if self.exchange.host_sum is not None else "gloo"

    def close(self) -> None:
        self.exchange.close()
        if dist.is_initialized():
            dist.destroy_process_group()

    def _sum(self, values: list[float]) -> list[float]:
        """Element-wise sum over the workers."""
        if not values:
            return []
        return sum_over_workers(torch.tensor(values, dtype=torch.float64), self.rank, self.world_size).tolist()

    # -- state ------------------------------------------------------------------------------------

    def checkpoint_state(self) -> dict[str, Any]:
        """Model, optimizer and scheduler state with the epoch and step counters."""
        return {
            "model_state": self.model.state_dict(),
            "optimizer_state": self.optimizer.state_dict() if self.optimizer is not None else None,
            "scheduler_state": self.scheduler.state_dict() if self.scheduler is not None else None,
            "epoch": self.epoch,
            "global_step": self.global_step,
        }

    def get_state(self) -> bytes:
        return state_to_bytes(self.checkpoint_state())

    def set_state(self, blob: bytes) -> None:
        state = state_from_bytes(blob)
        self.model.load_state_dict(state["model_state"])
        if self.optimizer is not None and state.get("optimizer_state") is not None:
            self.optimizer.load_state_dict(state["optimizer_state"])
        if self.scheduler is not None and state.get("scheduler_state") is not None:
            self.scheduler.load_state_dict(state["scheduler_state"])
        self.epoch = int(state.get("epoch", 0))
        self.global_step = int(state.get("global_step", 0))

    # -- data -------------------------------------------------------------------------------------

    def load_rows(self, key: str, held: list[tuple[Any, int, int, int]], partition_rows: list[int],
                  one_row: Optional[tuple[Any, int, int, int]] = None) -> int:
        """Take this worker's rows out of Ray's object store: ``(object ref, partition, start, stop)``
        ranges, where ``partition_rows`` are the row counts of every partition of the data
        (``one_row`` is a range of one row of the data, unused here)."""
        from zoo_lite.data import convert
        from zoo_lite.data.ray_xshards import shards_of_ranges

        shards = shards_of_ranges(held)
        # a worker without rows never builds a batch; an empty placeholder keeps the code uniform
        arrays = convert.concat_model_arrays(shards) if shards else {"x": (np.zeros((0,), dtype=np.float32),)}
        ranges = [(partition, start, stop) for _, partition, start, stop in held]
        self.feeds[key] = ArrayFeed(arrays, partition_rows, ranges, self.world_size, self.float_dtype, self.target_rule)
        return self.feeds[key].local_rows

    def load_dataset(self, key: str, data: Any, batch_size: int, shuffle: Optional[bool]) -> int:
        """A DataLoader (or a creator of one) held in full by every worker; returns its length."""
        from zoo_lite.learn.pytorch.data import resolve_dataset

        dataset, collate_fn, loader_shuffle = resolve_dataset(data, self.config, batch_size)
        self.feeds[key] = DatasetFeed(dataset, collate_fn, loader_shuffle if shuffle is None else shuffle,
                                      self.world_size, self.rank)
        lengths = self._sum([float(len(dataset)) if r == self.rank else 0.0 for r in range(self.world_size)])
        if len(set(lengths)) > 1:
            raise InvalidArgumentError(
                f"data: the data creator gave datasets of different lengths on the workers ({[int(n) for n in lengths]}); "
                "it must build the same dataset on every worker (zoo_lite shards it)"
            )
        return len(dataset)

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
        target = self.target_rule.target(output, target, self.float_dtype)
        # class indices keep their shape: a (rows,) target is right for a (rows, classes) output
        return _match_target(output, target) if self.target_rule.class_loss is None else target

    # -- training ---------------------------------------------------------------------------------

    def begin_fit(self, callbacks: Optional[list[Any]]) -> None:
        self.callbacks = CallbackList(callbacks)
        self.progress = {}
        self.info.publish_progress({})   # the driver's display must not show the previous fit
        self._published_at = 0.0
        self.callbacks.call("before_run", self)

    def end_fit(self) -> None:
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

    def train_epoch(self, key: str, batch_size: int, shuffle: bool, val_key: Optional[str]) -> dict[str, Any]:
        """One epoch over the feed ``key`` (and validation on ``val_key``); stats equal on all workers."""
        if self.loss_fn is None or self.optimizer is None:
            raise InvalidArgumentError("fit needs a loss and an optimizer: pass loss= and optimizer= to Estimator.from_torch")
        feed = self.feeds[key]
        started = time.monotonic()
        self.model.train()
        self.callbacks.call("before_train_epoch", self)
        loss_sum, rows_sum, fit_steps = 0.0, 0, self.progress.get("fit_step", 0)
        for self.batch_idx, batch in enumerate(feed.train_batches(batch_size, shuffle, self.spec.seed, self.epoch)):
            self.callbacks.call("before_train_iter", self)
            self.loss = self._train_step(batch)
            loss_sum += self.loss * batch[2]
            rows_sum += batch[2]
            self.global_step += 1
            self.callbacks.call("after_train_iter", self)
            elapsed = time.monotonic() - started
            self.progress = {"step": fit_steps + self.batch_idx + 1, "fit_step": fit_steps + self.batch_idx + 1,
                             "loss": loss_sum / max(rows_sum, 1), "samples_per_s": rows_sum * self.world_size / max(elapsed, 1e-9),
                             "first_step_at": self.progress.get("first_step_at") or time.time()}
            self._publish_progress()
        if self.scheduler is not None:
            self.scheduler.step()
        self._sync_buffers()
        total_loss, total_rows = self._sum([loss_sum, float(rows_sum)])
        self.epoch += 1
        self.epoch_stats = {"epoch": self.epoch, "num_samples": int(total_rows), "train_loss": total_loss / total_rows}
        if val_key is not None:
            self.epoch_stats.update({f"val_{k}" if not k.startswith("val_") else k: v
                                     for k, v in self.validate(val_key, batch_size).items() if k != "num_samples"})
        self.epoch_stats["epoch_time_s"] = time.monotonic() - started
        self.callbacks.call("after_train_epoch", self)
        return dict(self.epoch_stats)

    def _publish_progress(self) -> None:
        """Send the progress snapshot to the driver's display, at most a few times a second."""
        now = time.monotonic()
        if now - self._published_at >= _PUBLISH_INTERVAL_S:
            self._published_at = now
            self.info.publish_progress(dict(self.progress))

    def first_step_at(self) -> Optional[float]:
        return self.progress.get("first_step_at")

    # -- evaluation -------------------------------------------------------------------------------

    def validate(self, key: str, batch_size: int) -> dict[str, Any]:
        """Loss and metrics over the feed ``key``, aggregated over all workers."""
        feed = self.feeds[key]
        self.model.eval()
        self.metrics.reset()
        self.callbacks.call("before_val_epoch", self)
        loss_sum, rows_sum = 0.0, 0
        with torch.no_grad():
            for self.batch_idx, batch in enumerate(feed.eval_batches(batch_size)):
                inputs, target, rows = self._cast(batch)
                if not rows:
                    continue
                self.callbacks.call("before_val_iter", self)
                output = self.model(*inputs)
                if target is not None:
                    target = self._target(output, target)
                    if self.loss_fn is not None:
                        loss_sum += float(self.loss_fn(output, target).item()) * rows
                    self.metrics.update(output, target, rows)
                rows_sum += rows
                self.callbacks.call("after_val_iter", self)
        total_loss, total_rows = self._sum([loss_sum, float(rows_sum)])
        stats: dict[str, Any] = {"num_samples": int(total_rows)}
        if self.loss_fn is not None:
            stats["val_loss"] = total_loss / max(total_rows, 1)
        stats.update(self.metrics.compute(int(total_rows), self._sum))
        self.callbacks.call("after_val_epoch", self)
        return stats
