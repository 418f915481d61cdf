"""torchvision beside the CPU torch: its datasets in the Estimator's data creators (Ray workers),
its transforms on ``read_images`` shards (Spark's Python workers), and the import fix itself.

Every torchvision wheel on PyPI is a CUDA build, which a plain ``import torchvision`` beside a CPU
torch refuses; installing zoo_lite makes it work in any import order (:mod:`zoo_lite_startup`,
:mod:`zoo_lite.learn.pytorch.torchvision_import`).
The user's code here imports torchvision plainly, on the driver and on the workers. The MNIST files
are written offline from scikit-learn's digits (tests/mnist_files.py); nothing is downloaded.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.mnist_files import TEST_ROWS, TRAIN_ROWS, write_mnist
from zoo_lite.data.image import read_images
from zoo_lite.learn.pytorch import Estimator
from zoo_lite.learn.pytorch.torchvision_import import import_torchvision, make_torchvision_importable

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
#: MNIST's own mean and standard deviation, as torchvision's examples normalise with them
MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)


@pytest.fixture(scope="module")
def mnist_root(tmp_path_factory) -> str:
    return write_mnist(str(tmp_path_factory.mktemp("mnist")))


def mnist_loader(root: str, train: bool, batch_size: int) -> torch.utils.data.DataLoader:
    """What the user's creators build on each Ray worker: torchvision's MNIST, from local files."""
    import torchvision
    from torchvision import transforms

    dataset = torchvision.datasets.MNIST(root, train=train, download=False,
                                         transform=transforms.Compose([transforms.ToTensor(),
                                                                       transforms.Normalize(MNIST_MEAN, MNIST_STD)]))
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=train)


def train_loader_creator(config: dict, batch_size: int) -> torch.utils.data.DataLoader:
    return mnist_loader(config["root"], True, batch_size)


def eval_loader_creator(config: dict, batch_size: int) -> torch.utils.data.DataLoader:
    return mnist_loader(config["root"], False, batch_size)


def test_torchvision_mnist_in_a_data_creator_trains_and_evaluates_on_the_workers(two_workers, mnist_root) -> None:
    import torchmetrics

    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 10))
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05),
                               loss=nn.CrossEntropyLoss(), metrics={"accuracy": torchmetrics.Accuracy(task="multiclass", num_classes=10)},
                               config={"root": mnist_root}, seed=0)
    try:
        assert est.num_workers == 2
        history = est.fit(data=train_loader_creator, epochs=3, batch_size=64)
        evaluated = est.evaluate(data=eval_loader_creator, batch_size=64)
    finally:
        est.shutdown()
    assert [h["num_samples"] for h in history] == [TRAIN_ROWS] * 3
    # an untrained 10-class model's loss is about ln 10 = 2.3
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"] < np.log(10), history
    assert evaluated["num_samples"] == TEST_ROWS
    assert evaluated["accuracy"] > 0.8, evaluated


def write_pngs(folder: Path) -> None:
    """Two classes of small noisy RGB images, of different sizes (read_images resizes them)."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for label, base in (("dark", 40), ("light", 200)):
        (folder / label).mkdir(parents=True)
        for index in range(5):
            pixels = np.clip(base + rng.normal(0, 30, size=(20 + index, 24, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / label / f"{index}.png")


def normalised_crops(shard: dict) -> dict:
    """The user's per-shard function, run in Spark's Python workers: torchvision's v2 transforms
    over the whole uint8 batch (N, H, W, C)."""
    from torchvision.transforms import v2

    pipeline = v2.Compose([v2.ToImage(), v2.CenterCrop(12), v2.Resize(6, antialias=True),
                           v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5] * 3, [0.25] * 3)])
    return {"x": pipeline(torch.from_numpy(shard["x"]).permute(0, 3, 1, 2)).numpy(), "y": shard["y"]}


def test_torchvision_transforms_on_read_images_shards_equal_the_same_transforms_run_locally(two_workers, tmp_path) -> None:
    write_pngs(tmp_path / "images")
    images = read_images(str(tmp_path / "images"), size=(16, 16), num_partitions=2)

    transformed = images.transform_shard(normalised_crops).collect()

    local = [normalised_crops(shard) for shard in images.collect()]
    assert [shard["x"].shape for shard in transformed] == [(5, 3, 6, 6)] * 2
    for remote, expected in zip(transformed, local):
        np.testing.assert_array_equal(remote["y"], expected["y"])
        np.testing.assert_allclose(remote["x"], expected["x"], rtol=0, atol=1e-6)
    assert transformed[0]["x"].mean() < 0 < transformed[1]["x"].mean()   # dark, then light


# -- the import fix ------------------------------------------------------------------------------

#: the start of a Python process without zoo_lite's hook, which every interpreter start installs (zoo_lite_startup.pth)
WITHOUT_THE_STARTUP_HOOK = """
    import sys
    sys.meta_path[:] = [finder for finder in sys.meta_path if type(finder).__name__ != "BeforeFirstImport"]
"""


