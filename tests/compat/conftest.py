"""Fixtures of the Orca compatibility tests."""

from __future__ import annotations

import pytest

from zoo_lite import OrcaContext


@pytest.fixture(params=["spark", "pandas"])
def backend(request):
    """Each test runs with each reader backend, chosen as Orca users choose it."""
    before = OrcaContext.pandas_read_backend
    OrcaContext.pandas_read_backend = request.param
    yield request.param
    OrcaContext.pandas_read_backend = before
