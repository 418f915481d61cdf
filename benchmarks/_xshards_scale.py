"""The scale curve of ``bench_xshards.py --scale``: wall time and peak memory of the whole pipeline
as the rows grow, per system.

Each (system, rows) case runs in a fresh child process (``bench_xshards.py --scale-case SYSTEM``),
so no case inherits another's heap, JIT or Spark workers. The parent samples the RSS of the child's
whole process tree every 50 ms (driver Python, Spark's JVM, Spark's Python workers, anything else)
and keeps every process's peak; the child reports the pipeline's wall time, measured after Spark
started and after a warm-up on one file, and the pipeline's result on its last stdout line.

Files hold ``ROWS_PER_FILE`` rows at every size, so zoo_lite's partitions keep their size and only
their number grows: a system that streams partitions should keep a flat per-process peak.

Every run saves its cases in ``benchmarks/xshards_scale.json`` and draws the curves from them into
the documentation's ``docs/images/xshards_scale.png``; ``--scale-replot`` draws them again from the
saved cases without measuring.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

import _xshards_pipeline as pipeline
from _harness import CpuWatch, heading, last_json, load_line, log, machine_facts, ship_to_workers, timed, zoo_lite_revision
from _plots import IMAGES, Line, Panel, draw_lines, load_numbers, run_facts, save_numbers
from _xshards_pipeline import LIBRARIES, BenchConfig, PipelineResult

if TYPE_CHECKING:
    import psutil

ROWS_PER_FILE = 250_000
DEFAULT_ROWS = (1_000_000, 5_000_000, 20_000_000)
SYSTEMS = {  # command-line name -> the label the rest of bench_xshards uses
    "zoo-spark": pipeline.ZOO_SPARK,
    "zoo-pandas": pipeline.ZOO_PANDAS,
    "pandas": pipeline.PANDAS,
    "dask": pipeline.DASK,
}
ZOO_SYSTEMS = ("zoo-spark", "zoo-pandas")
ROLES = ("driver", "spark jvm", "python worker", "other")
SAMPLE_INTERVAL_S = 0.05
LINGER_GRACE_S = 30.0  # a JVM may still be shutting down when the child python has exited
TARGET_MEMORY_RATIO = 1 / 3
SCRIPT = Path(__file__).resolve().parent / "bench_xshards.py"
NUMBERS = Path(__file__).resolve().parent / "xshards_scale.json"
MB = 1e6


# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScaleOptions:
    """What ``--scale`` measures, or, with ``case`` set, the one case a child process runs.

    Attributes
    ----------
    rows : tuple of int
        Total CSV rows of each size, measured in ascending order.
    systems : tuple of str
        Keys of ``SYSTEMS``, measured in this order at every size.
    timeout_s : float
        Longest wait for one case's child process.
    plot : Path
        Where the PNG of the curves is written.
    case : str, optional
        In a child process: the system to run on ``BenchConfig.rows`` rows.
    replot : bool
        Measure nothing: draw ``plot`` again from the cases the last run saved in ``NUMBERS``.
    """

    rows: tuple[int, ...] = DEFAULT_ROWS
    systems: tuple[str, ...] = tuple(SYSTEMS)
    timeout_s: float = 1800.0
    plot: Path = IMAGES / "xshards_scale.png"
    case: Optional[str] = None
    replot: bool = False

    def __post_init__(self) -> None:
        if not self.rows or min(self.rows) < 1:
            raise ValueError(f"--scale-rows {list(self.rows)} must be one or more positive integers")
        if self.timeout_s <= 0:
            raise ValueError(f"--scale-timeout={self.timeout_s} must be positive")


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--scale`` and its options (and the internal ``--scale-case``) to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        bench_xshards' parser.
    """
    defaults = ScaleOptions()
    group = parser.add_argument_group("scale curve (--scale)")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--scale", action="store_true", help="instead of the benchmark: wall time and per-process peak RSS of the "
                      f"whole pipeline at each --scale-rows size, each case in a fresh process, {ROWS_PER_FILE:_} rows per CSV file")
    mode.add_argument("--scale-case", choices=list(SYSTEMS), help=argparse.SUPPRESS)  # a child of --scale: one case, JSON out
    mode.add_argument("--scale-replot", action="store_true", help="measure nothing: draw the scale curve (--plot) again from the "
                      f"cases the last --scale run saved in {NUMBERS.relative_to(SCRIPT.parent.parent)}")
    group.add_argument("--scale-rows", type=int, nargs="+", help=f"sizes in rows (default {' '.join(str(n) for n in defaults.rows)})")
    group.add_argument("--scale-systems", nargs="+", choices=list(SYSTEMS), help=f"systems to measure (default all: {' '.join(SYSTEMS)})")
    group.add_argument("--scale-timeout", type=float, help=f"seconds one case may take, Spark start-up included (default {defaults.timeout_s:.0f})")
    group.add_argument("--plot", type=Path, help=f"PNG of the curves (default {defaults.plot.relative_to(SCRIPT.parent.parent)})")


