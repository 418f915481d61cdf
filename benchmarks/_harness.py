"""What every benchmark script shares, so that each ``bench_*.py`` holds only the claim it measures.

- Timing: ``Timing`` (the seconds of one case, their best and median, as table cells), ``timed``,
  progress lines on stderr (``log``), and Keras epoch timers.
- Interleaved rounds: each claim is a ratio against its reference measured in the same run, and the
  machine is shared and noisy, so the cases take turns round by round (``run_interleaved``), with an
  untimed warm-up first (``warm_up``).
- The report: every benchmark prints one markdown section for ``benchmarks/RESULTS.md``, headed by
  ``## name: date`` and the command that reproduces it (``heading``; the design-choice benchmarks
  print the command paragraph alone, ``command_paragraph``), with the machine's facts
  (``machine_facts``, ``zoo_lite_commit``), its load (``load_line``, ``CpuWatch``) and the targets
  table (``targets_table``).
- Cross-system runners: a reference that must run in its own process (plain Keras, Ray's own
  start-up) runs as a child Python whose result is a JSON line on its stdout (``run_python``;
  ``_xshards_scale.py`` reads its sampled children's the same way, ``last_json``); functions of the
  benchmarks folder are shipped by value to Spark's Python workers (``ship_to_workers``), which
  cannot import that folder.

The picture helpers are in ``_plots.py``, the training benchmarks' data and model in ``_mlp_data.py``.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping, Optional, Sequence

# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


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
    """The epoch times ``epoch_timer`` wrote to ``path``."""
    with open(path) as handle:
        return [float(line) for line in handle if line.strip()]


# ---------------------------------------------------------------------------------------------
# Interleaved rounds
# ---------------------------------------------------------------------------------------------

#: one run of a case: seconds per measure (a case may time several steps), and its result
Measured = tuple[dict[str, float], Any]
Case = Callable[[], Measured]
Results = dict[str, dict[str, Timing]]  # case -> measure -> timings


def timed_case(measure: str, func: Callable[[], Any]) -> Case:
    """A case timed whole, as one ``measure``; its result is what ``func`` returns."""

    def run() -> Measured:
        seconds, result = timed(func)
        return {measure: seconds}, result

    return run


def rotated(names: Sequence[str], round_index: int) -> list[str]:
    """``names`` in the order of round ``round_index``: rotated by one each round, so that a change
    in the machine's speed is spread over all cases rather than always hitting the same one."""
    shift = round_index % len(names) if names else 0
    return [*names[shift:], *names[:shift]]


def warm_up(cases: Mapping[str, Case]) -> dict[str, Any]:
    """Run each case once, untimed (JVM JIT, Python worker start-up, imports); their results."""
    results = {}
    for name, case in cases.items():
        seconds, results[name] = case()
        log(f"warm-up {name}: {sum(seconds.values()):.2f} s")
    return results


def run_interleaved(cases: Mapping[str, Case], repeat: int, rotate: bool = True,
                    check: Optional[Callable[[str, Any], None]] = None) -> Results:
    """Time every case ``repeat`` times, the cases taking turns round by round.

    Parameters
    ----------
    cases : mapping of str to Case
        Each case's name and how to run it once.
    repeat : int
        Rounds.
    rotate : bool
        Rotate the cases' order each round (``rotated``); otherwise they keep the mapping's order.
    check : callable, optional
        Called with each run's case name and result (to check it, or to keep it).

    Returns
    -------
    Results
        Per case, per measure, the seconds of every round.
    """
    results: Results = {name: {} for name in cases}
    names = list(cases)
    for round_index in range(repeat):
        for name in rotated(names, round_index) if rotate else names:
            seconds, result = cases[name]()
            if check is not None:
                check(name, result)
            for measure, value in seconds.items():
                results[name].setdefault(measure, Timing()).seconds.append(value)
            log(f"round {round_index + 1}/{repeat} {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()))
    return results


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------

def command_line(script: str, argv: Optional[Sequence[str]]) -> str:
    """The command that reproduces this run, for the report."""
    return " ".join([".venv/bin/python", f"benchmarks/{script}", *(sys.argv[1:] if argv is None else argv)])


def command_paragraph(command: str, note: str = "") -> str:
    """``Command: `...``` with, if given, a note on the run in brackets after it."""
    return f"Command: `{command}`" + (f" ({note})" if note else "")


def heading(title: str, command: str, note: str = "") -> list[str]:
    """The first lines of a benchmark's section of ``RESULTS.md``: ``## title: date`` and the command
    (``command_paragraph``)."""
    return [f"## {title}: {time.strftime('%Y-%m-%d %H:%M %Z')}", "", command_paragraph(command, note), ""]


def load_values(values: Sequence[float]) -> str:
    """Load averages as the reports write them: ``1.2, 0.9, 0.8``."""
    return ", ".join(f"{value:.1f}" for value in values)


def load_line(before: Sequence[float], after: Sequence[float], periods: bool = False) -> str:
    """The report's line on the load average before and after the run (with its periods named, if asked)."""
    return f"- load average{' (1, 5, 15 min)' if periods else ''} before: {load_values(before)}; after: {load_values(after)}"


def zoo_lite_commit() -> str:
    """The short commit of the working directory's repository (the zoo_lite being measured)."""
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def zoo_lite_revision() -> str:
    """The commit the measured zoo_lite comes from, and whether its files differ from it."""
    import zoo_lite

    package = Path(zoo_lite.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown commit"
    changed = git("status", "--porcelain", "--", str(package))
    return f"{package} at commit {commit}" + (" with uncommitted changes" if changed else "")


def machine_facts(revision_at_start: str, libraries: Sequence[str]) -> list[str]:
    """The report's lines on the machine, the measured zoo_lite (flagged if it changed during the
    run) and the versions of Python and of ``libraries`` (importable module names)."""
    import importlib

    meminfo, cpuinfo = Path("/proc/meminfo").read_text().splitlines(), Path("/proc/cpuinfo").read_text().splitlines()
    memory_kb = next((int(line.split()[1]) for line in meminfo if line.startswith("MemTotal")), 0)
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), platform.processor())
    versions = ", ".join(f"{name} {importlib.import_module(name).__version__}" for name in libraries)
    return [
        f"- machine: {os.cpu_count()} cores ({cpu}), {memory_kb / 2**20:.0f} GiB RAM, {platform.system()} {platform.release()}",
        f"- zoo_lite: {revision_at_start}" + ("" if zoo_lite_revision() == revision_at_start else " (CHANGED during the run: re-run)"),
        f"- Python {platform.python_version()}, {versions}",
    ]


