"""Errors travel from remote workers to the driver as themselves."""

from __future__ import annotations

import pickle

import pytest

from zoo_lite.errors import (
    ColumnNotFoundError,
    RemoteError,
    ShardFunctionError,
    ZooLiteError,
    decode_remote_error,
    encode_remote_error,
    raising_transportably,
)


class _NeedsTwoArguments(Exception):
    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a} and {b}")


def test_an_encoded_error_is_found_inside_any_surrounding_text():
    text = f"Traceback ...\n  {encode_remote_error(ColumnNotFoundError('cols=[x]: missing'))}\n SQLSTATE"
    decoded = decode_remote_error(text)
    assert isinstance(decoded, ColumnNotFoundError)
    assert str(decoded) == "cols=[x]: missing"


def test_text_without_a_marker_decodes_to_none():
    assert decode_remote_error("java.lang.OutOfMemoryError") is None


def test_an_exception_that_cannot_unpickle_becomes_a_remote_error_with_its_traceback():
    try:
        raise _NeedsTwoArguments(1, 2)
    except _NeedsTwoArguments as error:
        decoded = decode_remote_error(encode_remote_error(error))
    assert isinstance(decoded, RemoteError)
    assert decoded.type_name == "_NeedsTwoArguments"
    assert "1 and 2" in str(decoded) and "test_errors.py" in decoded.remote_traceback


def test_shard_function_error_keeps_partition_function_and_cause_through_pickle():
    error = pickle.loads(pickle.dumps(ShardFunctionError(3, "clean", KeyError("price"))))
    assert (error.partition_index, error.function_name) == (3, "clean")
    assert isinstance(error.__cause__, KeyError)
    assert str(error) == "function 'clean' failed on partition 3: KeyError: 'price'"


def test_raising_transportably_drains_generators_and_encodes_their_errors():
    @raising_transportably
    def generate():
        yield 1
        raise ValueError("bad row")

    with pytest.raises(Exception) as caught:
        generate()
    decoded = decode_remote_error(str(caught.value))
    assert isinstance(decoded, ValueError) and str(decoded) == "bad row"


def test_every_zoo_lite_error_is_a_zoo_lite_error():
    assert issubclass(ShardFunctionError, ZooLiteError)
    assert issubclass(ColumnNotFoundError, ValueError)