def scale_options(args: dict[str, Any]) -> Optional[ScaleOptions]:
    """Take the scale arguments out of ``args``; the options if ``--scale`` or ``--scale-case`` was given.

    Parameters
    ----------
    args : dict
        ``vars()`` of the parsed namespace; the scale keys are removed from it.

    Returns
    -------
    ScaleOptions or None
        None for an ordinary benchmark run.

    Raises
    ------
    ValueError
        A scale option is invalid, or given without ``--scale``.
    """
    scale, case, replot = args.pop("scale"), args.pop("scale_case"), args.pop("scale_replot")
    chosen = {name: value for name, value in (("rows", args.pop("scale_rows")), ("systems", args.pop("scale_systems")),
                                              ("timeout_s", args.pop("scale_timeout")), ("plot", args.pop("plot"))) if value is not None}
    if not scale and case is None and not replot:
        if chosen:
            raise ValueError(f"--scale-rows, --scale-systems, --scale-timeout and --plot need --scale (got {sorted(chosen)})")
        return None
    for name in ("rows", "systems"):
        if name in chosen:
            chosen[name] = tuple(dict.fromkeys(sorted(chosen[name]) if name == "rows" else chosen[name]))
    return ScaleOptions(case=case, replot=replot, **chosen)


def sized_config(config: BenchConfig, rows: int) -> BenchConfig:
    """``config`` for ``rows`` rows in files of at most ``ROWS_PER_FILE`` rows, partitioned by key
    into as many partitions as files, so every partition keeps its size as the data grows."""
    files = sized_config_files(rows)
    return replace(config, rows=rows, files=files, num_partitions=files)


def sized_config_files(rows: int) -> int:
    """CSV files (and partition_by partitions) of a ``rows``-row case."""
    return max(1, math.ceil(rows / ROWS_PER_FILE))


# ---------------------------------------------------------------------------------------------
# The child: one system on one size
# ---------------------------------------------------------------------------------------------

def existing_files(config: BenchConfig) -> list[str]:
    """The CSV files the parent generated for ``config`` (without importing pyarrow, which would
    count in the driver's memory).

    Raises
    ------
    FileNotFoundError
        The parent did not generate them.
    """
    folder = pipeline.data_folder(config)
    files = sorted(str(path) for path in folder.glob("part-*.csv"))
    if len(files) != config.files or not (folder / "_params.json").exists():
        raise FileNotFoundError(f"expected {config.files} CSV files in {folder}, found {len(files)}: run with --scale, which generates them")
    return files


