"""A fit survives lost workers; Estimators share the cluster. Real local-cluster Spark, real Ray,
worker processes really killed (SIGKILL from inside, at a chosen step)."""

from __future__ import annotations

import functools
import glob
import json
import logging
import os
import signal
import threading
import time
from typing import Callable, Iterator

import keras
import numpy as np
import pytest
import ray
import torch
from torch import nn

from tests.learn import faults, keras_faults
from tests.learn.shards import shards_with_sizes
from zoo_lite.errors import PortRangeExhaustedError, WorkerError, WorkerTimeoutError
from zoo_lite.learn.pytorch import Estimator as TorchEstimator
from zoo_lite.learn.tf2 import Estimator as KerasEstimator
from zoo_lite import waiting
from zoo_lite.learn import WorkerConfig
from zoo_lite.learn.base.worker_group import start_worker_group, wait_for_free_cpus

pytestmark = pytest.mark.timeout(600)

EPOCHS = 4


def regression_shards():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(96, 2)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0]], dtype=np.float32) + 0.3).astype(np.float32)
    return shards_with_sizes({"x": x, "y": y}, [20, 30, 46])


def torch_estimator(exchange: str, standby_workers: bool = False, heartbeat_timeout_s: float = 30.0,
                    **options) -> "TorchEstimator":
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    settings = WorkerConfig(shared_memory_exchange=exchange == "shared_memory", standby_workers=standby_workers,
                            heartbeat_timeout_s=heartbeat_timeout_s)
    return TorchEstimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                     loss=nn.MSELoss(), seed=5, worker_config=settings, **options)


def torch_weights(est) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in est.get_model().parameters()])


