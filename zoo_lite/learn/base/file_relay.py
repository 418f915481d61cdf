"""Files that callbacks write on rank 0's host (checkpoints, TensorBoard event files, CSV logs),
made to land at the paths the user gave, on the driver's host.

A callback names where it writes in an attribute: Keras' ``ModelCheckpoint.filepath``,
``TensorBoard.log_dir`` and ``CSVLogger.filename``, zoo_lite's torch ``ModelCheckpoint.filepath``
and ``TensorBoard.log_dir``, and any attribute a callback lists in its ``output_paths``. Paths are
the driver's: a relative one is taken from the driver's working directory.

Before a fit the driver leaves a marker file in each local path's nearest existing folder, and
rank 0 looks for it. Where rank 0 sees the marker (the same host, or a file system every host
mounts), the callback writes there directly. Where it does not, rank 0 points the attribute into a
staging folder on its own host, and after every epoch and at the end of the fit the driver copies
each file that changed there to the same path below ``/`` on its own host. A fit resumed after a
lost worker starts its new staging folder with the driver's copies of the files relayed so far,
so that a log it appends to keeps its earlier lines.

Paths of other file systems (``hdfs://``, ``s3://``) are left as they are: every host reaches them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from zoo_lite.learn.base.checkpoints import write_atomically

__all__ = ["RelayedPath", "RelayPlan", "plan_relays", "declared_output_paths", "StagedFiles", "FitFiles", "write_relayed"]

#: a driver copy of a relayed file larger than this does not seed a resumed fit's staging folder
#: (appended logs are small; checkpoints, which are large, are written anew each epoch)
SEED_LIMIT_BYTES = 64 * 1024 * 1024


def declared_output_paths(callback: Any) -> tuple[str, ...]:
    """The attributes in which ``callback`` names files it writes: its ``output_paths``.

    Examples
    --------
    >>> class Writes:
    ...     output_paths = ("report",)
    >>> declared_output_paths(Writes()), declared_output_paths(object())
    (('report',), ())
    """
    return tuple(getattr(callback, "output_paths", ()) or ())


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def _driver_path(path: str) -> str:
    """A local path as the driver means it: absolute, without ``file://``."""
    return os.path.abspath(path[len("file://"):] if path.startswith("file://") else path)


def _nearest_existing_folder(path: str) -> str:
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    while not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return folder


@dataclass(frozen=True)
class RelayedPath:
    """One callback attribute holding a local path, and the marker that tells rank 0 whether it
    sees the driver's file system there.

    Examples
    --------
    >>> RelayedPath(0, "log_dir", "/home/me/logs", "/home/me/.zoo_lite-visible-1").attribute
    'log_dir'
    """

    callback_index: int
    attribute: str
    driver_path: str
    marker: str


@dataclass
class RelayPlan:
    """The relayed paths of one fit, with the driver's files to seed a resumed fit's staging, and
    the folder on rank 0's host to stage in (its Ray node's temp dir, which goes with the node
    even when a fit fails before it removes its staging; None: the system's temp dir).

    Examples
    --------
    >>> RelayPlan().paths, RelayPlan().seed
    ([], {})
    """

    paths: list[RelayedPath] = field(default_factory=list)
    seed: dict[str, bytes] = field(default_factory=dict)
    staging_parent: Optional[str] = None

    def remove_markers(self) -> None:
        for path in self.paths:
            try:
                os.unlink(path.marker)
            except OSError:
                pass


def plan_relays(callbacks: Sequence[Any], output_paths: Callable[[Any], Sequence[str]],
                seed_files: Sequence[str] = (), staging_parent: Optional[str] = None) -> RelayPlan:
    """On the driver, before a fit: each local output path of ``callbacks`` as the driver's
    absolute path, with a marker left in its nearest existing folder; ``seed_files`` (driver
    paths relayed earlier in this fit) go with the plan. Remove the markers once the workers
    began the fit.

    Examples
    --------
    >>> import tempfile
    >>> class Logger:
    ...     output_paths = ("log_file",)
    ...     log_file = tempfile.mkdtemp() + "/log.csv"
    >>> plan = plan_relays([Logger()], declared_output_paths)
    >>> [(path.attribute, os.path.exists(path.marker)) for path in plan.paths]
    [('log_file', True)]
    >>> plan.remove_markers()
    """
    plan = RelayPlan(staging_parent=staging_parent)
    for index, callback in enumerate(callbacks):
        for attribute in output_paths(callback):
            value = getattr(callback, attribute, None)
            if not isinstance(value, (str, os.PathLike)) or not _is_local(str(value)):
                continue
            driver_path = _driver_path(str(value))
            setattr(callback, attribute, driver_path)
            marker = os.path.join(_nearest_existing_folder(driver_path), f".zoo_lite-visible-{uuid.uuid4().hex}")
            try:
                open(marker, "x").close()
            except OSError:
                continue   # the driver cannot write there either: leave the path as it is
            plan.paths.append(RelayedPath(index, attribute, driver_path, marker))
    size = 0
    for path in seed_files:
        try:
            data = open(path, "rb").read()
        except OSError:
            continue
        size += len(data)
        if size > SEED_LIMIT_BYTES:
            break
        plan.seed[path] = data
    return plan


