"""``python -m tests.cluster up|down|run|status``: the simulated multi-host cluster, by hand.

- ``up [--workers N] [--hosts-style cluster|debian|none] [--cores C] [--memory M] [--bare]``: make
  the hosts and start Spark standalone on them; prints the master URL and how to run things. With
  ``--bare`` the worker hosts see neither the checkout nor its venv (:mod:`tests.cluster.bare`).
- ``run HOST COMMAND...``: run a command on a host (in its namespaces, from the checkout), with
  that host's environment (``SPARK_LOCAL_IP`` set to its address).
- ``status``: the hosts, their addresses and what runs on each.
- ``down``: end every process on every host (by PID) and delete the namespaces.

The cluster's folder (``--folder``, default ``/var/tmp/zoo_lite-test-cluster``) keeps its state;
every host sees it at the same path, with ``shared/`` standing for a shared file system. Needs
root. ``scripts/test-cluster.sh`` sets up the venv and calls this.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from tests.cluster.namespaces import why_unavailable
from tests.cluster.simulated import SimulatedCluster

DEFAULT_FOLDER = Path("/var/tmp/zoo_lite-test-cluster")


def _up(args: argparse.Namespace) -> int:
    if (args.folder / "state.json").exists():
        print(f"a cluster is already up in {args.folder}; run `down` first", file=sys.stderr)
        return 1
    cluster = SimulatedCluster.up(args.folder, worker_hosts=args.workers, hosts_style=args.hosts_style,
                                  cores_per_worker=args.cores, worker_memory=args.memory, owned=False,
                                  bare=args.bare)
    print(f"master: {cluster.master_url}")
    for name, host in cluster.hosts.items():
        print(f"  {name:<8} {host.address}")
    print(f"shared folder (every host): {cluster.shared}")
    print(f"logs: {cluster.logs}")
    print(f"try:  scripts/test-cluster.sh run driver scripts/spark-submit --master {cluster.master_url} "
          "--executor-cores 1 --total-executor-cores 2 examples/quickstart.py --cluster-mode spark-submit "
          f"--output {cluster.shared}/quickstart")
    return 0


def _loaded(folder: Path) -> SimulatedCluster:
    if not (folder / "state.json").exists():
        raise SystemExit(f"no cluster is up in {folder}; run `up` first")
    return SimulatedCluster.load(folder)


def _run(args: argparse.Namespace) -> int:
    cluster = _loaded(args.folder)
    if args.host not in cluster.hosts:
        raise SystemExit(f"host {args.host!r} is not one of {sorted(cluster.hosts)}")
    process = cluster.hosts[args.host].popen(args.argv, env=cluster.environment(args.host), cwd=str(Path.cwd()))
    return process.wait()


def _status(args: argparse.Namespace) -> int:
    cluster = _loaded(args.folder)
    print(f"master: {cluster.master_url}  (/etc/hosts style: {cluster.hosts_style})")
    for name, host in cluster.hosts.items():
        print(f"{name} {host.address}")
        for line in cluster.processes(name):
            print(f"    {line[:150]}")
    return 0


def _down(args: argparse.Namespace) -> int:
    if (args.folder / "state.json").exists():
        left = SimulatedCluster.load(args.folder).down()
        for line in left:
            print(f"ended: {line[:150]}")
    shutil.rmtree(args.folder, ignore_errors=True)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="test-cluster", description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up")
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--hosts-style", choices=["cluster", "debian", "none"], default="cluster")
    up.add_argument("--cores", type=int, default=1)
    up.add_argument("--memory", default="3g")
    up.add_argument("--bare", action="store_true", help="bare worker hosts: no checkout, no venv, the system's Python")
    run = commands.add_parser("run")
    run.add_argument("host")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND")
    commands.add_parser("status")
    commands.add_parser("down")
    args = parser.parse_args(argv)
    if args.command != "down":
        why = why_unavailable()
        if why is not None:
            raise SystemExit(f"cannot make simulated hosts here: {why}")
    return {"up": _up, "run": _run, "status": _status, "down": _down}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
