"""A misspelt keyword argument names the keyword it was probably meant to be (issue 31): Orca's own
guide writes ``labels_cols=``. The error is a TypeError, as Python's own is, and an
InvalidArgumentError, as zoo_lite's others are; it is raised before anything starts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from zoo_lite import OrcaContext, init_orca_context
from zoo_lite.data import XShards
from zoo_lite.data.image import read_images
from zoo_lite.data.pandas import read_csv, read_json
from zoo_lite.errors import InvalidArgumentError, UnknownKeywordError
from zoo_lite.keywords import suggest_keywords


def test_a_misspelt_init_orca_context_keyword_names_the_right_one() -> None:
    was_active = OrcaContext.is_active()
    with pytest.raises(TypeError, match=r"init_orca_context\(\) got unknown keyword argument\(s\) \['cluster_mod'\]: "
                                        r"did you mean 'cluster_mode'\? Spark settings go in conf=\{\.\.\.\}\. "
                                        r"The keyword arguments it takes are \[.*'num_ray_nodes'.*\]") as raised:
        init_orca_context(cluster_mod="local", cores=2)
    assert isinstance(raised.value, InvalidArgumentError)
    assert OrcaContext.is_active() == was_active   # refused before anything started
    with pytest.raises(UnknownKeywordError, match=r"\['num_ray_node'\]: did you mean 'num_ray_nodes'"):
        init_orca_context(num_ray_node=1)   # one of Orca's Ray options, taken through **kwargs


def test_the_readers_name_the_pandas_keyword_meant(sc, tmp_path) -> None:
    (tmp_path / "part.csv").write_text("location,value\nparis,1\nlyon,2\n")
    (tmp_path / "rows.json").write_text('{"a": 1}\n{"a": 2}\n')
    with pytest.raises(UnknownKeywordError, match=r"read_csv\(\) got unknown keyword argument\(s\) \['usecol'\]: "
                                                  r"did you mean 'usecols'\?"):
        read_csv(str(tmp_path / "part.csv"), usecol=["value"])
    with pytest.raises(UnknownKeywordError, match=r"\['line'\]: did you mean 'lines'"):
        read_json(str(tmp_path / "rows.json"), line=True)
    # pandas' own keywords, and Orca's squeeze, still pass
    assert read_csv(str(tmp_path / "part.csv"), usecols=["value"], squeeze=True).collect()[0].tolist() == [1, 2]


def test_xshards_and_image_readers_name_the_keyword_meant(sc, tmp_path) -> None:
    frame = pd.DataFrame({"a": [3, 1, 2]})
    with pytest.raises(UnknownKeywordError, match=r"XShards\.partition\(\) got unknown keyword argument\(s\) "
                                                  r"\['num_shard'\]: did you mean 'num_shards'\?"):
        XShards.partition(frame, num_shard=2)
    shards = XShards.partition(frame, num_shards=1)
    with pytest.raises(UnknownKeywordError, match=r"SparkXShards\.sort_values\(\) got unknown keyword argument\(s\) "
                                                  r"\['col_name'\]: did you mean 'col_names'\?"):
        shards.sort_values(col_name="a")
    assert shards.sort_values(col_names="a").concat_to_pdf()["a"].tolist() == [1, 2, 3]
    with pytest.raises(UnknownKeywordError, match=r"read_images\(\) got unknown keyword argument\(s\) \['labels'\]: "
                                                  r"did you mean 'label'\?"):
        read_images(str(tmp_path), size=(8, 8), labels="folder")


def test_a_type_error_raised_inside_the_function_is_left_as_it_is() -> None:
    @suggest_keywords
    def scale(values: list, factor: float = 1.0) -> list:
        return [value * factor for value in values]

    with pytest.raises(TypeError, match="can't multiply sequence by non-int of type 'float'") as raised:
        scale([[1]], factor=2.5)   # every keyword known: the function's own TypeError
    assert not isinstance(raised.value, UnknownKeywordError)
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'values'") as raised:
        scale(factor=2.0)   # a binding error of another kind stays Python's
    assert not isinstance(raised.value, UnknownKeywordError)
    with pytest.raises(UnknownKeywordError, match=r"\['valus', 'factr'\]: did you mean 'values' \(for 'valus'\), "
                                                  r"'factor' \(for 'factr'\)\?"):
        scale(valus=[1], factr=2.0)
    with pytest.raises(InvalidArgumentError, match=r"takes \*\*kwargs, so the names it takes are open"):
        suggest_keywords(lambda **options: options)


# The Estimators: these pass once the Estimator classes are decorated with suggest_keywords.

def test_a_misspelt_torch_estimator_fit_keyword_names_the_right_one(sc) -> None:
    import torch
    from torch import nn

    from zoo_lite.learn.pytorch import Estimator

    model = nn.Linear(1, 1)
    with pytest.raises(UnknownKeywordError, match=r"Estimator\.from_torch\(\) got unknown keyword argument\(s\) "
                                                  r"\['optimiser'\]: did you mean 'optimizer'\?"):
        Estimator.from_torch(model=model, optimiser=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss())
    estimator = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1), loss=nn.MSELoss())
    shards = XShards.partition(pd.DataFrame({"x": np.arange(8.0), "y": np.arange(8.0)}), num_shards=2)
    with pytest.raises(TypeError, match=r"fit\(\) got unknown keyword argument\(s\) \['labels_cols'\]: "
                                        r"did you mean 'label_cols'\?"):
        estimator.fit(shards, epochs=1, batch_size=4, feature_cols=["x"], labels_cols=["y"])
    estimator.shutdown()


def test_a_misspelt_keras_estimator_fit_keyword_names_the_right_one(sc) -> None:
    from zoo_lite.learn.tf2 import Estimator

    import keras

    model = keras.Sequential([keras.Input(shape=(1,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    estimator = Estimator.from_keras(model=model)
    shards = XShards.partition(pd.DataFrame({"x": np.arange(8.0), "y": np.arange(8.0)}), num_shards=2)
    with pytest.raises(TypeError, match=r"fit\(\) got unknown keyword argument\(s\) \['labels_cols'\]: "
                                        r"did you mean 'label_cols'\?"):
        estimator.fit(shards, epochs=1, batch_size=4, feature_cols=["x"], labels_cols=["y"])
    estimator.shutdown()
