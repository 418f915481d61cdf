"""The documentation site: built by ``scripts/docs.sh`` in strict mode, then opened in a real
headless Chromium (the system's, driven by Playwright) the way a reader uses it.

(``tests/test_doc_snippets.py`` checks the pages' code.) The browser test saves screenshots of the landing page, the Keras guide and the ``from_torch``
reference under ``docs/_screenshots/``, so that a person can look at what the site shows.
"""

from __future__ import annotations

import functools
import http.server
import inspect
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE = ROOT / "site"
SCREENSHOTS = DOCS / "_screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# as root, with no network: no sandbox, and none of Chromium's own calls home
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGE_TIMEOUT_MS = 30_000

pytestmark = pytest.mark.timeout(240)

@pytest.fixture(scope="module")
def site() -> Path:
    """The site, built from nothing by the script users run (strict: any warning fails it)."""
    built = subprocess.run([str(ROOT / "scripts" / "docs.sh")], capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-5000:]
    assert (SITE / "index.html").is_file()
    return SITE


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    """The site served on loopback (the search box needs http, not file://)."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                              timeout=PAGE_TIMEOUT_MS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture()
def page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        yield opened
    finally:
        context.close()


def test_the_landing_page_renders(page: object, base_url: str) -> None:
    page.goto(base_url)
    assert "zoo_lite" in page.title()
    assert page.locator("article h1").first.is_visible()
    assert page.locator("nav.md-nav--primary").first.is_visible()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "landing.png"), full_page=False)


def test_the_search_box_finds_partition_by(page: object, base_url: str) -> None:
    page.goto(base_url)
    page.locator("input.md-search__input").click()
    page.keyboard.type("partition_by")  # typed, as the search box listens to key strokes
    results = page.locator("a.md-search-result__link")
    results.first.wait_for(state="visible")
    targets = [results.nth(index).get_attribute("href") or "" for index in range(results.count())]
    assert any(target.endswith("#zoo_lite.data.SparkXShards.partition_by") for target in targets), targets
    assert "partition_by" in page.locator(".md-search-result__list").inner_text()


def test_the_keras_guide_renders(page: object, base_url: str) -> None:
    page.goto(urljoin(base_url, "guides/keras/"))
    assert page.locator("article h1").first.inner_text().strip()
    assert page.locator("article pre code").count() > 0, "the Keras guide shows no code"
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "keras_guide.png"), full_page=False)


def test_the_from_torch_reference_shows_every_parameter(page: object, base_url: str) -> None:
    from zoo_lite.learn.pytorch import Estimator

    anchor = "zoo_lite.learn.pytorch.Estimator.from_torch"
    page.goto(urljoin(base_url, f"reference/zoo_lite.learn.pytorch/#{anchor}"))
    heading = page.locator(f'[id="{anchor}"]')
    heading.wait_for(state="visible")
    block = heading.locator("xpath=following-sibling::div[contains(@class, 'doc-contents')][1]")
    shown = block.inner_text()
    expected = list(inspect.signature(Estimator.from_torch).parameters)
    missing = [name for name in expected if name not in shown]
    assert "Parameters" in shown and not missing, f"from_torch's reference lacks {missing}:\n{shown[:2000]}"
    heading.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "from_torch_reference.png"), full_page=False)


def _site_pages(site: Path) -> list[str]:
    """Every page of the built site, as a path relative to its root (``guides/keras/``)."""
    return sorted(str(index.parent.relative_to(site)) + "/" if index.parent != site else ""
                  for index in site.rglob("index.html") if "assets" not in index.parts)


def _internal_target_missing(site: Path, page_url: str, href: str, base_url: str,
                             anchors_by_page: dict[str, set[str]], page: object) -> str | None:
    """Why ``href`` on ``page_url`` leads nowhere, or None when it leads to a file (and anchor) of the site."""
    target, fragment = urldefrag(urljoin(page_url, href))
    path = urlparse(target).path
    local = site / path.lstrip("/")
    if path.endswith("/"):
        local = local / "index.html"
    if not local.is_file():
        return f"{href} -> {path} is not in the site"
    if not fragment or local.suffix != ".html":
        return None
    if path not in anchors_by_page:
        page.goto(target)
        anchors_by_page[path] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(node => node.id)"))
    return None if fragment in anchors_by_page[path] else f"{href}: no element with id {fragment!r} on {path}"


def test_no_page_has_a_broken_internal_link_or_a_missing_image(page: object, site: Path, base_url: str) -> None:
    pages = _site_pages(site)
    assert len(pages) >= 15, pages
    broken: list[str] = []
    links: dict[str, set[str]] = {}
    anchors_by_page: dict[str, set[str]] = {}   # each page's ids, read while it is open (not loaded again)
    for relative in pages:
        url = urljoin(base_url, relative)
        response = page.goto(url)
        assert response is not None and response.ok, url
        page.wait_for_load_state("load")
        for image in page.eval_on_selector_all("article img", "nodes => nodes.map(node => [node.currentSrc || node.src,"
                                               " node.complete && node.naturalWidth > 0])"):
            if not image[1]:
                broken.append(f"{relative}: image {image[0]} did not load")
        hrefs = page.eval_on_selector_all("a[href]", "nodes => nodes.map(node => node.getAttribute('href'))")
        links[url] = {href for href in hrefs if urlparse(urljoin(url, href)).netloc == urlparse(base_url).netloc}
        anchors_by_page[urlparse(url).path] = set(page.eval_on_selector_all("[id]", "nodes => nodes.map(node => node.id)"))
    for url, hrefs in links.items():
        for href in sorted(hrefs):
            why = _internal_target_missing(site, url, href, base_url, anchors_by_page, page)
            if why:
                broken.append(f"{url[len(base_url):] or 'index'}: {why}")
    assert not broken, "\n".join(broken)