def run_python(code: str, without_the_startup_hook: bool = False) -> subprocess.CompletedProcess:
    """``code`` run by a new interpreter of this environment; optionally after taking out the
    import hook that its start installed (zoo_lite_startup.pth), as in an environment without it."""
    prelude = WITHOUT_THE_STARTUP_HOOK if without_the_startup_hook else ""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_plain_torchvision_import_fails_without_the_fix_exactly_when_the_fix_is_needed() -> None:
    without = run_python("import torchvision", without_the_startup_hook=True)
    with_fix = run_python("""
        from zoo_lite.learn.pytorch.torchvision_import import make_torchvision_importable
        print(make_torchvision_importable())
    """, without_the_startup_hook=True)
    assert with_fix.returncode == 0, with_fix.stderr[-3000:]
    if without.returncode == 0:   # a torchvision built for this torch (the PyTorch CPU index): nothing to fix
        assert with_fix.stdout.split() == ["False"]
    else:
        assert "operator torchvision::nms does not exist" in without.stderr, without.stderr[-3000:]
        assert with_fix.stdout.split() == ["True"]


def test_import_zoo_lite_then_torchvision_works_after_tensorflow_and_imports_no_torch_before() -> None:
    done = run_python("""
        import sys
        import tensorflow
        import zoo_lite
        assert "torch" not in sys.modules and "zoo_lite.learn" not in sys.modules, "imported too early"
        import torchvision
        import torch
        from torchvision.transforms import v2
        model = torchvision.models.resnet18(weights=None, num_classes=4).eval()
        with torch.no_grad():
            print(tuple(model(v2.ToDtype(torch.float32, scale=True)(torch.zeros(2, 3, 32, 32, dtype=torch.uint8))).shape))
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-2:] == ["(2,", "4)"]


def test_the_fix_applied_twice_and_by_the_hook_declares_the_operators_once() -> None:
    done = run_python("""
        from zoo_lite.learn.pytorch.torchvision_import import make_torchvision_importable
        first, second = make_torchvision_importable(), make_torchvision_importable()
        import zoo_lite   # its hook runs the fix again at the import below
        import torchvision
        print(first, second, make_torchvision_importable(), torchvision.datasets.MNIST.__name__)
    """)
    assert done.returncode == 0, f"rc {done.returncode}: {done.stderr[-3000:]}"   # declared twice: abort, rc -6
    first, second, third, name = done.stdout.split()
    assert first == second == third and name == "MNIST"


@pytest.mark.parametrize("first_imports", [
    "import torchmetrics",                        # imports torchvision itself, before zoo_lite
    "import torch, torchvision",
    "from torchvision.transforms import v2",
    "import torchvision; import zoo_lite",
])
def test_torchvision_imports_in_any_order_in_a_new_interpreter(first_imports: str) -> None:
    done = run_python(f"""
        {first_imports}
        import torchvision
        print(torchvision.datasets.MNIST.__name__)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "MNIST"


def test_a_spark_python_worker_imports_torchmetrics_first_with_no_zoo_lite_anywhere() -> None:
    done = run_python("""
        import os, sys
        from pyspark import SparkContext
        os.environ["PYSPARK_PYTHON"] = sys.executable   # this environment's Python, as a venv's user sets it
        sc = SparkContext("local[1]", "torchvision-order")
        try:
            def imports(_):
                seen_before = "zoo_lite" in sys.modules
                import torchmetrics, torchvision
                return seen_before, torchvision.datasets.MNIST.__name__
            print(sc.parallelize([0], 1).map(imports).collect(), "zoo_lite" in sys.modules)
        finally:
            sc.stop()
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2] == "[(False, 'MNIST')] False"


def test_a_wheel_of_zoo_lite_installs_the_startup_hook_into_site_packages(tmp_path) -> None:
    """The editable install of this environment has it too (the tests above run there)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.py", "README.md", "zoo_lite_startup.py", "zoo_lite_startup.pth"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "zoo_lite", source / "zoo_lite", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp_path / "wheel"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (tmp_path / "wheel").glob("zoo_lite-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("zoo_lite_startup.pth") == (ROOT / "zoo_lite_startup.pth").read_bytes()
        assert "zoo_lite_startup.py" in archive.namelist()


def test_the_fix_is_a_no_op_once_torchvision_is_imported() -> None:
    import torchvision

    assert make_torchvision_importable() == make_torchvision_importable()
    assert import_torchvision() is torchvision


def test_a_missing_torchvision_names_the_extra_that_installs_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)   # how Python marks a module as not importable
    with pytest.raises(ModuleNotFoundError, match=r'torchvision is not installed for .*python.*; install it there with '
                                                  r'pip install "zoo_lite\[vision\]"'):
        import_torchvision()
