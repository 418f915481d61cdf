"""expand_paths and path_exists: local files, folders, globs, lists and file:// URLs (no Spark)."""

from __future__ import annotations

import pathlib
import re

import pytest

from zoo_lite.data.paths import expand_paths, path_exists
from zoo_lite.errors import DataReadError, InvalidArgumentError, ZooLiteError


def touch(path: pathlib.Path, text: str = "x\n1\n") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def names(paths: list[str]) -> list[str]:
    return [p.rsplit("/", 1)[-1] for p in paths]


@pytest.fixture
def folder(tmp_path: pathlib.Path) -> pathlib.Path:
    """A Spark-style output folder: data files next to _SUCCESS and hidden .crc files."""
    data = tmp_path / "out"
    for name in ("part-00002.csv", "part-00000.csv", "part-00001.csv"):
        touch(data / name)
    touch(data / "_SUCCESS", "")
    touch(data / ".part-00000.csv.crc", "crc")
    touch(data / "_committed_123", "{}")
    return data


# -- single files and folders -------------------------------------------------------------------

def test_a_file_expands_to_itself(tmp_path):
    path = touch(tmp_path / "one.csv")
    assert expand_paths(path) == [path]


def test_a_folder_expands_to_its_data_files_sorted_without_success_and_hidden_files(folder):
    files = expand_paths(str(folder))
    assert names(files) == ["part-00000.csv", "part-00001.csv", "part-00002.csv"]
    assert all(pathlib.Path(f).is_file() for f in files)
    assert all(pathlib.Path(f).parent == folder for f in files)


def test_a_folder_with_a_trailing_slash_gives_the_same_files(folder):
    assert names(expand_paths(str(folder) + "/")) == names(expand_paths(str(folder)))


def test_a_folder_includes_files_in_subfolders(tmp_path):
    touch(tmp_path / "d" / "b.csv")
    touch(tmp_path / "d" / "sub" / "a.csv")
    files = expand_paths(str(tmp_path / "d"))
    assert sorted(files) == files
    assert [str(pathlib.Path(f).relative_to(tmp_path / "d")) for f in files] == ["b.csv", "sub/a.csv"]


def test_files_inside_underscore_or_hidden_subfolders_are_left_out(tmp_path):
    # Spark leaves half-written output in _temporary/ and notebooks leave .ipynb_checkpoints/;
    # Spark's own folder listing skips every path component starting with "_" or ".".
    touch(tmp_path / "d" / "part-0.csv")
    touch(tmp_path / "d" / "_temporary" / "0" / "part-1.csv")
    touch(tmp_path / "d" / ".ipynb_checkpoints" / "part-0-checkpoint.csv")
    assert names(expand_paths(str(tmp_path / "d"))) == ["part-0.csv"]


def test_file_url_of_a_file_and_of_a_folder(folder):
    url = "file://" + str(folder)
    files = expand_paths(url)
    assert files == [url + "/" + n for n in ("part-00000.csv", "part-00001.csv", "part-00002.csv")]
    single = url + "/part-00001.csv"
    assert expand_paths(single) == [single]


# -- globs ----------------------------------------------------------------------------------------

def test_a_glob_expands_to_matching_files_sorted(tmp_path):
    for name in ("c.csv", "a.csv", "b.csv", "notes.txt"):
        touch(tmp_path / name)
    assert names(expand_paths(str(tmp_path / "*.csv"))) == ["a.csv", "b.csv", "c.csv"]
    assert names(expand_paths(str(tmp_path / "?.csv"))) == ["a.csv", "b.csv", "c.csv"]
    assert names(expand_paths(str(tmp_path / "[ab].csv"))) == ["a.csv", "b.csv"]


def test_a_glob_keeps_files_only_not_folders_it_matches(tmp_path):
    touch(tmp_path / "part-1.csv")
    (tmp_path / "part-dir").mkdir()
    touch(tmp_path / "part-dir" / "inner.csv")
    assert names(expand_paths(str(tmp_path / "part-*"))) == ["part-1.csv"]


def test_a_glob_over_folders_reaches_their_files(tmp_path):
    touch(tmp_path / "day=2" / "x.csv")
    touch(tmp_path / "day=1" / "x.csv")
    files = expand_paths(str(tmp_path / "day=*" / "*.csv"))
    assert [pathlib.Path(f).parent.name for f in files] == ["day=1", "day=2"]


