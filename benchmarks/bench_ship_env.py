"""Benchmark: shipping a Python environment to bare executors (``penv_archive``, issue 44).

zoo_lite packs a venv (venv-pack2) or conda environment (conda-pack) into a cached ``.tar.gz``
(``zoo_lite.env_packing.pack_environment``) that ``init_orca_context(penv_archive=...)`` ships
with ``spark.archives``. Two environments are measured:

- E1, the project's own environment (the checkout's ``.venv``: torch and TensorFlow, zoo_lite
  installed editable); only read, never changed.
- E2, a torch-only venv that this benchmark builds once and keeps outside any checkout
  (``--e2``, by default ``/var/tmp/zoo_lite-bench/torch_only_env``, reused when present): a venv
  of the same base interpreter with torch and zoo_lite's core requirements, pinned by the
  checkout's ``constraints.txt``, and zoo_lite installed from the checkout's ``HEAD``, not editable.

Figures:

1. the archive's size against the environment's size on disk (file sizes summed as ``du``
   counts them, symbolic links not followed);
2. the time to pack: ``pack_environment(prefix, cache_dir=<fresh folder>, progress=False)``
   against the library's own command line (``python -m venv_pack -p PREFIX -o OUT``) with the same
   compression level, and, to separate what the two leave out from what zoo_lite adds, the command
   line told to leave out what zoo_lite leaves out; each in a child process, the cases taking turns
   round by round. Target: zoo_lite / command line <= 1.1 (medians);
3. a cache hit on the driver: ``pack_environment`` and ``resolve_penv_archive`` of an environment
   whose archive is cached. Target <= 1 s (median of ``--hits`` calls);
4. ``init_orca_context`` to the first finished task with ``penv_archive=<E2's folder>`` on
   ``local-cluster`` (2 executors of 1 core, 1g), in a new driver process run by E2's Python, so
   that the executors unpack E2 and run its Python: (a) nothing cached (packs, ships, unpacks),
   (b) the archive cached on the driver, (c) the same again, a second application on the same
   hosts (local-cluster keeps nothing per host: each executor unpacks again, so (c) should equal (b));
5. the environments' facts: Python, torch, pyspark and venv-pack2 versions, number of files.

Archives are written under a temporary folder removed at the end (they take GBs), and the
local-cluster applications' work folders (in E2's ``pyspark/work``) are removed after each run.
Run from the repository root (E1 takes minutes per pack)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env.py --envs e2 --repeat 2   # ~10 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env.py --envs e1,e2 --repeat 1

It prints a markdown section for ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (CpuWatch, Timing, command_line, heading, last_json, load_line, log, rotated,  # noqa: E402
                      targets_table)

#: the checkout measured: the one whose zoo_lite this process imports
CHECKOUT = Path(__file__).resolve().parent.parent
E1_PREFIX = CHECKOUT / ".venv"
E2_PREFIX = Path("/var/tmp/zoo_lite-bench/torch_only_env")
#: what E2 holds besides pip: torch and zoo_lite's core requirements (setup.py's CORE), so that
#: zoo_lite imports and runs there (pip then installs zoo_lite itself without its dependencies)
E2_REQUIREMENTS = ("torch", "numpy", "pandas", "pyarrow", "pyspark", "ray[default]", "psutil", "cloudpickle",
                   "fsspec", "pillow", "venv-pack2", "conda-pack")
#: written into E2 last: what the benchmark installed there (a folder without it is a broken build)
E2_MARKER = "zoo_lite-bench.json"
#: zoo_lite's gzip level (env_packing._COMPRESS_LEVEL), also venv-pack's command line's default
COMPRESS_LEVEL = 4
#: the command line's options: its defaults, the compression level spelled out, no progress bar
#: (zoo_lite draws none with progress=False)
CLI_OPTIONS = ("--compress-level", str(COMPRESS_LEVEL), "--quiet")
ZOO = "zoo_lite pack_environment"
CLI = "venv_pack command line"
CLI_SAME = "venv_pack command line, zoo_lite's exclusions"
PACK_CASES = (ZOO, CLI, CLI_SAME)
#: bounds of the child processes (E1 packs 4 GB on 2 shared cores)
PACK_TIMEOUT_S = {"e1": 3600.0, "e2": 1200.0}
DRIVER_TIMEOUT_S = 900.0
BUILD_TIMEOUT_S = 2400.0
SHORT_TIMEOUT_S = 300.0
#: Orca's own figure, for context: its yarn-client log's time to pack its environment
ORCA_PACK_S = 37.0

# Run by this Python (the checkout's zoo_lite on PYTHONPATH): one pack into a fresh cache folder,
# with the time the library's packing took (zoo_lite logs it) beside the whole call's.
_ZOO_PACK = r"""
import json, logging, sys, time
from pathlib import Path
messages = []
class Keep(logging.Handler):
    def emit(self, record):
        messages.append(record.getMessage())
