"""Measure Orca compatibility: run Orca's own public tests against zoo_lite, imports changed.

Orca's tests (intel-analytics/analytics-zoo, ``pyzoo/test/zoo/orca/``) are the specification of
the behaviour zoo_lite takes over. This script reads the in-scope test files and the resources
they use from a checkout or a bare mirror of that repository, changes nothing in them but the
imports (the one change an Orca user makes), runs them with pytest in a scratch folder, and
prints a markdown table of passed / failed / errors per file with the most common causes.
Nothing of Orca's is stored in this repository: the files are read at run time.

The import change, applied as text to the test files and their ``conftest.py``:

- ``zoo.orca`` -> ``zoo_lite`` (``zoo.orca.data`` -> ``zoo_lite.data``, ``zoo.orca.learn`` ->
  ``zoo_lite.learn``, ``from zoo.orca import ...`` -> ``from zoo_lite import ...``);
- ``zoo.common.nncontext`` and ``from zoo import`` -> ``zoo_lite``;
- ``zoo.ray`` -> ``zoo_lite.ray_on_spark`` (Orca's ``RayContext``).

Run from the repository root (the mirror is what ``fetch`` brings onto the machine)::

    .venv/bin/python benchmarks/orca_tests.py --orca /work/.mirror/intel-analytics+analytics-zoo/repo
    .venv/bin/python benchmarks/orca_tests.py --orca ... --only test_partition.py   # one file

Keep the latest table in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Optional, Sequence

from _harness import command_line, heading, log

TEST_ROOT = "pyzoo/test/zoo"
# the files in scope: the parts of Orca that zoo_lite takes over
IN_SCOPE = (
    "orca/data/test_spark_backend.py",
    "orca/data/test_pandas_backend.py",
    "orca/data/test_partition.py",
    "orca/data/test_ray_xshards.py",
    "orca/learn/ray/pytorch/test_estimator_pytorch_backend.py",
    "orca/learn/ray/tf/test_tf_ray_estimator.py",
)
CONFTESTS = ("orca/data/conftest.py", "orca/learn/ray/pytorch/conftest.py", "orca/learn/ray/tf/conftest.py")
RESOURCES = "resources/orca"
# (pattern, replacement), in order: the import change an Orca user makes
IMPORT_CHANGE = (
    (re.compile(r"\bzoo\.common\.nncontext\b"), "zoo_lite"),
    (re.compile(r"\bzoo\.orca\b"), "zoo_lite"),
    (re.compile(r"\bzoo\.ray\b"), "zoo_lite.ray_on_spark"),
    (re.compile(r"^(\s*)from zoo import ", re.M), r"\1from zoo_lite import "),
)


def changed_imports(source: str) -> str:
    for pattern, replacement in IMPORT_CHANGE:
        source = pattern.sub(replacement, source)
    return source


def git_files(orca: Path, folder: str) -> list[str]:
    listed = subprocess.run(["git", "-C", str(orca), "ls-tree", "-r", "--name-only", "HEAD", folder],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()


def copy_from_git(orca: Path, path: str, target: Path, rewrite: bool) -> None:
    content = subprocess.run(["git", "-C", str(orca), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(changed_imports(content.decode()).encode() if rewrite else content)


def lay_out(orca: Path, scratch: Path, files: Sequence[str]) -> None:
    """The test files, their conftests (imports changed) and the resources, in Orca's layout."""
    for relative in (*files, *CONFTESTS):
        copy_from_git(orca, f"{TEST_ROOT}/{relative}", scratch / relative, rewrite=True)
    for path in git_files(orca, f"{TEST_ROOT}/{RESOURCES}"):
        copy_from_git(orca, path, scratch / path[len(TEST_ROOT) + 1:], rewrite=False)


def first_line(text: str) -> str:
    """A failure's cause in one line: the last ``E   `` line of pytest's report, shortened."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    cause = lines[-1] if lines else (text.strip().splitlines() or ["?"])[-1]
    return re.sub(r"0x[0-9a-f]+|/tmp/\S+", "…", cause)[:160]


def run_file(scratch: Path, relative: str, timeout_s: float) -> dict[str, object]:
    """Run one test file with pytest; its counts and its failures' causes."""
    report = scratch / (relative.replace("/", "_") + ".xml")
    started = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        "--timeout", "600", f"--junitxml={report}", relative],
                       cwd=scratch, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"file": relative, "timed_out": True, "seconds": timeout_s}
    counts: collections.Counter = collections.Counter()
    causes: collections.Counter = collections.Counter()
    if report.exists():
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
            kind = "passed" if outcome is None else {"failure": "failed", "error": "errors", "skipped": "skipped"}[outcome.tag]
            counts[kind] += 1
            if kind in ("failed", "errors"):
                causes[first_line((outcome.get("message") or "") + "\n" + (outcome.text or ""))] += 1
    return {"file": relative, "counts": counts, "causes": causes, "seconds": time.perf_counter() - started}


def table(results: Sequence[dict[str, object]], command: str) -> str:
    lines = [*heading("orca_tests", command),
             "| Orca test file | passed | failed | errors | skipped | s |", "|---|---:|---:|---:|---:|---:|"]
    total: collections.Counter = collections.Counter()
    for result in results:
        if result.get("timed_out"):
            lines.append(f"| `{result['file']}` | timed out | | | | {result['seconds']:.0f} |")
            continue
        counts = result["counts"]
        total.update(counts)
        lines.append(f"| `{result['file']}` | {counts['passed']} | {counts['failed']} | {counts['errors']} "
                     f"| {counts['skipped']} | {result['seconds']:.0f} |")
    ran = sum(total.values()) - total["skipped"]
    lines.append(f"| **all** | **{total['passed']}** | {total['failed']} | {total['errors']} | {total['skipped']} | |")
    lines += ["", f"Passed: {total['passed']} of {ran} run ({100 * total['passed'] / max(ran, 1):.0f} %).", ""]
    for result in results:
        causes = result.get("causes") or {}
        if causes:
            lines += [f"Causes in `{result['file']}`:", ""]
            lines += [f"- {count} x `{cause}`" for cause, count in causes.most_common(12)]
            lines.append("")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--orca", type=Path, required=True, help="a checkout or bare mirror of intel-analytics/analytics-zoo")
    parser.add_argument("--only", action="append", default=[], help="run only files whose name ends with this (repeatable)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per file (default 1800)")
    parser.add_argument("--keep", type=Path, help="lay the files out here and keep them (default: a temporary folder)")
    args = parser.parse_args(argv)
    files = [f for f in IN_SCOPE if not args.only or any(f.endswith(name) for name in args.only)]
    if not files:
        parser.error(f"--only {args.only} matches none of {list(IN_SCOPE)}")
    with tempfile.TemporaryDirectory(prefix="orca_tests_") as temporary:
        scratch = args.keep or Path(temporary)
        lay_out(args.orca, scratch, files)
        results = []
        for relative in files:
            log(f"running {relative}")
            results.append(run_file(scratch, relative, args.timeout))
    print(table(results, command_line("orca_tests.py", argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
