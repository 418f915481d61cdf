"""The Keras 3 Estimator (Orca's ``zoo.orca.learn.tf2``): ``Estimator.from_keras(...)``.

Importing it imports TensorFlow, without TensorFlow's C++ start-up lines (see
:mod:`zoo_lite.learn.tf2.tensorflow_import`): in the driver, and in every Spark Python worker and
Ray worker that unpickles zoo_lite's Keras code, before anything else imports TensorFlow there.
"""

from typing import TYPE_CHECKING

from zoo_lite.lazy_exports import lazy_exports
from zoo_lite.learn.tf2.tensorflow_import import import_tensorflow

import_tensorflow()

if TYPE_CHECKING:   # imported on first use (see zoo_lite.lazy_exports)
    from zoo_lite.learn.base.framework import WorkerConfig
    from zoo_lite.learn.tf2.estimator import Estimator, KerasEstimator

__all__ = ["Estimator", "KerasEstimator", "WorkerConfig"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