logger = logging.getLogger("zoo_lite.env_packing")
logger.setLevel(logging.INFO)
logger.addHandler(Keep())
from zoo_lite.env_packing import pack_environment
started = time.perf_counter()
archive = pack_environment(sys.argv[1], cache_dir=Path(sys.argv[2]), progress=False)
print("RESULT " + json.dumps({"call_s": time.perf_counter() - started, "archive": str(archive), "log": messages}))
"""

# Run by E2's own Python in a new process: init_orca_context with E2's folder as penv_archive to
# the end of a task on each of the two executors, which report the Python they run.
_DRIVER = r"""
import json, logging, sys, time
messages = []
class Keep(logging.Handler):
    def emit(self, record):
        messages.append([time.perf_counter(), record.getMessage()])
logger = logging.getLogger("zoo_lite.env_packing")
logger.setLevel(logging.INFO)
logger.addHandler(Keep())
import zoo_lite
from zoo_lite import init_orca_context, stop_orca_context
started = time.perf_counter()
sc = init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", penv_archive=sys.argv[1])
ready = time.perf_counter()
executables = sc.parallelize(range(2), 2).map(lambda _: __import__("sys").executable).collect()
done = time.perf_counter()
app = sc.applicationId
stop_orca_context()
print("RESULT " + json.dumps({"total_s": done - started, "init_s": ready - started, "task_s": done - ready,
                              "log": [[at - started, text] for at, text in messages], "executables": executables,
                              "app": app, "zoo_lite": zoo_lite.__file__}))
"""

# Run by an environment's Python: its versions, read from the installed distributions' metadata
# (nothing imported: quick even for TensorFlow's environment).
_VERSIONS = r"""
import json, platform
from importlib.metadata import PackageNotFoundError, version
def of(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"
print(json.dumps({"python": platform.python_version(), "torch": of("torch"), "pyspark": of("pyspark"),
                  "venv-pack2": of("venv-pack2"), "tensorflow": of("tensorflow-cpu") if of("tensorflow") == "-" else of("tensorflow")}))
"""


# -- child processes -------------------------------------------------------------------------------------

def run_child(command: Sequence[str], what: str, timeout_s: float, env: Optional[Mapping[str, str]] = None,
              cwd: Optional[Path] = None) -> str:
    """Run ``command`` in a session of its own and return its standard output.

    A child that outlives ``timeout_s`` is killed with everything it started (a Spark driver's JVM
    and executors are in its process group), so nothing is left running.

    Raises
    ------
    RuntimeError
        The child timed out or failed; the message names ``what``, the bound or exit status, and
        the tail of its output.
    """
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=None if env is None else dict(env), cwd=cwd, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)   # its own group: the child and what it started
        out, err = process.communicate()
        raise RuntimeError(f"{what} did not finish within {timeout_s:.0f} s and was killed with its process group; "
                           f"raise the bound or look at the load of the machine:\n{out[-2000:]}\n{err[-3000:]}") from None
    if process.returncode != 0:
        raise RuntimeError(f"{what} failed (exit status {process.returncode}): {' '.join(command)}\n"
                           f"{out[-2000:]}\n{err[-3000:]}")
    return out


def child_env(**overrides: str) -> dict[str, str]:
    """This process's environment without what would make a child's Python or Spark someone else's."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONPATH", "SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV",
                           "ZOO_LITE_CACHE_DIR")}
    env.update(overrides)
    return env


# -- the environments --------------------------------------------------------------------------------------

def checkout_commit(short: bool = True) -> str:
    return subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", *(["--short"] if short else []), "HEAD"],
                          capture_output=True, text=True, timeout=30, check=True).stdout.strip()


