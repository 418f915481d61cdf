"""Orca's ``SharedValue``: one read-only value shipped once to every executor (a Spark broadcast),
for functions passed to ``transform_shard``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import Broadcast

__all__ = ["SharedValue"]


class SharedValue:
    """A value every executor gets one copy of, however many shards use it (Orca's name).

    Pass it to :meth:`SparkXShards.transform_shard` as an argument and read ``.value`` inside the
    function: Spark ships the value once per executor instead of once per task, which matters for
    a large lookup table or model. It is built on the active context's SparkContext (as Orca did,
    one is started by :func:`~zoo_lite.init_nncontext` if none is active).

    Parameters
    ----------
    data : object
        Any picklable value.

    Attributes
    ----------
    broadcast_data : pyspark.Broadcast
        The Spark broadcast that holds the value.

    Examples
    --------
    >>> import numpy as np
    >>> from zoo_lite import init_orca_context
    >>> from zoo_lite.data import SharedValue, XShards
    >>> _ = init_orca_context(cores=2)
    >>> offset = SharedValue(100)
    >>> shards = XShards.partition(np.arange(4), num_shards=2)
    >>> shards.transform_shard(lambda shard, shared: shard + shared.value, offset).collect()
    [array([100, 101]), array([102, 103])]
    >>> offset.value
    100
    >>> offset.unpersist()
    """

    def __init__(self, data: Any) -> None:
        # imported here: importing zoo_lite.data starts nothing and imports no Spark
        from zoo_lite.context import init_nncontext

        self.broadcast_data: "Broadcast" = init_nncontext().broadcast(data)

    @property
    def value(self) -> Any:
        """The shared value: on the driver, or on an executor inside a shard function.

        Examples
        --------
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import SharedValue
        >>> _ = init_orca_context(cores=2)
        >>> SharedValue({"a": 1}).value
        {'a': 1}
        """
        return self.broadcast_data.value

    def unpersist(self, blocking: bool = False) -> None:
        """Delete the executors' cached copies; a later use ships the value again.

        Parameters
        ----------
        blocking : bool, default False
            Wait until the copies are deleted.

        Examples
        --------
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import SharedValue
        >>> _ = init_orca_context(cores=2)
        >>> shared = SharedValue([1, 2, 3])
        >>> shared.unpersist(blocking=True)
        >>> shared.value  # still readable on the driver
        [1, 2, 3]
        """
        self.broadcast_data.unpersist(blocking)

    def __repr__(self) -> str:
        """Names the broadcast (on the driver; an executor's copy has no id to show).

        Examples
        --------
        >>> from zoo_lite import init_orca_context
        >>> from zoo_lite.data import SharedValue
        >>> _ = init_orca_context(cores=2)
        >>> repr(SharedValue(1)).startswith("SharedValue(broadcast id=")
        True
        """
        handle = getattr(self.broadcast_data, "_jbroadcast", None)
        return f"SharedValue(broadcast id={handle.id() if handle is not None else '?'})"
