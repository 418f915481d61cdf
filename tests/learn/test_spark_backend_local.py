"""backend="spark" in local mode (``local[2]``: the driver's own task slots): the same weights as
the Ray backend, one worker per slot."""

from __future__ import annotations

import numpy as np
import torch

from zoo_lite.data import XShards
from zoo_lite.learn.pytorch import Estimator
from tests.learn.models import regression_dataset, sgd_creator


def _linear(config: dict) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(2, 1)


def test_two_workers_in_local_mode_give_the_ray_backends_weights(sc):
    x, y = regression_dataset(rows=90).tensors
    shards = XShards.partition({"x": x.numpy(), "y": y.numpy()}, num_shards=3)
    weights = {}
    for backend in ("spark", "ray"):
        est = Estimator.from_torch(model=_linear, optimizer=sgd_creator, loss=torch.nn.MSELoss(), backend=backend,
                                   num_workers=2, seed=3)
        est.fit(shards, epochs=3, batch_size=16)
        weights[backend] = [p.detach().numpy().copy() for p in est.get_model().parameters()]
        est.shutdown()
    for mine, theirs in zip(weights["spark"], weights["ray"]):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    assert not sc.statusTracker().getActiveJobsIds()
