"""The torch workers' rendezvous never races for a port: rank 0 serves the store on a port it
binds itself (port 0, or one of a range the user opened), so many starts at once cannot collide,
even where ports are scarce."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(300)

PAIRS = 8
#: ephemeral ports in the test's namespace: few enough that the system hands out the same ones
#: again at once (each pair takes ~6: the store, gloo's listeners, the connections' own ends)
PORT_RANGE = "41000 41099"


#: the odd pairs' rendezvous_ports: their 4 stores and the thief (at most 20 of its 40 held ports
#: are in the range) always leave some free, so every pair must find one
RENDEZVOUS_PORTS = "40900 40939"


def test_many_torch_rendezvous_at_once_in_a_narrow_port_range_all_succeed_on_any_port_and_in_a_rendezvous_ports_range() -> None:
    """The even pairs bind any port, the odd ones a port of ``RENDEZVOUS_PORTS``; all at once, in
    one storm (each pair a fresh interpreter importing torch: one storm, not one per way)."""
    assert os.geteuid() == 0, "a network namespace of the test's own needs root (CI and the sessions run as root)"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = (f"ip link set lo up && sysctl -qw net.ipv4.ip_local_port_range='{PORT_RANGE}' && "
              f"exec {sys.executable} -m tests.learn.rendezvous_storm {PAIRS} {RENDEZVOUS_PORTS}")
    # the namespace lives as long as the command: nothing is left behind, also on failure
    finished = subprocess.run(["unshare", "--net", "sh", "-c", script], cwd=root, capture_output=True, text=True, timeout=240)
    lines = finished.stdout.splitlines()
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert lines == [f"ok {index + 1:g}" for index in range(PAIRS)], "\n".join(lines) + finished.stderr[-2000:]
