"""The JVM settings of the suite's Spark: C1 only and the serial collector, for JVMs that live
seconds to a minute (the measurement is in ``spark_conf/spark-defaults.conf``).

Drivers and executors take them from the conf dir, standalone daemons from
``SPARK_DAEMON_JAVA_OPTS``. The root ``conftest.py`` sets both for the test process; the tests
that run jobs in a clean environment (a new shell, a simulated host) pass them on too. They change
how fast the JVM compiles, never what Spark does, so no behaviour under test depends on them."""

from __future__ import annotations

from pathlib import Path

SPARK_CONF_DIR = Path(__file__).parent / "spark_conf"
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def suite_jvm_environment() -> dict[str, str]:
    """The variables that give every JVM a Spark of the suite starts the short-lived settings."""
    return {"SPARK_CONF_DIR": str(SPARK_CONF_DIR), "SPARK_DAEMON_JAVA_OPTS": SHORT_LIVED_JVM_OPTIONS}
