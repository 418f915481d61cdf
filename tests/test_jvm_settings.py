"""The suite's Spark JVMs run with its short-lived settings and map its class archive
(tests/jvm_settings.py). Java ignores an archive it cannot match to a JVM's class path or Java,
silently, so this checks the running JVMs themselves: the driver and each executor."""

from __future__ import annotations

import psutil

from tests.conftest import gateway_pids, java_descendants
from tests.jvm_settings import SHORT_LIVED_JVM_OPTIONS, spark_class_archive


def mapped_paths(process: psutil.Process) -> set[str]:
    return {region.path for region in process.memory_maps(grouped=True)}


def test_the_driver_and_every_executor_jvm_maps_the_class_archive_and_runs_c1_only(local_cluster) -> None:
    archive = spark_class_archive()
    assert archive is not None and archive.is_file(), "no class archive could be made on this machine (see stderr)"
    jvms = java_descendants()
    executors = [jvm for jvm in jvms if "CoarseGrainedExecutorBackend" in " ".join(jvm.cmdline())]
    drivers = [jvm for jvm in jvms if jvm.pid in gateway_pids()]
    assert len(executors) == 2 and len(drivers) == 1, [jvm.cmdline()[-3:] for jvm in jvms]
    for jvm in drivers + executors:
        assert str(archive) in mapped_paths(jvm), f"JVM {jvm.pid} does not map {archive}: {jvm.cmdline()}"
        assert set(SHORT_LIVED_JVM_OPTIONS.split()) <= set(jvm.cmdline()), jvm.cmdline()
