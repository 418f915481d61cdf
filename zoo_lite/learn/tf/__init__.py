"""Orca's ``zoo.orca.learn.tf`` package, kept for its import path: ``from zoo_lite.learn.tf.estimator
import Estimator`` gives the Keras 3 Estimator of :mod:`zoo_lite.learn.tf2`.

Importing this package imports no TensorFlow; importing its ``estimator`` module does.

Examples
--------
>>> import zoo_lite.learn.tf
>>> zoo_lite.learn.tf.__all__
[]
"""

__all__: list[str] = []