def build_torch_only_env(prefix: Path) -> str:
    """E2 at ``prefix``, built if missing, with zoo_lite reinstalled if the checkout's ``HEAD`` moved;
    says which of these it did.

    The venv is made by the base interpreter of this Python (``sys._base_executable``), so that its
    ``bin/python`` links to the interpreter E1's does; pip finds torch's CPU wheel through
    ``PIP_FIND_LINKS`` and the rest on the index, pinned by the checkout's ``constraints.txt``.
    zoo_lite is installed from ``git archive HEAD`` (building in the checkout would write into it).
    """
    commit = checkout_commit(short=False)
    python = prefix / "bin" / "python"
    marker = prefix / E2_MARKER
    started = time.perf_counter()
    if marker.is_file() and python.exists():
        installed = json.loads(marker.read_text()).get("zoo_lite_commit")
        if installed == commit:
            return f"reused (built earlier; zoo_lite at {commit[:7]})"
        what = f"reused, zoo_lite reinstalled ({installed[:7] if installed else '?'} -> {commit[:7]})"
    else:
        if prefix.exists():   # an earlier build that did not finish
            shutil.rmtree(prefix)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        base = os.path.realpath(sys._base_executable)  # type: ignore[attr-defined]
        log(f"building E2 at {prefix} with {base} (pip, a few minutes)")
        run_child([base, "-m", "venv", str(prefix)], "python -m venv (E2)", SHORT_TIMEOUT_S)
        run_child([str(python), "-m", "pip", "install", "--quiet", "-c", str(CHECKOUT / "constraints.txt"),
                   *E2_REQUIREMENTS], "pip install of E2's requirements", BUILD_TIMEOUT_S, env=child_env())
        what = "built"
    with tempfile.TemporaryDirectory(prefix="bench-ship-src-") as source:
        archive = run_child_bytes(["git", "-C", str(CHECKOUT), "archive", "--format=tar", commit], "git archive")
        subprocess.run(["tar", "-x", "-C", source], input=archive, check=True, timeout=SHORT_TIMEOUT_S)
        run_child([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", source],
                  "pip install of zoo_lite into E2", BUILD_TIMEOUT_S, env=child_env())
    run_child([str(python), "-c", "import zoo_lite, torch, pyspark, venv_pack"], "importing zoo_lite in E2",
              SHORT_TIMEOUT_S, env=child_env(), cwd=Path("/"))
    marker.write_text(json.dumps({"zoo_lite_commit": commit, "built": time.strftime("%Y-%m-%d %H:%M")}))
    return f"{what} in {time.perf_counter() - started:.0f} s"


def run_child_bytes(command: Sequence[str], what: str) -> bytes:
    done = subprocess.run(list(command), capture_output=True, timeout=SHORT_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed (exit status {done.returncode}): {done.stderr.decode()[-2000:]}")
    return done.stdout


@dataclass
class TreeFacts:
    """An environment folder's files as ``du`` counts them (links not followed)."""

    bytes: int = 0
    files: int = 0
    bytecode_bytes: int = 0   # in __pycache__ folders


def tree_facts(prefix: Path) -> TreeFacts:
    """Sum the sizes of the files and symbolic links under ``prefix``, following no link."""
    facts = TreeFacts()
    for root, dirs, files in os.walk(prefix):   # os.walk follows no link into a folder by default
        links = [name for name in dirs if os.path.islink(os.path.join(root, name))]
        in_cache = "__pycache__" in Path(root).parts
        for name in [*files, *links]:
            size = os.lstat(os.path.join(root, name)).st_size
            facts.bytes += size
            facts.files += 1
            facts.bytecode_bytes += size if in_cache else 0
    return facts


def versions(prefix: Path) -> dict[str, str]:
    return json.loads(run_child([str(prefix / "bin" / "python"), "-I", "-c", _VERSIONS], f"the Python of {prefix}",
                                SHORT_TIMEOUT_S))


# -- time to pack ------------------------------------------------------------------------------------------

@dataclass
class PackRuns:
    """One environment's packs: seconds per case, the archives' sizes, zoo_lite's logged pack time."""

    seconds: dict[str, Timing] = field(default_factory=lambda: {case: Timing() for case in PACK_CASES})
    sizes: dict[str, int] = field(default_factory=dict)
    library_s: Timing = field(default_factory=Timing)   # zoo_lite's log: the library's packing alone
    cache_dir: Optional[Path] = None   # the last zoo_lite pack's, for the cache hits


def _logged_pack_s(messages: Sequence[str]) -> float:
    """The seconds of zoo_lite's ``packed ... in N s`` log line."""
    for message in messages:
        found = re.match(r"packed .* in ([0-9.]+) s$", message)
        if found:
            return float(found.group(1))
    raise RuntimeError(f"zoo_lite logged no 'packed ... in N s' line: {messages}")


def zoo_lite_excludes(prefix: Path) -> list[str]:
    """What zoo_lite leaves out of ``prefix``'s archive, as the command line's ``--exclude``
    patterns: zoo_lite's own list (a copy here drifted once, when byte code went into archives)."""
    from zoo_lite.env_packing import _inspect, _left_out

    return _left_out(_inspect(prefix, "prefix"))


def pack_once(case: str, key: str, prefix: Path, scratch: Path, runs: PackRuns) -> float:
    """Pack ``prefix`` once as ``case`` into a fresh folder of ``scratch``; the wall seconds of the child."""
    folder = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=scratch))
    # the libraries write their temporary archive in TMPDIR: inside scratch, so that it is removed
    env = child_env(TMPDIR=str(folder))
    if case == ZOO:
        command = [sys.executable, "-c", _ZOO_PACK, str(prefix), str(folder / "cache")]
        env["PYTHONPATH"] = str(CHECKOUT)
    else:
        excludes = [part for pattern in zoo_lite_excludes(prefix) for part in ("--exclude", pattern)] if case == CLI_SAME else []
        command = [str(prefix / "bin" / "python"), "-m", "venv_pack", "-p", str(prefix), "-o", str(folder / "env.tar.gz"),
                   *CLI_OPTIONS, *excludes]
    started = time.perf_counter()
    out = run_child(command, f"{case} on {prefix}", PACK_TIMEOUT_S[key], env=env, cwd=folder)
    seconds = time.perf_counter() - started
    if case == ZOO:
        result = last_json(out.splitlines(), "RESULT ")
        archive = Path(result["archive"])
        runs.library_s.seconds.append(_logged_pack_s(result["log"]))
        if runs.cache_dir is not None:
            shutil.rmtree(runs.cache_dir.parent, ignore_errors=True)
        runs.cache_dir = folder / "cache"   # kept for the cache hits
    else:
        archive = folder / "env.tar.gz"
    runs.sizes[case] = archive.stat().st_size
    if case != ZOO:
        shutil.rmtree(folder)   # GBs each: keep only the one the cache hits read
    return seconds


