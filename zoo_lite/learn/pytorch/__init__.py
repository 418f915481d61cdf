"""The PyTorch Estimator (Orca's ``zoo.orca.learn.pytorch``): ``Estimator.from_torch(...)``."""

from typing import TYPE_CHECKING

from zoo_lite.lazy_exports import lazy_exports

if TYPE_CHECKING:   # imported on first use (see zoo_lite.lazy_exports)
    from zoo_lite.learn.base.framework import WorkerConfig
    from zoo_lite.learn.pytorch.callbacks import Callback, ModelCheckpoint, TensorBoard
    from zoo_lite.learn.pytorch.estimator import Estimator, TorchEstimator

__all__ = ["Estimator", "TorchEstimator", "Callback", "ModelCheckpoint", "TensorBoard", "WorkerConfig"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