@pytest.fixture
def learn_log() -> Iterator[list[str]]:
    """The zoo_lite.learn log lines written during the test."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep(level=logging.INFO)
    logger = logging.getLogger("zoo_lite.learn")
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def no_exchange_file_left() -> Iterator[None]:
    """After every test, killed workers included: nothing left in /dev/shm."""
    yield
    assert not glob.glob("/dev/shm/zoo_lite-*")


#: (gradient exchange, global batch): seeded mini-batches on both exchanges, and full-batch descent
TORCH_CASES = [("shared_memory", 16), ("gloo", 16), ("shared_memory", 96)]


@pytest.fixture(scope="module")
def uninterrupted_torch(ray_local_cluster, tmp_path_factory) -> dict:
    """Weights after an uninterrupted seeded fit, per case; the cases of one exchange are fit by one
    Estimator, back to its untrained state between them."""
    weights = {}
    for exchange in dict.fromkeys(exchange for exchange, _ in TORCH_CASES):
        est = torch_estimator(exchange)
        untrained = est.save_checkpoint(os.path.join(tmp_path_factory.mktemp("untrained"), f"{exchange}.ckpt"))
        for batch_size in [batch for case_exchange, batch in TORCH_CASES if case_exchange == exchange]:
            est.load_checkpoint(untrained)
            est.fit(regression_shards(), epochs=EPOCHS, batch_size=batch_size)
            weights[exchange, batch_size] = torch_weights(est)
        est.shutdown()
    return weights


@pytest.mark.parametrize("exchange, batch_size", TORCH_CASES, ids=["mini-batch shared memory", "mini-batch gloo", "full batch"])
def test_a_torch_fit_resumes_after_a_killed_worker_and_ends_with_the_uninterrupted_weights(
        uninterrupted_torch, exchange, batch_size, tmp_path, learn_log) -> None:
    est = torch_estimator(exchange)
    killer = faults.TorchKiller(rank=1, epochs_done=2, step=1 if batch_size < 96 else 0, marker=str(tmp_path / "killed"))
    history = est.fit(regression_shards(), epochs=EPOCHS, batch_size=batch_size, callbacks=[killer])

    assert (tmp_path / "killed").exists(), "the worker was not killed: the test proves nothing"
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    assert all(h["num_samples"] == 96 for h in history)
    np.testing.assert_allclose(torch_weights(est), uninterrupted_torch[exchange, batch_size], rtol=0, atol=1e-5)
    assert any("worker 1 lost in epoch 3; resuming from epoch 2 on 2 workers" in line for line in learn_log), learn_log
    stats_lines = [line.split()[1] for line in learn_log if line.startswith("epoch epoch=")]
    assert stats_lines == [f"epoch={n}" for n in range(1, EPOCHS + 1)], learn_log   # each epoch's line once
    assert est._group.call(lambda runner: runner.exchange_kind()) == [exchange, exchange]
    est.shutdown()


def _process_ends(pid: int, timeout_s: float = 30.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def test_a_stopped_worker_is_found_by_its_silence_and_the_fit_ends_with_the_uninterrupted_weights(
        uninterrupted_torch, tmp_path, learn_log) -> None:
    exchange = "shared_memory"   # its peer waits on /dev/shm for the stopped worker (gloo's wait in its socket was tried too)
    est = torch_estimator(exchange, heartbeat_timeout_s=3)
    marker = tmp_path / "stopped"
    stopper = faults.TorchKiller(rank=1, epochs_done=2, marker=str(marker), sig=signal.SIGSTOP)
    try:
        started = time.monotonic()
        history = est.fit(regression_shards(), epochs=EPOCHS, batch_size=16, callbacks=[stopper])
        took_s = time.monotonic() - started
        stopped_pid = int(marker.read_text())
        assert [h["epoch"] for h in history] == [1, 2, 3, 4]
        np.testing.assert_allclose(torch_weights(est), uninterrupted_torch[exchange, 16], rtol=0, atol=1e-5)
        lost = [line for line in learn_log if "worker 1 lost in epoch 3" in line]
        assert lost and f"(pid {stopped_pid} on " in lost[0] and "heartbeat_timeout_s=3)" in lost[0], learn_log
        assert took_s < 3 + 60, f"the stop was not found by its silence: the fit took {took_s:.0f} s"
        assert _process_ends(stopped_pid), "the stopped worker was not ended with its group"
    finally:
        est.shutdown()
        if marker.exists() and not _process_ends(int(marker.read_text()), 0):
            os.kill(int(marker.read_text()), signal.SIGKILL)   # the test failed; leave nothing stopped


def _every_cpu_held_by(group, timeout_s: float = 60.0) -> bool:
    """Whether the group and its standby together hold every CPU of the cluster, once the
    standby's actors are created (the group starts it without waiting)."""
    deadline = time.monotonic() + timeout_s
    alive = lambda: ray._private.state.actors(actor_state_name="ALIVE")   # noqa: E731
    while any(actor._actor_id.hex() not in alive() for actor in group.standby.actors) and time.monotonic() < deadline:
        time.sleep(0.1)
    return ray.available_resources().get("CPU", 0.0) == 0.0 and group.holds_cpus != group.standby.holds_cpus


def test_standby_workers_take_over_after_each_lost_worker_and_the_fit_ends_with_the_uninterrupted_weights(
        uninterrupted_torch, tmp_path, learn_log) -> None:
    est = torch_estimator("shared_memory", standby_workers=True)
    killers = [faults.TorchKiller(rank=1, epochs_done=1, marker=str(tmp_path / "first")),
               faults.TorchKiller(rank=0, epochs_done=2, marker=str(tmp_path / "second"))]
    history = est.fit(regression_shards(), epochs=EPOCHS, batch_size=16, callbacks=killers)

    killed = {int((tmp_path / name).read_text()) for name in ("first", "second")}
    assert len(killed) == 2, "two workers should have been killed: the test proves nothing"
    assert [h["epoch"] for h in history] == [1, 2, 3, 4]
    np.testing.assert_allclose(torch_weights(est), uninterrupted_torch["shared_memory", 16], rtol=0, atol=1e-5)
    assert sum(" on 2 standby workers (failure" in line for line in learn_log) == 2, learn_log
    assert not killed & set(est._group.call(lambda runner: os.getpid()))
    # the second standby held the CPUs while the first one's processes ran the workers; now the
    # third holds none again: in Ray's books one set at a time holds each node's CPUs
    assert est._group.holds_cpus and _every_cpu_held_by(est._group)
    est.shutdown()
    wait_for_free_cpus(timeout_s=10)   # nothing of the group or its standby holds a CPU