def time_packs(key: str, prefix: Path, repeat: int, scratch: Path) -> PackRuns:
    """The three pack cases on one environment, taking turns round by round (rotated)."""
    runs = PackRuns()
    for round_index in range(repeat):
        for case in rotated(PACK_CASES, round_index):
            seconds = pack_once(case, key, prefix, scratch, runs)
            runs.seconds[case].seconds.append(seconds)
            log(f"{key} round {round_index + 1}/{repeat} {case}: {seconds:.1f} s, {runs.sizes[case] / 2**20:.0f} MiB")
    return runs


# -- cache hits on the driver ------------------------------------------------------------------------------

def cache_hits(prefix: Path, cache_dir: Path, calls: int) -> tuple[Timing, Timing, str]:
    """Seconds of ``pack_environment`` and of ``resolve_penv_archive`` on ``prefix`` whose archive is
    in ``cache_dir`` (in this process, as ``init_orca_context`` calls them), and the value given to
    the latter (``"auto"`` for this Python's own environment)."""
    from zoo_lite.env_packing import pack_environment, resolve_penv_archive

    value = "auto" if Path(sys.prefix).resolve() == prefix.resolve() else str(prefix)
    cached = {path for path in cache_dir.glob("*.tar.gz")}
    packs, resolves = Timing(), Timing()
    for _ in range(calls):
        started = time.perf_counter()
        archive = pack_environment(prefix, cache_dir=cache_dir, progress=False)
        packs.seconds.append(time.perf_counter() - started)
        started = time.perf_counter()
        resolved = resolve_penv_archive(value, cache_dir=cache_dir, progress=False)
        resolves.seconds.append(time.perf_counter() - started)
        if archive not in cached or Path(resolved) != archive:
            raise RuntimeError(f"a cache hit was expected on {prefix}: got {archive} and {resolved}, cached {cached}")
    return packs, resolves, value


