"""Progress on the driver: a tqdm bar fed by rank 0 while an epoch runs, with one summary line per
finished epoch above it, or one log line per epoch."""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from zoo_lite.waiting import printing_logger

__all__ = ["ProgressReporter", "format_stats", "learn_logger"]


def learn_logger(level: int = logging.INFO) -> logging.Logger:
    """The ``zoo_lite.learn`` logger, printing to stderr unless the application configured logging."""
    return printing_logger("zoo_lite.learn", level)


def format_stats(stats: dict[str, Any]) -> str:
    return " ".join(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}" for key, value in stats.items())


class ProgressReporter:
    """Shows one ``fit`` on the driver.

    With ``use_tqdm`` a bar counts global steps and shows samples/s and rank 0's running loss,
    read from the snapshots rank 0 publishes while the epoch runs, and each finished epoch's
    aggregated stats are written as one line above the bar (as Keras' ``verbose=1`` does);
    otherwise each finished epoch is one log line, unless ``quiet``. The bar never moves back:
    a snapshot published before the last epoch ended can arrive after it.

    Examples
    --------
    >>> reporter = ProgressReporter(False, total_steps=4, poll_progress=dict, quiet=True)
    >>> reporter.epoch_done({"epoch": 1, "loss": 0.5}, steps_done=2); reporter.close()
    >>> format_stats({"epoch": 1, "loss": 0.123456})
    'epoch=1 loss=0.1235'
    """

    def __init__(self, use_tqdm: bool, total_steps: int, poll_progress: Callable[[], dict[str, Any]],
                 logger: Optional[logging.Logger] = None, quiet: bool = False) -> None:
        self.logger = logger or learn_logger()
        self.quiet = quiet
        self.poll_progress = poll_progress
        self.bar = None
        self._postfix: dict[str, str] = {}
        self._step_offset = 0
        if use_tqdm:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total_steps, unit="step", desc="fit")

    def poll(self) -> None:
        """Called while an epoch runs: move the bar to rank 0's step."""
        if self.bar is None:
            return
        progress = self.poll_progress()
        if "step" in progress:
            self.bar.n = max(self.bar.n, self._step_offset + progress["step"])
            self._show(loss=progress.get("loss", float("nan")), samples_per_s=progress.get("samples_per_s", 0.0))
            self.bar.refresh()

    def _show(self, **values: float) -> None:
        """Update the bar's postfix with these values, keeping the others."""
        assert self.bar is not None
        self._postfix.update({name: f"{value:.4f}" if name == "loss" else f"{value:.0f}" for name, value in values.items()})
        self.bar.set_postfix(self._postfix, refresh=False)

    def resume_at(self, steps_done: int) -> None:
        """A resumed fit's new workers count their steps from 0 again: add the steps already done."""
        self._step_offset = steps_done

    def epoch_done(self, stats: dict[str, Any], steps_done: int) -> None:
        if self.bar is not None:
            self.bar.n = max(self.bar.n, steps_done)
            self.bar.write(f"epoch {format_stats(stats)}", file=self.bar.fp)
            if isinstance(stats.get("loss"), float):   # the epoch's aggregated loss, not rank 0's running one
                self._show(loss=stats["loss"])
            self.bar.refresh()
        elif not self.quiet:
            self.logger.info("epoch %s", format_stats(stats))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
