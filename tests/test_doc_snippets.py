"""The documentation's code: every program in ``docs/snippets/`` runs, and every code block of the
site is an include of a section that a test runs.

A snippet is a small complete program with asserts on its results. It starts the context as a
user would (``init_orca_context(cluster_mode="local", cores=2)``) and leaves it running, so that
here all of them share this module's one ``local[2]`` context (and one Ray, started on first use):
their own call returns the running context, with a warning that is silenced here.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Iterator

import pytest

from zoo_lite import OrcaContext, init_orca_context

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = sorted((ROOT / "docs" / "snippets").glob("*.py"))
ALREADY_ACTIVE = r"init_orca_context\(\) was called while a zoo_lite context is active"

# files whose sections the pages may include, and the tests that run them
RUN_ELSEWHERE = {
    "examples/quickstart.py": "tests/test_examples.py",
    "examples/tfds_keras.py": "tests/test_examples.py",
    "README.md": "tests/test_examples.py (the two commands run examples/quickstart.py)",
}
FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})")
INCLUDE = re.compile(r'^\s*-{1,}8<-{1,}\s+"(?P<path>[^":]+)(?::(?P<section>[a-z][-_0-9a-z]*)|(?P<lines>(?::-?\d*){1,2}))?"\s*$')

pytestmark = [pytest.mark.timeout(600), pytest.mark.filterwarnings(f"ignore:{ALREADY_ACTIVE}:UserWarning")]


@pytest.fixture(scope="module")
def shared_context() -> Iterator[None]:
    """One ``local[2]`` context for every snippet, as tests/conftest.py's ``sc`` starts it."""
    if OrcaContext.is_active() and OrcaContext.get_spark_context().master != "local[2]":
        from zoo_lite import stop_orca_context

        stop_orca_context()
    if not OrcaContext.is_active():
        init_orca_context(cluster_mode="local", cores=2, memory="2g")
    yield


@pytest.fixture
def s3_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An S3-compatible server on loopback, named by the AWS_* variables a user would set."""
    from tests.s3_server import s3_server

    with s3_server() as server:
        for name, value in server.environment.items():
            monkeypatch.setenv(name, value)
        yield


NEEDS = {"s3.py": "s3_environment"}


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[path.name for path in SNIPPETS])
def test_snippet_runs(snippet: Path, shared_context: None, request: pytest.FixtureRequest) -> None:
    if snippet.name in NEEDS:
        request.getfixturevalue(NEEDS[snippet.name])
    runpy.run_path(str(snippet), run_name="__main__")


def code_blocks() -> list[tuple[str, int, list[str]]]:
    """``(page, line number of the opening fence, the block's lines)`` of every fenced code block
    of the site's pages."""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if "snippets" in page.relative_to(ROOT / "docs").parts:
            continue
        fence, opened, lines = None, 0, []
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            opening = FENCE.match(line)
            if opening and fence is None:
                fence, opened, lines = opening["fence"], number, []
            elif fence is not None and line.strip().startswith(fence):
                found.append((str(page.relative_to(ROOT)), opened, lines))
                fence = None
            elif fence is not None:
                lines.append(line)
    return found


def code_block_includes() -> list[tuple[str, int, str, str]]:
    """``(page, line number, included path, section or line range)`` of every include line inside
    a fenced code block (an include outside one is text, such as a page of results)."""
    return [(page, opened + offset, match["path"], match["section"] or match["lines"] or "")
            for page, opened, lines in code_blocks()
            for offset, line in enumerate(lines, 1) if (match := INCLUDE.match(line))]


def test_no_code_is_typed_into_a_page() -> None:
    typed = [f"{page}:{opened}: {' '.join(lines)[:80]!r}" for page, opened, lines in code_blocks()
             if not all(INCLUDE.match(line) for line in lines if line.strip())]
    assert not typed, ("code typed into a page instead of included from a file a test runs "
                       f"(use a --8<-- \"path:section\" include): {typed}")


def test_every_code_block_includes_a_section_of_a_file_a_test_runs() -> None:
    runnable = {str(path.relative_to(ROOT)) for path in SNIPPETS} | set(RUN_ELSEWHERE)
    includes = code_block_includes()
    assert includes, "no page includes a snippet"
    for page, number, path, section in includes:
        where = f"{page}:{number} includes {path!r}"
        assert path in runnable, f"{where}, which no test runs: put the code in docs/snippets/ (run by this module)"
        text = (ROOT / path).read_text(encoding="utf-8")
        if section and not section.startswith(":"):
            assert f"--8<-- [start:{section}]" in text and f"--8<-- [end:{section}]" in text, (
                f"{where} section {section!r}, which that file does not mark")

