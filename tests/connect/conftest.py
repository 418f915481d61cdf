"""The Spark Connect servers of the tests of zoo_lite on Spark Connect (each started once for this
package and stopped at its end, so that no other module sees their JVMs), and a fixture that leaves
no zoo_lite context active around a test."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.connect_server import ConnectServer
from zoo_lite import stop_orca_context


@pytest.fixture(scope="package")
def connect_server() -> Iterator[ConnectServer]:
    """A Connect server on loopback whose Spark has two executor JVMs (``local-cluster``), so that
    what a session ships (a model's file artifact) must reach executors that are not the server."""
    server = ConnectServer.start("local-cluster[2,1,1024]")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="package")
def local_mode_connect_server() -> Iterator[ConnectServer]:
    """A Connect server on ``local[2]``: its tasks run inside the server's JVM, where a session's
    file artifacts are found another way than on executors of their own."""
    server = ConnectServer.start("local[2]")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def no_context(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No zoo_lite context before or after the test, and no SPARK_REMOTE but the test's own."""
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    stop_orca_context()
    yield
    stop_orca_context()
