"""MkDocs hooks for zoo_lite's site: the API reference, one generated page per public module.

The pages are made at build time from the docstrings (mkdocstrings), so the reference cannot
drift from the code; ``PUBLIC_MODULES`` is the one list of what a user imports.
"""

from __future__ import annotations

from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

#: (module, what a user finds there): one reference page each, in this order
PUBLIC_MODULES: tuple[tuple[str, str], ...] = (
    ("zoo_lite", "start and stop the context"),
    ("zoo_lite.data", "XShards"),
    ("zoo_lite.data.pandas", "CSV, JSON and Parquet readers"),
    ("zoo_lite.data.image", "images"),
    ("zoo_lite.learn", "worker settings, errors, models as Spark SQL functions"),
    ("zoo_lite.learn.pytorch", "the PyTorch Estimator"),
    ("zoo_lite.learn.tf2", "the Keras Estimator"),
    ("zoo_lite.learn.tf.estimator", "Orca's TF import path of the Keras Estimator"),
    ("zoo_lite.learn.metrics", "metrics by Orca's names"),
    ("zoo_lite.ray_on_spark", "Ray on Spark"),
    ("zoo_lite.errors", "the errors zoo_lite raises"),
)

REFERENCE_DIR = "reference"


def reference_page(module: str) -> str:
    """The path of ``module``'s reference page inside ``docs/``."""
    return f"{REFERENCE_DIR}/{module}.md"


#: modules whose classes are assembled from mixins (SparkXShards' method families): their pages list
#: inherited methods as the class's own
INHERITING_MODULES = frozenset({"zoo_lite.data"})


def _page_text(module: str) -> str:
    # members: the module's __all__ (re-exported names included); submodules have pages of their own
    inherited = "      inherited_members: true\n" if module in INHERITING_MODULES else ""
    return (f"# `{module}`\n\n::: {module}\n    options:\n      show_root_heading: false\n"
            f"      show_submodules: false\n{inherited}")


def _index_text() -> str:
    rows = "\n".join(f"| [`{module}`]({module}.md) | {what} |" for module, what in PUBLIC_MODULES)
    return ("# API reference\n\nOne page per public module, generated from the docstrings. Every "
            "public name has a runnable example; the examples run with the test suite.\n\n"
            f"| module | what is there |\n| --- | --- |\n{rows}\n")


def on_config(config: MkDocsConfig, **_: Any) -> MkDocsConfig:
    """List every reference page in the navigation, under the "API reference" entry."""
    pages = [{"Overview": f"{REFERENCE_DIR}/index.md"}] + [{module: reference_page(module)} for module, _ in PUBLIC_MODULES]
    for entry in config.nav or []:
        if isinstance(entry, dict) and "API reference" in entry:
            entry["API reference"] = pages
    return config


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    """Add the generated reference pages to the site's files."""
    files.append(File.generated(config, f"{REFERENCE_DIR}/index.md", content=_index_text()))
    for module, _ in PUBLIC_MODULES:
        files.append(File.generated(config, reference_page(module), content=_page_text(module)))
    return files