def test_a_source_that_cannot_be_read_again_is_named_in_the_error(ray_local_cluster, tmp_path) -> None:
    from zoo_lite import OrcaContext

    spark = OrcaContext.get_spark_session()
    shards = regression_shards().collect()
    x = np.concatenate([s["x"] for s in shards])
    y = np.concatenate([s["y"] for s in shards])
    folder = str(tmp_path / "rows.parquet")
    spark.createDataFrame([([float(v) for v in row], float(t)) for row, (t,) in zip(x, y)], ["x", "y"]).write.parquet(folder)
    frame = spark.read.parquet(folder)
    est = torch_estimator("shared_memory")
    killer = faults.TorchKiller(rank=1, epochs_done=1, step=0, marker=str(tmp_path / "killed"), remove=folder)
    with pytest.raises(WorkerError, match=r"fit could not resume because its data could not be read again from the source \("):
        est.fit(frame, epochs=3, batch_size=16, feature_cols=["x"], label_cols=["y"], callbacks=[killer])
    assert (tmp_path / "killed").exists()
    est.shutdown()


def test_a_fit_gives_up_after_max_failures_with_every_attempts_cause(ray_local_cluster) -> None:
    est = torch_estimator("shared_memory", max_failures=1)
    killer = faults.TorchKiller(rank=0, epochs_done=0, step=0)   # no marker: dies on every attempt
    with pytest.raises(WorkerError, match=r"gave up after 2 lost worker\(s\), more than max_failures=1") as caught:
        est.fit(regression_shards(), epochs=2, batch_size=16, callbacks=[killer])
    assert caught.value.lost and str(caught.value).count("the worker process died during train_epoch") == 2
    # the Estimator still works afterwards
    assert est.fit(regression_shards(), epochs=1, batch_size=16)[0]["epoch"] == 1
    est.shutdown()


def test_max_failures_zero_turns_recovery_off(ray_local_cluster, tmp_path) -> None:
    est = torch_estimator("shared_memory", max_failures=0)
    killer = faults.TorchKiller(rank=1, epochs_done=0, step=0, marker=str(tmp_path / "killed"))
    with pytest.raises(WorkerError, match="max_failures=0"):
        est.fit(regression_shards(), epochs=2, batch_size=16, callbacks=[killer])
    est.shutdown()


def keras_stopper() -> "keras.callbacks.Callback":
    """Never sees a gain after the first epoch, so it stops after epoch 3 unless its count is lost."""
    return keras.callbacks.EarlyStopping(monitor="loss", patience=2, min_delta=1e9)


@pytest.fixture(scope="module")
def uninterrupted_keras(ray_local_cluster) -> Callable[[str], tuple[list[float], list[np.ndarray]]]:
    """The losses and weights of an uninterrupted seeded Keras fit (3 epochs: ``keras_stopper``
    ends it there) per gradient exchange, fit on first use and kept for the module's tests."""
    kept: dict[str, tuple[list[float], list[np.ndarray]]] = {}

    def uninterrupted(exchange: str) -> tuple[list[float], list[np.ndarray]]:
        if exchange not in kept:
            settings = WorkerConfig(shared_memory_exchange=exchange == "shared_memory")
            reference = KerasEstimator.from_keras(model_creator=keras_faults.momentum_linear_model, worker_config=settings, seed=5)
            expected = reference.fit(regression_shards(), epochs=EPOCHS, batch_size=16, verbose=0, callbacks=[keras_stopper()])
            assert len(expected["loss"]) == 3
            kept[exchange] = expected["loss"], [w.copy() for w in reference.get_model().get_weights()]
            reference.shutdown()
        return kept[exchange]

    return uninterrupted


