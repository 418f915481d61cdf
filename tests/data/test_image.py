"""read_images, write_parquet and read_parquet on real local Spark, against Pillow itself.

The images are generated with Pillow into a temporary folder tree (three classes, different
sizes, modes and formats, a name with a space, an upper-case extension, a text file that must be
left out). Every expected pixel array is Pillow's own decode + resize of the same file, and every
expected label comes from the sorted paths, so a mix-up of files, labels, axes or order fails.
"""

from __future__ import annotations

import logging
import pathlib
import shutil
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest
from PIL import Image

from zoo_lite import OrcaContext
from zoo_lite.data import SparkXShards
from zoo_lite.data.image import read_images, read_parquet, write_parquet
from zoo_lite.errors import DataReadError, InvalidArgumentError, ShardFunctionError

pytestmark = pytest.mark.usefixtures("sc")

SIZE = (12, 10)  # (height, width): not square, so that a swapped axis shows
CLASSES = ["ant", "bee", "cat"]
REPO = pathlib.Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# Images on disk, and what Pillow makes of them
# ---------------------------------------------------------------------------------------------

def save(path: pathlib.Path, height: int, width: int, mode: str, seed: int, **options: Any) -> None:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).convert(mode).save(path, **options)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Seven images in three class folders, and a text file that read_images must leave out."""
    root = tmp_path_factory.mktemp("images")
    save(root / "ant" / "a1.png", 20, 30, "RGB", 1)
    save(root / "ant" / "a2.jpg", 33, 17, "RGB", 2, quality=90)
    save(root / "ant" / "a3.png", 12, 10, "RGB", 3)  # already at the target size
    save(root / "bee" / "b1.png", 25, 25, "P", 4)  # a palette image
    save(root / "bee" / "b2.PNG", 16, 40, "RGBA", 5)
    save(root / "cat" / "c 1.png", 40, 22, "L", 6)
    save(root / "cat" / "c2.bmp", 9, 12, "RGB", 7)
    (root / "bee" / "notes.txt").write_text("not an image")
    return root


@pytest.fixture(scope="module")
def tree_with_corrupt(tree: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The same tree plus a truncated JPEG (its header reads; decoding it fails)."""
    root = tmp_path_factory.mktemp("corrupt") / "images"
    shutil.copytree(tree, root)
    whole = (root / "ant" / "a2.jpg").read_bytes()
    (root / "cat" / "broken.jpg").write_bytes(whole[: len(whole) // 2])
    return root


def image_files(root: pathlib.Path) -> list[pathlib.Path]:
    """The image files below ``root`` in read_images' order (sorted paths)."""
    return sorted((p for p in root.rglob("*") if p.is_file() and p.suffix.lower() != ".txt"), key=str)


def pillow_pixels(path: pathlib.Path, size: tuple[int, int] = SIZE, mode: str = "RGB") -> np.ndarray:
    """What read_images must give for one file: Pillow's decode, convert and bilinear resize."""
    with Image.open(path) as image:
        pixels = np.asarray(image.convert(mode).resize((size[1], size[0]), Image.Resampling.BILINEAR))
    return pixels[..., None] if pixels.ndim == 2 else pixels


def stacked(shards: SparkXShards) -> dict[str, np.ndarray]:
    """The shards' arrays joined in partition order, after checking one dict shard per partition."""
    parts = shards.collect()
    assert len(parts) == shards.num_partitions()
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def folder_labels(files: list[pathlib.Path]) -> list[int]:
    names = sorted({f.parent.name for f in files})
    return [names.index(f.parent.name) for f in files]


# ---------------------------------------------------------------------------------------------
# read_images
# ---------------------------------------------------------------------------------------------

def test_folder_gives_resized_uint8_images_with_folder_labels(tree):
    shards = read_images(str(tree), size=SIZE)
    files = image_files(tree)
    data = stacked(shards)
    assert shards.classes == CLASSES
    assert data["x"].dtype == np.uint8 and data["x"].shape == (7, *SIZE, 3)
    assert data["y"].dtype == np.int64 and data["y"].tolist() == folder_labels(files) == [0, 0, 0, 1, 1, 2, 2]
    for position, file in enumerate(files):
        np.testing.assert_array_equal(data["x"][position], pillow_pixels(file), err_msg=str(file))


@pytest.mark.parametrize("mode, channels", [("L", 1), ("RGBA", 4)])
def test_mode_sets_the_channels_and_pixels(tree, mode, channels):
    data = stacked(read_images(str(tree), size=SIZE, mode=mode))
    assert data["x"].shape == (7, *SIZE, channels)
    for position, file in enumerate(image_files(tree)):
        np.testing.assert_array_equal(data["x"][position], pillow_pixels(file, mode=mode), err_msg=str(file))


def test_partitions_are_contiguous_slices_of_the_sorted_paths(tree):
    shards = read_images(str(tree), size=SIZE, num_partitions=3)
    parts = shards.collect()
    assert [len(part["y"]) for part in parts] == [2, 2, 3]
    whole = stacked(read_images(str(tree), size=SIZE, num_partitions=1))
    np.testing.assert_array_equal(np.concatenate([part["x"] for part in parts]), whole["x"])
    # more partitions than images: one per image
    assert read_images(str(tree), size=SIZE, num_partitions=50).num_partitions() == 7


def test_reading_is_lazy(tree, sc):
    tracker = sc.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup())
    shards = read_images(str(tree), size=SIZE)
    assert set(tracker.getJobIdsForGroup()) == jobs_before
    assert len(shards) == 7


def test_glob_reads_what_it_matches(tree):
    matched = stacked(read_images(str(tree / "*" / "*.png"), size=SIZE))
    pngs = [f for f in image_files(tree) if f.suffix == ".png"]
    assert len(matched["x"]) == len(pngs) == 4
    for position, file in enumerate(pngs):
        np.testing.assert_array_equal(matched["x"][position], pillow_pixels(file))
    assert matched["y"].tolist() == folder_labels(pngs) == [0, 0, 1, 2]
    everything = stacked(read_images(str(tree / "*" / "*"), size=SIZE))
    np.testing.assert_array_equal(everything["x"], stacked(read_images(str(tree), size=SIZE))["x"])


def test_a_single_file(tree):
    shards = read_images(str(tree / "bee" / "b2.PNG"), size=SIZE)
    assert shards.classes == ["bee"]
    np.testing.assert_array_equal(stacked(shards)["x"][0], pillow_pixels(tree / "bee" / "b2.PNG"))


def test_callable_label_gets_the_path(tree):
    data = stacked(read_images(str(tree), size=SIZE, label=lambda path: len(path.rsplit("/", 1)[-1])))
    assert data["y"].tolist() == [len(f.name) for f in image_files(tree)]


def test_label_none_gives_no_y(tree):
    shards = read_images(str(tree), size=SIZE, label=None)
    assert shards.classes is None
    assert all(set(part) == {"x"} for part in shards.collect())


def test_a_failing_label_function_is_named(tree):
    def label_of(path: str) -> int:
        raise KeyError(path)

    with pytest.raises(ShardFunctionError, match=r"function 'label_of' failed on partition \d: KeyError"):
        read_images(str(tree), size=SIZE, label=label_of).collect()
    with pytest.raises(InvalidArgumentError, match=r"label function returned '(ant|bee|cat)' for 'file:/.*/\1/\w[^/]*'; it must return an int \(the class index\)"):
        read_images(str(tree), size=SIZE, label=lambda path: path.split("/")[-2]).collect()


def test_undecodable_file_raises_naming_it(tree_with_corrupt):
    shards = read_images(str(tree_with_corrupt), size=SIZE)
    with pytest.raises(DataReadError, match=r"read_images: cannot decode 'file:.*/cat/broken\.jpg' as an image \(OSError: .*truncated.*on_error='skip'"):
        shards.collect()


def test_undecodable_file_is_skipped_and_counted(tree_with_corrupt, caplog):
    shards = read_images(str(tree_with_corrupt), size=SIZE, on_error="skip")
    assert len(shards.skipped) == 0  # nothing decoded yet
    with caplog.at_level(logging.WARNING, logger="zoo_lite.data.image"):
        data = stacked(shards)
        len(shards)  # computing the partitions again counts nothing twice
    assert len(shards.skipped) == 1 and shards.skipped.paths[0].endswith("/cat/broken.jpg")
    warnings = [r.getMessage() for r in caplog.records if r.name == "zoo_lite.data.image"]
    assert warnings and "read_images skipped 1 undecodable image file(s)" in warnings[0] and "broken.jpg" in warnings[0]
    files = image_files(tree_with_corrupt)
    good = [f for f in files if f.name != "broken.jpg"]
    assert len(good) == 7 and data["y"].tolist() == folder_labels(good)
    for position, file in enumerate(good):
        np.testing.assert_array_equal(data["x"][position], pillow_pixels(file))


@pytest.mark.parametrize("kwargs, message", [
    ({"size": (0, 5)}, r"size=\(0, 5\) must be two positive integers \(height, width\), e\.g\. size=\(224, 224\)"),
    ({"size": (5,)}, r"size=\(5,\) must be two positive integers"),
    ({"size": (True, 4)}, r"size=\(True, 4\) must be two positive integers"),
    ({"size": 32}, r"size=32 must be two positive integers"),
    ({"mode": "CMYK"}, r"mode='CMYK' is not supported; use 'RGB' \(3 channels\), 'L' \(1\) or 'RGBA' \(4\)"),
    ({"label": "parent"}, r"label='parent' is not supported; use 'folder' .*a function taking the file's path"),
    ({"on_error": "ignore"}, r"on_error='ignore' is not supported; use one of \['raise', 'skip'\]"),
    ({"num_partitions": 0}, r"num_partitions=0 must be a positive integer"),
])
def test_bad_arguments_are_named(tree, kwargs, message):
    arguments = {"size": SIZE, **kwargs}
    with pytest.raises(InvalidArgumentError, match=message):
        read_images(str(tree), **arguments)


def test_paths_without_images_are_named(tree, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "a.txt").write_text("x")
    with pytest.raises(InvalidArgumentError, match=r"path='.*/missing' does not exist; pass a folder of images"):
        read_images(str(tmp_path / "missing"), size=SIZE)
    with pytest.raises(InvalidArgumentError, match=r"path='.*/\*\.gif' matches no file"):
        read_images(str(tree / "*" / "*.gif"), size=SIZE)
    for folder in ("empty", "text"):
        with pytest.raises(InvalidArgumentError, match=rf"path='.*/{folder}' holds no image file \(files ending in \.bmp, .*; pass a folder"):
            read_images(str(tmp_path / folder), size=SIZE)
    with pytest.raises(InvalidArgumentError, match=r"path=3 must be a folder, a file or a glob"):
        read_images(3, size=SIZE)


def test_local_listing_names_what_spark_lists(tmp_path):
    """A local folder is listed by Python (Spark's listing costs ~0.2 s); hidden and '_' names,
    partition-style folders, nested folders, extensions in any case, non-images and a symlinked
    folder must give exactly Spark's files, in the same form."""
    from zoo_lite.data.image import readers as image

    root = tmp_path / "my images"
    for relative in ["a/1.png", "a/deep/er/2.JPG", "a/.hidden.png", "a/_temp.png", ".cache/3.png", "_tmp/4.png",
                     "key=1/5.png", "_key=2/6.png", "b/7.png.txt", "b/8", "b/9.jpeg", "c/10.tiff", "11.PnG"]:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(b"bytes")
    (root / "linked").symlink_to(root / "a", target_is_directory=True)
    session = image._image_session()
    for path in [str(root), f"file://{root}", str(root / "a"), str(root / "11.PnG")]:
        listed_by_python = image._list_local_images(path, "path")
        assert listed_by_python is not None, path
        assert listed_by_python == image._list_images(session, path, "path")[1], path
    # globs and other filesystems stay with Spark's listing
    assert image._list_local_images(str(root / "*"), "path") is None
    assert image._list_local_images("hdfs://namenode/images", "path") is None
    assert image._list_local_images(str(tmp_path / "missing"), "path") is None


def test_a_file_deleted_after_listing_is_named(tmp_path):
    save(tmp_path / "x" / "1.png", 8, 8, "RGB", 1)
    save(tmp_path / "x" / "2.png", 8, 8, "RGB", 2)
    shards = read_images(str(tmp_path), size=SIZE)
    (tmp_path / "x" / "2.png").unlink()
    with pytest.raises(DataReadError, match=r"read_images: '.*/x/2.png' was listed on host '[^']+' but is gone: it was "
                                            r"deleted or moved while being read"):
        shards.collect()


def test_glob_read_prints_no_file_stream_sink_warning(tree):
    """A glob once printed Spark's 90-line 'WARN FileStreamSink' stack trace (the JVM's stderr,
    so it is checked in a fresh process)."""
    script = textwrap.dedent("""
        import sys
        from zoo_lite import init_orca_context, stop_orca_context
        from zoo_lite.data.image import read_images
        init_orca_context(cores=1)
        print("images:", len(read_images(sys.argv[1], size=(4, 4))))
        stop_orca_context()
    """)
    done = subprocess.run([sys.executable, "-c", script, str(tree / "*" / "*.png")], cwd=REPO,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "images: 4" in done.stdout
    assert "FileStreamSink" not in done.stderr, done.stderr[-3000:]


def test_to_spark_df_gives_a_row_per_image(tree):
    shards = read_images(str(tree), size=SIZE, mode="L")
    df = shards.to_spark_df()
    rows, data = df.collect(), stacked(shards)
    assert df.columns == ["x", "y"] and [row.y for row in rows] == data["y"].tolist()
    np.testing.assert_array_equal(np.array([row.x for row in rows]), data["x"])


# ---------------------------------------------------------------------------------------------
# write_parquet / read_parquet
# ---------------------------------------------------------------------------------------------

def test_parquet_round_trip_equals_read_images(tree, tmp_path):
    table_path = str(tmp_path / "table")
    write_parquet("image", table_path, str(tree))
    table = OrcaContext.get_spark_session().read.parquet(table_path)
    assert table.schema.simpleString() == (
        "struct<path:string,image:binary,label:bigint,height:int,width:int,channels:int>")
    rows = sorted(table.collect(), key=lambda row: row.path)
    files = image_files(tree)
    assert [row.path for row in rows] == [f"file:{f}" for f in files]
    assert [row.label for row in rows] == folder_labels(files)
    assert [(row.height, row.width, row.channels) for row in rows][3:6] == [(25, 25, 1), (16, 40, 4), (40, 22, 1)]
    assert rows[0].image == files[0].read_bytes()
    expected = read_images(str(tree), size=SIZE, mode="L", num_partitions=2)
    shards = read_parquet("image", table_path, size=SIZE, mode="L", num_partitions=2)
    assert shards.classes == expected.classes == CLASSES
    for got, want in zip(shards.collect(), expected.collect(), strict=True):
        assert got.keys() == want.keys() == {"x", "y"}
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
            assert got[key].dtype == want[key].dtype


def test_parquet_without_labels_and_with_orca_arguments(tree, tmp_path):
    write_parquet("image", str(tmp_path / "plain"), str(tree / "*" / "*.png"), label=None)
    plain = read_parquet("image", str(tmp_path / "plain"), size=(4, 4))
    assert plain.classes is None and all(set(part) == {"x"} for part in plain.collect()) and len(plain) == 4
    # Orca's call: format "image_folder", directory= and label_map=; unmapped folders are left out
    write_parquet("image_folder", str(tmp_path / "orca"), directory=str(tree), label_map={"cat": 0, "ant": 1})
    orca = read_parquet("image_folder", str(tmp_path / "orca"), size=(4, 4))
    assert orca.classes == ["cat", "ant"]
    assert stacked(orca)["y"].tolist() == [1, 1, 1, 0, 0]
    write_parquet("image", str(tmp_path / "sparse"), str(tree), label_map={"cat": 3, "ant": 7})
    assert read_parquet("image", str(tmp_path / "sparse"), size=(4, 4)).classes is None


def test_write_parquet_and_undecodable_files(tree_with_corrupt, tmp_path, caplog):
    with pytest.raises(DataReadError, match=r"write_parquet: cannot decode 'file:.*/cat/broken\.jpg' as an image"):
        write_parquet("image", str(tmp_path / "t"), str(tree_with_corrupt))
    with caplog.at_level(logging.WARNING, logger="zoo_lite.data.image"):
        write_parquet("image", str(tmp_path / "t"), str(tree_with_corrupt), on_error="skip")
    assert any("write_parquet skipped 1 undecodable image file(s)" in r.getMessage() for r in caplog.records)
    assert len(read_parquet("image", str(tmp_path / "t"), size=(4, 4))) == 7


@pytest.mark.parametrize("call, message", [
    (lambda p: write_parquet("mnist", p, p), r"write_parquet\(format='mnist'\): Orca's format 'mnist' is not supported by zoo_lite"),
    (lambda p: write_parquet("csv", p, p), r"write_parquet\(format='csv'\) is not supported; use format='image'"),
    (lambda p: write_parquet("image", p), r"give the images as path= \(or Orca's directory=\), once"),
    (lambda p: write_parquet("image", p, p, directory=p), r"give the images as path= \(or Orca's directory=\), once"),
    (lambda p: write_parquet("image", p, p, label_map=["cat"]), r"label_map=\['cat'\] must be a non-empty dict"),
    (lambda p: write_parquet("image", p, p, label=None, label_map={"a": 0}), r"label_map is given with label=None"),
    (lambda p: write_parquet("image", p, p, write_mode="replace"), r"write_mode='replace' is not supported"),
    (lambda p: read_parquet("tf_dataset", p, size=SIZE), r"Orca's format 'tf_dataset' is not supported by zoo_lite; read the table into XShards"),
    (lambda p: read_parquet("image", p, size=(1, -1)), r"size=\(1, -1\) must be two positive integers"),
])
def test_parquet_argument_errors(tmp_path, call, message):
    with pytest.raises(InvalidArgumentError, match=message):
        call(str(tmp_path))


def test_read_parquet_of_other_tables(tmp_path):
    OrcaContext.get_spark_session().range(3).write.parquet(str(tmp_path / "numbers"))
    with pytest.raises(InvalidArgumentError, match=r"is not a table of images \(its columns are \['id'\]"):
        read_parquet("image", str(tmp_path / "numbers"), size=SIZE)
    with pytest.raises(DataReadError, match=r"path='.*/missing' does not exist"):
        read_parquet("image", str(tmp_path / "missing"), size=SIZE)