def start_engine(system: str, config: BenchConfig) -> Callable[[], None]:
    """Start Spark for the zoo_lite systems, as the benchmark does; returns how to stop it."""
    if system not in ZOO_SYSTEMS:
        return lambda: None
    from zoo_lite import init_orca_context, stop_orca_context

    ship_to_workers(pipeline)
    init_orca_context(cluster_mode="local", cores=config.cores, memory=config.memory)
    return stop_orca_context


def run_system(system: str, files: list[str], zoo_path: "str | list[str]", num_partitions: int) -> PipelineResult:
    """The whole pipeline once; zoo_lite reads ``zoo_path`` (the folder), the others ``files``."""
    if system == "zoo-spark":
        return pipeline.zoo_pipeline(zoo_path, "spark", num_partitions)
    if system == "zoo-pandas":
        return pipeline.zoo_pipeline(zoo_path, "pandas", num_partitions)
    if system == "pandas":
        return pipeline.pandas_pipeline(files, num_partitions)
    return pipeline.dask_pipeline(files, num_partitions)


def run_case(config: BenchConfig, system: str) -> int:
    """Run one case in this (child) process and print its measurement as JSON on the last stdout line.

    Parameters
    ----------
    config : BenchConfig
        Rows, files, data folder, partitions and Spark memory of the case.
    system : str
        A key of ``SYSTEMS``.

    Returns
    -------
    int
        The exit status, 0.
    """
    files = existing_files(config)
    started = time.perf_counter()
    stop = start_engine(system, config)
    try:
        run_system(system, files[:1], files[:1], config.num_partitions)  # warm-up: imports, JIT, Python workers
        startup_s = time.perf_counter() - started
        pipeline_s, result = timed(lambda: run_system(system, files, str(pipeline.data_folder(config)), config.num_partitions))
    finally:
        stop()
    driver_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
    print(json.dumps({"system": system, "rows": config.rows, "pipeline_s": pipeline_s, "startup_s": startup_s,
                      "locations": result.locations, "result_rows": result.rows, "driver_maxrss": driver_peak}), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The parent: sampling a child's process tree
# ---------------------------------------------------------------------------------------------

@dataclass
class ProcessPeak:
    """One process of a case's tree: its role, command name and peak RSS in bytes."""

    role: str
    name: str
    peak_rss: int = 0


def process_role(process: "psutil.Process", driver_pid: int) -> Optional[tuple[str, str]]:
    """(role, short name) of a process in a case's tree, re-checked every sample because
    spark-submit is a shell script that later ``exec``s java under the same pid; None while its
    command line is empty (an exited worker not yet reaped), when its last role stands."""
    if process.pid == driver_pid:
        return "driver", "python"
    cmdline = process.cmdline()
    if not cmdline:
        return None
    program = os.path.basename(cmdline[0])
    if program == "java":
        return "spark jvm", "java"
    if any(part.startswith("pyspark.daemon") or part.startswith("pyspark.worker") for part in cmdline):
        return "python worker", "pyspark.daemon"
    return "other", program


@dataclass(frozen=True)
class Reading:
    """One process in one sample."""

    key: tuple[int, float]  # (pid, create time): a reused pid is another process
    process: "psutil.Process"
    ppid: int
    rss: int
    vms: int
    identity: Optional[tuple[str, str]]


def shares_parent_memory(reading: Reading, parent: Optional[Reading]) -> bool:
    """Whether a process still shows its parent's address space: the JVM starts programs with
    posix_spawn (vfork), whose child reports the whole JVM's RSS until it execs, and a fork that
    has not written yet owns nothing. Such readings are the parent's memory, counted there."""
    if parent is None:
        return False
    return reading.vms == parent.vms and abs(reading.rss - parent.rss) <= 0.02 * parent.rss


class TreeSampler:
    """Samples in a thread the RSS of a process and all its descendants, re-listing them every
    sample (Spark starts its JVM and workers later), and keeps per-process, per-role and total peaks.

    Parameters
    ----------
    root_pid : int
        The child process (the case's driver).
    interval_s : float
        Time between samples.
    """

    def __init__(self, root_pid: int, interval_s: float = SAMPLE_INTERVAL_S) -> None:
        import psutil

        self.root = psutil.Process(root_pid)
        self.interval_s = interval_s
        self.peaks: dict[tuple[int, float], ProcessPeak] = {}
        self.sum_peak = 0
        self.role_sum_peaks: dict[str, int] = dict.fromkeys(ROLES, 0)
        self.samples = 0
        self._seen: dict[tuple[int, float], "psutil.Process"] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-sampler", daemon=True)

    def start(self) -> "TreeSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def processes(self) -> list["psutil.Process"]:
        """Every process seen in the tree so far, and the tree's current members."""
        with self._lock:
            self._discover()
            return list(self._seen.values())

    def _discover(self) -> None:
        import psutil

        try:
            found = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:  # the root has exited; its orphans stay in _seen
            found = []
        for process in found:
            try:
                self._seen.setdefault((process.pid, process.create_time()), process)
            except psutil.Error:
                continue

    def _read_all(self) -> list[Reading]:
        import psutil

        with self._lock:
            self._discover()
            members = list(self._seen.items())
        readings = []
        for key, process in members:
            try:
                memory = process.memory_info()
                readings.append(Reading(key, process, process.ppid(), memory.rss, memory.vms, process_role(process, self.root.pid)))
            except psutil.Error:  # exited between listing and reading
                continue
        return readings

    def _sample_once(self) -> None:
        total, by_role = 0, dict.fromkeys(ROLES, 0)
        readings = self._read_all()
        by_pid = {reading.key[0]: reading for reading in readings}
        for reading in readings:
            if shares_parent_memory(reading, by_pid.get(reading.ppid)):
                continue
            peak = self.peaks.setdefault(reading.key, ProcessPeak("other", reading.process.name()))
            if reading.identity is not None:
                peak.role, peak.name = reading.identity
            peak.peak_rss = max(peak.peak_rss, reading.rss)
            total += reading.rss
            by_role[peak.role] += reading.rss
        self.sum_peak = max(self.sum_peak, total)
        for role, rss in by_role.items():
            self.role_sum_peaks[role] = max(self.role_sum_peaks[role], rss)
        self.samples += 1

    def _run(self) -> None:
        while True:
            self._sample_once()
            if self._stop.wait(self.interval_s):
                return


def end_tree(processes: Iterable["psutil.Process"], grace_s: float) -> list[str]:
    """Wait up to ``grace_s`` for the processes to exit, then kill the rest (by their own pid and
    start time, so a reused pid is never hit).

    Returns
    -------
    list of str
        ``name[pid]`` of the processes that had to be killed.
    """
    import psutil

    alive = [process for process in processes if process.is_running()]
    _, alive = psutil.wait_procs(alive, timeout=grace_s) if grace_s > 0 else ([], alive)
    killed = []
    for process in alive:
        try:
            name = process.name()
            process.kill()
            killed.append(f"{name}[{process.pid}]")
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=10)
    return killed


