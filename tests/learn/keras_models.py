"""Keras models and creators used by the Keras Estimator tests (importable by the Ray and Spark workers)."""

from __future__ import annotations

import numpy as np


def regression_rows(rows: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 2)).astype(np.float32)
    return x, (x @ np.array([1.5, -2.0], dtype=np.float32)).astype(np.float32)


def linear_model(config: dict):
    """A compiled linear regression (Orca's model_creator form)."""
    import keras

    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(config.get("lr", 0.1)), loss="mse")
    return model


def uncompiled_linear_model(config: dict):
    import keras

    return keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])


def digits_mlp(config: dict):
    import keras

    model = keras.Sequential([keras.Input(shape=(64,)), keras.layers.Dense(config.get("hidden", 64), activation="relu"),
                              keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.SGD(config.get("lr", 0.2)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def dataset_creator(config: dict, batch_size: int):
    """Orca's later creator form: a shuffled, batched tf.data pipeline of the regression rows."""
    import tensorflow as tf

    x, y = regression_rows()
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64).batch(batch_size)


def dataset_creator_guide_form(config: dict):
    """The guide's creator form, reading config["batch_size"]."""
    return dataset_creator(config, config["batch_size"])


def python_dataset_creator(config: dict, batch_size: int):
    """A creator whose pipeline runs Python (fine: it runs on each worker, nothing is serialized)."""
    import tensorflow as tf

    x, y = regression_rows()
    return tf.data.Dataset.from_tensor_slices((x, y)).map(
        lambda a, b: (tf.numpy_function(lambda v: v * 1.0, [a], tf.float32), b)).map(
        lambda a, b: (tf.ensure_shape(a, (2,)), b)).batch(batch_size)


def not_a_dataset_creator(config: dict, batch_size: int):
    return [1, 2, 3]


def fails_on_marker_model(config: dict):
    """A linear model whose graph fails when an input row starts with 999."""
    import keras
    import tensorflow as tf

    class FailOnMarker(keras.layers.Layer):
        def call(self, x):
            tf.debugging.assert_less(x[:, 0], 999.0, message="marker row reached the model")
            return x

    inputs = keras.Input(shape=(2,))
    model = keras.Model(inputs, keras.layers.Dense(1)(FailOnMarker()(inputs)))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    return model


def squared_error_per_element(y_true, y_pred):
    """A loss function with no reduction of its own: one value per output element."""
    import keras

    return keras.ops.square(y_true - y_pred)


def three_wide_model(config: dict):
    """Three outputs per row, trained with an element-wise loss function (three values per row)."""
    import keras

    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(3)])
    model.compile(optimizer=keras.optimizers.SGD(config.get("lr", 0.05)), loss=squared_error_per_element, metrics=["mae"])
    return model


class PidRecorder:
    """A Keras callback that writes the pid of the process it trains in to ``path`` when a fit
    begins (it runs on rank 0)."""

    def __new__(cls, path: str):
        import keras

        class _Recorder(keras.callbacks.Callback):
            def on_train_begin(self, logs=None) -> None:
                import os

                with open(path, "w") as file:
                    file.write(str(os.getpid()))

        return _Recorder()
