"""The JVM settings of the suite's Spark, for JVMs that live seconds to a minute. They change how
fast a JVM starts, never what Spark does, so no behaviour under test depends on them:

- C1 only and the serial collector: C2's compiler threads would spend a short JVM's life compiling
  code that never gets hot (a short Spark session took 19.2 core-seconds with them, 10.9 without,
  on 2 cores);
- a class-data-sharing archive of Spark's classes (AppCDS, :func:`spark_class_archive`), made once
  per machine, Java and Spark: a JVM maps the classes parsed and verified instead of loading them
  from Spark's jars (a ``local[2]`` session started in 4.6 s instead of 8.8 s, and ran its first
  job in 2.4 s instead of 4.9 s, measured here).

Java refuses to archive a class path holding a non-empty folder, and Spark puts its conf folder
first on every JVM's class path, so the settings do not come from a conf folder: drivers take them
from ``SPARK_SUBMIT_OPTS`` (whose ``-Dspark.executor.defaultJavaOptions`` hands them on to the
executors, since a ``SparkConf`` loads ``spark.*`` system properties), standalone daemons from
``SPARK_DAEMON_JAVA_OPTS``. The root ``conftest.py`` sets both for the test process; the tests
that run jobs in a clean environment (a new shell, a simulated host) pass them on too. A JVM whose
class path or Java differs from the archive's (a bare host's own Spark) does without it, and its
log lines about that are off. The bare hosts' own Spark installation (tests/cluster/bare.py)
holds the short-lived settings in its own ``conf/spark-defaults.conf``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Optional

from tests.kept_builds import build_once

__all__ = ["SHORT_LIVED_JVM_OPTIONS", "CLASS_ARCHIVES", "spark_class_archive", "suite_jvm_options",
           "suite_jvm_environment"]

SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: where the class archives are kept between runs (outside any checkout)
CLASS_ARCHIVES = Path("/var/tmp/zoo_lite-test-jvm")
_ARCHIVE_FILE = "spark.jsa"
_BUILD_TIMEOUT_S = 300.0

#: the job whose JVM writes the archive at its exit: a session with the kinds of work the suite's
#: drivers do (local mode runs the executor's side in the driver too); the JVM is waited for,
#: since it writes the archive after the Python process could have ended
_ARCHIVING_JOB = textwrap.dedent("""
    import pandas as pd
    from pyspark import SparkContext
    from pyspark.sql import SparkSession, functions

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    frame = spark.createDataFrame(pd.DataFrame({"key": [0, 1, 0, 1], "value": [1.0, 2.0, 3.0, 4.0]}))
    frame.mapInPandas(lambda batches: batches, frame.schema).groupBy("key").agg(functions.sum("value")).collect()
    spark.sparkContext.parallelize(range(8), 2).map(lambda x: x + 1).collect()
    jvm = SparkContext._gateway.proc
    spark.stop()
    jvm.stdin.close()   # the gateway JVM exits at the end of its input, writing the archive
    jvm.wait(timeout=120)
""")


def _spark_home() -> Path:
    from zoo_lite.standalone import spark_home

    return Path(spark_home())


def _archive_key() -> str:
    """What an archive is valid for: the Java binary and Spark's jars (names, sizes, times)."""
    java = Path(shutil.which("java") or "java").resolve()
    jars = sorted((_spark_home() / "jars").glob("*.jar"))
    parts = [str(java), str(java.stat().st_size if java.exists() else 0)]
    parts += [f"{jar.name}:{jar.stat().st_size}:{int(jar.stat().st_mtime)}" for jar in jars]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _write_archive(folder: Path) -> None:
    """Run :data:`_ARCHIVING_JOB` with the archive written into ``folder``."""
    folder.mkdir(parents=True)
    archive = folder / _ARCHIVE_FILE
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "SPARK_SUBMIT_OPTS")}
    env.update(SPARK_SUBMIT_OPTS=f"{SHORT_LIVED_JVM_OPTIONS} -XX:ArchiveClassesAtExit={archive}",
               PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, "-c", _ARCHIVING_JOB], env=env, capture_output=True, text=True,
                          timeout=_BUILD_TIMEOUT_S)
    if done.returncode != 0 or not archive.is_file():
        raise RuntimeError(f"the archiving job failed (exit code {done.returncode}): {done.stderr[-2000:]}")


def spark_class_archive() -> Optional[Path]:
    """The class archive of this machine's Java and Spark, made now if it does not exist yet
    (about half a minute, once); None, with the reason on stderr, where Java cannot make one."""
    try:
        return build_once(CLASS_ARCHIVES / f"classes-{_archive_key()}", _write_archive) / _ARCHIVE_FILE
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        print(f"the suite's JVMs run without a class archive: {error}", file=sys.stderr)
        return None


def suite_jvm_options() -> str:
    """The options every JVM of the suite's Spark starts with."""
    archive = spark_class_archive()
    # a JVM that cannot use the archive (a bare host's own Spark) says so on its stdout: not a
    # warning anyone must act on, and the tests read some JVMs' output for noise
    return SHORT_LIVED_JVM_OPTIONS + (f" -XX:SharedArchiveFile={archive} -Xlog:cds*=off" if archive else "")


def suite_jvm_environment() -> dict[str, str]:
    """The variables that give every JVM of the suite's Spark its options: those of this process
    where it has them (set by the root ``conftest.py``), else :func:`suite_jvm_options`."""
    if "SPARK_SUBMIT_OPTS" in os.environ and "SPARK_DAEMON_JAVA_OPTS" in os.environ:
        return {name: os.environ[name] for name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")}
    options = suite_jvm_options()
    return {"SPARK_SUBMIT_OPTS": f'{options} -Dspark.executor.defaultJavaOptions="{options}"',
            "SPARK_DAEMON_JAVA_OPTS": options}
