"""``bench_xshards.py --profile BACKEND``: where zoo_lite's pipeline spends its time, instead of
the benchmark.

zoo_lite's pipeline (``_xshards_pipeline.zoo_pipeline``) runs once under py-spy, which samples the
driver and every Spark Python worker, and the Spark stages it ran are listed from Spark's UI
(``bench_xshards.py`` starts Spark with its UI for this mode).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _harness import timed
from _xshards_pipeline import BenchConfig, zoo_pipeline


def spark_stage_lines(first_job: int) -> list[str]:
    """Wall and task time of every stage run by the jobs from ``first_job`` on (needs the Spark UI)."""
    import urllib.request
    from datetime import datetime

    from zoo_lite import OrcaContext

    sc = OrcaContext.get_spark_context()
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def fetch(what: str) -> Any:
        with urllib.request.urlopen(f"{base}/{what}") as response:
            return json.load(response)

    def stamp(text: str) -> float:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%Z").timestamp()

    stages = {stage["stageId"]: stage for stage in fetch("stages")}
    lines = ["| job | stage | tasks | wall s | task time s | shuffle write MB | shuffle read MB | stage name |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
    for job in sorted((job for job in fetch("jobs") if job["jobId"] >= first_job), key=lambda job: job["jobId"]):
        for stage_id in sorted(job["stageIds"]):
            stage = stages.get(stage_id)
            if stage is None or stage["status"] != "COMPLETE":
                continue
            wall = stamp(stage["completionTime"]) - stamp(stage["submissionTime"])
            lines.append(f"| {job['jobId']} | {stage_id} | {stage['numTasks']} | {wall:.2f} | {stage['executorRunTime'] / 1000:.2f} | "
                         f"{stage['shuffleWriteBytes'] / 1e6:.0f} | {stage['shuffleReadBytes'] / 1e6:.0f} | {stage['name'][:60]} |")
    return lines


def last_job_id() -> int:
    from zoo_lite import OrcaContext

    tracker = OrcaContext.get_spark_context().statusTracker()
    return max([*tracker.getJobIdsForGroup(None), -1])


def folded_summary(path: Path, top: int = 25) -> list[str]:
    """The functions with the most py-spy samples (self and inclusive) from a raw folded-stack file."""
    import collections
    import re

    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        total += count
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";") if not frame.startswith("process ")]
        for frame in set(frames):
            inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
    lines = [f"{total} samples in this process tree (all Python processes: driver, Spark's Python workers).", "",
             "| self % | function (self time) | | inclusive % | function (inclusive) |", "|---:|---|---|---:|---|"]
    interesting = [(frame, count) for frame, count in inclusive.most_common() if "zoo_lite" in frame or "pandas/" in frame
                   or "pyarrow" in frame or "serializers.py" in frame or "daemon.py" in frame]
    for (own_frame, own_count), (frame, count) in zip(own.most_common(top), interesting[:top]):
        lines.append(f"| {100 * own_count / total:.1f} | `{own_frame}` | | {100 * count / total:.1f} | `{frame}` |")
    return lines


def profile_zoo(config: BenchConfig, files: list[str], folder: str, backend: str) -> str:
    """Run zoo_lite's pipeline once (after a warm-up on one file) under py-spy, which samples this
    process and every Spark Python worker, and list the Spark stages it ran."""
    import signal
    import subprocess
    import tempfile

    zoo_pipeline(files[:1], backend, config.num_partitions)
    out = Path(tempfile.mkdtemp(prefix="bench_xshards_profile_")) / f"pyspy_{backend}.txt"
    py_spy = Path(sys.executable).parent / "py-spy"
    command = [str(py_spy), "record", "--subprocesses", "--rate", "50", "--format", "raw", "--output", str(out), "--pid", str(os.getpid())]
    first_job = last_job_id() + 1
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches
    try:
        seconds, result = timed(lambda: zoo_pipeline(folder, backend, config.num_partitions))
    finally:
        recorder.send_signal(signal.SIGINT)
        _, errors = recorder.communicate(timeout=120)
    if not out.exists():
        raise RuntimeError(f"py-spy wrote no profile: {errors.decode(errors='replace')[-2000:]}")
    time.sleep(1.0)  # the UI's listener catches up
    return "\n".join([
        f"### Profile of zoo_lite (backend={backend}): {seconds:.2f} s for {result}", "",
        f"py-spy raw folded stacks: `{out}`", "",
        *folded_summary(out), "",
        "Spark stages of that run:", "",
        *spark_stage_lines(first_job), "",
    ])
