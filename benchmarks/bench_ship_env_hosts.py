"""Benchmark: from ``init_orca_context`` to the first finished task on 2 bare hosts (issue 44).

The bare-host half of ``bench_ship_env``: a simulated cluster (``tests/cluster``, needs root)
whose two worker hosts have Java, a Spark of their own and the system's Python, and see neither
the checkout nor its venv. The driver runs on the driver host from a venv of that Python holding
the project's packages (``tests/cluster/bare.py``: torch, TensorFlow, Ray, pandas, pyspark; about
4 GB), in a new process per run. Each run times ``init_orca_context(cluster_mode="standalone",
num_nodes=2, cores=1, memory="1g", ...)`` and then an XShards job of 8 partitions: its end is
the time to the first finished task on both hosts (a task needs its host's environment).

Runs, in this order, on the same hosts:

- ``auto, nothing cached``: ``penv_archive="auto"`` with an empty archive folder (a new
  ``ZOO_LITE_CACHE_DIR``, removed at the end) and no
  environment unpacked on the hosts: packs, ships, unpacks once per host;
- ``auto, archive cached``: the archive cached on the driver, the hosts' unpacked folders removed
  (a new host, or a changed environment's first run on old hosts);
- ``auto, second application``: both cached (zoo_lite's host-level unpack cache);
- ``spark.archives, second application``: the same archive shipped the plain Spark way
  (``conf={"spark.archives": ..., "spark.pyspark.python": ...}``), which every executor of every
  application unpacks again: the reference for the host cache. Run once before it as well, so
  that both are second applications.

``--env torch`` runs the same on a torch-only driver environment: the project's, less TensorFlow,
Keras, TensorFlow Datasets and their own big dependencies (:data:`TENSORFLOW_DISTRIBUTIONS`).

Run from the repository root, as root::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env_hosts.py               # ~15 min
    PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env_hosts.py --env torch
    PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env_hosts.py --second-only --rounds 3

It prints a markdown section for ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cluster import bare  # noqa: E402
from tests.cluster.namespaces import why_unavailable  # noqa: E402
from tests.cluster.simulated import SimulatedCluster  # noqa: E402
from zoo_lite.host_unpack import HOST_ENVS_FOLDER  # noqa: E402

_RUN_TIMEOUT_S = 1800.0
#: what ``--env torch`` leaves out of the project's environment
TENSORFLOW_DISTRIBUTIONS = ("tensorflow-cpu", "keras", "tensorflow-datasets", "tensorflow-metadata", "libclang")
#: the driver environments ``--env`` chooses from: what each leaves out, and how the report names it
ENVIRONMENTS = {"project": ((), "torch and TensorFlow: the whole project environment"),
                "torch": (TENSORFLOW_DISTRIBUTIONS, "torch, no TensorFlow")}

# one driver process: its times, and the hosts and Pythons its tasks ran on
_DRIVER = textwrap.dedent("""
    import json, socket, sys, time
    import numpy as np
    started = time.monotonic()
    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.data import XShards
    master, way, archive = sys.argv[1:4]
    shipped = ({"penv_archive": "auto"} if way == "auto" else
               {"conf": {"spark.archives": archive + "#env", "spark.pyspark.python": "./env/bin/python"}})
    init_orca_context(cluster_mode="standalone", master=master, num_nodes=2, cores=1, memory="1g", **shipped)
    initialised = time.monotonic()
    try:
        where = XShards.partition({"x": np.arange(16)}, num_shards=8).transform_shard(
            lambda shard: {"host": np.array([socket.gethostname()]), "prefix": np.array([sys.prefix])}).collect()
        finished = time.monotonic()
    finally:
        stop_orca_context()
    print("RESULT " + json.dumps({"init_s": initialised - started, "first_tasks_s": finished - started,
                                  "hosts": sorted({str(s["host"][0]) for s in where}),
                                  "prefixes": sorted({str(s["prefix"][0]) for s in where})}))
