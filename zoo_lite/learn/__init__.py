"""Estimators: data-parallel training and inference of PyTorch (``zoo_lite.learn.pytorch``) and
Keras (``zoo_lite.learn.tf2``) models on the Ray-on-Spark workers. ``learn.base`` holds what both
share and imports neither framework."""
