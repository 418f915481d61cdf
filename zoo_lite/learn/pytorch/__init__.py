"""The PyTorch Estimator (Orca's ``zoo.orca.learn.pytorch``): ``Estimator.from_torch(...)``."""

from zoo_lite.learn.base.framework import WorkerConfig
from zoo_lite.learn.pytorch.callbacks import Callback, ModelCheckpoint, TensorBoard
from zoo_lite.learn.pytorch.estimator import Estimator, TorchEstimator

__all__ = ["Estimator", "TorchEstimator", "Callback", "ModelCheckpoint", "TensorBoard", "WorkerConfig"]