def test_file_url_glob_keeps_the_protocol(tmp_path):
    touch(tmp_path / "a.csv")
    touch(tmp_path / "b.csv")
    url = "file://" + str(tmp_path) + "/*.csv"
    assert expand_paths(url) == ["file://" + str(tmp_path / n) for n in ("a.csv", "b.csv")]


# -- lists ------------------------------------------------------------------------------------------

def test_a_list_keeps_its_order_and_sorts_within_each_entry(tmp_path, folder):
    single = touch(tmp_path / "zzz.csv")
    files = expand_paths([single, str(folder)])
    assert names(files) == ["zzz.csv", "part-00000.csv", "part-00001.csv", "part-00002.csv"]


def test_a_list_mixing_file_folder_glob_and_url(tmp_path, folder):
    touch(tmp_path / "g1.csv")
    touch(tmp_path / "g2.csv")
    url = "file://" + str(tmp_path / "g1.csv")
    files = expand_paths((str(tmp_path / "g*.csv"), str(folder / "part-00001.csv"), url))
    assert names(files) == ["g1.csv", "g2.csv", "part-00001.csv", "g1.csv"]
    assert files[-1] == url


# -- errors ---------------------------------------------------------------------------------------

def test_missing_path_names_the_argument_and_the_path(tmp_path):
    missing = str(tmp_path / "nope.csv")
    with pytest.raises(DataReadError, match="Path does not exist: " + re.escape(f"file_path={missing!r}")):
        expand_paths(missing)


def test_missing_path_uses_the_given_argument_name(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(DataReadError, match=re.escape(f"path={missing!r}")):
        expand_paths(missing, argument="path")


def test_one_missing_entry_of_a_list_is_an_error_naming_it(tmp_path):
    present = touch(tmp_path / "a.csv")
    missing = str(tmp_path / "b.csv")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={missing!r}")):
        expand_paths([present, missing])


def test_empty_folder_is_an_error(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataReadError, match=re.escape(f"file_path={str(empty)!r}") + ".*empty folder"):
        expand_paths(str(empty))


def test_folder_with_only_success_and_hidden_files_counts_as_empty(tmp_path):
    touch(tmp_path / "out" / "_SUCCESS", "")
    touch(tmp_path / "out" / ".crc", "")
    out = str(tmp_path / "out")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={out!r}") + ".*empty folder"):
        expand_paths(out)


def test_glob_matching_nothing_is_an_error(tmp_path):
    touch(tmp_path / "a.txt")
    pattern = str(tmp_path / "*.csv")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={pattern!r}") + ".*matches no file"):
        expand_paths(pattern)


def test_glob_matching_only_folders_is_an_error(tmp_path):
    (tmp_path / "part-a").mkdir()
    pattern = str(tmp_path / "part-*")
    with pytest.raises(DataReadError, match=re.escape(f"file_path={pattern!r}") + ".*matches no file"):
        expand_paths(pattern)


def test_unknown_protocol_is_a_read_error_naming_the_path():
    with pytest.raises(DataReadError, match=re.escape("path='nosuchfs://bucket/x.csv'") + ".*no filesystem"):
        expand_paths("nosuchfs://bucket/x.csv")


@pytest.mark.parametrize("bad", [[], (), 5, None, ["a.csv", 3], b"a.csv"])
def test_non_path_values_are_invalid_arguments(bad):
    with pytest.raises(InvalidArgumentError, match=re.escape(f"file_path={bad!r}") + ".*path string"):
        expand_paths(bad)


def test_errors_are_zoo_lite_errors(tmp_path):
    assert issubclass(DataReadError, ZooLiteError)
    with pytest.raises(ZooLiteError):
        expand_paths(str(tmp_path / "missing"))


# -- path_exists ----------------------------------------------------------------------------------

def test_path_exists_for_files_folders_and_urls(tmp_path, folder):
    file = touch(tmp_path / "a.csv")
    assert path_exists(file) is True
    assert path_exists(str(folder)) is True
    assert path_exists("file://" + file) is True
    assert path_exists("file://" + str(folder)) is True


def test_path_exists_is_false_for_missing_paths(tmp_path):
    assert path_exists(str(tmp_path / "missing.csv")) is False
    assert path_exists("file://" + str(tmp_path / "missing")) is False


def test_path_exists_with_unknown_protocol_is_a_read_error():
    with pytest.raises(DataReadError, match=re.escape("path='nosuchfs://x'")):
        path_exists("nosuchfs://x")
