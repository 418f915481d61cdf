"""Resolve user paths (files, folders, globs, lists; local, file://, hdfs://, s3://) to files."""

from __future__ import annotations

from typing import Sequence, Union

from zoo_lite.errors import DataReadError, InvalidArgumentError

__all__ = ["expand_paths", "path_exists", "file_sizes"]

PathLike = Union[str, Sequence[str]]
_GLOB_CHARS = ("*", "?", "[")


def _filesystem(path: str):
    import fsspec

    try:
        return fsspec.core.url_to_fs(path)
    except (ImportError, ValueError) as error:
        raise DataReadError(f"path={path!r}: no filesystem can open it ({error})") from error


def path_exists(path: str) -> bool:
    """Whether a file or folder exists at ``path``."""
    fs, stripped = _filesystem(path)
    return bool(fs.exists(stripped))


def file_sizes(files: Sequence[str]) -> list[int]:
    """The size in bytes of each file (as :func:`expand_paths` names them).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text("x\\n1\\n")
    >>> file_sizes([str(path)])
    [4]
    """
    sizes = []
    for file in files:
        fs, stripped = _filesystem(file)
        sizes.append(int(fs.size(stripped)))
    return sizes


def _with_protocol(fs, path: str, original: str) -> str:
    return fs.unstrip_protocol(path) if "://" in original else path


def _expand_one(path: str, argument: str) -> list[str]:
    fs, stripped = _filesystem(path)
    if any(char in stripped for char in _GLOB_CHARS):
        matches = sorted(fs.glob(stripped))
        files = [match for match in matches if fs.isfile(match)]
        if not files:
            raise DataReadError(f"{argument}={path!r}: the pattern matches no file")
        return [_with_protocol(fs, match, path) for match in files]
    if not fs.exists(stripped):
        # both Spark's and pandas' wording, which Orca passed through and its users match on
        raise DataReadError(f"Path does not exist: {argument}={path!r} (No such file or directory); "
                            "check the path (and its protocol, e.g. hdfs://)")
    if fs.isdir(stripped):
        root = stripped.rstrip("/")
        files = sorted(entry for entry in fs.find(stripped) if not _hidden(entry[len(root):]))
        if not files:
            raise DataReadError(f"{argument}={path!r} is an empty folder; it holds no data file")
        return [_with_protocol(fs, entry, path) for entry in files]
    return [path]


def _hidden(relative: str) -> bool:
    """Whether Spark's folder listing skips this path below a folder: any part starting with "." or
    "_" (_SUCCESS, .crc files, _temporary/, .ipynb_checkpoints/), except "_key=value" partitions."""
    return any(part.startswith(".") or (part.startswith("_") and "=" not in part) for part in relative.split("/") if part)


def expand_paths(path: PathLike, argument: str = "file_path") -> list[str]:
    """Every data file named by ``path``: a file, a folder (all files below it, hidden and
    ``_``-prefixed ones left out), a glob, or a list of those. Order is sorted within each entry.

    Raises
    ------
    DataReadError
        A path does not exist, a folder is empty, or a glob matches nothing.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "b.csv").write_text("x\\n1\\n"); _ = (folder / "a.csv").write_text("x\\n2\\n")
    >>> [p.rsplit("/", 1)[-1] for p in expand_paths(str(folder))]
    ['a.csv', 'b.csv']
    """
    if isinstance(path, str):
        return _expand_one(path, argument)
    if isinstance(path, (list, tuple)) and path and all(isinstance(p, str) for p in path):
        return [file for entry in path for file in _expand_one(entry, argument)]
    raise InvalidArgumentError(f"{argument}={path!r} must be a path string or a non-empty list of path strings")