# -- init_orca_context to the first finished task ----------------------------------------------------------

FIRST_TASK_CASES = ("(a) nothing cached", "(b) archive cached on the driver", "(c) (b) again: a second application")


def _app_folders(work: Path) -> set[Path]:
    return set(work.glob("app-*")) if work.is_dir() else set()


def first_task(prefix: Path, cache_dir: Path) -> dict[str, Any]:
    """One new driver process run by E2's Python: ``init_orca_context(penv_archive=<E2>)`` to the end
    of its first task; the application's work folders in E2's ``pyspark/work`` removed afterwards."""
    work = next(prefix.glob("lib/python3*/site-packages/pyspark")) / "work"
    had_work = work.exists()
    before = _app_folders(work)
    try:
        out = run_child([str(prefix / "bin" / "python"), "-c", _DRIVER, str(prefix)], "the local-cluster driver on E2",
                        DRIVER_TIMEOUT_S, env=child_env(ZOO_LITE_CACHE_DIR=str(cache_dir), TMPDIR=str(cache_dir.parent)),
                        cwd=cache_dir.parent)
    finally:
        for folder in _app_folders(work) - before:
            shutil.rmtree(folder, ignore_errors=True)
        if not had_work and work.is_dir() and not any(work.iterdir()):
            work.rmdir()
    result = last_json(out.splitlines(), "RESULT ")
    if not result["zoo_lite"].startswith(str(prefix)):
        raise RuntimeError(f"the driver imported zoo_lite from {result['zoo_lite']}, not from E2 at {prefix}")
    wrong = [path for path in result["executables"] if not path.endswith("/python_env/bin/python")]
    if len(result["executables"]) != 2 or wrong:
        raise RuntimeError(f"the executors ran {result['executables']}, not the shipped ./python_env/bin/python")
    packed = [float(m.group(1)) for _, text in result["log"] if (m := re.match(r"packed .* in ([0-9.]+) s$", text))]
    reused = any(text.startswith("reused ") for _, text in result["log"])
    # the pack's log line comes when it ends: its time since the call is what init spent resolving the archive
    resolved_at = next((at for at, text in result["log"] if text.startswith(("packed ", "reused "))), float("nan"))
    result.update(pack_s=packed[0] if packed else 0.0, reused=reused, resolved_s=resolved_at)
    return result


def time_first_tasks(prefix: Path, repeat: int, scratch: Path) -> dict[str, dict[str, Timing]]:
    """(a), (b), (c) in this order each round ((b) and (c) need (a)'s archive); a fresh cache folder per round."""
    measures: dict[str, dict[str, Timing]] = {case: {} for case in FIRST_TASK_CASES}
    for round_index in range(repeat):
        cache_dir = Path(tempfile.mkdtemp(prefix="first-task-", dir=scratch)) / "cache"
        cache_dir.mkdir()
        try:
            for case in FIRST_TASK_CASES:
                result = first_task(prefix, cache_dir)
                if case.startswith("(a)") == result["reused"] or (case.startswith("(a)") and not result["pack_s"]):
                    raise RuntimeError(f"{case}: expected {'a pack' if case.startswith('(a)') else 'a cache hit'}, "
                                       f"the driver logged {result['log']}")
                for measure in ("total_s", "resolved_s", "pack_s", "init_s", "task_s"):
                    measures[case].setdefault(measure, Timing()).seconds.append(result[measure])
                log(f"first task round {round_index + 1}/{repeat} {case}: {result['total_s']:.1f} s "
                    f"(archive resolved after {result['resolved_s']:.1f} s, library's pack {result['pack_s']:.1f} s)")
        finally:
            shutil.rmtree(cache_dir.parent, ignore_errors=True)
    return measures


# -- the report --------------------------------------------------------------------------------------------

