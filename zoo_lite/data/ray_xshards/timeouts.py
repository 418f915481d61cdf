"""The fixed bounds of RayXShards' waits on Ray (docs/waits.md lists each wait and its bound)."""

from __future__ import annotations

__all__ = ["GET_TIMEOUT_S", "LOST_CHECK_S", "PING_TIMEOUT_S"]

#: every ``ray.get`` of this package: owners starting and answering, partitions, results of actors
GET_TIMEOUT_S = 600.0
#: how long a read that saw a lost object checks its partitions, in all
LOST_CHECK_S = 30.0
#: how long the owners cached from an earlier to_ray() have to answer, all together
PING_TIMEOUT_S = 10.0
