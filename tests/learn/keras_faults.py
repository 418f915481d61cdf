"""Keras faults for the recovery tests: apart from ``faults.py`` so that a test process that
needs only the torch ones (``test_node_loss`` runs two in fresh interpreters) does not import
Keras and TensorFlow for them."""

from __future__ import annotations

from typing import Any, Optional

import keras

from tests.learn.faults import kill_this_process_once


class KerasKiller(keras.callbacks.Callback):
    """Kills rank 0's worker (the callbacks that steer nothing run there) after batch ``step`` of epoch ``epoch``."""

    def __init__(self, epoch: int, step: int = 1, marker: Optional[str] = None) -> None:
        super().__init__()
        self.kill_epoch, self.step, self.marker = epoch, step, marker
        self.current_epoch = -1

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.current_epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self.current_epoch == self.kill_epoch and batch == self.step:
            kill_this_process_once(self.marker)


def momentum_linear_model(config: dict) -> keras.Model:
    """A compiled linear regression whose optimizer has state (momentum), which a resume must keep."""
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    return model
