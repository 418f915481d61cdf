"""Orca's ``zoo.orca.learn.tf.estimator``: ``Estimator.from_keras(keras_model=...)``.

Orca's documentation builds a Keras Estimator with ``from zoo.orca.learn.tf.estimator import
Estimator``. Here that name is the Keras 3 Estimator of :mod:`zoo_lite.learn.tf2`, the same
class, so both import paths give the same Estimator: ``from_keras`` takes a compiled model
(``keras_model=``, Orca's TF1 form) or a ``model_creator``.

Examples
--------
>>> from zoo_lite.learn.tf.estimator import Estimator
>>> from zoo_lite.learn.tf2 import Estimator as Tf2Estimator
>>> Estimator is Tf2Estimator
True
"""

# through the package: it imports TensorFlow quietly, before anything else does
from zoo_lite.learn.tf2 import Estimator

__all__ = ["Estimator"]