class StagedFiles:
    """On rank 0: the staging folder of the paths it does not see, and what it has sent of it.

    Examples
    --------
    >>> class Logger:
    ...     output_paths = ("log_file",)
    ...     log_file = "/nowhere/on/this/host/log.csv"
    >>> logger = Logger()
    >>> staged = StagedFiles.redirect([logger], RelayPlan([RelayedPath(0, "log_file", "/nowhere/on/this/host/log.csv",
    ...                                                                "/nowhere/marker")]))
    >>> logger.log_file.startswith(staged.root), logger.log_file.endswith("/nowhere/on/this/host/log.csv")
    (True, True)
    >>> with open(logger.log_file, "w") as file: _ = file.write("epoch,loss")
    >>> staged.changed_files()
    [('/nowhere/on/this/host/log.csv', b'epoch,loss')]
    >>> staged.changed_files(), staged.close()
    ([], None)
    """

    def __init__(self, root: Optional[str]) -> None:
        self.root = root
        self._sent: dict[str, tuple[int, int]] = {}

    @classmethod
    def redirect(cls, callbacks: Sequence[Any], plan: Optional[RelayPlan]) -> "StagedFiles":
        """Point each path of ``plan`` at the driver's path where this host sees its marker, and
        into a staging folder where it does not."""
        paths = plan.paths if plan else []
        unseen = [path for path in paths if not os.path.exists(path.marker)]
        for path in paths:
            setattr(callbacks[path.callback_index], path.attribute, path.driver_path)
        if not unseen:
            return cls(None)
        parent = plan.staging_parent if plan.staging_parent and os.path.isdir(plan.staging_parent) else None
        staged = cls(tempfile.mkdtemp(prefix="zoo_lite-relay-", dir=parent))
        for path in unseen:
            target = staged.staged(path.driver_path)
            os.makedirs(os.path.dirname(target), exist_ok=True)   # a writer opens its file in a folder that exists
            setattr(callbacks[path.callback_index], path.attribute, target)
        for driver_path, data in plan.seed.items():
            target = staged.staged(driver_path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as file:
                file.write(data)
            staged._sent[target] = _signature(target)
        return staged

    @property
    def active(self) -> bool:
        return self.root is not None

    def staged(self, driver_path: str) -> str:
        """Where ``driver_path`` is written on this host."""
        assert self.root is not None
        return os.path.join(self.root, driver_path.lstrip("/"))

    def changed_files(self) -> list[tuple[str, bytes]]:
        """``(driver path, bytes)`` of every staged file new or changed since the last call."""
        if self.root is None:
            return []
        changed = []
        for folder, _, names in os.walk(self.root):
            for name in sorted(names):
                staged = os.path.join(folder, name)
                signature = _signature(staged)
                if signature is None or self._sent.get(staged) == signature or name.endswith(".tmp"):
                    continue
                with open(staged, "rb") as file:
                    data = file.read()
                self._sent[staged] = signature
                changed.append(("/" + os.path.relpath(staged, self.root), data))
        return changed

    def close(self) -> None:
        """Delete the staging folder (after the last :meth:`changed_files`)."""
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def _signature(path: str) -> Optional[tuple[int, int]]:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def write_relayed(files: Sequence[tuple[str, bytes]]) -> list[str]:
    """On the driver: write each relayed file whole (folders made as needed); returns their paths.

    Examples
    --------
    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tb", "events.out")
    >>> write_relayed([(path, b"event")]) == [path], open(path, "rb").read()
    (True, b'event')
    """
    for path, data in files:
        write_atomically(path, data)
    return [path for path, _ in files]


class FitFiles:
    """On the driver, through one fit: the relay plans given to the workers, and the files copied
    from rank 0's staging folder.

    Examples
    --------
    >>> files = FitFiles([], declared_output_paths)
    >>> files.plan().paths, files.relaying
    ([], False)
    """

    def __init__(self, callbacks: Sequence[Any], output_paths: Callable[[Any], Sequence[str]]) -> None:
        self.callbacks = list(callbacks)
        self.output_paths = output_paths
        self.relaying = False
        self.copied: list[str] = []

    def plan(self, resumed: bool = False, staging_parent: Optional[str] = None) -> RelayPlan:
        """The plan of a fit's ``begin_fit`` (a resumed one seeds its staging with the copies
        made); rank 0 stages in ``staging_parent`` if it has that folder."""
        plan = plan_relays(self.callbacks, self.output_paths, dict.fromkeys(self.copied) if resumed else (), staging_parent)
        self.relaying = bool(plan.paths)
        return plan

    def copy(self, files: Sequence[tuple[str, bytes]]) -> None:
        """Write what rank 0's ``relayed_files`` gave."""
        for path in write_relayed(files):
            if path not in self.copied:
                self.copied.append(path)