@pytest.mark.parametrize("exchange", ["shared_memory", "collective"])
def test_a_keras_fit_resumes_after_a_killed_worker_and_ends_with_the_uninterrupted_weights(
        uninterrupted_keras, exchange, tmp_path, learn_log) -> None:
    settings = WorkerConfig(shared_memory_exchange=exchange == "shared_memory")
    expected_losses, expected_weights = uninterrupted_keras(exchange)
    est = KerasEstimator.from_keras(model_creator=keras_faults.momentum_linear_model, worker_config=settings, seed=5)
    killer = keras_faults.KerasKiller(epoch=2, step=1, marker=str(tmp_path / "killed"))
    csv_path = tmp_path / "log.csv"
    history = est.fit(regression_shards(), epochs=EPOCHS, batch_size=16, verbose=0,
                      callbacks=[killer, keras.callbacks.CSVLogger(str(csv_path)), keras_stopper()])

    assert (tmp_path / "killed").exists(), "the worker was not killed: the test proves nothing"
    assert len(history["loss"]) == 3, "EarlyStopping's count did not survive the resume"
    np.testing.assert_allclose(history["loss"], expected_losses, rtol=1e-5)
    with open(csv_path) as file:   # the CSV keeps the epochs before the loss
        assert [row.split(",")[0] for row in file.read().splitlines()] == ["epoch", "0", "1", "2"]
    for got, want in zip(est.get_model().get_weights(), expected_weights):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert any("worker 0 lost in epoch 3; resuming from epoch 2 on 2 workers" in line for line in learn_log), learn_log
    est.shutdown()


def test_a_keras_fit_resumes_on_standby_workers(uninterrupted_keras, tmp_path, learn_log) -> None:
    settings = WorkerConfig(standby_workers=True)   # on one host: the shared-memory exchange, as by default
    expected_losses, expected_weights = uninterrupted_keras("shared_memory")

    est = KerasEstimator.from_keras(model_creator=keras_faults.momentum_linear_model, worker_config=settings, seed=5)
    killer = keras_faults.KerasKiller(epoch=1, step=1, marker=str(tmp_path / "killed"))
    history = est.fit(regression_shards(), epochs=3, batch_size=16, verbose=0, callbacks=[killer])

    assert (tmp_path / "killed").exists(), "the worker was not killed: the test proves nothing"
    np.testing.assert_allclose(history["loss"], expected_losses, rtol=1e-5)
    for got, want in zip(est.get_model().get_weights(), expected_weights):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert any("worker 0 lost in epoch 2; resuming from epoch 1 on 2 standby workers" in line for line in learn_log), learn_log
    assert not est._group.holds_cpus and _every_cpu_held_by(est._group)
    est.shutdown()


def test_two_live_estimators_take_turns_without_waiting_for_the_start_timeout(ray_local_cluster) -> None:
    first = torch_estimator("shared_memory", start_timeout_s=60)
    first.fit(regression_shards(), epochs=1, batch_size=16)
    before = first.evaluate(regression_shards(), batch_size=32)

    second = KerasEstimator.from_keras(model_creator=keras_faults.momentum_linear_model, seed=5, start_timeout_s=60)
    assert len(second.fit(regression_shards(), epochs=1, batch_size=16, verbose=0)["loss"]) == 1
    assert first._group is None   # it gave its CPUs back...
    assert first.evaluate(regression_shards(), batch_size=32) == pytest.approx(before)   # ...and restarts as it was
    assert second._group is None
    first.shutdown()
    second.shutdown()


def test_cpus_held_outside_zoo_lite_give_a_clear_error_within_seconds(ray_local_cluster) -> None:
    @ray.remote(num_cpus=1)
    class Holder:
        def ping(self) -> int:
            return 1

    holder = Holder.remote()
    ray.get(holder.ping.remote(), timeout=60)
    est = torch_estimator("shared_memory", start_timeout_s=120)
    started = time.monotonic()
    try:
        with pytest.raises(WorkerTimeoutError, match=r"needs every CPU of the Ray-on-Spark nodes, but node\(s\) \['zoo-lite-[^]]+'\] had only 0 of their 1 "
                                                    r"CPUs free after 10 s: they are held by Ray actors or tasks outside zoo_lite"):
            est.fit(regression_shards(), epochs=1, batch_size=16)
        assert time.monotonic() - started < 60, "the error should come long before start_timeout_s"
    finally:
        ray.kill(holder)
    assert est.fit(regression_shards(), epochs=1, batch_size=16)[0]["epoch"] == 1
    est.shutdown()


