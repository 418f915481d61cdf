"""What the benchmark scripts share: timed runs, their best and median, progress lines, and the
report's command line."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence


@dataclass
class Timing:
    """Seconds of the timed runs of one case."""

    seconds: list[float] = field(default_factory=list)

    def add(self, values: Sequence[float]) -> None:
        self.seconds.extend(values)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def worst(self) -> float:
        return max(self.seconds)

    def cell(self, digits: int = 3) -> str:
        """``best (median)`` for a results table, ``-`` without runs."""
        return f"{self.best:.{digits}f} ({self.median:.{digits}f})" if self.seconds else "-"

    def spread_cell(self, digits: int = 2) -> str:
        """``median (best–worst)`` for a results table, ``-`` without runs."""
        if not self.seconds:
            return "-"
        return f"{self.median:.{digits}f} ({self.best:.{digits}f}–{self.worst:.{digits}f})"


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds ``func()`` took (after a garbage collection, so that none falls inside), and its result."""
    gc.collect()
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def command_line(script: str, argv: Optional[Sequence[str]]) -> str:
    """The command that reproduces this run, for the report."""
    return " ".join([".venv/bin/python", f"benchmarks/{script}", *(sys.argv[1:] if argv is None else argv)])


def log(message: str) -> None:
    """A timestamped progress line on stderr (the report itself goes to stdout)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def epoch_timer(path: str) -> Any:
    """A Keras callback appending each epoch's wall time, in seconds, as a line of ``path``.

    A ``LambdaCallback`` of closures rather than a Callback subclass, so that this module needs no
    Keras import; zoo_lite ships it to the workers and runs it on rank 0 only.
    """
    import keras

    began: dict[str, float] = {}

    def on_epoch_end(epoch: int, logs: Optional[dict[str, Any]] = None) -> None:
        elapsed = time.perf_counter() - began["at"]
        with open(path, "a") as handle:
            handle.write(f"{elapsed:.6f}\n")

    return keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs=None: began.update(at=time.perf_counter()),
                                          on_epoch_end=on_epoch_end)


def read_epoch_times(path: str) -> list[float]:
    with open(path) as handle:
        return [float(line) for line in handle if line.strip()]