""")


def run_driver(cluster: SimulatedCluster, driver_env: Path, archives: Path, way: str, archive: str) -> dict[str, Any]:
    done = cluster.run("driver", [str(driver_env / "bin" / "python"), "-c", _DRIVER, cluster.master_url, way, archive],
                       env={"ZOO_LITE_CACHE_DIR": str(archives)}, timeout_s=_RUN_TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"the driver ({way}) failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def forget_unpacked(cluster: SimulatedCluster) -> None:
    """Remove every host's unpacked environments and the applications' folders."""
    for host in cluster.workers:
        shutil.rmtree(cluster.folder / "work" / host.name, ignore_errors=True)


def newest_archive(archives: Path, driver_env: Path) -> Path:
    return max(archives.glob(f"{driver_env.name}-*.tar.gz"), key=lambda path: path.stat().st_mtime)


def measure(cluster: SimulatedCluster, driver_env: Path, archives: Path, rounds: int,
            second_only: bool) -> dict[str, list[dict[str, Any]]]:
    """The runs of the module's text, in its order, by drivers of ``driver_env``; ``archives`` is
    an empty folder. The two second-application rows take turns, ``rounds`` times each; with
    ``second_only`` the first two rows are left out (their runs still happen, untimed: they pack
    and unpack)."""
    def run(way: str, archive: str = "") -> dict[str, Any]:
        return run_driver(cluster, driver_env, archives, way, archive)

    runs: dict[str, list[dict[str, Any]]] = {}
    forget_unpacked(cluster)
    runs["auto, nothing cached"] = [run("auto")]
    if not second_only:
        forget_unpacked(cluster)
        runs["auto, archive cached"] = [run("auto")]
    archive = str(newest_archive(archives, driver_env))
    run("archives", archive)   # the first application of that way
    for _ in range(rounds):
        runs.setdefault("auto, second application", []).append(run("auto"))
        runs.setdefault("spark.archives, second application", []).append(run("archives", archive))
    if second_only:
        del runs["auto, nothing cached"]
    return runs


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _seconds(runs: list[dict[str, Any]], key: str) -> str:
    values = [run[key] for run in runs]
    listed = "" if len(values) == 1 else " (" + ", ".join(f"{value:.1f}" for value in values) + ")"
    return f"{_median(values):.1f}{listed}"


def report(runs: dict[str, list[dict[str, Any]]], env: str, archive_size: int, started: str, seconds: float,
           argv: Sequence[str]) -> str:
    reference = _median([run["first_tasks_s"] for run in runs["spark.archives, second application"]])
    lines = [f"## bench_ship_env_hosts (issue 44): {started} UTC", "",
             f"Command: `{' '.join(['PYTHONPATH=. .venv/bin/python benchmarks/bench_ship_env_hosts.py', *argv])}`"
             f" ({seconds / 60:.1f} min). Two bare worker hosts of one core each (simulated: the system's Python "
             f"{bare._system_python_facts()}, a Spark of their own, no checkout, no venv); the driver's environment "
             f"holds {ENVIRONMENTS[env][1]}; its archive: {archive_size / 2**30:.2f} GiB. Medians, each run in brackets; "
             "the two second-application rows took turns.", "",
             "| run | init_orca_context (s) | to the first tasks on both hosts (s) | / spark.archives, second application | "
             "hosts | executors' Python in |", "|---|---:|---:|---:|---|---|"]
    for name, row in runs.items():
        where = ("zoo_lite-envs (once per host)" if all(HOST_ENVS_FOLDER in p for run in row for p in run["prefixes"])
                 else "each executor's folder")
        hosts = sorted({host for run in row for host in run["hosts"]})
        ratio = _median([run["first_tasks_s"] for run in row]) / reference
        lines.append(f"| {name} | {_seconds(row, 'init_s')} | {_seconds(row, 'first_tasks_s')} | {ratio:.2f} | "
                     f"{', '.join(hosts)} | {where} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="runs of each second-application row, taking turns")
    parser.add_argument("--second-only", action="store_true", help="time only the second-application rows")
    parser.add_argument("--env", choices=sorted(ENVIRONMENTS), default="project", help="the driver's environment")
    args = parser.parse_args(argv)
    why = why_unavailable() or bare.why_no_bare_hosts()
    if why is not None:
        raise SystemExit(f"cannot simulate bare hosts here: {why}")
    driver_env = bare.driver_environment(leave_out=ENVIRONMENTS[args.env][0])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))   # the cluster still goes down (finally)
    started, clock = time.strftime("%Y-%m-%d %H:%M", time.gmtime()), time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="zoo_lite-bench-bare-", dir="/var/tmp"))
    cluster = SimulatedCluster.up(folder, worker_hosts=2, hosts_style="cluster", worker_memory="3g", bare=True)
    try:
        runs = measure(cluster, driver_env, folder / "archives", args.rounds, args.second_only)
        size = newest_archive(folder / "archives", driver_env).stat().st_size
    finally:
        cluster.down()
        shutil.rmtree(folder, ignore_errors=True)
    print(report(runs, args.env, size, started, time.monotonic() - clock, sys.argv[1:] if argv is None else list(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
