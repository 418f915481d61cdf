"""Benchmark: how soon a new Estimator trains, with warm workers (``OrcaContext.warm_workers``) and without.

Every figure is the time from the ``fit`` call to the end of the first training step (a callback
on rank 0 notes it), with 2 workers, on a warm context (``init_orca_context(cluster_mode="local",
cores=2, init_ray_on_spark=True)``: Spark and Ray up), tiny data (``--rows`` rows of the MLP
data of ``_mlp_data.py``, 1 epoch), each case with warm workers on and off, interleaved round by
round:

- (rt), (rk): a new torch / Keras Estimator on the Ray backend. With the pool on, the pool holds
  warm processes (filled by an earlier Estimator and waited for: the case is a notebook's or a
  tuning loop's next model, which comes after some training).
- (rt next), (rk next): a new torch / Keras Estimator right after another one was shut down: it
  takes that one's workers, which went back to the pool (a tuning loop's case; Keras workers go
  back when the group shared one host, as here).
- (st), (sk): the second ``fit`` of one torch / Keras Estimator on the Spark backend (each call is
  a stage). With the pool on, the Keras child started by the first stage is waited for; (sk now)
  is the second fit right after the first, the child still importing.
- the pool's cost on the node: memory (RSS and USS) of the idle processes of both frameworks,
  and their CPU time while idle, as a share of one core; beside it, in the same window, as many
  bare Ray actors with nothing imported, parked the same way (Ray's own floor).
- the first fit after ``init_orca_context`` (pool empty), torch, against Ray Train's
  ``TorchTrainer`` on the same Ray, and the Spark backend's against PySpark's ``TorchDistributor``
  (as in ``bench_torch_fit.py`` and ``bench_spark_backend.py``, on the same tiny data).

Targets (issue 43), medians, pool on: (rk) <= 1.5 s, (rt) <= 0.5 s, (sk) <= 2 s, (st) <= 1 s;
idle CPU <= 1 % of a core.

Run from the repository root::

    .venv/bin/python benchmarks/bench_start.py             # 5 rounds, ~20 min on 2 cores
    .venv/bin/python benchmarks/bench_start.py --repeat 1  # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import psutil
import torch
import _mlp_data
import bench_spark_backend
import bench_torch_fit
from _harness import Timing, command_line, heading, load_line, log, ship_to_workers, targets_table, zoo_lite_commit
from _mlp_data import CLASSES, FEATURES, make_dataframe, make_keras_mlp
from bench_spark_backend import td_run
from bench_torch_fit import make_model, make_optimizer, ray_train_run
from torch import nn

WORKERS = 2
#: how long the pool's idle processes are watched for their CPU time
IDLE_WATCH_S = 20.0


# -- the first step's end, noted on rank 0 ---------------------------------------------------------------

def torch_first_step_callback(path: str) -> Any:
    from zoo_lite.learn.pytorch import Callback

    class FirstStep(Callback):
        def after_train_iter(self, runner: Any) -> None:
            if not os.path.exists(path):
                Path(path).write_text(repr(time.time()))

    return FirstStep()


def keras_first_step_callback(path: str) -> Any:
    import keras

    class FirstStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Optional[dict] = None) -> None:
            if not os.path.exists(path):
                Path(path).write_text(repr(time.time()))

    return FirstStep()


def call_to_first_step(fit: Callable[[Any], Any], callback_for: Callable[[str], Any]) -> float:
    """Seconds from calling ``fit(callbacks)`` to the end of its first step."""
    path = os.path.join(tempfile.mkdtemp(prefix="bench-start-"), "first-step")
    called_at = time.time()
    fit([callback_for(path)])
    return float(Path(path).read_text()) - called_at


# -- the Estimators ------------------------------------------------------------------------------------------

def torch_estimator(backend: str) -> Any:
    from zoo_lite.learn.pytorch import Estimator

    model = make_model()
    return Estimator.from_torch(model=model, optimizer=make_optimizer(model.parameters()), loss=nn.CrossEntropyLoss(),
                                num_workers=WORKERS, backend=backend, seed=0)


def keras_estimator(backend: str) -> Any:
    from zoo_lite.learn.tf2 import Estimator

    return Estimator.from_keras(model=make_keras_mlp(), num_workers=WORKERS, backend=backend, seed=0)


def fit_once(est: Any, frame: Any, batch: int, keras_model: bool) -> Callable[[list[Any]], Any]:
    quiet = {"verbose": 0} if keras_model else {}
    return lambda callbacks: est.fit(frame, epochs=1, batch_size=batch, feature_cols=["features"], label_cols=["label"],
                                     callbacks=callbacks, **quiet)


# -- the pool ----------------------------------------------------------------------------------------------

def ray_pool() -> Any:
    from zoo_lite import OrcaContext
    from zoo_lite.learn.base.warm_pool import warm_pool_of

    return warm_pool_of(OrcaContext.get_ray_context().address)


def runner_path_of(keras_model: bool) -> str:
    from zoo_lite.learn.base.warm_up import runner_path

    if keras_model:
        from zoo_lite.learn.tf2.runner import KerasRunner

        return runner_path(KerasRunner)
    from zoo_lite.learn.pytorch.runner import TorchRunner

    return runner_path(TorchRunner)


def pool_ready(frame: Any, batch: int, keras_model: bool) -> None:
    """Fill the pool for the framework (a fit, whose group refills it) and wait for its imports."""
    make = keras_estimator if keras_model else torch_estimator
    path = runner_path_of(keras_model)
    if ray_pool().idle_count(path) < WORKERS:
        primer = make("ray")
        fit_once(primer, frame, batch, keras_model)([])
        primer.shutdown()
    if not ray_pool().wait_until_warm(path, timeout_s=300):
        raise RuntimeError("the warm pool did not finish its imports within 300 s")


def ray_new_estimator(frame: Any, batch: int, keras_model: bool, warm: bool) -> float:
    """(rt) / (rk): a new Estimator's first fit on the Ray backend."""
    from zoo_lite import OrcaContext

    OrcaContext.warm_workers = warm
    if warm:
        pool_ready(frame, batch, keras_model)
    est = (keras_estimator if keras_model else torch_estimator)("ray")
    try:
        seconds = call_to_first_step(fit_once(est, frame, batch, keras_model),
                                     keras_first_step_callback if keras_model else torch_first_step_callback)
        if warm and est._group.from_pool != WORKERS:
            raise RuntimeError(f"the group took {est._group.from_pool} warm workers, not {WORKERS}")
        return seconds
    finally:
        est.shutdown()
        OrcaContext.warm_workers = True


