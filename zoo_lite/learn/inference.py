"""Inference jobs without training code: a model saved by an Estimator's ``save`` as a Spark UDF.

A Keras model is saved in Keras' ``.keras`` format, which rebuilds it. A torch model is saved by
``TorchEstimator.save`` with the module itself pickled by value (``model_by_value``: the bytes
``predict`` ships to the executors, the user's own classes included), next to its ``state_dict``
and, when the Estimator had seen rows, the row shape and dtype of each input (``input_signature``),
which fix the UDF's result type (older files without it need ``input_shapes``).
That was chosen over TorchScript, which refuses models with Python control flow or untyped
attributes; the price is that loading it runs pickled code, so load only files you trust, with
compatible torch and Python versions.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any, Hashable, Optional, Sequence, Union

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base import checkpoints
from zoo_lite.learn.base.udf import ModelUDF, model_udf

__all__ = ["spark_udf"]

_KERAS_ENTRIES = {"metadata.json", "config.json"}
_KERAS_CHECKPOINT_ENTRY = "model.keras"


def _keras_bytes(blob: bytes) -> Optional[bytes]:
    """The ``.keras`` bytes of a Keras save (or of a Keras Estimator's checkpoint); None if not Keras."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            names = set(archive.namelist())
            if _KERAS_ENTRIES <= names:
                return blob
            if _KERAS_CHECKPOINT_ENTRY in names:
                return archive.read(_KERAS_CHECKPOINT_ENTRY)
    except zipfile.BadZipFile:
        return None
    return None


def _keras_udf(keras_bytes: bytes, batch_size: int, feature_cols: Any, input_shapes: Any) -> ModelUDF:
    from zoo_lite.learn.tf2.predict import KERAS_PREDICT

    return model_udf(KERAS_PREDICT.load(keras_bytes), keras_bytes, KERAS_PREDICT, batch_size, feature_cols, input_shapes)


def _torch_udf(path: str, blob: bytes, batch_size: int, feature_cols: Any, input_shapes: Any) -> ModelUDF:
    import torch

    from zoo_lite.learn.pytorch.predict import MODEL_BY_VALUE, TORCH_PREDICT, saved_signature

    try:
        saved = torch.load(io.BytesIO(blob), weights_only=False)
    except Exception as error:  # noqa: BLE001 - any unreadable file means the same to the user
        raise InvalidArgumentError(
            f"spark_udf: path={path!r} is neither a Keras '.keras' file nor a torch file ({type(error).__name__}: "
            f"{str(error).strip()[:200]}); give a file written by an Estimator's save"
        ) from error
    if not isinstance(saved, dict) or MODEL_BY_VALUE not in saved:
        raise InvalidArgumentError(
            f"spark_udf: the torch file path={path!r} holds weights only, without the model to put them in; save it with "
            "TorchEstimator.save (it stores the model too), or build the UDF from the Estimator: est.spark_udf(...)"
        )
    payload = saved[MODEL_BY_VALUE]
    return model_udf(TORCH_PREDICT.load(payload), payload, TORCH_PREDICT, batch_size, feature_cols, input_shapes,
                     seen=saved_signature(saved))


def spark_udf(path: str, batch_size: int = 32, feature_cols: Union[None, Hashable, Sequence[Hashable]] = None,
              input_shapes: Any = None) -> ModelUDF:
    """A saved model as a PySpark function, the same as ``est.spark_udf(...)`` of the Estimator
    that saved it, for inference jobs that have no training code.

    Parameters
    ----------
    path : str
        A file written by ``KerasEstimator.save`` (``.keras``, or a Keras ``save_checkpoint``
        file) or by ``TorchEstimator.save``.
    batch_size : int, default 32
        Rows the model runs on at a time.
    feature_cols : str or list of str, optional
        The UDF's default columns; they also name the model inputs in errors.
    input_shapes : tuple or list of tuples, optional
        One row's shape per model input; it wins over what the file knows. A Keras model states
        them; a torch file keeps those of the rows its Estimator saw before ``save`` (fit,
        evaluate or predict); needed for a torch file saved before it saw any, or by an older
        zoo_lite.

    Returns
    -------
    ModelUDF
        See :meth:`zoo_lite.learn.base.estimator.GroupEstimator.spark_udf`.

    Raises
    ------
    InvalidArgumentError
        No file at ``path``, a file no Estimator wrote, a torch file with weights only, or
        shapes unknown or wrong.

    Examples
    --------
    >>> import os, tempfile, torch
    >>> from zoo_lite import init_orca_context, OrcaContext
    >>> from zoo_lite.learn import spark_udf
    >>> from zoo_lite.learn.pytorch import Estimator
    >>> _ = init_orca_context(cores=2)
    >>> net = torch.nn.Linear(3, 2)
    >>> path = Estimator.from_torch(model=net, loss=torch.nn.MSELoss()).save(os.path.join(tempfile.mkdtemp(), "m.pt"))
    >>> predict = spark_udf(path, input_shapes=(3,))
    >>> df = OrcaContext.get_spark_session().createDataFrame([([1.0, 2.0, 3.0],)], "x array<double>")
    >>> len(df.select(predict("x").alias("p")).first().p)
    2

    An Estimator that has seen rows (here a DataFrame ``predict``) saves their shapes too:

    >>> est = Estimator.from_torch(model=net, loss=torch.nn.MSELoss())
    >>> _ = est.predict(df, feature_cols=["x"])
    >>> predict = spark_udf(est.save(os.path.join(tempfile.mkdtemp(), "seen.pt")))
    >>> len(df.select(predict("x").alias("p")).first().p)
    2
    """
    blob = checkpoints.read_file(path, "spark_udf", "saved model")
    keras_bytes = _keras_bytes(blob)
    if keras_bytes is not None:
        return _keras_udf(keras_bytes, batch_size, feature_cols, input_shapes)
    return _torch_udf(path, blob, batch_size, feature_cols, input_shapes)
