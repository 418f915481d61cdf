"""Benchmark: how fast a fit resumes after a training worker dies, zoo_lite against Ray Train.

Cluster: ``init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g",
init_ray_on_spark=True, conf={"spark.storage.cachedPeersTtl": "1000"})``: ``local-cluster[2,1,1024]``, two executor JVMs, Ray on Spark with one
node of 1 CPU in each, so every case runs 2 workers of 1 CPU, one per node.
Data: ``--rows`` (500,000) rows of 64 float features and a class label (``_mlp_data``, the rows
of ``bench_torch_fit.py``), a cached Spark DataFrame. Model: MLP 64 -> 128 -> 128 -> 10,
cross-entropy, SGD with momentum, global batch ``--batch`` (1024), ``--epochs`` (5) epochs.

Cases, interleaved round by round (``--repeat`` rounds), each on a new Estimator / trainer:

- (1) zoo_lite ``Estimator.from_torch(max_failures=3)``: a callback SIGKILLs the worker of rank 1
  after half the steps of epoch ``--kill-epoch`` (3); also the same fit uninterrupted;
- (2) zoo_lite ``Estimator.from_keras(max_failures=3)``: the same with a Keras callback, which
  runs on rank 0 only, so rank 0 is killed; also the same fit uninterrupted;
- (3) Ray Train ``TorchTrainer`` (v2) with 2 workers x 1 CPU on the same Ray-on-Spark cluster,
  ``FailureConfig(max_failures=1)``, a checkpoint (model, optimizer, epoch) reported by rank 0
  after every epoch and restored with ``ray.train.get_checkpoint()``; the data fed the usual Ray
  way (``ray.data.from_pandas`` of the collected frame, ``iter_torch_batches``), as in
  ``bench_torch_fit.py``; rank 1 kills itself at the same point.
- (4) zoo_lite ``Estimator.from_torch(max_failures=3)`` again, but rank 1 SIGKILLs the Spark
  executor JVM its Ray node belongs to (the node ends with it): only that node is replaced. The
  fit resumes on the one node left, and grows back to 2 workers between epochs once Spark has
  started a new executor and a node runs on it. Ray Train has no counterpart here: its
  ``ScalingConfig`` asks for 2 workers of 1 CPU, and with one of the 2 nodes gone it waits for
  CPUs that nothing brings back (Ray on Spark adds nodes when zoo_lite asks for Ray).
- (5) as (4), on the frame persisted with 2 replicas (``MEMORY_AND_DISK_2``): the partitions the
  dead executor cached are not recomputed when the fit reloads its data (in (4) Spark recomputes
  them from the frame's lineage, which is the user's data cost, not zoo_lite's).
- (6) as (5), but rank 1 SIGSTOPs its executor JVM and every process below it, and its Ray
  node's watchdog and every process below that (the node, itself): a host that hangs, alive and
  silent. (The watchdog is not always below the JVM: once the Spark Python worker that launched
  the node ends, the watchdog's parent is init.) zoo_lite notices after
  ``heartbeat_timeout_s`` (default 30 s) without a heartbeat, drops the executor in Spark and
  resumes on the node left; the stopped processes get SIGCONT after the fit, so that they end.
- (1s), (2s), (6s): (1), (2) and (6) with ``WorkerConfig(standby_workers=True)``: the new group
  takes over the idle, started processes kept beside the lost one instead of starting new ones.

What is measured, from ``time.time()`` stamps the workers write to files (one machine, one clock):

- recovery: from the stamp written just before ``os.kill(os.getpid(), SIGKILL)`` to the end of
  the first training step of rank 0 in the group started after the death;
- epochs redone: (steps trained when the worker died - steps trained before the first resumed
  step) / steps per epoch, from the (epoch, step) both stamps carry: the work the resume threw
  away, at most 1 when the fit resumes from the last completed epoch;
- that no epoch is trained twice: zoo_lite's history (PyTorch: the ``epoch`` of each entry;
  Keras: a ``keras.callbacks.History``'s epochs), Ray Train: the epochs rank 0 reported;
- where zoo_lite's recovery time goes: the driver's steps are timed by wrapping the Estimator's
  methods for the fit (nothing in zoo_lite is changed), the workers' steps by the stamps; and,
  as the floor under a new group, how long 2 bare Ray actors take to start and to import torch
  or tensorflow.

A warm-up fit of each zoo_lite Estimator (1 epoch, not counted) runs before the rounds.

Targets (issue text): epochs redone <= 1; recovery <= 15 s, or <= 0.5x Ray Train's recovery in
the same run; (4) an executor's death -> the first resumed step <= 10 s; (6) <= 35 s; a worker's
death -> the first resumed step <= 3 s (PyTorch) and <= 4 s (Keras), or <= 0.25x Ray Train's
(the "Host failures" issue's faster recovery, held to the standby cases). For information:
zoo_lite's interrupted fit against the same fit uninterrupted; (4) the death -> the fit back on
2 workers.

Run from the repository root::

    .venv/bin/python benchmarks/bench_recovery.py --repeat 3    # ~8-12 min on 2 cores
    .venv/bin/python benchmarks/bench_recovery.py --quick       # 1 round, 100,000 rows
    .venv/bin/python benchmarks/bench_recovery.py --cases torch,executor   # a worker's death, an executor's death

It prints a markdown report; keep the latest in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import logging
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import torch
from _harness import Timing, command_line, heading, load_values, log, targets_table, zoo_lite_commit
from _mlp_data import CLASSES, FEATURES, frame_arrays, make_dataframe, make_keras_mlp
from torch import nn

from zoo_lite.learn.pytorch import Callback

#: the stamp files of one run, in its own folder
DEATH, BEGUN, RESTORED, RESUMED, EPOCHS = "death.json", "begun.json", "restored.json", "resumed.json", "epochs.txt"
EPOCH_TIMES = "epoch-times.txt"   # seconds of each epoch, a line each (rank 0; Keras and Ray Train)
TARGET_REDONE, TARGET_RECOVERY_S, TARGET_VS_RAY = 1.0, 15.0, 0.5
TARGET_EXECUTOR_S = 10.0   # an executor's death -> the first resumed step (the "Host failures" issue)
TARGET_SILENT_S = 35.0     # a host going silent -> the first resumed step, with the default heartbeat_timeout_s (30 s)
#: every case, in the order of a round (``--cases`` picks some)
CASES = ("torch_plain", "torch", "torch_standby", "keras_plain", "keras", "keras_standby", "ray", "executor",
         "executor_standby", "executor_keras", "executor_replicated", "silent", "silent_standby")
#: the cases in which something is killed
_KILLED = tuple(case for case in CASES if not case.endswith("_plain"))
#: the bars of a recovery on standby workers (``WorkerConfig(standby_workers=True)``): torch, Keras (s; or x Ray Train's)
TARGET_STANDBY_S, TARGET_STANDBY_VS_RAY = {"torch": 3.0, "keras": 4.0}, 0.25


# -- the model (as bench_torch_fit.py and bench_keras_fit.py build it) ---------------------------------------

def make_torch_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, CLASSES))


def make_torch_optimizer(parameters: Any) -> torch.optim.Optimizer:
    return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)


# -- stamps: written by the workers, read by the driver ---------------------------------------------------------

def stamp(path: str, **fields: Any) -> None:
    """Write ``time.time()`` (taken first) and ``fields`` as JSON to ``path``, atomically."""
    record = {"at": time.time(), **fields}
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w") as handle:
        json.dump(record, handle)
    os.replace(partial, path)


def read_stamp(folder: str, name: str) -> Optional[dict[str, Any]]:
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def append_line(folder: str, name: str, value: Any) -> None:
    with open(os.path.join(folder, name), "a") as handle:
        handle.write(f"{value}\n")


def read_lines(folder: str, name: str) -> list[str]:
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip()]


def executor_jvm() -> Any:
    """The Spark executor JVM whose Ray node runs this worker: its pid is in the node's name
    (``zoo-lite-<host>-<executor pid>-<suffix>``). Not found by walking up the process tree: the
    Spark Python worker that launched the node may have ended, leaving the node's watchdog
    with init as its parent."""
    import psutil
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    name = next(node["NodeName"] for node in ray.nodes() if node["NodeID"] == node_id)
    return psutil.Process(int(name.split("-")[-2]))


def die(folder: str, epoch: int, step: int, steps_per_epoch: int, what: str = "worker") -> None:
    """Stamp the death (epoch and step are 0-based: ``step`` was the last one done), then SIGKILL
    this process, or with ``what="executor"`` the Spark executor JVM whose Ray node runs it (its
    node ends with it). The stamp is also the marker that makes every later group run on."""
    import psutil

    victim = executor_jvm() if what in ("executor", "stall") else psutil.Process()
    if what == "stall":   # the executor, its node and everything below them, this process last: alive, silent
        watchdog = next(process for process in psutil.Process().parents()
                        if "zoo_lite.ray_on_spark.watchdog" in " ".join(process.cmdline()))
        trees = [victim, *victim.children(recursive=True), watchdog, *watchdog.children(recursive=True)]
        stalled = list({process.pid: process for process in trees}.values())
        stamp(os.path.join(folder, DEATH), pid=victim.pid, stalled=[process.pid for process in stalled], epoch=epoch,
              step=step, steps_per_epoch=steps_per_epoch)
        for process in stalled:
            if process.pid != os.getpid():
                process.send_signal(signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)
        return
    stamp(os.path.join(folder, DEATH), pid=victim.pid, epoch=epoch, step=step, steps_per_epoch=steps_per_epoch)
    os.kill(victim.pid, signal.SIGKILL)


def resume_stalled(folder: str) -> None:
    """SIGCONT what a "stall" death stopped, so that it can end (Spark and the watchdog end it)."""
    death = read_stamp(folder, DEATH) or {}
    for pid in death.get("stalled", []):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def stamp_once(path: str, **fields: Any) -> None:
    """:func:`stamp`, unless the file exists: only the first group begun after the death counts
    (after an executor's death a fit resumes on fewer workers, then grows back: a second group)."""
    if not os.path.exists(path):
        stamp(path, **fields)


def should_die(folder: str, kill_epoch: Optional[int], epoch: int, step: int, steps_per_epoch: int) -> bool:
    """At the middle step of epoch ``kill_epoch`` (1-based; ``epoch`` and ``step`` 0-based), once."""
    return (kill_epoch is not None and epoch == kill_epoch - 1 and steps_per_epoch > 0 and step == steps_per_epoch // 2
            and not os.path.exists(os.path.join(folder, DEATH)))


class TorchProbe(Callback):
    """zoo_lite PyTorch callback: the worker of ``kill_rank`` dies at the middle of epoch
    ``kill_epoch``; in a group begun after that, rank 0 stamps the fit's begin and its first step.
    It counts the steps of each epoch itself, so the middle is measured, not computed."""

    def __init__(self, folder: str, kill_epoch: Optional[int], kill_rank: int = 1, kill_what: str = "worker") -> None:
        self.folder, self.kill_epoch, self.kill_rank, self.kill_what = folder, kill_epoch, kill_rank, kill_what
        self.resumed, self.first_step_stamped = False, False
        self.steps_per_epoch, self.steps = 0, 0

    def before_run(self, runner: Any) -> None:
        self.resumed = os.path.exists(os.path.join(self.folder, DEATH))
        if self.resumed and runner.rank == 0:
            stamp_once(os.path.join(self.folder, BEGUN), epoch=runner.epoch)

    def before_train_epoch(self, runner: Any) -> None:
        # again here: a resumed fit restores the callbacks' state (this object's fields) after before_run
        self.resumed = os.path.exists(os.path.join(self.folder, DEATH))
        self.steps = 0

    def after_train_iter(self, runner: Any) -> None:
        self.steps += 1
        if self.resumed:
            if runner.rank == 0 and not self.first_step_stamped:
                self.first_step_stamped = True
                stamp_once(os.path.join(self.folder, RESUMED), epoch=runner.epoch, step=runner.batch_idx)
        elif runner.rank == self.kill_rank and should_die(self.folder, self.kill_epoch, runner.epoch, runner.batch_idx,
                                                          self.steps_per_epoch):
            die(self.folder, runner.epoch, runner.batch_idx, self.steps_per_epoch, self.kill_what)

    def after_train_epoch(self, runner: Any) -> None:
        self.steps_per_epoch = self.steps


def keras_probe(folder: str, kill_epoch: Optional[int], kill_what: str = "worker") -> Any:
    """The Keras counterpart of :class:`TorchProbe`, on rank 0 (where zoo_lite runs such
    callbacks), which is therefore the worker killed (or, with ``kill_what="executor"``, its
    executor). Built here so that this module needs no Keras import."""
    import keras

    class KerasProbe(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.folder, self.kill_epoch = folder, kill_epoch
            # in a dict: zoo_lite gives a resumed fit's callbacks the plain attributes they had
            # after the last completed epoch, and these must stay this process's own
            self.now = {"resumed": False, "stamped": False, "epoch": -1, "steps": 0, "steps_per_epoch": 0}

        def on_train_begin(self, logs: Any = None) -> None:
            self.now["resumed"] = os.path.exists(os.path.join(self.folder, DEATH))
            if self.now["resumed"]:   # once: after a lost node, the group that grows back begins again
                stamp_once(os.path.join(self.folder, BEGUN))

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.now.update(epoch=epoch, steps=0, began=time.perf_counter())

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = self.now
            now["steps"] += 1
            if now["resumed"]:
                if not now["stamped"]:
                    now["stamped"] = True
                    stamp_once(os.path.join(self.folder, RESUMED), epoch=now["epoch"], step=batch)
            elif should_die(self.folder, self.kill_epoch, now["epoch"], batch, now["steps_per_epoch"]):
                die(self.folder, now["epoch"], batch, now["steps_per_epoch"], kill_what)

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.now["steps_per_epoch"] = self.now["steps"]
            append_line(self.folder, EPOCH_TIMES, time.perf_counter() - self.now["began"])

    return KerasProbe()


# -- the driver's side of a zoo_lite recovery -----------------------------------------------------------------

@dataclass
class Span:
    name: str
    start: float
    end: float


class DriverSpans:
    """The times of an Estimator's recovery steps on the driver, taken by wrapping, for one fit,
    the Estimator's methods, the names its module looks up (``wait_for_free_cpus``,
    ``WorkerGroup``, ``rows_in_ray``) and ``WorkerGroup._wait``; and the ``zoo_lite.learn`` log
    lines. Nothing in zoo_lite's files changes; everything is put back afterwards."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.log_lines: list[tuple[float, str]] = []

    def _timed(self, name: Callable[..., str], func: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.time()
            try:
                return func(*args, **kwargs)
            finally:
                self.spans.append(Span(name(*args), start, time.time()))
        return wrapper

    @contextlib.contextmanager
    def attached(self, est: Any) -> Iterator["DriverSpans"]:
        import zoo_lite.learn.base.estimator as estimator_module
        from zoo_lite.learn.base.worker_group import runner_call_name

        spans = self

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                spans.log_lines.append((record.created, record.getMessage()))

        est._recover = self._timed(lambda *a: "recover", est._recover)
        est._call = self._timed(lambda call, *a: f"call {runner_call_name(call)}", est._call)
        est._load = self._timed(lambda *a: "load", est._load)
        est._drop_group = self._timed(lambda *a: "drop group", est._drop_group)
        saved = (estimator_module.wait_for_free_cpus, estimator_module.start_worker_group, estimator_module.WorkerGroup._wait,
                 estimator_module.rows_in_ray)
        estimator_module.wait_for_free_cpus = self._timed(lambda *a: "wait_for_free_cpus", saved[0])
        estimator_module.start_worker_group = self._timed(lambda *a: "WorkerGroup", saved[1])
        # the group's waits: "start" (actors up, runners built), "connect" (rendezvous), and each call
        estimator_module.WorkerGroup._wait = self._timed(lambda group, futures, what, *a: f"wait {what}", saved[2])
        estimator_module.rows_in_ray = self._timed(lambda *a: "rows_in_ray", saved[3])   # the Spark job of a load
        handler = Keep(level=logging.INFO)
        logger = logging.getLogger("zoo_lite.learn")
        logger.addHandler(handler)
        try:
            yield self
        finally:
            (estimator_module.wait_for_free_cpus, estimator_module.start_worker_group, estimator_module.WorkerGroup._wait,
             estimator_module.rows_in_ray) = saved
            logger.removeHandler(handler)

    def first(self, name: str, after: float) -> Optional[Span]:
        return next((span for span in sorted(self.spans, key=lambda s: s.start) if span.name == name and span.start >= after), None)

    def all(self, name: str, after: float) -> list[Span]:
        return [span for span in self.spans if span.name == name and span.start >= after]


# -- one run's figures ----------------------------------------------------------------------------------------------

@dataclass
class Run:
    fit_s: float
    epoch_s: list[float] = field(default_factory=list)
    recovery_s: float = math.nan
    redone_epochs: float = math.nan
    phases: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def recovery_figures(run: Run, folder: str) -> tuple[Optional[dict[str, Any]], Optional[dict[str, Any]]]:
    """Recovery time and epochs redone from the death and first-resumed-step stamps."""
    death, resumed = read_stamp(folder, DEATH), read_stamp(folder, RESUMED)
    if death is None:
        run.problems.append("no worker was killed (no death stamp)")
    if resumed is None:
        run.problems.append("no resumed step was stamped")
    if death is not None and resumed is not None:
        per_epoch = death["steps_per_epoch"]
        done_at_death = death["epoch"] * per_epoch + death["step"] + 1
        done_before_resumed_step = resumed["epoch"] * per_epoch + resumed["step"]
        run.recovery_s = resumed["at"] - death["at"]
        run.redone_epochs = (done_at_death - done_before_resumed_step) / per_epoch
    return death, resumed


#: the executor case's second figure: from the death to the fit's log line that it grew back to 2 workers
GROWN = "death -> the fit back on 2 workers (a node started on the executor Spark gave back)"
#: the steps of starting a worker group and loading the data, as :func:`zoo_phases` and :func:`zoo_start_phases` name them
STARTED, CONNECTED, STATE = ("new group: actor processes started (or a standby's taken over), runners built",
                             "new group: workers connected to each other", "model state sent to the workers")
FREED = "Ray shows the CPUs free (a cold start only)"
SPARK, TAKEN = "data: the DataFrame's partitions put into Ray by the executors", "data: the workers take their rows"


def zoo_phases(run: Run, spans: DriverSpans, folder: str, death: dict[str, Any], resumed: dict[str, Any]) -> None:
    """Split death -> first resumed step into the driver's and the workers' steps (they add up)."""
    recover = spans.first("recover", death["at"])
    if recover is None:
        run.problems.append("the driver never entered its recovery")
        return
    detected = recover.start
    steps = {name: spans.first(name, detected) for name in ("drop group", "wait start", "WorkerGroup", "call set_state",
                                                             "rows_in_ray", "load")}
    begun = read_stamp(folder, BEGUN)
    if None in steps.values() or begun is None:
        run.problems.append(f"a recovery step was not seen: {steps}, begun={begun}")
        return
    freed = spans.first("wait_for_free_cpus", detected)   # a cold start only: standby workers hold their own
    if freed is not None and freed.end > steps["wait start"].end:
        freed = None   # a later group's (growing back): this one took a standby over
    marks = [("death", death["at"]), ("the driver sees the loss", detected), ("old group killed", steps["drop group"].end),
             (FREED, freed.end if freed is not None else steps["drop group"].end), (STARTED, steps["wait start"].end),
             (CONNECTED, steps["WorkerGroup"].end), (STATE, steps["call set_state"].end), (SPARK, steps["rows_in_ray"].end),
             (TAKEN, max(span.end for span in spans.all("load", detected) if span.end <= begun["at"])),
             ("fit begun on the new group", begun["at"]),
             ("first step done", resumed["at"])]
    run.phases = {name: at - marks[i][1] for i, (name, at) in enumerate(marks[1:])}


def zoo_start_phases(run: Run, spans: DriverSpans) -> None:
    """The same steps at the start of an uninterrupted fit (its first group and load)."""
    steps = {name: spans.first(name, 0.0) for name in ("WorkerGroup", "wait start", "call set_state", "rows_in_ray", "load")}
    if None in steps.values():
        run.problems.append(f"a start step was not seen: {steps}")
        return
    # the load starts the group (and sends the state) first
    run.phases = {STARTED: steps["wait start"].end - steps["WorkerGroup"].start,
                  CONNECTED: steps["WorkerGroup"].end - steps["wait start"].end,
                  STATE: steps["call set_state"].end - steps["call set_state"].start,
                  SPARK: steps["rows_in_ray"].end - steps["call set_state"].end,
                  TAKEN: steps["load"].end - steps["rows_in_ray"].end}


# -- the floor under a group start: bare Ray actors ------------------------------------------------------------

class _BareActor:
    """A Ray actor that only imports ``module``: how long a new worker process takes to run
    Python, and then that import."""

    def __init__(self, module: str) -> None:
        self.began = time.time()
        importlib.import_module(module)
        self.imported = time.time()

    def times(self) -> tuple[float, float]:
        return self.began, self.imported


def bare_actors(module: str) -> tuple[float, float]:
    """Seconds from asking for 2 actors of 1 CPU (one per node) to both running ``__init__``, and
    the slower one's import of ``module`` there."""
    import ray

    actor_class = ray.remote(num_cpus=1)(_BareActor)
    asked = time.time()
    actors = [actor_class.remote(module) for _ in range(2)]
    times = ray.get([actor.times.remote() for actor in actors], timeout=300)
    for actor in actors:
        ray.kill(actor)
    return max(began for began, _ in times) - asked, max(imported - began for began, imported in times)


def check_lost_line(run: Run, spans: DriverSpans, expected: str) -> None:
    if not any(expected in line for _, line in spans.log_lines):
        run.problems.append(f"no log line {expected!r}: {[line for _, line in spans.log_lines if 'lost' in line]}")


# -- (1) zoo_lite PyTorch ----------------------------------------------------------------------------------------

def zoo_torch_run(frame: Any, rows: int, args: argparse.Namespace, folder: str, kill: bool, kill_what: str = "worker",
                  standby: bool = False) -> Run:
    from zoo_lite.learn import WorkerConfig
    from zoo_lite.learn.pytorch import Estimator

    model = make_torch_model()
    est = Estimator.from_torch(model=model, optimizer=make_torch_optimizer(model.parameters()), loss=nn.CrossEntropyLoss(),
                               workers_per_node=1, seed=0, max_failures=3, worker_config=WorkerConfig(standby_workers=standby))
    try:
        with DriverSpans().attached(est) as spans:
            started = time.time()
            history = est.fit(frame, epochs=args.epochs, batch_size=args.batch, feature_cols=["features"], label_cols=["label"],
                              callbacks=[TorchProbe(folder, args.kill_epoch if kill else None, kill_what=kill_what)])
            run = Run(time.time() - started, [h["epoch_time_s"] for h in history])
    finally:
        resume_stalled(folder)
        est.shutdown()
    epochs = [h["epoch"] for h in history]
    if epochs != list(range(1, args.epochs + 1)) or any(h["num_samples"] != rows for h in history):
        run.problems.append(f"history: epochs {epochs}, rows {[h['num_samples'] for h in history]} (expected each of "
                            f"1..{args.epochs} once, {rows} rows each)")
    if kill and kill_what in ("executor", "stall"):
        check_node_loss(run, spans, folder, args.kill_epoch, standby, kill_what)
    elif kill:
        death, resumed = recovery_figures(run, folder)
        if death and resumed:
            zoo_phases(run, spans, folder, death, resumed)
        k = args.kill_epoch
        check_lost_line(run, spans, f"worker 1 lost in epoch {k}; resuming from epoch {k - 1} on 2 {'standby ' * standby}workers")
    else:
        zoo_start_phases(run, spans)
    return run


def newest_cached_copies(spark: Any) -> list[int]:
    """How many executors hold each partition of the most recently cached RDD (Spark's status
    store)."""
    cached = spark.sparkContext._jsc.sc().statusStore().rddList(True)
    newest = max((cached.apply(index) for index in range(cached.size())), key=lambda info: info.id())
    partitions = newest.partitions().get()
    return [partitions.apply(index).executors().size() for index in range(partitions.size())]


def check_node_loss(run: Run, spans: Any, folder: str, kill_epoch: int, standby: bool, kill_what: str) -> None:
    """After a lost node (``kill_what`` "executor" or "stall"): the fit resumed on the node left,
    then grew back. The run's phases: the recovery's steps (:func:`zoo_phases`), and the time
    from the death to growing back."""
    death, resumed = recovery_figures(run, folder)
    if death is not None and resumed is not None:
        zoo_phases(run, spans, folder, death, resumed)
    # a stalled node is quiet long before it counts as lost: the group has idle workers ready by then
    takes_over = standby or kill_what == "stall"
    check_lost_line(run, spans,
                    f"lost in epoch {kill_epoch}; resuming from epoch {kill_epoch - 1} on 1 {'standby ' * takes_over}workers")
    if kill_what == "stall":
        check_lost_line(run, spans, "its host was silent for")
        if not standby:   # a group with standby workers of its own starts no others
            check_lost_line(run, spans, "quiet for 3 s; starting idle workers on the other nodes")
    check_lost_line(run, spans, "Ray nodes were added back")
    grown = next((at for at, line in spans.log_lines if "Ray nodes were added back" in line), None)
    if death is not None and grown is not None:
        run.phases[GROWN] = grown - death["at"]


# -- (2) zoo_lite Keras ----------------------------------------------------------------------------------------

def zoo_keras_run(frame: Any, args: argparse.Namespace, folder: str, kill: bool, standby: bool = False,
                  kill_what: str = "worker") -> Run:
    import keras

    from zoo_lite.learn import WorkerConfig
    from zoo_lite.learn.tf2 import Estimator

    est = Estimator.from_keras(model=make_keras_mlp(), workers_per_node=1, seed=0, max_failures=3,
                               worker_config=WorkerConfig(standby_workers=standby))
    history = keras.callbacks.History()   # runs on the driver, one on_epoch_end per completed epoch
    try:
        with DriverSpans().attached(est) as spans:
            started = time.time()
            results = est.fit(frame, epochs=args.epochs, batch_size=args.batch, feature_cols=["features"], label_cols=["label"],
                              verbose=0, callbacks=[keras_probe(folder, args.kill_epoch if kill else None, kill_what), history])
            run = Run(time.time() - started, [float(line) for line in read_lines(folder, EPOCH_TIMES)])
    finally:
        est.shutdown()
    if history.epoch != list(range(args.epochs)) or len(results.get("loss", [])) != args.epochs:
        run.problems.append(f"history: epochs {history.epoch}, {len(results.get('loss', []))} losses "
                            f"(expected each of 0..{args.epochs - 1} once)")
    if kill and kill_what == "executor":
        check_node_loss(run, spans, folder, args.kill_epoch, standby, kill_what)
    elif kill:
        death, resumed = recovery_figures(run, folder)
        if death and resumed:
            zoo_phases(run, spans, folder, death, resumed)
        k = args.kill_epoch
        check_lost_line(run, spans, f"worker 0 lost in epoch {k}; resuming from epoch {k - 1} on 2 {'standby ' * standby}workers")
    else:
        zoo_start_phases(run, spans)
    return run


# -- (3) Ray Train ----------------------------------------------------------------------------------------------

def ray_train_loop(config: dict[str, Any]) -> None:
    """Runs on each Ray Train worker: resume from the last checkpoint, if any; train; report a
    checkpoint after every epoch; rank 1 dies at the kill point; stamps as the zoo_lite probes."""
    import ray.train
    import ray.train.torch

    folder, rank = config["folder"], ray.train.get_context().get_world_rank()
    resumed = os.path.exists(os.path.join(folder, DEATH))
    if resumed and rank == 0:
        stamp(os.path.join(folder, BEGUN))
    model, start_epoch, optimizer_state = make_torch_model(), 0, None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as directory:
            state = torch.load(os.path.join(directory, "state.pt"))
        model.load_state_dict(state["model"])
        optimizer_state, start_epoch = state["optimizer"], state["epoch"]
    model = ray.train.torch.prepare_model(model)
    optimizer = make_torch_optimizer(model.parameters())
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
    if resumed and rank == 0:
        stamp(os.path.join(folder, RESTORED), epoch=start_epoch)
    loss_fn = nn.CrossEntropyLoss()
    shard = ray.train.get_dataset_shard("train")
    steps_per_epoch, stamped = 0, False
    for epoch in range(start_epoch, config["epochs"]):
        steps, began = 0, time.perf_counter()
        for batch in shard.iter_torch_batches(batch_size=config["batch"] // 2,
                                              dtypes={"features": torch.float32, "label": torch.int64}):
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(batch["features"]), batch["label"])
            loss.backward()
            optimizer.step()
            loss.item()
            steps += 1
            if resumed:
                if rank == 0 and not stamped:
                    stamped = True
                    stamp(os.path.join(folder, RESUMED), epoch=epoch, step=steps - 1)
            elif rank == 1 and should_die(folder, config["kill_epoch"], epoch, steps - 1, steps_per_epoch):
                die(folder, epoch, steps - 1, steps_per_epoch)
        steps_per_epoch, epoch_s = steps, time.perf_counter() - began
        with tempfile.TemporaryDirectory() as directory:
            saved = None
            if rank == 0:
                torch.save({"model": getattr(model, "module", model).state_dict(), "optimizer": optimizer.state_dict(),
                            "epoch": epoch + 1}, os.path.join(directory, "state.pt"))
                saved = ray.train.Checkpoint.from_directory(directory)
            ray.train.report({"epoch": epoch + 1}, checkpoint=saved)
        if rank == 0:
            append_line(folder, EPOCHS, epoch + 1)
            append_line(folder, EPOCH_TIMES, epoch_s)


def ray_train_run(dataset: Any, args: argparse.Namespace, folder: str, storage: str) -> Run:
    import ray.train
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(
        ray_train_loop,
        train_loop_config={"folder": folder, "epochs": args.epochs, "batch": args.batch, "kill_epoch": args.kill_epoch},
        scaling_config=ray.train.ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 1}),
        run_config=ray.train.RunConfig(storage_path=storage, name=f"recovery-{time.time_ns()}",
                                       failure_config=ray.train.FailureConfig(max_failures=1)),
        datasets={"train": dataset},
    )
    started = time.time()
    trainer.fit()
    run = Run(time.time() - started, [float(line) for line in read_lines(folder, EPOCH_TIMES)])
    epochs = [int(line) for line in read_lines(folder, EPOCHS)]
    if epochs != list(range(1, args.epochs + 1)):
        run.problems.append(f"epochs reported by rank 0: {epochs} (expected each of 1..{args.epochs} once)")
    death, resumed = recovery_figures(run, folder)
    begun, restored = read_stamp(folder, BEGUN), read_stamp(folder, RESTORED)
    if death and resumed and begun and restored:
        marks = [("death", death["at"]), ("train function restarted on a new worker group", begun["at"]),
                 ("checkpoint restored, model wrapped in DDP", restored["at"]), ("first step done", resumed["at"])]
        run.phases = {name: at - marks[i][1] for i, (name, at) in enumerate(marks[1:])}
    return run


