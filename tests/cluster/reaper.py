"""Takes a simulated cluster down when the test process that made it is gone, however it ended.

The test session starts ``python -m tests.cluster.reaper FOLDER`` with a pipe on its stdin and
keeps the other end. The session's own teardown takes the cluster down first; when the session is
killed (SIGKILL, a crash), the pipe closes all the same, and the reaper ends every process on the
cluster's hosts by PID and deletes its namespaces and its folder. Needs nothing but this machine's
namespaces: it runs outside the simulated hosts.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

__all__ = ["start_reaper", "reap", "reaped_cluster"]


def reap(folder: Path) -> None:
    """Take down the cluster recorded in ``folder`` (if any is left) and delete the folder."""
    from tests.cluster.simulated import SimulatedCluster

    if (folder / "state.json").exists():
        SimulatedCluster.load(folder).down()
    remove_folder(folder)


def remove_folder(folder: Path) -> None:
    """Delete ``folder`` and all below it (a bare cluster's hosts unpack GBs of environments into
    it: ``rm -rf`` takes a fraction of ``shutil.rmtree``'s time)."""
    subprocess.run(["rm", "-rf", "--one-file-system", str(folder)], stdin=subprocess.DEVNULL, capture_output=True)


def start_reaper(folder: Path) -> subprocess.Popen:
    """The reaper of ``folder``; close its stdin (or exit) to make it reap."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.Popen([sys.executable, "-m", "tests.cluster.reaper", str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root, start_new_session=True)


def stop_reaper(reaper: subprocess.Popen, timeout_s: float = 120.0) -> None:
    """Let the reaper reap (the cluster is already down: it finds nothing) and wait for it."""
    reaper.stdin.close()
    reaper.wait(timeout_s)


@contextlib.contextmanager
def reaped_cluster(prefix: str, folders: str, **options: Any) -> Iterator[Any]:
    """A :class:`~tests.cluster.simulated.SimulatedCluster` (``SimulatedCluster.up(**options)``) in a
    new folder below ``folders``, watched by a reaper; taken down after the block, which fails if
    a process was left on a host."""
    from tests.cluster.simulated import SimulatedCluster

    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=folders))
    reaper = start_reaper(folder)
    try:
        cluster = SimulatedCluster.up(folder, **options)
        yield cluster
        left = cluster.down()
        assert not left, f"processes left on the simulated hosts after their tests: {left}"
    finally:
        remove_folder(folder)   # first: the reaper, told to reap, then finds nothing to do
        stop_reaper(reaper)


if __name__ == "__main__":
    sys.stdin.buffer.read()   # returns at EOF: the test process closed the pipe, or died
    reap(Path(sys.argv[1]))