def test_cpus_held_by_zoo_lites_own_workers_are_not_blamed_on_the_user(ray_local_cluster, tmp_path) -> None:
    # a group nobody ended (as a lost group's workers, while Ray still ends them) holds every CPU
    stale = start_worker_group(functools.partial(faults.PortTakenRunner, str(tmp_path / "attempts"), 0), start_timeout_s=60)
    try:
        with pytest.raises(WorkerTimeoutError, match=r"had only 0 of their 2 CPUs free after 1 s: they are held by 2 training "
                                                     r"worker\(s\) of an earlier zoo_lite worker group") as raised:
            wait_for_free_cpus(timeout_s=1)
        assert "outside zoo_lite" not in str(raised.value)
    finally:
        stale.kill()
    wait_for_free_cpus(timeout_s=10)


# the SIGINT can land in a finaliser (py4j's weakref callbacks), where Python only prints the interrupt; the fit
# must end all the same (see test_a_ctrl_c_that_lands_in_a_finaliser_still_ends_the_fit)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_sigint_during_fit_stops_it_and_the_next_fit_works(ray_local_cluster) -> None:
    est = torch_estimator("shared_memory")
    est.fit(regression_shards(), epochs=1, batch_size=16)   # group up, so the interrupt lands in an epoch
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(regression_shards(), epochs=10_000, batch_size=16)
    finally:
        timer.cancel()
    history = est.fit(regression_shards(), epochs=2, batch_size=16)
    assert [h["epoch"] for h in history] == [h["epoch"] for h in history] and len(history) == 2
    est.shutdown()


@pytest.mark.parametrize("when", ["while sending", "after sending"])
def test_ctrl_c_while_or_after_sending_the_calls_ends_the_workers(ray_local_cluster, tmp_path, monkeypatch, when) -> None:
    """The interrupt is made to land as the calls are sent, or right after, before the wait: the
    windows in which a Ctrl-C once left a worker training while its peer had no call (it waited
    for the peer's gradients, and the next fit waited 600 s for it). Whether Ray queued a call
    whose ``.remote()`` was interrupted is unknown, so the group is ended either way."""
    import contextlib

    from zoo_lite.learn.base import worker_group

    sent_by_value = worker_group.user_code_by_value

    @contextlib.contextmanager
    def interrupted() -> Iterator[None]:
        if when == "while sending":
            raise KeyboardInterrupt
        with sent_by_value():
            yield
        raise KeyboardInterrupt

    group = start_worker_group(functools.partial(faults.PortTakenRunner, str(tmp_path / "attempts"), 0), start_timeout_s=60)
    actors = list(group.actors)
    monkeypatch.setattr(worker_group, "user_code_by_value", interrupted)
    with pytest.raises(KeyboardInterrupt):
        group.call(lambda runner: time.sleep(120))
    monkeypatch.undo()
    assert group.actors == []
    assert all(_ends_within(actor, 30.0) for actor in actors)   # ended, not still sleeping


