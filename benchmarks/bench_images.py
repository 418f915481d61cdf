"""Benchmark: decoding and resizing images with read_images against a single-process Pillow loop.

Claim, measured as a ratio against its reference in the same run and process (the cases are
interleaved round by round, because the machine is shared and noisy):

- ``read_images(folder, size=(64, 64))`` with ``len()`` forcing every shard (listing the files,
  then each task reading and decoding + resizing its path-ordered slice with Pillow on the
  executors, ``local[2]``) decodes >= 1.6x more images per second than one Python process doing
  the same decode + resize (``Image.open(...).convert("RGB").resize(..., BILINEAR)``) over the
  same files, read from disk in the loop.

For context, the same per-file work spread over a ``multiprocessing.Pool(2)`` shows what two
cores can give on the machine at the time of the run (no Spark, no ordering, no shuffle).

The images (default 2000 JPEGs of 256x256 in 10 class folders, seeded) are generated once into
``benchmarks/_data/`` (gitignored) and reused while the parameters are the same.

Run from the repository root::

    .venv/bin/python benchmarks/bench_images.py                 # ~1 min on 2 cores
    .venv/bin/python benchmarks/bench_images.py --images 8000   # more images, fixed costs matter less

It prints markdown (seconds, images per second, the ratio, PASS/MISS, and how busy the machine
was with other work); keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from multiprocessing import Pool
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from _harness import CpuWatch, command_line, heading, load_line, log, run_interleaved, timed_case

DATA = Path(__file__).resolve().parent / "_data"
CLASSES = 10
TARGET = 1.6
PILLOW = "Pillow loop, one process"
ZOO = "read_images, local[2]"
POOL = "Pillow in multiprocessing.Pool(2) (context: the two cores' ceiling)"


def generate(count: int, side: int) -> Path:
    """``count`` seeded JPEGs of ``side`` x ``side`` in class folders (made once, then reused)."""
    from PIL import Image

    folder = DATA / f"images_{count}_{side}"
    marker, params = folder / "params.json", {"count": count, "side": side, "version": 1}
    if marker.exists() and json.loads(marker.read_text()) == params:
        return folder / "images"
    log(f"generating {count} JPEGs of {side}x{side} into {folder}")
    rng = np.random.default_rng(0)
    rows, cols = np.mgrid[0:side, 0:side]
    for index in range(count):
        # smooth gradients plus noise: JPEG sizes (~25 KB) like photographs', not like pure noise
        base = np.stack([(cols * (index % 7 + 1)) % 256, (rows * (index % 5 + 1)) % 256, (cols + rows + index) % 256], -1)
        pixels = (base + rng.integers(0, 40, base.shape)).clip(0, 255).astype(np.uint8)
        target = folder / "images" / f"class{index % CLASSES}" / f"{index:06d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(target, quality=90)
    marker.write_text(json.dumps(params))
    return folder / "images"


def decode_file(path: str, size: int = 64) -> np.ndarray:
    """The reference's per-file work, the same recipe read_images uses."""
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR))


def pillow_loop(files: Sequence[str], size: int) -> np.ndarray:
    return np.stack([decode_file(path, size) for path in files])


def zoo_read(folder: Path, size: int) -> int:
    from zoo_lite.data.image import read_images

    return len(read_images(str(folder), size=(size, size)))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--images", type=int, default=2000, help="number of JPEGs (default 2000)")
    parser.add_argument("--source-side", type=int, default=256, help="side of the JPEGs, pixels (default 256)")
    parser.add_argument("--size", type=int, default=64, help="side they are resized to (default 64)")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds per case (default 5)")
    args = parser.parse_args(argv)
    command = command_line("bench_images.py", argv)

    folder = generate(args.images, args.source_side)
    files = sorted(str(path) for path in folder.rglob("*.jpg"))
    megabytes = sum(os.path.getsize(path) for path in files) / 2**20

    from zoo_lite import init_orca_context, stop_orca_context
    from zoo_lite.data.image import read_images

    pool = Pool(2)  # forked before Spark starts, so that no JVM gateway thread is copied into it
    init_orca_context(cluster_mode="local", cores=2, memory="2g")
    load_before, watch = os.getloadavg(), CpuWatch().start()
    try:
        with pool:
            # warm-up, untimed: JVM classes, Python workers; and the two decode the same pixels
            shards = read_images(str(folder), size=(args.size, args.size), label=None).collect()
            assert np.array_equal(np.concatenate([shard["x"] for shard in shards]), pillow_loop(files, args.size))
            cases = {
                PILLOW: timed_case("decode", lambda: pillow_loop(files, args.size)),
                ZOO: timed_case("decode", lambda: zoo_read(folder, args.size)),
                POOL: timed_case("decode", lambda: pool.starmap(decode_file, [(path, args.size) for path in files], chunksize=64)),
            }
            results = run_interleaved(cases, args.repeat, rotate=False)
            timings = {name: measures["decode"] for name, measures in results.items()}
    finally:
        watch.stop()
        stop_orca_context()

    reference, zoo = timings[PILLOW], timings[ZOO]
    ratio_best, ratio_median = reference.best / zoo.best, reference.median / zoo.median
    paired = sorted(r / z for r, z in zip(reference.seconds, zoo.seconds))
    import PIL
    import pyspark

    print("\n".join([
        *heading("bench_images", command),
        f"- {args.images} JPEGs of {args.source_side}x{args.source_side} ({megabytes:.0f} MB) in {CLASSES} folders, "
        f"resized to {args.size}x{args.size} RGB; {args.repeat} rounds per case, interleaved",
        f"- machine: {os.cpu_count()} cores, Python {platform.python_version()}, pyspark {pyspark.__version__}, "
        f"Pillow {PIL.__version__}; read_images on `local[2]`",
        load_line(load_before, os.getloadavg(), periods=True),
        f"- {watch.summary()}", "",
        "### Target", "", "| target | measured: best (median) | bar | result |", "|---|---:|---|---|",
        f"| images/s, read_images / one-process Pillow loop | {ratio_best:.2f}x ({ratio_median:.2f}x) | >= {TARGET}x "
        f"| {'PASS' if ratio_best >= TARGET else 'MISS'} |", "",
        f"Per round (same round, interleaved): {', '.join(f'{r:.2f}x' for r in paired)}", "",
        "### Decode + resize", "", "| case | s: best (median) | images/s: best |", "|---|---:|---:|",
        *[f"| {name} | {t.cell(2)} | {args.images / t.best:,.0f} |" for name, t in timings.items()], "",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
