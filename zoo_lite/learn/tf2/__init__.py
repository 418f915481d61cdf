"""The Keras 3 Estimator (Orca's ``zoo.orca.learn.tf2``): ``Estimator.from_keras(...)``.

Importing it imports TensorFlow, without TensorFlow's C++ start-up lines (see
:mod:`zoo_lite.learn.tf2.tensorflow_import`): in the driver, and in every Spark Python worker and
Ray worker that unpickles zoo_lite's Keras code, before anything else imports TensorFlow there.
"""

from zoo_lite.learn.tf2.tensorflow_import import import_tensorflow

import_tensorflow()

from zoo_lite.learn.base.framework import WorkerConfig  # noqa: E402 - after the quiet import
from zoo_lite.learn.tf2.estimator import Estimator, KerasEstimator  # noqa: E402

__all__ = ["Estimator", "KerasEstimator", "WorkerConfig"]
