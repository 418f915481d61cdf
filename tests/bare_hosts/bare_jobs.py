"""Driver code of the bare-host tests that the multi-host jobs (:mod:`tests.cluster.jobs`) lack:
where the executors' Python comes from, and zoo_lite's packing log in the driver's output."""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any


def log_environment_packing() -> None:
    """zoo_lite's packing messages (packed, reused) into this driver's output, which the test reads."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("LOG %(name)s %(message)s"))
    packing = logging.getLogger("zoo_lite.env_packing")
    packing.addHandler(handler)
    packing.setLevel(logging.INFO)


def executors_pythons() -> list[dict[str, Any]]:
    """For each of four XShards partitions: the host, the executor's Python and its numpy."""
    import numpy as np

    from zoo_lite.data import XShards

    def where(shard: dict) -> dict:
        import os
        import platform

        return {"host": np.array([socket.gethostname()]), "executable": np.array([os.path.realpath(sys.executable)]),
                "prefix": np.array([sys.prefix]), "version": np.array([platform.python_version()]),
                "numpy": np.array([np.__file__])}

    shards = XShards.partition({"x": np.arange(8)}, num_shards=4).transform_shard(where)
    return [{key: str(value[0]) for key, value in shard.items()} for shard in shards.collect()]


def start_standalone_context(master: str, init_ray_on_spark: bool = False, **kwargs: Any) -> None:
    """A context on the bare hosts; without ``penv_archive`` it ships nothing (its executors are
    told to run this Python)."""
    from zoo_lite import init_orca_context

    init_orca_context(cluster_mode="standalone", master=master, num_nodes=2, cores=1, memory="1g",
                      init_ray_on_spark=init_ray_on_spark, **kwargs)


def driver_python() -> dict[str, str]:
    import platform

    return {"executable": sys.executable, "version": platform.python_version()}