# ---------------------------------------------------------------------------------------------
# The parent: running one case
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CaseResult:
    """One (system, rows) case: the child's timing and result, the tree's memory peaks."""

    system: str
    rows: int
    csv_bytes: int
    pipeline_s: float
    startup_s: float
    result: PipelineResult
    processes: tuple[ProcessPeak, ...]
    sum_peak: int
    role_sum_peaks: dict[str, int] = field(default_factory=dict)

    @property
    def largest(self) -> ProcessPeak:
        return max(self.processes, key=lambda peak: peak.peak_rss)

    def role_peak(self, role: str) -> int:
        """The largest single-process peak RSS of ``role`` (0 if the case had no such process)."""
        return max((peak.peak_rss for peak in self.processes if peak.role == role), default=0)

    def role_count(self, role: str) -> int:
        return sum(peak.role == role for peak in self.processes)


def case_command(system: str, config: BenchConfig) -> list[str]:
    """The child's command line: this benchmark, re-invoked for one case."""
    return [sys.executable, str(SCRIPT), "--scale-case", system, "--rows", str(config.rows), "--files", str(config.files),
            "--data-dir", str(config.data_dir), "--memory", config.memory, "--partitions", str(config.num_partitions)]


def pump(stream: IO[str], keep: "collections.deque[str] | list[str]", echo: Optional[IO[str]]) -> threading.Thread:
    """Read ``stream`` to its end in a thread, keeping its lines (and echoing them, if asked)."""

    def run() -> None:
        for line in stream:
            keep.append(line)
            if echo is not None:
                echo.write("    | " + line)
                echo.flush()

    thread = threading.Thread(target=run, name="child-output", daemon=True)
    thread.start()
    return thread