def ray_dataset(frame: Any) -> Any:
    import pandas as pd
    import ray.data

    x, y = frame_arrays(frame)
    return ray.data.from_pandas(pd.DataFrame({"features": list(x), "label": y}))


# -- the report ------------------------------------------------------------------------------------------------

def source_digest() -> str:
    """A digest of zoo_lite's sources, to tell whether they changed during the run."""
    digest = hashlib.sha1()
    for root, _, files in sorted(os.walk("zoo_lite")):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as handle:
                    digest.update(name.encode() + handle.read())
    return digest.hexdigest()[:10]


def plain_of(name: str) -> str:
    """The uninterrupted case a killed case is compared with: "torch_standby" -> "torch_plain"."""
    return f"{name.split('_')[0]}_plain"


def median_of(runs: list[Run], value: Callable[[Run], float]) -> float:
    values = [value(run) for run in runs if not math.isnan(value(run))]
    return statistics.median(values) if values else math.nan


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--batch", type=int, default=1024, help="global batch size (default 1024)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs per fit (default 5)")
    parser.add_argument("--kill-epoch", type=int, default=3, help="the epoch (1-based) in whose middle a worker dies (default 3)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="1 round on 100,000 rows")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated cases to run, of {', '.join(CASES)} (default: all)")
    args = parser.parse_args(argv)
    cases = [case.strip() for case in args.cases.split(",") if case.strip()]
    if not cases or set(cases) - set(CASES):
        parser.error(f"--cases={args.cases!r}: give some of {', '.join(CASES)}")
    if not 2 <= args.kill_epoch <= args.epochs:
        parser.error("--kill-epoch must be in [2, --epochs]: the probes measure an epoch's steps before they kill")
    rows, repeat = (100_000, 1) if args.quick else (args.rows, args.repeat)
    command = command_line("bench_recovery.py", argv)

    import keras
    import pyspark
    import ray

    import zoo_lite.learn.pytorch
    import zoo_lite.learn.tf2  # noqa: F401  imported now, so that the driver runs one version throughout (see the digest)
    from zoo_lite import init_orca_context, stop_orca_context

    load_before, digest_before = os.getloadavg(), source_digest()
    cpu_before = os.times()
    started = time.time()
    runs: dict[str, list[Run]] = {name: [] for name in CASES}
    bare = {name: Timing() for name in ("up", "torch", "tensorflow")}
    root = tempfile.mkdtemp(prefix="bench-recovery-")
    # an executor learns its replication peers again after this (60 s by default): a frame persisted
    # with 2 replicas right after an executor was replaced would otherwise keep one copy only
    init_orca_context(cluster_mode="local-cluster", num_nodes=2, cores=1, memory="1g", init_ray_on_spark=True,
                      conf={"spark.storage.cachedPeersTtl": "1000"})
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
        log(f"building {rows:,} rows")
        frame = make_dataframe(spark, rows)
        dataset = ray_dataset(frame)
        storage = os.path.join(root, "ray-train")

        def folder() -> str:
            return tempfile.mkdtemp(dir=root)

        replicas: list[Any] = []

        def persisted_frame(replicated: bool) -> Any:
            """The frame again, persisted anew for each run, so that each executor holds the
            partitions it computed: cached once (``MEMORY_AND_DISK``, built from the source), an
            executor's death loses about half of them, and the reload recomputes those from the
            source; with 2 replicas
            (``MEMORY_AND_DISK_2``) it loses none. Anew, because the frame cached once ends up on
            the executor that survived an earlier run, and Spark does not replicate again what lost
            a replica (``spark.storage.replication.proactive`` is off)."""
            from pyspark import StorageLevel
            from pyspark.sql import functions as F

            for attempt in range(3):
                while replicas:
                    replicas.pop().unpersist(blocking=True)
                if replicated:   # another plan than the frame's ("label + 0"): Spark would reuse the frame's cache
                    copy = frame.select("features", (F.col("label") + 0).alias("label"))
                else:   # from the source: a lost partition is computed again from it, not from the frame's cache
                    copy = make_dataframe(spark, rows, cached=False)
                replicas.append(copy.persist(StorageLevel.MEMORY_AND_DISK_2 if replicated else StorageLevel.MEMORY_AND_DISK))
                replicas[0].count()
                copies = newest_cached_copies(spark)
                if not replicated or min(copies) >= 2:
                    return replicas[0]
                # a replica goes to a peer the executor knew of: one lost in the previous run, at times
                log(f"persisted with 2 replicas, but Spark holds {copies} copies of its partitions; persisting again")
            raise RuntimeError(f"Spark kept fewer than 2 copies of a partition 3 times: {copies}")

        # not counted: the first fits pay once for what every later one finds ready (the executors'
        # Python workers, the first Arrow conversion of the frame)
        log("warm-up fits")
        warm_up = argparse.Namespace(**{**vars(args), "epochs": 1})
        zoo_torch_run(frame, rows, warm_up, folder(), kill=False)
        if {"keras", "keras_plain", "keras_standby", "executor_keras"} & set(cases):
            zoo_keras_run(frame, warm_up, folder(), kill=False)
        for round_index in range(repeat):
            log(f"round {round_index + 1}/{repeat}")
            steps = [
                ("torch_plain", lambda: zoo_torch_run(frame, rows, args, folder(), kill=False)),
                ("torch", lambda: zoo_torch_run(frame, rows, args, folder(), kill=True)),
                ("torch_standby", lambda: zoo_torch_run(frame, rows, args, folder(), kill=True, standby=True)),
                ("keras_plain", lambda: zoo_keras_run(frame, args, folder(), kill=False)),
                ("keras", lambda: zoo_keras_run(frame, args, folder(), kill=True)),
                ("keras_standby", lambda: zoo_keras_run(frame, args, folder(), kill=True, standby=True)),
                ("ray", lambda: ray_train_run(dataset, args, folder(), storage)),
                ("executor", lambda: zoo_torch_run(persisted_frame(False), rows, args, folder(), kill=True,
                                                   kill_what="executor")),
                ("executor_standby", lambda: zoo_torch_run(persisted_frame(False), rows, args, folder(), kill=True,
                                                           kill_what="executor", standby=True)),
                ("executor_keras", lambda: zoo_keras_run(persisted_frame(False), args, folder(), kill=True, kill_what="executor")),
                ("executor_replicated", lambda: zoo_torch_run(persisted_frame(True), rows, args, folder(), kill=True,
                                                              kill_what="executor")),
                ("silent", lambda: zoo_torch_run(persisted_frame(True), rows, args, folder(), kill=True, kill_what="stall")),
                ("silent_standby", lambda: zoo_torch_run(persisted_frame(True), rows, args, folder(), kill=True,
                                                         kill_what="stall", standby=True)),
            ]
            for name, step in [(name, step) for name, step in steps if name in cases]:
                if name == "ray":   # the CPUs are free between the zoo_lite cases and Ray Train
                    for module in ("torch", "tensorflow"):
                        up_s, import_s = bare_actors(module)
                        bare["up"].add([up_s])
                        bare[module].add([import_s])
                    log(f"bare actors: up {up_s:.2f} s, torch import {bare['torch'].seconds[-1]:.2f} s, "
                        f"tensorflow import {import_s:.2f} s")
                run = step()
                runs[name].append(run)
                log(f"{name}: fit {run.fit_s:.1f} s, recovery {run.recovery_s:.2f} s, redone {run.redone_epochs:.2f} epochs"
                    + (f"; PROBLEMS: {run.problems}" if run.problems else "")
                    + (f"; phases {', '.join(f'{k}={v:.2f}' for k, v in run.phases.items())}" if run.phases else ""))
    finally:
        stop_orca_context()
        shutil.rmtree(root, ignore_errors=True)
    load_after, digest_after = os.getloadavg(), source_digest()
    wall_s = time.time() - started

    recovery = {name: Timing([r.recovery_s for r in runs[name] if not math.isnan(r.recovery_s)])
                for name in _KILLED}
    fits = {name: Timing([r.fit_s for r in group]) for name, group in runs.items()}
    redone = {name: median_of(runs[name], lambda r: r.redone_epochs)
              for name in _KILLED}
    problems = {name: [p for r in group for p in r.problems] for name, group in runs.items()}
    ray_median = recovery["ray"].median if recovery["ray"].seconds else math.nan
    targets = []
    for name, label, bar_s, bar_ratio in (
            ("torch", "(1) zoo_lite PyTorch", TARGET_RECOVERY_S, TARGET_VS_RAY),
            ("keras", "(2) zoo_lite Keras", TARGET_RECOVERY_S, TARGET_VS_RAY),
            ("torch_standby", "(1s) zoo_lite PyTorch, standby workers", TARGET_STANDBY_S["torch"], TARGET_STANDBY_VS_RAY),
            ("keras_standby", "(2s) zoo_lite Keras, standby workers", TARGET_STANDBY_S["keras"], TARGET_STANDBY_VS_RAY)):
        if not runs[name]:
            continue
        ok_history = not problems[name] and not problems[plain_of(name)]
        targets.append((f"{label}: epochs redone (median), no epoch trained twice", f"{redone[name]:.2f}",
                        f"<= {TARGET_REDONE:g}", redone[name] <= TARGET_REDONE and ok_history))
        median = recovery[name].median if recovery[name].seconds else math.nan
        ratio = median / ray_median
        targets.append((f"{label}: death -> first resumed step, s (median; x Ray Train's median)", f"{median:.2f} ({ratio:.2f}x)",
                        f"<= {bar_s:g} s or <= {bar_ratio:g}x", median <= bar_s or ratio <= bar_ratio))
    twice = sum(1 for r in runs["ray"] if r.problems)
    if runs["ray"]:
        targets.append(("(3) Ray Train: epochs redone (median)", f"{redone['ray']:.2f}"
                        + (f"; an epoch trained twice in {twice} of {len(runs['ray'])} runs" if twice else ""), "info", True))
    for name, label, bar in (("executor", "(4) zoo_lite PyTorch, an executor JVM killed, the frame cached once", TARGET_EXECUTOR_S),
                             ("executor_standby", "(4s) the same, standby workers", TARGET_EXECUTOR_S),
                             ("executor_keras", "(4k) zoo_lite Keras, rank 0's executor JVM killed, the frame cached once",
                              TARGET_EXECUTOR_S),
                             ("executor_replicated", "(5) the same, the frame persisted with 2 replicas", TARGET_EXECUTOR_S),
                             ("silent", "(6) an executor and its node stalled (SIGSTOP), heartbeat_timeout_s=30", TARGET_SILENT_S),
                             ("silent_standby", "(6s) the same, standby workers", TARGET_SILENT_S)):
        if not runs[name]:
            continue
        executor_s = Timing([r.recovery_s for r in runs[name] if not math.isnan(r.recovery_s)])
        median = executor_s.median if executor_s.seconds else math.nan
        targets.append((f"{label}: death -> first resumed step, s (median), no epoch trained twice", f"{median:.2f}",
                        f"<= {bar:g} s", median <= bar and not problems[name]))
        grown = Timing([r.phases[GROWN] for r in runs[name] if GROWN in r.phases])
        targets.append((f"{label.split(',')[0]}: {GROWN}, s (median)", f"{grown.median:.2f}" if grown.seconds else "-",
                        "info", True))

    phase_names = {name: [phase for phase in next((list(r.phases) for r in runs[name] if r.phases), []) if phase != GROWN]
                   for name in ("torch", "torch_standby", "keras", "keras_standby", "ray", "executor", "executor_standby",
                                "executor_keras", "executor_replicated", "silent", "silent_standby")}

    def phase_cell(name: str, phase: str) -> str:
        return Timing([r.phases[phase] for r in runs.get(name, []) if phase in r.phases]).spread_cell(2)

    commit = zoo_lite_commit()
    dirty = subprocess.run(["git", "status", "--porcelain", "zoo_lite"], capture_output=True, text=True).stdout.split("\n")
    dirty = [line for line in dirty if line.strip()]
    cpu_after = os.times()
    from ray.train.v2._internal.constants import is_v2_enabled

    lines = [
        *heading("bench_recovery", command),
        f"- machine: {os.cpu_count()} cores; Python {platform.python_version()}, torch {torch.__version__}, keras "
        f"{keras.__version__}, pyspark {pyspark.__version__}, ray {ray.__version__} (Ray Train v2: {is_v2_enabled()}); "
        f"zoo_lite at commit {commit}" + (f" with {len(dirty)} uncommitted file(s) under zoo_lite/" if dirty else "")
        + ("; **zoo_lite's sources changed during the run**" if digest_before != digest_after else ""),
        "- cluster: `init_orca_context(cluster_mode=\"local-cluster\", num_nodes=2, cores=1, memory=\"1g\", "
        "init_ray_on_spark=True, conf={\"spark.storage.cachedPeersTtl\": \"1000\"})`: 2 Ray-on-Spark nodes of 1 CPU; "
        "every case 2 workers x 1 CPU",
        f"- data: {rows:,} rows x {FEATURES} float features + int label, a cached Spark DataFrame (Ray Train: "
        "`ray.data.from_pandas` of it, built once); model: MLP 64-128-128-10, SGD(0.05, momentum 0.9), "
        f"cross-entropy; global batch {args.batch}; {args.epochs} epochs per fit",
        f"- a worker is SIGKILLed from inside after the middle step of epoch {args.kill_epoch} (zoo_lite PyTorch and "
        "Ray Train: rank 1; zoo_lite Keras: rank 0, where Keras callbacks run)",
        f"- {repeat} round(s), cases interleaved; cells are median (best–worst); an epoch: of the uninterrupted zoo_lite "
        f"fits, Ray Train's on rank 0; {wall_s / 60:.1f} min; load average "
        f"before {load_values(load_before)}, after {load_values(load_after)}; "
        f"this process used {cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system:.0f} s of CPU",
        "", "### Targets", "", *targets_table(targets),
        "", "### Recovery", "",
        "| case | death -> first resumed step, s | epochs redone | fit, s (interrupted) | same fit uninterrupted, s | "
        "an epoch, s |", "|---|---:|---:|---:|---:|---:|",
        *[f"| {label} | {recovery[name].spread_cell(2)} | "
          f"{Timing([r.redone_epochs for r in runs[name] if not math.isnan(r.redone_epochs)]).spread_cell(2)} | "
          f"{fits[name].spread_cell(1)} | {fits[plain_of(name)].spread_cell(1) if plain_of(name) in fits else '-'} | "
          f"{Timing([s for r in runs.get(plain_of(name), runs[name]) for s in r.epoch_s]).spread_cell(2)} |"
          for name, label in (("torch", "(1) zoo_lite PyTorch, rank 1 killed"),
                              ("torch_standby", "(1s) the same, standby workers"),
                              ("keras", "(2) zoo_lite Keras, rank 0 killed"),
                              ("keras_standby", "(2s) the same, standby workers"),
                              ("ray", "(3) Ray Train TorchTrainer, rank 1 killed"),
                              ("executor", "(4) zoo_lite PyTorch, rank 1's executor JVM killed"),
                              ("executor_standby", "(4s) the same, standby workers"),
                              ("executor_keras", "(4k) zoo_lite Keras, rank 0's executor JVM killed"),
                              ("executor_replicated", "(5) the same, the frame persisted with 2 replicas"),
                              ("silent", "(6) rank 1's executor and its node stalled (SIGSTOP), replicated frame"),
                              ("silent_standby", "(6s) the same, standby workers"))
          if runs[name]],
    ]
    for name, label in (("torch", "(1) zoo_lite PyTorch"), ("torch_standby", "(1s) zoo_lite PyTorch, standby workers"),
                        ("keras", "(2) zoo_lite Keras"), ("keras_standby", "(2s) zoo_lite Keras, standby workers")):
        if phase_names[name]:
            lines += ["", f"### Where the recovery time goes: {label}", "",
                      "| step (each from the end of the previous) | s | the same step at the start of the uninterrupted fit, s |",
                      "|---|---:|---:|", *[f"| {phase} | {phase_cell(name, phase)} | {phase_cell(plain_of(name), phase)} |"
                                          for phase in phase_names[name]]]
    # a lost executor's recovery beside the same with a replicated frame: the steps differ only where
    # Spark recomputes the partitions the executor cached
    if phase_names["executor"] and phase_names["executor_replicated"]:
        lines += ["", "### Where a lost executor's recovery time goes: (4) the frame cached once, beside (5) replicated", "",
                  "| step (each from the end of the previous) | (4) s | (5) s |", "|---|---:|---:|",
                  *[f"| {phase} | {phase_cell('executor', phase)} | {phase_cell('executor_replicated', phase)} |"
                    for phase in phase_names["executor"]]]
    for name, label in (("executor_standby", "(4s) a lost executor, standby workers"),
                        ("executor_keras", "(4k) a lost executor under Keras"),
                        ("silent", "(6) a stalled executor and node"), ("silent_standby", "(6s) the same, standby workers")):
        if phase_names[name]:
            lines += ["", f"### Where the recovery time goes: {label}", "", "| step (each from the end of the previous) | s |",
                      "|---|---:|", *[f"| {phase} | {phase_cell(name, phase)} |" for phase in phase_names[name]]]
    lines += ["", "### The floor under a group start: 2 bare Ray actors of 1 CPU on the same cluster", "",
              "| step | s |", "|---|---:|",
              f"| asked for -> both running `__init__` (a new worker process each) | {bare['up'].spread_cell(2)} |",
              f"| `import torch` there | {bare['torch'].spread_cell(2)} |",
              f"| `import tensorflow` there | {bare['tensorflow'].spread_cell(2)} |"]
    if phase_names["ray"]:
        lines += ["", "### Where the recovery time goes: (3) Ray Train", "", "| step (each from the end of the previous) | s |",
                  "|---|---:|", *[f"| {phase} | {phase_cell('ray', phase)} |" for phase in phase_names["ray"]]]
    all_problems = [f"{name}: {p}" for name, group in problems.items() for p in group]
    if all_problems:   # for Ray Train, what it did (e.g. resumed from an older checkpoint), not a failure of this script
        lines += ["", "### Checks that failed", "", *[f"- {p}" for p in all_problems]]
    print("\n".join(lines + [""]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
