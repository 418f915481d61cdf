"""Simulated hosts on one Linux machine: each a network, UTS and mount namespace of its own.

A host has its own address on a private subnet, its own host name, its own ``/tmp`` and
``/dev/shm`` (tmpfs mounts) and its own ``/etc/hosts``; everything else of the file system (the
checkout, its ``.venv``, Java) is the machine's, as the same software image is on every node of a
real cluster. The subnet exists only inside these namespaces: a bridge in a namespace of its own
joins the hosts, and nothing is added to the machine's own network, so a host can reach the other
hosts and its own loopback, and nothing else.

A host's namespaces are held by a *holder* process (``sleep``), which is what every command run on
the host enters (``nsenter``). Ending a host ends, by PID, every process in its network namespace,
however it was started (a Ray raylet that left its parent's session included), then the namespace.

Needs root, ``ip`` (iproute2), ``unshare`` and ``nsenter`` (util-linux); :func:`why_unavailable`
says what is missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

__all__ = ["HostSpec", "Host", "why_unavailable", "make_bridge", "start_host", "end_host", "remove_namespace",
           "namespaces_with_prefix", "pids_in_namespace", "hosts_file", "kept_below_tmp"]

#: the commands the hosts need
_TOOLS = ("ip", "unshare", "nsenter")
#: how long processes get to end on SIGTERM before SIGKILL
_TERM_GRACE_S = 10.0
_READY_TIMEOUT_S = 20.0
BRIDGE = "br0"


def why_unavailable() -> Optional[str]:
    """Why simulated hosts cannot be made here (not root, a tool missing), or None when they can."""
    if not sys.platform.startswith("linux"):
        return f"simulated hosts need Linux namespaces; this is {sys.platform}"
    if os.geteuid() != 0:
        return "simulated hosts need root (network, UTS and mount namespaces); run the tests as root"
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        return f"simulated hosts need {missing} (iproute2 and util-linux); install them"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`ip netns list` failed: {probe.stderr.strip()}"
    return None


def _ip(*args: str, namespace: Optional[str] = None) -> None:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")


@dataclass(frozen=True)
class HostSpec:
    """What a simulated host is: its network namespace, host name, address and hosts file."""

    netns: str
    hostname: str
    address: str
    prefix_len: int
    hosts_file: str


@dataclass(frozen=True)
class Host:
    """A started simulated host: its spec and the PID of the process holding its namespaces."""

    spec: HostSpec
    holder_pid: int

    @property
    def name(self) -> str:
        return self.spec.hostname

    @property
    def address(self) -> str:
        return self.spec.address

    def path(self, inside: str) -> Path:
        """Where the host's own ``inside`` (``/tmp/x``) is seen from this machine's namespaces."""
        return Path(f"/proc/{self.holder_pid}/root") / inside.lstrip("/")

    def command(self, argv: Sequence[str], cwd: Optional[str] = None) -> list[str]:
        """``argv`` as run on this host (in its namespaces, from ``cwd``)."""
        where = [f"--wd={cwd}"] if cwd else []
        return ["nsenter", f"--target={self.holder_pid}", "--net", "--uts", "--mount", *where, "--", *argv]

    def popen(self, argv: Sequence[str], env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
              log: Optional[Path] = None, **kwargs) -> subprocess.Popen:
        """Start ``argv`` on this host; its output goes to ``log`` (appended) when given."""
        out = open(log, "ab") if log else None
        try:
            return subprocess.Popen(self.command(argv, cwd), env=dict(env) if env is not None else None,
                                    stdin=subprocess.DEVNULL, stdout=out if out else kwargs.pop("stdout", None),
                                    stderr=subprocess.STDOUT if out else kwargs.pop("stderr", None), **kwargs)
        finally:
            if out:
                out.close()

    def run(self, argv: Sequence[str], env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
            timeout_s: float = 120.0) -> subprocess.CompletedProcess:
        """Run ``argv`` on this host to its end; its output captured as text."""
        return subprocess.run(self.command(argv, cwd), env=dict(env) if env is not None else None, capture_output=True,
                              text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)

    def to_dict(self) -> dict:
        return {"spec": asdict(self.spec), "holder_pid": self.holder_pid}

    @classmethod
    def from_dict(cls, data: dict) -> "Host":
        return cls(HostSpec(**data["spec"]), int(data["holder_pid"]))


def hosts_file(style: str, own: HostSpec, hosts: Sequence[HostSpec]) -> str:
    """The text of ``own``'s ``/etc/hosts`` in one of three styles seen on real clusters:

    - ``"cluster"``: every host name maps to its cluster address (a managed cluster);
    - ``"debian"``: the host's own name on ``127.0.1.1``, as Debian and Ubuntu install it, and no
      other host named;
    - ``"none"``: no host named at all (names do not resolve; addresses are used).

    Examples
    --------
    >>> a, b = HostSpec("n1", "driver", "10.0.0.1", 24, ""), HostSpec("n2", "host1", "10.0.0.2", 24, "")
    >>> print(hosts_file("debian", b, [a, b]), end="")
    127.0.0.1 localhost
    127.0.1.1 host1
    """
    lines = ["127.0.0.1 localhost"]
    if style == "cluster":
        lines += [f"{host.address} {host.hostname}" for host in hosts]
    elif style == "debian":
        lines.append(f"127.0.1.1 {own.hostname}")
    elif style != "none":
        raise ValueError(f"hosts file style={style!r}; use 'cluster', 'debian' or 'none'")
    return "\n".join(lines) + "\n"


def make_bridge(netns: str) -> None:
    """The namespace that holds the bridge joining the hosts (created empty, with ``br0`` up)."""
    _ip("netns", "add", netns)
    _ip("link", "add", BRIDGE, "type", "bridge", namespace=netns)
    _ip("link", "set", BRIDGE, "up", namespace=netns)


# the holder: own /tmp and /dev/shm (the machine's folders below /tmp that every host must see, such
# as a checkout cloned into /tmp, are moved back in through an anchor outside /tmp), the hidden
# folders covered by an empty read-only tmpfs (``:``-separated), own /etc/hosts, own host name;
# then it waits to be killed
_HOLDER = r"""
set -e
hosts_file=$1; name=$2; anchors=$3; hidden=$4; shift 4
i=0
for kept in "$@"; do mount --bind "$kept" "$anchors/$i"; i=$((i + 1)); done
mount -t tmpfs -o mode=1777 zl-tmp /tmp
mount -t tmpfs -o mode=1777 zl-shm /dev/shm
i=0
for kept in "$@"; do mkdir -p "$kept"; mount --move "$anchors/$i" "$kept"; i=$((i + 1)); done
IFS=:
for folder in $hidden; do mount -t tmpfs -o ro,size=4k,mode=755 zl-hidden "$folder"; done
unset IFS
mount --bind "$hosts_file" /etc/hosts
hostname "$name"
echo ready
exec sleep infinity
"""


def kept_below_tmp(paths: Sequence[str]) -> list[str]:
    """Of ``paths`` (folders every host must see), the outermost ones below ``/tmp``, which each
    host's own ``/tmp`` would hide.

    Examples
    --------
    >>> kept_below_tmp(["/tmp/clone", "/tmp/clone/.venv", "/var/tmp/x", "/work/main"])
    ['/tmp/clone']
    """
    below = sorted({os.path.realpath(path) for path in paths if os.path.realpath(path).startswith("/tmp/")})
    return [path for path in below if not any(path.startswith(other + "/") for other in below if other != path)]


def bridge_port(hostname: str) -> str:
    """The name of a host's end of its link, in the bridge's namespace (interface names: 15 characters)."""
    return f"v-{hostname}"[:15]


def set_link(bridge_netns: str, hostname: str, up: bool) -> None:
    """Bring a host's link to the bridge down (the host is cut off: nothing closes, packets are
    lost) or up again."""
    _ip("link", "set", bridge_port(hostname), "up" if up else "down", namespace=bridge_netns)


def start_host(spec: HostSpec, bridge_netns: str, anchors: str, kept: Sequence[str] = (),
               hidden: Sequence[str] = ()) -> Host:
    """Create ``spec``'s network namespace, wire it to the bridge, and start its holder; ``kept``
    folders below ``/tmp`` stay visible on the host, through empty folders made in ``anchors``;
    ``hidden`` folders (outside ``/tmp``, whose own copy on the host is empty anyway) look empty
    and read-only there, as on a host whose image does not hold them."""
    if any(":" in folder or folder.startswith("/tmp/") for folder in hidden):
        raise ValueError(f"hidden={list(hidden)}: give folders outside /tmp, without ':'")
    for index in range(len(kept)):
        os.makedirs(os.path.join(anchors, str(index)), exist_ok=True)
    _ip("netns", "add", spec.netns)
    peer = bridge_port(spec.hostname)
    _ip("link", "add", "eth0", "netns", spec.netns, "type", "veth", "peer", "name", peer, "netns", bridge_netns)
    _ip("link", "set", peer, "master", BRIDGE, "up", namespace=bridge_netns)
    _ip("link", "set", "lo", "up", namespace=spec.netns)
    _ip("addr", "add", f"{spec.address}/{spec.prefix_len}", "dev", "eth0", namespace=spec.netns)
    _ip("link", "set", "eth0", "up", namespace=spec.netns)
    holder = subprocess.Popen(
        ["ip", "netns", "exec", spec.netns, "unshare", "--uts", "--mount", "--propagation", "private",
         "sh", "-c", _HOLDER, "holder", spec.hosts_file, spec.hostname, anchors, ":".join(hidden), *kept],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )
    line = _read_line(holder, _READY_TIMEOUT_S)
    if line.strip() != b"ready":
        holder.kill()
        raise RuntimeError(f"host {spec.hostname} did not start: {line.decode(errors='replace')}"
                           f"{holder.stdout.read().decode(errors='replace') if holder.poll() is not None else ''}")
    return Host(spec, _sleep_pid(holder.pid))


def _read_line(process: subprocess.Popen, timeout_s: float) -> bytes:
    import select

    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    return process.stdout.readline() if ready else b"(no answer within %d s)" % timeout_s


def _sleep_pid(launcher_pid: int) -> int:
    """The holder's PID: ``ip netns exec`` and ``unshare`` exec into ``sh``, which execs ``sleep``,
    so it is the launcher's own PID, once it runs ``sleep``."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{launcher_pid}/comm").read_text().strip() == "sleep":
                return launcher_pid
        except OSError:
            break
        time.sleep(0.01)
    raise RuntimeError(f"the holder process {launcher_pid} did not settle into `sleep`")


