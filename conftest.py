"""Root conftest: docstring examples each start from no active context, as a user's script would."""

import pytest


@pytest.fixture(autouse=True)
def _fresh_context_for_doctests(request):
    if isinstance(request.node, pytest.DoctestItem):
        from zoo_lite import stop_orca_context

        stop_orca_context()
    yield