class CpuWatch:
    """Samples once a second the CPU used by this process tree and by everything else on the
    machine, so the report says how busy the machine was with other work during the run."""

    def __init__(self, interval_s: float = 1.0) -> None:
        self.interval_s = interval_s
        self.ours_s = self.others_s = self.steal_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-watch", daemon=True)
        self._started = time.perf_counter()
        self._wall_s = 0.0

    @staticmethod
    def _tree_cpu_s() -> float:
        import psutil

        total = 0.0
        me = psutil.Process()
        for process in [me, *me.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system + times.children_user + times.children_system
        return total

    @staticmethod
    def _machine_cpu_s() -> tuple[float, float]:
        import psutil

        times = psutil.cpu_times()
        busy = times.user + times.nice + times.system + times.irq + times.softirq
        return busy, times.steal

    def _sample(self) -> None:
        ours, (busy, steal) = self._tree_cpu_s(), self._machine_cpu_s()
        while not self._stop.wait(self.interval_s):
            ours_now, (busy_now, steal_now) = self._tree_cpu_s(), self._machine_cpu_s()
            mine = max(0.0, ours_now - ours)
            self.ours_s += mine
            self.others_s += max(0.0, (busy_now - busy) - mine)
            self.steal_s += max(0.0, steal_now - steal)
            ours, busy, steal = ours_now, busy_now, steal_now

    def start(self) -> "CpuWatch":
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._wall_s = time.perf_counter() - self._started

    def summary(self) -> str:
        cores = os.cpu_count() or 1
        wall = max(self._wall_s, 1e-9)
        return (f"CPU during the run: this benchmark {self.ours_s:.0f} CPU-s, other processes on the machine "
                f"{self.others_s:.0f} CPU-s ({self.others_s / wall:.2f} of {cores} cores on average), "
                f"hypervisor steal {self.steal_s:.0f} s, over {wall / 60:.1f} min")


#: a claim of a targets table: (claim, measured value, bar, whether it passed); a bar of "info" is context
TargetRow = tuple[str, Any, str, bool]


def targets_table(targets: Sequence[TargetRow], miss: str = "MISS") -> list[str]:
    """The ``### Targets`` table: a number is written with 2 decimals (a string as it is), an "info"
    row's result is ``-``, a failed one's ``miss``."""
    lines = ["| target | measured | bar | result |", "|---|---:|---|---|"]
    for claim, value, bar, ok in targets:
        shown = value if isinstance(value, str) else f"{value:.2f}"
        lines.append(f"| {claim} | {shown} | {bar} | {'-' if bar == 'info' else 'PASS' if ok else miss} |")
    return lines


# ---------------------------------------------------------------------------------------------
# Cross-system runners
# ---------------------------------------------------------------------------------------------

def ship_to_workers(*modules: ModuleType) -> None:
    """Pickle the functions of ``modules`` by value when Spark ships them: its Python workers cannot
    import the benchmarks folder. Imports pyspark, so call it only where Spark runs."""
    from pyspark import cloudpickle

    for module in modules:
        cloudpickle.register_pickle_by_value(module)


def run_python(args: Sequence[str], what: str, prefix: str = "", env: Optional[Mapping[str, str]] = None,
               timeout_s: Optional[float] = None) -> Any:
    """Run ``python *args`` in a child process (a reference that needs a process of its own) and
    return the JSON result it printed on its last result line (``last_json``).

    A child that printed its result has done its work: how a runtime's shutdown after it ended does
    not count.

    Raises
    ------
    RuntimeError
        The child printed no result; the message names ``what`` and holds its exit status and the
        tail of its output.
    """
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s,
                          env=None if env is None else dict(env))
    try:
        return last_json(done.stdout.splitlines(), prefix)
    except ValueError:
        raise RuntimeError(f"{what} failed (exit status {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}") from None


def last_json(lines: Sequence[str], prefix: str = "") -> Any:
    """The JSON value on the last line that holds one (after ``prefix``, where the child marks its
    result line with one).

    Raises
    ------
    ValueError
        No line holds one.
    """
    for line in reversed(lines):
        text = line.strip()
        if prefix and text.startswith(prefix):
            return json.loads(text[len(prefix):])
        if not prefix and text[:1] in ("{", "["):
            return json.loads(text)
    raise ValueError(f"no JSON line{f' starting with {prefix!r}' if prefix else ''}")