def ray_next_estimator(frame: Any, batch: int, keras_model: bool) -> float:
    """(rt next) / (rk next): a new Estimator right after another one was shut down, on its handed-back workers."""
    ray_new_estimator(frame, batch, keras_model, True)   # its shutdown hands its workers back to the pool
    est = (keras_estimator if keras_model else torch_estimator)("ray")
    try:
        seconds = call_to_first_step(fit_once(est, frame, batch, keras_model),
                                     keras_first_step_callback if keras_model else torch_first_step_callback)
        if est._group.from_pool != WORKERS:
            raise RuntimeError(f"the group took {est._group.from_pool} handed-back workers, not {WORKERS}")
        return seconds
    finally:
        est.shutdown()


def keras_children() -> list[psutil.Process]:
    mine = os.getpid()
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info["cmdline"] or [])
        if "child_main" in command and "KerasRunner" in command:
            with contextlib.suppress(psutil.Error):
                if any(parent.pid == mine for parent in process.parents()):
                    found.append(process)
    return found


def wait_until_children_idle(timeout_s: float = 300.0) -> None:
    """Wait until the Spark backend's idle Keras children stop using CPU (their imports are done)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        children = keras_children()
        before = sum(child.cpu_times().user + child.cpu_times().system for child in children)
        time.sleep(0.5)
        with contextlib.suppress(psutil.Error):
            after = sum(child.cpu_times().user + child.cpu_times().system for child in children)
            if children and after - before < 0.02:
                return
    raise RuntimeError("the Spark backend's idle Keras children were still busy after 300 s")


def spark_second_fit(frame: Any, batch: int, keras_model: bool, warm: bool, wait_for_child: bool = True) -> float:
    """(st) / (sk): the second fit of one Estimator on the Spark backend."""
    from zoo_lite import OrcaContext

    OrcaContext.warm_workers = warm
    est = (keras_estimator if keras_model else torch_estimator)("spark")
    try:
        fit_once(est, frame, batch, keras_model)([])
        if warm and keras_model and wait_for_child:
            wait_until_children_idle()
        return call_to_first_step(fit_once(est, frame, batch, keras_model),
                                  keras_first_step_callback if keras_model else torch_first_step_callback)
    finally:
        est.shutdown()
        OrcaContext.warm_workers = True


# -- the pool's cost -------------------------------------------------------------------------------------

def pooled_processes() -> list[psutil.Process]:
    from ray._private.state import actors

    pids = [int(entry["Pid"]) for entry in actors(actor_state_name="ALIVE").values()
            if entry["ActorClassName"] == "PooledWorkerActor"]
    return [psutil.Process(pid) for pid in pids if psutil.pid_exists(pid)]


class BareGate:
    """Ray's floor, for reference: an async actor holding gates, as a node's board actor does."""

    def __init__(self) -> None:
        import asyncio

        self.opened = asyncio.Event()

    async def parked(self) -> None:
        await self.opened.wait()

    def open(self) -> None:
        self.opened.set()


class BareIdle:
    """Ray's floor, for reference: an actor with nothing imported, parked the way a pooled worker
    is (its main thread blocked in ``ray.get`` on a gate's reply)."""

    def pid(self) -> int:
        return os.getpid()

    def park(self, gate: Any) -> None:
        import ray

        ray.get(gate.parked.remote())


def cpu_seconds(processes: list[psutil.Process]) -> float:
    return sum(sum(process.cpu_times()[:2]) for process in processes)


def pool_cost(frame: Any, batch: int) -> dict[str, float]:
    """Memory of the idle pool of both frameworks (one node, 2 processes each), and its CPU share
    while idle; beside it, over the same window, the CPU share of as many bare Ray actors parked
    the same way (Ray's own floor for idle processes that wait so)."""
    import ray

    for keras_model in (False, True):
        pool_ready(frame, batch, keras_model)
    processes = pooled_processes()
    gate = ray.remote(num_cpus=0)(BareGate).remote()
    bare = [ray.remote(num_cpus=0)(BareIdle).remote() for _ in processes]
    bare_processes = [psutil.Process(pid) for pid in ray.get([actor.pid.remote() for actor in bare], timeout=120)]
    parked = [actor.park.remote(gate) for actor in bare]
    time.sleep(2.0)   # the bare actors' start-up is not their idle cost
    memory = [process.memory_full_info() for process in processes]
    before, bare_before = cpu_seconds(processes), cpu_seconds(bare_processes)
    time.sleep(IDLE_WATCH_S)
    after, bare_after = cpu_seconds(processes), cpu_seconds(bare_processes)
    ray.get(gate.open.remote(), timeout=60)
    ray.get(parked, timeout=60)
    for actor in [*bare, gate]:
        ray.kill(actor)
    return {"processes": len(processes), "rss_mb": sum(m.rss for m in memory) / 2**20,
            "uss_mb": sum(m.uss for m in memory) / 2**20, "idle_cpu_share": (after - before) / IDLE_WATCH_S,
            "bare_cpu_share": (bare_after - bare_before) / IDLE_WATCH_S}


# -- first fits ------------------------------------------------------------------------------------------

def first_fits(frame: Any, batch: int, storage: str) -> dict[str, float]:
    """The first fit after ``init_orca_context`` (pool empty) on both backends, Ray Train's and
    TorchDistributor's, end to end."""
    parquet = os.path.join(storage, f"rows-{time.time_ns()}.parquet")
    frame.write.parquet(parquet)
    seconds = {}
    for backend in ("ray", "spark"):
        est = torch_estimator(backend)
        started = time.perf_counter()
        fit_once(est, frame, batch, False)([])
        seconds[f"first_{backend}"] = time.perf_counter() - started
        est.shutdown()
    seconds["first_ray_train"] = ray_train_run(frame, batch, 1, storage)[0]
    seconds["first_distributor"] = td_run(parquet, batch, 1)[0]
    return seconds


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5: the targets are medians)")
    parser.add_argument("--rows", type=int, default=2048, help="rows of the tiny data (default 2048)")
    parser.add_argument("--batch", type=int, default=256, help="global batch (default 256)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import pyspark
    import ray

    from zoo_lite import OrcaContext, init_orca_context, stop_orca_context

    args = parse_args(argv)
    command = command_line("bench_start.py", argv)
    ship_to_workers(_mlp_data, bench_spark_backend, bench_torch_fit)   # Ray Train's and TorchDistributor's functions
    cases: dict[str, Timing] = {}
    cost: list[dict[str, float]] = []
    storage = tempfile.mkdtemp(prefix="bench-start-")
    load_before = os.getloadavg()
    for round_index in range(args.repeat):
        log(f"round {round_index + 1} of {args.repeat}")
        init_orca_context(cluster_mode="local", cores=2, init_ray_on_spark=True)
        try:
            frame = make_dataframe(OrcaContext.get_spark_session(), args.rows)
            for name, value in first_fits(frame, args.batch, storage).items():
                cases.setdefault(name, Timing()).add([value])
            order = [("rt", lambda warm: ray_new_estimator(frame, args.batch, False, warm)),
                     ("rk", lambda warm: ray_new_estimator(frame, args.batch, True, warm)),
                     ("st", lambda warm: spark_second_fit(frame, args.batch, False, warm)),
                     ("sk", lambda warm: spark_second_fit(frame, args.batch, True, warm))]
            for name, measure in order if round_index % 2 == 0 else order[::-1]:
                for warm in ((True, False) if round_index % 2 == 0 else (False, True)):
                    seconds = measure(warm)
                    cases.setdefault(f"{name}_{'on' if warm else 'off'}", Timing()).add([seconds])
                    log(f"{name} warm={warm}: {seconds:.2f} s")
            cases.setdefault("sk_now", Timing()).add([spark_second_fit(frame, args.batch, True, True, wait_for_child=False)])
            cases.setdefault("rt_next", Timing()).add([ray_next_estimator(frame, args.batch, False)])
            cases.setdefault("rk_next", Timing()).add([ray_next_estimator(frame, args.batch, True)])
            cost.append(pool_cost(frame, args.batch))
            log(f"pool cost: {cost[-1]}")
        finally:
            stop_orca_context()
    load_after = os.getloadavg()

    def median(name: str) -> float:
        return cases[name].median

    worst = max(cost, key=lambda entry: entry["idle_cpu_share"])
    idle_cpu = worst["idle_cpu_share"]
    targets = [
        ("(rk) new Keras Estimator, Ray backend, pool on: call to end of first step, s (median)", median("rk_on"), "<= 1.5 s",
         median("rk_on") <= 1.5),
        ("(rk next) the same, right after another one ended (its workers handed back), s (median)", median("rk_next"),
         "<= 1.5 s", median("rk_next") <= 1.5),
        ("(rt) new torch Estimator, Ray backend, pool on, s (median)", median("rt_on"), "<= 0.5 s", median("rt_on") <= 0.5),
        ("(rt next) the same, right after another one ended (its workers handed back), s (median)", median("rt_next"),
         "<= 0.5 s", median("rt_next") <= 0.5),
        ("(sk) Keras, Spark backend, second fit, pool on, s (median)", median("sk_on"), "<= 2 s", median("sk_on") <= 2.0),
        ("(st) torch, Spark backend, second fit, pool on, s (median)", median("st_on"), "<= 1 s", median("st_on") <= 1.0),
        ("the pool's CPU while idle, share of one core (worst round)", f"{100 * idle_cpu:.2f} %", "<= 1 %", idle_cpu <= 0.01),
        ("Ray's floor in that round: as many bare Ray actors parked the same way, nothing imported",
         f"{100 * worst['bare_cpu_share']:.2f} %", "info", True),
        ("first fit after init, Ray backend / Ray Train (medians)", median("first_ray") / median("first_ray_train"), "info", True),
        ("first fit after init, Spark backend / TorchDistributor (medians)",
         median("first_spark") / median("first_distributor"), "info", True),
    ]
    labels = {"rt": "(rt) new torch Estimator, Ray backend", "rk": "(rk) new Keras Estimator, Ray backend",
              "st": "(st) torch, Spark backend, second fit", "sk": "(sk) Keras, Spark backend, second fit"}
    memory = cost[-1]
    print("\n".join([
        *heading("bench_start", command),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, "
        f"pyspark {pyspark.__version__}, ray {ray.__version__}; zoo_lite at commit {zoo_lite_commit()}",
        f"- `init_orca_context(cluster_mode=\"local\", cores=2, init_ray_on_spark=True)`, {WORKERS} workers; data: "
        f"{args.rows:,} rows x {FEATURES} float features + label ({CLASSES} classes), MLP {FEATURES}-128-128-{CLASSES}, "
        f"batch {args.batch}, 1 epoch per fit; {args.repeat} round(s), cases interleaved, medians (range)",
        load_line(load_before, load_after),
        "", "### Targets", "", *targets_table(targets), "",
        "### Fit call to the end of the first step, s: median (best–worst)", "",
        "| case | warm workers on | off | off / on |", "|---|---:|---:|---:|",
        *[f"| {label} | {cases[f'{name}_on'].spread_cell()} | {cases[f'{name}_off'].spread_cell()} | "
          f"{median(f'{name}_off') / median(f'{name}_on'):.1f} |" for name, label in labels.items()],
        f"| (sk now) Keras, Spark backend, second fit right after the first (its child still importing) | "
        f"{cases['sk_now'].spread_cell()} | | |",
        f"| (rt next) new torch Estimator, Ray backend, right after another one ended (its workers handed back) | "
        f"{cases['rt_next'].spread_cell()} | {cases['rt_off'].spread_cell()} | {median('rt_off') / median('rt_next'):.1f} |",
        f"| (rk next) new Keras Estimator, Ray backend, right after another one ended (its workers handed back) | "
        f"{cases['rk_next'].spread_cell()} | {cases['rk_off'].spread_cell()} | {median('rk_off') / median('rk_next'):.1f} |",
        "", "### The pool's cost on the node (last round)", "",
        f"- {memory['processes']:.0f} idle processes (2 torch, 2 Keras): RSS {memory['rss_mb']:.0f} MiB, USS "
        f"{memory['uss_mb']:.0f} MiB (memory of their own, shared libraries not counted)",
        f"- CPU while idle, over {IDLE_WATCH_S:.0f} s: "
        + ", ".join(f"{100 * entry['idle_cpu_share']:.2f} %" for entry in cost) + " of one core, by round",
        f"- Ray's floor, the same window: {memory['processes']:.0f} bare Ray actors (nothing imported) whose main "
        "thread blocks in `ray.get` on an async gate actor, as a pooled worker's does: "
        + ", ".join(f"{100 * entry['bare_cpu_share']:.2f} %" for entry in cost) + " of one core, by round",
        "", "### First fit after `init_orca_context`, end to end, s: median (best–worst)", "",
        "| system | s |", "|---|---:|",
        f"| zoo_lite, Ray backend, torch (pool empty) | {cases['first_ray'].spread_cell()} |",
        f"| Ray Train `TorchTrainer`, same Ray | {cases['first_ray_train'].spread_cell()} |",
        f"| zoo_lite, Spark backend, torch | {cases['first_spark'].spread_cell()} |",
        f"| PySpark `TorchDistributor` | {cases['first_distributor'].spread_cell()} |",
        "",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