def run_child(system: str, config: BenchConfig, timeout_s: float) -> CaseResult:
    """Run one case in a fresh child process while sampling its process tree's memory.

    Parameters
    ----------
    system : str
        A key of ``SYSTEMS``.
    config : BenchConfig
        The case's size (``sized_config``).
    timeout_s : float
        Longest wait for the child; after it, or on any error, its whole tree is killed.

    Returns
    -------
    CaseResult

    Raises
    ------
    RuntimeError
        The child timed out, failed, or printed no result; the message holds its stderr's tail.
    """
    errors: collections.deque[str] = collections.deque(maxlen=40)
    output: list[str] = []
    child = subprocess.Popen(case_command(system, config), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    sampler = TreeSampler(child.pid).start()
    readers = [pump(child.stdout, output, None), pump(child.stderr, errors, sys.stderr)]  # type: ignore[arg-type]
    finished = False
    try:
        try:
            child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as error:
            raise RuntimeError(f"{system} on {config.rows:,} rows did not finish within {timeout_s:.0f} s (--scale-timeout); "
                               f"its process tree was killed. Last stderr lines:\n{''.join(errors)}") from error
        finished = True
    finally:
        sampler.stop()
        killed = end_tree(sampler.processes(), LINGER_GRACE_S if finished else 0.0)
        for reader in readers:
            reader.join(timeout=10)
    if killed:
        log(f"killed what {system} left running after its exit: {', '.join(killed)}")
    if child.returncode != 0:
        raise RuntimeError(f"{system} on {config.rows:,} rows failed with exit status {child.returncode}: "
                           f"{' '.join(case_command(system, config))}\nLast stderr lines:\n{''.join(errors)}")
    try:
        report = last_json(output)
    except ValueError as error:
        raise RuntimeError(f"{system} on {config.rows:,} rows printed no JSON result; stdout tail:\n{''.join(output[-10:])}") from error
    return case_result(system, config, report, sampler)


def case_result(system: str, config: BenchConfig, report: dict[str, Any], sampler: TreeSampler) -> CaseResult:
    """Join the child's report with the sampled peaks; the driver's peak is also taken from its own
    ``getrusage``, which sees spikes shorter than the sampling interval."""
    peaks = [replace(peak) for peak in sampler.peaks.values()]
    driver = next((peak for peak in peaks if peak.role == "driver"), None)
    if driver is not None:
        driver.peak_rss = max(driver.peak_rss, int(report["driver_maxrss"]))
    files = existing_files(config)
    return CaseResult(
        system=system, rows=config.rows, csv_bytes=sum(os.path.getsize(name) for name in files),
        pipeline_s=float(report["pipeline_s"]), startup_s=float(report["startup_s"]),
        result=pipeline.PipelineResult(int(report["locations"]), int(report["result_rows"])),
        processes=tuple(peaks), sum_peak=max(sampler.sum_peak, driver.peak_rss if driver else 0),
        role_sum_peaks=dict(sampler.role_sum_peaks),
    )


def check_agreement(cases: Sequence[CaseResult], rows: int) -> None:
    """Every system must compute the expected result at ``rows``, hence agree with each other.

    Raises
    ------
    AssertionError
        A system's result differs.
    """
    expected = pipeline.PipelineResult(len(pipeline.CITIES), rows)
    for case in cases:
        pipeline.check_result(f"{SYSTEMS[case.system]} on {rows:,} rows", case.result, expected)
    if len({case.result for case in cases}) > 1:
        raise AssertionError(f"systems disagree on {rows:,} rows: " + ", ".join(f"{case.system}={case.result}" for case in cases))


# ---------------------------------------------------------------------------------------------
# Report: tables, targets, plot
# ---------------------------------------------------------------------------------------------

def mb(value: int) -> str:
    return f"{value / MB:,.0f}"


def size_table(cases: Sequence[CaseResult]) -> list[str]:
    """One size: per system its pipeline seconds and memory peaks."""
    lines = ["| system | pipeline s | start-up s (Spark + warm-up) | largest per-process peak RSS MB | its role | "
             "sum-of-processes peak MB | processes |", "|---|---:|---:|---:|---|---:|---:|"]
    for case in cases:
        largest = case.largest
        lines.append(f"| {SYSTEMS[case.system]} | {case.pipeline_s:.2f} | {case.startup_s:.2f} | {mb(largest.peak_rss)} | "
                     f"{largest.role} | {mb(case.sum_peak)} | {len(case.processes)} |")
    return lines


def role_table(cases: Sequence[CaseResult]) -> list[str]:
    """Per zoo_lite case, the largest process of each role (and for workers, the peak of their sum)."""
    lines = ["| system | rows | CSV MB (per file) | driver MB | spark jvm MB | python worker MB: largest (sum peak, processes) | other MB |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        if case.system not in ZOO_SYSTEMS:
            continue
        files = max(1, math.ceil(case.rows / ROWS_PER_FILE))
        workers = f"{mb(case.role_peak('python worker'))} ({mb(case.role_sum_peaks.get('python worker', 0))}, {case.role_count('python worker')})"
        lines.append(f"| {SYSTEMS[case.system]} | {case.rows:,} | {mb(case.csv_bytes)} ({case.csv_bytes / files / MB:.0f}) | "
                     f"{mb(case.role_peak('driver'))} | {mb(case.role_peak('spark jvm'))} | {workers} | {mb(case.role_peak('other'))} |")
    return lines


def target_lines(cases: Sequence[CaseResult]) -> list[str]:
    """The memory target at the largest size, for each zoo_lite system measured against pandas."""
    largest_rows = max(case.rows for case in cases)
    at_top = {case.system: case for case in cases if case.rows == largest_rows}
    if "pandas" not in at_top:
        return ["- memory target not evaluated: pandas was not measured (--scale-systems)"]
    pandas_peak = at_top["pandas"].largest.peak_rss
    lines = []
    for zoo in ZOO_SYSTEMS:
        if zoo not in at_top:
            continue
        zoo_peak = at_top[zoo].largest.peak_rss
        ratio = zoo_peak / pandas_peak
        verdict = "PASS" if ratio <= TARGET_MEMORY_RATIO else "MISS"
        lines.append(f"- at the largest size ({largest_rows:,} rows), {SYSTEMS[zoo]}'s largest per-process peak RSS <= 1/3 of pandas': "
                     f"{mb(zoo_peak)} MB ({at_top[zoo].largest.role}) / {mb(pandas_peak)} MB = {ratio:.2f} (bar <= {TARGET_MEMORY_RATIO:.2f}): **{verdict}**")
    return lines


def memory_lines(cases: Sequence[CaseResult]) -> list[str]:
    """Where the memory goes at the largest size: pandas' peak per CSV byte, zoo_lite's per role
    beside the size of one file and of one partition_by output partition (both fixed)."""
    largest_rows = max(case.rows for case in cases)
    at_top = {case.system: case for case in cases if case.rows == largest_rows}
    lines = []
    if "pandas" in at_top:
        case = at_top["pandas"]
        lines.append(f"- pandas holds the whole table: its peak RSS {mb(case.largest.peak_rss)} MB is "
                     f"{case.largest.peak_rss / case.csv_bytes:.1f}x the {mb(case.csv_bytes)} MB of CSV it read")
    for zoo in ZOO_SYSTEMS:
        if zoo in at_top:
            case = at_top[zoo]
            files = sized_config_files(case.rows)
            roles = ", ".join(f"{role} {mb(case.role_peak(role))} MB" for role in ROLES if case.role_count(role))
            lines.append(f"- {SYSTEMS[zoo]} per role (largest process): {roles}; one CSV file is {case.csv_bytes / files / MB:.0f} MB, "
                         f"and partition_by makes {files} partitions of ~{case.rows // files:,} rows")
    return lines


def rows_label(rows: int) -> str:
    """200000 -> "200k", 20000000 -> "20M"."""
    if rows >= 1_000_000:
        return f"{rows / 1e6:g}M"
    return f"{rows / 1e3:g}k" if rows >= 1000 else str(rows)


def scale_numbers(cases: Sequence[CaseResult], command: str, load: tuple[tuple[float, ...], tuple[float, ...]]) -> dict[str, Any]:
    """What ``--scale`` saves: every case as measured (timings, each process's peak), with the
    command and the load average before and after the run."""
    return {"command": command, "date": time.strftime("%Y-%m-%d %H:%M %Z"), "rows_per_file": ROWS_PER_FILE,
            "load_average": {"before": load[0], "after": load[1]},
            "cases": [{"label": SYSTEMS[case.system], **asdict(case)} for case in cases]}


def largest_peak_mb(case: dict[str, Any]) -> float:
    """The largest per-process peak RSS of a saved case, in MB."""
    return max(process["peak_rss"] for process in case["processes"]) / MB


def draw_scale(numbers: dict[str, Any], path: Path) -> None:
    """Two panels against rows (log x), a line per system: the pipeline's seconds and the largest
    per-process peak RSS, with the memory target (1/3 of pandas' peak at the largest size) as a guide.

    Parameters
    ----------
    numbers : dict
        What ``scale_numbers`` made (or ``load_numbers`` read back).
    path : Path
        The PNG to write.
    """
    cases = numbers["cases"]
    times, memories = [], []
    for label in dict.fromkeys(case["label"] for case in cases):
        mine = sorted((case for case in cases if case["label"] == label), key=lambda case: case["rows"])
        rows = tuple(case["rows"] for case in mine)
        times.append(Line(label, rows, tuple(case["pipeline_s"] for case in mine)))
        memories.append(Line(label, rows, tuple(largest_peak_mb(case) for case in mine)))
    sizes = sorted({case["rows"] for case in cases})
    pandas_at_top = [largest_peak_mb(case) for case in cases if case["system"] == "pandas" and case["rows"] == sizes[-1]]
    guides = tuple((peak * TARGET_MEMORY_RATIO, f"target: 1/3 of pandas' peak at {rows_label(sizes[-1])} rows") for peak in pandas_at_top)
    draw_lines(path, f"bench_xshards --scale: read_csv -> transform_shard -> partition_by -> unique -> count, "
                     f"{numbers['rows_per_file']:,} rows per CSV file\n{run_facts(numbers)}",
               [(Panel("Whole pipeline wall time", "rows", "seconds"), times),
                (Panel("Largest per-process peak RSS", "rows", "MB", guides), memories)],
               [(rows, rows_label(rows)) for rows in sizes])


def repository_path(path: Path) -> str:
    """``path`` relative to the repository root when it is inside it, as the report shows it."""
    root = SCRIPT.parent.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def render_scale_report(config: BenchConfig, options: ScaleOptions, command: str, cases: Sequence[CaseResult],
                        facts: list[str], watch: CpuWatch, load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    """The markdown report: setup, a table per size, the targets, where the memory goes."""
    lines = [
        *heading("bench_xshards --scale", command),
        *facts,
        f"- data: 10 columns, {ROWS_PER_FILE:,} rows per CSV file; partition_by into as many partitions as files; zoo_lite on "
        f"`init_orca_context(cluster_mode=\"local\", cores={config.cores}, memory=\"{config.memory}\")`; pandas and dask start no Spark",
        "- each case in a fresh process, run once after a warm-up on one file; pipeline seconds exclude Spark start-up and the warm-up",
        f"- RSS of every process in the case's tree sampled every {SAMPLE_INTERVAL_S * 1000:.0f} ms (driver also by its own getrusage); "
        "the sum over processes counts pages shared by forked Python workers more than once",
        load_line(load[0], load[1], periods=True),
        f"- {watch.summary()}", "",
        "### Targets", "", *target_lines(cases), "",
        "### Where the memory goes", "", *memory_lines(cases), "",
    ]
    for rows in options.rows:
        at_size = [case for case in cases if case.rows == rows]
        lines += [f"### {rows:,} rows ({mb(at_size[0].csv_bytes)} MB of CSV in {math.ceil(rows / ROWS_PER_FILE)} files)", "", *size_table(at_size), ""]
    if any(case.system in ZOO_SYSTEMS for case in cases):
        lines += ["### zoo_lite per role, every size", "", *role_table(cases), ""]
    lines += [f"Plot: `{repository_path(options.plot)}`, drawn from the cases saved in `{repository_path(NUMBERS)}`", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

def measure_size(config: BenchConfig, options: ScaleOptions, rows: int) -> list[CaseResult]:
    """Every system on ``rows`` rows, each in its own child, after the data is generated and cached."""
    sized = sized_config(config, rows)
    log(f"== {rows:,} rows in {sized.files} files: {pipeline.data_folder(sized)}")
    pipeline.warm_page_cache(pipeline.ensure_data(sized))  # no system pays for a cold disk
    cases = []
    for system in options.systems:
        log(f"-- {SYSTEMS[system]} on {rows:,} rows")
        case = run_child(system, sized, options.timeout_s)
        log(f"{SYSTEMS[system]} on {rows:,} rows: {case.pipeline_s:.2f} s, largest process {mb(case.largest.peak_rss)} MB "
                  f"({case.largest.role}), sum {mb(case.sum_peak)} MB, {case.result}")
        cases.append(case)
    check_agreement(cases, rows)
    return cases


def run_scale(config: BenchConfig, options: ScaleOptions, command: str) -> int:
    """``--scale``: measure every size and system, print the report, write the plot; in a child
    (``--scale-case``), run that one case.

    Parameters
    ----------
    config : BenchConfig
        bench_xshards' configuration; its rows and files are replaced per size.
    options : ScaleOptions
        The sizes, systems, timeout and plot path.
    command : str
        The command line, for the report.

    Returns
    -------
    int
        The exit status, 0 (a failed or disagreeing case raises).
    """
    if options.case is not None:
        return run_case(config, options.case)
    if options.replot:
        draw_scale(load_numbers(NUMBERS), options.plot)
        log(f"drew {options.plot} from {NUMBERS}")
        return 0
    load_before, facts_revision, watch = os.getloadavg(), zoo_lite_revision(), CpuWatch().start()
    try:
        cases = [case for rows in options.rows for case in measure_size(config, options, rows)]
    finally:
        watch.stop()
    load = (load_before, os.getloadavg())
    save_numbers(NUMBERS, scale_numbers(cases, command, load))
    draw_scale(load_numbers(NUMBERS), options.plot)
    print(render_scale_report(config, options, command, cases, machine_facts(facts_revision, LIBRARIES), watch, load))
    return 0
