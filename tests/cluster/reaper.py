"""Takes a simulated cluster down when the test process that made it is gone, however it ended.

The test session starts ``python -m tests.cluster.reaper FOLDER`` with a pipe on its stdin and
keeps the other end. The session's own teardown takes the cluster down first; when the session is
killed (SIGKILL, a crash), the pipe closes all the same, and the reaper ends every process on the
cluster's hosts by PID and deletes its namespaces and its folder. Needs nothing but this machine's
namespaces: it runs outside the simulated hosts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["start_reaper", "reap"]


def reap(folder: Path) -> None:
    """Take down the cluster recorded in ``folder`` (if any is left) and delete the folder."""
    from tests.cluster.simulated import SimulatedCluster

    if (folder / "state.json").exists():
        SimulatedCluster.load(folder).down()
    shutil.rmtree(folder, ignore_errors=True)


def start_reaper(folder: Path) -> subprocess.Popen:
    """The reaper of ``folder``; close its stdin (or exit) to make it reap."""
    root = Path(__file__).resolve().parents[2]
    return subprocess.Popen([sys.executable, "-m", "tests.cluster.reaper", str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root, start_new_session=True)


def stop_reaper(reaper: subprocess.Popen, timeout_s: float = 120.0) -> None:
    """Let the reaper reap (the cluster is already down: it finds nothing) and wait for it."""
    reaper.stdin.close()
    reaper.wait(timeout_s)


if __name__ == "__main__":
    sys.stdin.buffer.read()   # returns at EOF: the test process closed the pipe, or died
    reap(Path(sys.argv[1]))