def namespaces_with_prefix(prefix: str) -> list[str]:
    """Network namespaces whose name starts with ``prefix``."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.split() and line.split()[0].startswith(prefix)]


def pids_in_namespace(netns: str) -> list[int]:
    """Every process whose network namespace is ``netns``."""
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout
    return [int(pid) for pid in listed.split() if pid.isdigit()]


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] != "Z"


def end_processes(pids: Sequence[int], grace_s: float = _TERM_GRACE_S) -> list[int]:
    """SIGTERM ``pids``, SIGKILL those alive after ``grace_s``; returns those that were killed."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = [pid for pid in pids if _alive(pid)]
    for pid in killed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return killed


def remove_namespace(netns: str, grace_s: float = _TERM_GRACE_S) -> None:
    """End every process in ``netns`` (by PID: SIGTERM, then SIGKILL), then delete it."""
    for _ in range(3):   # a process may still fork while the first ones end
        pids = pids_in_namespace(netns)
        if not pids:
            break
        end_processes(pids, grace_s)
    deadline = time.monotonic() + grace_s
    while pids_in_namespace(netns) and time.monotonic() < deadline:
        time.sleep(0.05)
    subprocess.run(["ip", "netns", "del", netns], capture_output=True)


def end_host(host: Host, grace_s: float = _TERM_GRACE_S) -> None:
    """End every process on ``host``, its holder last, and delete its namespace."""
    others = [pid for pid in pids_in_namespace(host.spec.netns) if pid != host.holder_pid]
    end_processes(others, grace_s)
    remove_namespace(host.spec.netns, grace_s)
