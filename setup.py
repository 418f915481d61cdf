"""zoo_lite: scale pandas, NumPy, Keras and PyTorch code onto a Spark cluster (Orca's successor)."""

from pathlib import Path
from typing import Any

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

HERE = Path(__file__).parent
#: read by the interpreter's start in site-packages: installs zoo_lite's import hooks (zoo_lite_startup.py)
STARTUP_PTH = "zoo_lite_startup.pth"


class BuildPyWithStartupPth(build_py):
    """A wheel's files, with :data:`STARTUP_PTH` at its root (installed into site-packages)."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(HERE / STARTUP_PTH), str(Path(self.build_lib) / STARTUP_PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / STARTUP_PTH)]


class EditableWheelWithStartupPth(editable_wheel):
    """An editable install's wheel, with :data:`STARTUP_PTH` too: setuptools leaves the other
    build outputs out of it (the package is read from the checkout)."""

    def _select_strategy(self, *args: Any, **kwargs: Any) -> Any:
        return _AddsStartupPth(super()._select_strategy(*args, **kwargs))


class _AddsStartupPth:
    """An editable strategy of setuptools that also writes :data:`STARTUP_PTH` into the wheel."""

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy

    def __call__(self, wheel: Any, files: list[str], mapping: dict[str, str]) -> object:
        done = self.strategy(wheel, files, mapping)
        wheel.writestr(STARTUP_PTH, (HERE / STARTUP_PTH).read_bytes())
        return done

    def __enter__(self) -> "_AddsStartupPth":
        self.strategy.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> object:
        return self.strategy.__exit__(*exc_info)


# Ranges here; exact versions for reproducible installs live in constraints.txt.
CORE = [
    "pyspark>=4.1,<5",  # 4.1: DataFrame.repartitionById (read_images keeps path order)
    "pandas>=2.2,<3",  # pandas 3 makes pyspark 4.3 warn
    "pyarrow>=15",
    "numpy>=1.26",
    "fsspec>=2023.1",
    "psutil>=5.9",
    "ray[default]>=2.50,<3",
    "pillow>=10",
    # zoo_lite.env_packing packs the environment shipped to bare cluster hosts (penv_archive)
    "venv-pack2>=0.9.2",
    "conda-pack>=0.9",
]
EXTRAS = {
    "torch": ["torch>=2.2", "torchmetrics>=1.0", "tqdm>=4.60", "tensorboard>=2.14"],
    "tf": ["tensorflow-cpu>=2.16", "keras>=3", "tqdm>=4.60"],
    # s3:// paths for the pandas backend's readers, write_parquet, saved models and model_dir
    "s3": ["s3fs>=2024.2"],
    # tfds imports importlib_resources for a builder defined in a package, but requires it only
    # on Python < 3.9
    "tfds": ["tensorflow-datasets>=4.9", "importlib_resources>=6"],
    # every torchvision wheel on PyPI is a CUDA build; beside a CPU torch zoo_lite makes its
    # datasets, transforms and models importable (zoo_lite.learn.pytorch.torchvision_import)
    "vision": ["torchvision>=0.20"],
    # moto's standalone server is the S3-compatible server the object-store tests start on loopback
    "dev": ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "scikit-learn>=1.4", "matplotlib>=3.8", "moto[server]>=5"],
    "bench": ["dask[dataframe]>=2024.1", "scikit-learn>=1.4", "matplotlib>=3.8"],  # matplotlib: the pictures on the Performance page
    # Spark Connect sessions (init_orca_context(cluster_mode="spark-connect")): pyspark's Connect client
    "connect": ["grpcio>=1.76", "grpcio-status>=1.76", "googleapis-common-protos>=1.71", "zstandard>=0.25"],
    # the documentation site (scripts/docs.sh); ruff formats the reference's signatures, playwright
    # drives the system's Chromium in the site's browser test
    "docs": ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings-python>=1.10", "ruff>=0.4", "playwright>=1.40"],
}
EXTRAS["all"] = sorted({req for name in ("torch", "tf", "s3", "tfds", "vision", "connect") for req in EXTRAS[name]})

setup(
    name="zoo_lite",
    version="0.1.0",
    description="Distributed pandas/NumPy preprocessing and Keras/PyTorch training on Spark and Ray; Orca's successor",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["zoo_lite", "zoo_lite.*"]),
    py_modules=["zoo_lite_startup"],
    cmdclass={"build_py": BuildPyWithStartupPth, "editable_wheel": EditableWheelWithStartupPth},
    package_data={"zoo_lite": ["conf/*.properties", "data/jvm/*.jar", "data/jvm/*.java"]},
    install_requires=CORE,
    extras_require=EXTRAS,
    license="Apache-2.0",
)