def mib(size: float) -> str:
    return f"{size / 2**20:,.0f} MiB"


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="e1,e2", help="environments, comma-separated: e1, e2 (default e1,e2)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of the packs and of the first-task cases (default 1: E1 packs for minutes)")
    parser.add_argument("--hits", type=int, default=5, help="cache-hit calls per environment (default 5)")
    parser.add_argument("--e2", type=Path, default=E2_PREFIX, help=f"where E2 is built and kept (default {E2_PREFIX})")
    args = parser.parse_args(argv)
    args.envs = [name.strip() for name in args.envs.split(",") if name.strip()]
    if not args.envs or set(args.envs) - {"e1", "e2"}:
        parser.error(f"--envs={','.join(args.envs)!r}: give e1, e2 or e1,e2")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    command = command_line("bench_ship_env.py", argv)
    e2_state = build_torch_only_env(args.e2) if "e2" in args.envs else "not used"
    prefixes = {"e1": E1_PREFIX, "e2": args.e2}
    labels = {"e1": f"E1 project env `{E1_PREFIX}`", "e2": f"E2 torch-only venv `{args.e2}`"}
    envs = {key: prefixes[key] for key in args.envs}
    facts = {key: tree_facts(prefix) for key, prefix in envs.items()}
    env_versions = {key: versions(prefix) for key, prefix in envs.items()}
    packs: dict[str, PackRuns] = {}
    hits: dict[str, tuple[Timing, Timing, str]] = {}
    first: dict[str, dict[str, Timing]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="bench-ship-env-", dir="/var/tmp"))
    load_before = os.getloadavg()
    watch = CpuWatch().start()
    try:
        for key, prefix in envs.items():
            log(f"packing {key} ({prefix}, {mib(facts[key].bytes)} in {facts[key].files:,} files), {args.repeat} round(s)")
            packs[key] = time_packs(key, prefix, args.repeat, scratch)
            hits[key] = cache_hits(prefix, packs[key].cache_dir, args.hits)   # type: ignore[arg-type]
            log(f"{key} cache hits: pack_environment {hits[key][0].median:.2f} s, resolve_penv_archive {hits[key][1].median:.2f} s")
            shutil.rmtree(packs[key].cache_dir.parent, ignore_errors=True)   # type: ignore[union-attr]
        if "e2" in envs:
            first = time_first_tasks(args.e2, args.repeat, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        watch.stop()
    load_after = os.getloadavg()

    ratio = {key: runs.seconds[ZOO].median / runs.seconds[CLI].median for key, runs in packs.items()}
    targets = []
    for key in envs:
        targets.append((f"{key.upper()}: time to pack, zoo_lite / command line (medians)", ratio[key], "<= 1.1",
                        ratio[key] <= 1.1))
    for key in envs:
        targets.append((f"{key.upper()}: cache hit, `pack_environment`, s (median of {args.hits})", hits[key][0].median,
                        "<= 1 s", hits[key][0].median <= 1.0))
        targets.append((f"{key.upper()}: cache hit, `resolve_penv_archive({hits[key][2]!r})`, s (median of {args.hits})",
                        hits[key][1].median, "<= 1 s", hits[key][1].median <= 1.0))
    for case, measures in first.items():
        targets.append((f"E2 on local-cluster, init_orca_context to first finished task, {case}, s (median)",
                        measures["total_s"].median, "info", True))

    lines = [
        *heading("bench_ship_env", command, "PYTHONPATH=. so that the checkout's zoo_lite is measured"),
        f"- machine: {os.cpu_count()} cores; zoo_lite at commit {checkout_commit()} (`{CHECKOUT}`); this Python "
        f"{sys.version.split()[0]} (`{sys.executable}`)",
        f"- {args.repeat} round(s); the pack cases take turns each round (rotated), each in a child process, into a fresh "
        "folder; medians (range)",
        load_line(load_before, load_after, periods=True),
        f"- {watch.summary()}",
        f"- E2: {e2_state}; it stays at `{args.e2}` for the next run (remove it to rebuild); everything else this run "
        "wrote is removed",
        "", "### Environments", "",
        "| environment | Python | torch | pyspark | venv-pack2 | TensorFlow | files | size on disk | of which `__pycache__` |",
        "|---|---|---|---|---|---|---:|---:|---:|",
        *[f"| {labels[key]} | {v['python']} | {v['torch']} | {v['pyspark']} | {v['venv-pack2']} | {v['tensorflow']} | "
          f"{facts[key].files:,} | {mib(facts[key].bytes)} | {mib(facts[key].bytecode_bytes)} |"
          for key, v in env_versions.items()],
        "", "### Targets", "", *targets_table(targets), "",
        "### Archive size against the environment's size on disk", "",
        "| environment | on disk | zoo_lite archive | archive / disk | command line's archive | command line, zoo_lite's exclusions |",
        "|---|---:|---:|---:|---:|---:|",
        *[f"| {key.upper()} | {mib(facts[key].bytes)} | {mib(runs.sizes[ZOO])} | {runs.sizes[ZOO] / facts[key].bytes:.2f} | "
          f"{mib(runs.sizes[CLI])} | {mib(runs.sizes[CLI_SAME])} |" for key, runs in packs.items()],
        "", "### Time to pack, s: median (best–worst)", "",
        "| environment | zoo_lite `pack_environment` | of which the library's packing (zoo_lite's log) | command line | "
        "command line, zoo_lite's exclusions | zoo_lite / command line | zoo_lite / command line, same exclusions |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *[f"| {key.upper()} | {runs.seconds[ZOO].spread_cell(1)} | {runs.library_s.spread_cell(1)} | "
          f"{runs.seconds[CLI].spread_cell(1)} | {runs.seconds[CLI_SAME].spread_cell(1)} | {ratio[key]:.2f} | "
          f"{runs.seconds[ZOO].median / runs.seconds[CLI_SAME].median:.2f} |" for key, runs in packs.items()],
        "",
        f"- zoo_lite: `pack_environment(prefix, cache_dir=<fresh folder>, progress=False)` in a child of this Python: "
        f"venv-pack2's `Env.pack(format=\"tar.gz\", compress_level={COMPRESS_LEVEL})`, leaving out "
        f"{', '.join(f'`{p}`' for p in zoo_lite_excludes(next(iter(envs.values()))))}, with an editable zoo_lite's files added; before packing it "
        "runs the environment's Python once (a probe) and fingerprints the installed distributions",
        f"- command line: `<env>/bin/python -m venv_pack -p <env> -o <out>.tar.gz {' '.join(CLI_OPTIONS)}` (its defaults: "
        f"`--format infer` (tar.gz), `--compress-level 4`, no exclusions, a progress bar unless `--quiet`); the third "
        "case adds `--exclude` with each of zoo_lite's patterns. Both write the archive in `TMPDIR` first (a folder "
        "of the same disk here) and move it",
        f"- the times are each child process's wall time (Python's start and imports included); cache hits: "
        f"{args.hits} calls in this process, archive cached",
    ]
    if first:
        lines += [
            "", "### `init_orca_context` to the first finished task, E2, s: median (best–worst)", "",
            f"`init_orca_context(cluster_mode=\"local-cluster\", num_nodes=2, cores=1, memory=\"1g\", "
            f"penv_archive=\"{args.e2}\")` in a new driver process run by E2's Python, then "
            "`sc.parallelize(range(2), 2).map(lambda _: __import__(\"sys\").executable).collect()`; both executors ran "
            "`.../python_env/bin/python` (checked); timed in the driver from just before the call to the collect's "
            "return. (a), (b), (c) run in this order in each round, (a) with a fresh `ZOO_LITE_CACHE_DIR`.", "",
            "| case | call to first finished task | archive resolved (pack or cache hit) | of which the library's "
            "packing | `init_orca_context` returned | the job |",
            "|---|---:|---:|---:|---:|---:|",
            *[f"| {case} | {m['total_s'].spread_cell(1)} | {m['resolved_s'].spread_cell(2)} | {m['pack_s'].spread_cell(1)} | "
              f"{m['init_s'].spread_cell(1)} | {m['task_s'].spread_cell(1)} |" for case, m in first.items()],
            "",
            "- (c) is a second application on the same hosts: local-cluster (like standalone and YARN without a "
            "shared cache) gives each new executor its own copy of the archive to fetch and unpack, so no per-host "
            "reuse is expected yet and (c) ≈ (b)",
        ]
    lines += [
        "", f"For context only (not measured here): Orca's yarn-client log shows {ORCA_PACK_S:.0f} s to pack its "
        "environment before its job starts (another environment and machine).", "",
    ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