def _ends_within(actor, timeout_s: float) -> bool:
    """Whether ``actor`` stops answering within ``timeout_s`` (``ray.kill`` takes effect
    asynchronously: an idle actor may still answer a call made right after it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.address.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return True
    return False


def test_a_rendezvous_on_a_port_taken_meanwhile_starts_the_workers_once_more(ray_local_cluster, tmp_path, learn_log) -> None:
    attempts = tmp_path / "attempts"
    group = start_worker_group(functools.partial(faults.PortTakenRunner, str(attempts), 1), start_timeout_s=60)
    try:
        assert group.call(lambda runner: runner.rank) == [0, 1]
    finally:
        group.shutdown()
    assert len(attempts.read_text().splitlines()) == 2
    assert any("rendezvous port was taken in the meantime" in line for line in learn_log), learn_log

    attempts.unlink()
    with pytest.raises(WorkerError, match="connect failed: OSError: .*Address already in use"):
        start_worker_group(functools.partial(faults.PortTakenRunner, str(attempts), 2), start_timeout_s=60)
    assert len(attempts.read_text().splitlines()) == 2   # once more, not for ever


def linear_torch_estimator(settings: WorkerConfig) -> "TorchEstimator":
    return TorchEstimator.from_torch(model=lambda config: nn.Linear(2, 1),
                                     optimizer=lambda model, config: torch.optim.SGD(model.parameters(), lr=0.05),
                                     loss=nn.MSELoss(), worker_config=settings)


def _held_port_range(size: int) -> tuple[tuple[int, int], list]:
    """A range of ``size`` consecutive ports that are all free now, and sockets holding them
    (bound on every address, so a worker's bind on its node's address fails)."""
    import random
    import socket

    for _ in range(50):
        first = random.randint(42000, 44000 - size)
        held = []
        try:
            for port in range(first, first + size):
                held.append(socket.create_server(("0.0.0.0", port)))
            return (first, first + size - 1), held
        except OSError:
            for sock in held:
                sock.close()
    raise AssertionError("found no free range of ports to test with")


@pytest.mark.parametrize("framework", ["torch", "keras"])
def test_the_rendezvous_ports_come_from_the_range_the_user_opened(ray_local_cluster, framework) -> None:
    # one port per worker is left free: the two workers share a host, so each must hold the port it
    # picked until its framework binds it (before, both could pick the same one: seen in CI)
    ports, held = _held_port_range(3)
    for sock in held[1:]:   # the first stays taken: it must be skipped
        sock.close()
    try:
        settings = WorkerConfig(rendezvous_ports=ports, shared_memory_exchange=False)
        if framework == "torch":
            est = linear_torch_estimator(settings)
            used = [est._workers().call_one(0, lambda runner: int(runner._store.port))]
        else:
            est = KerasEstimator.from_keras(model_creator=keras_faults.momentum_linear_model, worker_config=settings)
            used = [int(address.rsplit(":", 1)[1]) for address in
                    est._workers().call_one(0, lambda runner: json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"])]
        est.fit(regression_shards(), epochs=1, batch_size=16)   # the workers reach one another on those ports
        assert all(ports[0] < port <= ports[1] for port in used), (used, ports)
        assert len(set(used)) == len(used), used
        est.shutdown()
    finally:
        held[0].close()


def test_a_rendezvous_range_with_every_port_taken_fails_at_once_naming_it(ray_local_cluster) -> None:
    ports, held = _held_port_range(2)
    try:
        est = linear_torch_estimator(WorkerConfig(rendezvous_ports=ports))
        with pytest.raises(PortRangeExhaustedError, match=rf"no free port on \S+ in WorkerConfig\("
                                              rf"rendezvous_ports=\({ports[0]}, {ports[1]}\)\): all 2 are taken"):
            est.fit(regression_shards(), epochs=1, batch_size=16)
        est.shutdown()
    finally:
        for sock in held:
            sock.close()


def test_a_slow_worker_start_says_what_it_waits_for(ray_local_cluster, monkeypatch, caplog) -> None:
    monkeypatch.setattr(waiting, "ANNOUNCE_AFTER_S", 0.5)
    caplog.set_level(logging.INFO, logger="zoo_lite.waits")
    group = start_worker_group(functools.partial(faults.SlowStartRunner, 2.0), start_timeout_s=60)
    group.shutdown()
    notices = [record.getMessage() for record in caplog.records if record.name == "zoo_lite.waits"]
    assert any(notice.startswith("waiting for 2 worker(s) to finish 'start': ") and notice.endswith(" s so far, at most 60 s")
               for notice in notices), notices
