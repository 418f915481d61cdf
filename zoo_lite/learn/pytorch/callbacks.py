"""Callbacks for the PyTorch Estimator: Orca's ``Callback`` hooks, ``ModelCheckpoint`` and ``TensorBoard``.

They run on the workers (see :mod:`zoo_lite.learn.base.callbacks`); the ones that write files do
so on rank 0 only, and their files land at ``filepath`` / ``log_dir`` on the driver's host (a
relative path is the driver's): where rank 0 runs on another host that does not see the path,
zoo_lite copies them there after every epoch (:mod:`zoo_lite.learn.base.file_relay`). A callback
of your own names the attributes holding its output paths in ``output_paths`` for the same.
"""

from __future__ import annotations

from typing import Any, Optional

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.callbacks import Callback
from zoo_lite.learn.base.checkpoints import checkpoint_path, write_atomically

__all__ = ["Callback", "ModelCheckpoint", "TensorBoard"]


class ModelCheckpoint(Callback):
    """Save model, optimizer, scheduler and epoch every ``interval`` epochs (or steps).

    Parameters
    ----------
    filepath : str
        A directory (files ``epoch=<n>.ckpt`` go there) or a path with ``{epoch}`` in it.
    save_weights_only : bool, default False
        Save only the model's state dict.
    by_epoch : bool, default True
        Count ``interval`` in epochs; False counts steps (files ``epoch=<n>`` use the step then).
    interval : int, default 1

    Examples
    --------
    >>> import tempfile
    >>> checkpoint = ModelCheckpoint(tempfile.mkdtemp(), interval=2)
    >>> checkpoint.interval
    2

    A checkpoint is loaded with ``estimator.load_checkpoint(Estimator.latest_checkpoint(folder))``.
    """

    output_paths = ("filepath",)

    def __init__(self, filepath: str, save_weights_only: bool = False, by_epoch: bool = True, interval: int = 1) -> None:
        if not isinstance(filepath, str) or not filepath:
            raise InvalidArgumentError(f"ModelCheckpoint(filepath={filepath!r}) needs a directory or a path with {{epoch}}")
        if not isinstance(interval, int) or interval < 1:
            raise InvalidArgumentError(f"ModelCheckpoint(interval={interval!r}) must be a positive int")
        self.filepath = filepath
        self.save_weights_only = save_weights_only
        self.by_epoch = by_epoch
        self.interval = interval

    def _save(self, runner: Any, number: int) -> None:
        import io

        import torch

        if runner.rank != 0:
            return
        if self.save_weights_only:
            buffer = io.BytesIO()
            torch.save(runner.model.state_dict(), buffer)
            state = buffer.getvalue()
        else:
            state = runner.get_state()
        write_atomically(checkpoint_path(self.filepath, number), state)

    def after_train_epoch(self, runner: Any) -> None:
        if self.by_epoch and runner.epoch % self.interval == 0:
            self._save(runner, runner.epoch)

    def after_train_iter(self, runner: Any) -> None:
        if not self.by_epoch and runner.global_step % self.interval == 0:
            self._save(runner, runner.global_step)


class TensorBoard(Callback):
    """Write TensorBoard event files: the epoch's statistics, and the training loss every
    ``freq`` steps (``"epoch"`` for none).

    Examples
    --------
    >>> import tempfile
    >>> TensorBoard(tempfile.mkdtemp(), freq=10).freq
    10
    """

    output_paths = ("log_dir",)

    def __init__(self, log_dir: str, freq: Any = "epoch") -> None:
        if not (freq == "epoch" or (isinstance(freq, int) and freq > 0)):
            raise InvalidArgumentError(f"TensorBoard(freq={freq!r}) must be 'epoch' or a positive int")
        self.log_dir = log_dir
        self.freq = freq
        self._writer: Optional[Any] = None

    def before_run(self, runner: Any) -> None:
        if runner.rank == 0:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(self.log_dir)

    def after_train_iter(self, runner: Any) -> None:
        if self._writer is not None and self.freq != "epoch" and runner.global_step % self.freq == 0:
            self._writer.add_scalar("train/step_loss", runner.loss, runner.global_step)

    def after_train_epoch(self, runner: Any) -> None:
        if self._writer is not None:
            for name, value in runner.epoch_stats.items():
                if name not in ("epoch", "num_samples") and isinstance(value, (int, float)):
                    self._writer.add_scalar(f"epoch/{name}", value, runner.epoch)
            self._writer.flush()

    def after_run(self, runner: Any) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_writer": None}
