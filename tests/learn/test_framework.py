"""The framework seam: every runner follows the one Runner protocol, every Framework is complete,
and WorkerConfig holds zoo_lite's own settings (the user's config dict is the user's)."""

from __future__ import annotations

import dataclasses
import inspect
import warnings

import pytest

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn import WorkerConfig
from zoo_lite.learn.base.framework import Framework
from zoo_lite.learn.base.runner import Runner, RunnerBase
from zoo_lite.learn.pytorch.estimator import TORCH
from zoo_lite.learn.tf2.estimator import KERAS

PROTOCOL_METHODS = sorted(name for name, value in vars(Runner).items() if inspect.isfunction(value) and not name.startswith("_"))


def _parameters(function) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("framework", [TORCH, KERAS], ids=lambda f: f.name)
def test_each_runner_has_every_protocol_method_with_the_protocol_signature(framework: Framework) -> None:
    runner_class = framework.runner_factory
    assert issubclass(runner_class, RunnerBase)
    for name in PROTOCOL_METHODS:
        implemented = inspect.unwrap(getattr(runner_class, name))
        assert _parameters(implemented) == _parameters(getattr(Runner, name)), f"{runner_class.__name__}.{name}"


@pytest.mark.parametrize("framework", [TORCH, KERAS], ids=lambda f: f.name)
def test_each_framework_fills_every_field_with_a_picklable_module_level_callable(framework: Framework) -> None:
    import pickle

    for field in dataclasses.fields(Framework):
        value = getattr(framework, field.name)
        assert value is not None, field.name
    assert pickle.loads(pickle.dumps(framework)) == framework   # shipped to the workers with the runner factory


def test_the_protocol_covers_every_call_the_estimator_makes() -> None:
    assert PROTOCOL_METHODS == sorted([
        "begin_fit", "callback_states", "close", "connect", "end_fit", "exchange_kind", "first_step_at", "get_state",
        "load_dataset", "load_rows", "load_shards", "relayed_files", "set_state", "train_epoch", "validate",
    ])


def test_worker_config_defaults_and_validation() -> None:
    assert WorkerConfig() == WorkerConfig(collective_timeout_s=1800.0, shared_memory_exchange=True, gradient_chunk_rows=1024)
    with pytest.raises(InvalidArgumentError, match=r"collective_timeout_s=0\) must be a positive number of seconds"):
        WorkerConfig(collective_timeout_s=0)
    with pytest.raises(InvalidArgumentError, match=r"shared_memory_exchange='no'\) must be True or False"):
        WorkerConfig(shared_memory_exchange="no")
    with pytest.raises(InvalidArgumentError, match=r"gradient_chunk_rows=1.5\) must be an int >= 0"):
        WorkerConfig(gradient_chunk_rows=1.5)
    with pytest.raises(InvalidArgumentError, match=r"heartbeat_timeout_s=1\) must be a number of seconds of at least 3"):
        WorkerConfig(heartbeat_timeout_s=1)
    with pytest.raises(InvalidArgumentError, match=r"heartbeat_timeout_s=nan\) must be"):
        WorkerConfig(heartbeat_timeout_s=float("nan"))
    for ports in [(42000,), (42010, 42000), (0, 10), (42000, 70000), "42000-42010", (42000.0, 42010)]:
        with pytest.raises(InvalidArgumentError, match=r"rendezvous_ports=.*must be \(first, last\): two port numbers"):
            WorkerConfig(rendezvous_ports=ports)
    assert WorkerConfig(rendezvous_ports=[42000, 42000]).rendezvous_ports == (42000, 42000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        WorkerConfig().collective_timeout_s = 5


def test_the_old_config_keys_still_work_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"\['shared_memory_exchange'\] in config are deprecated.*"
                                                r"worker_config=WorkerConfig\(shared_memory_exchange=False\)"):
        resolved = WorkerConfig.resolve(None, {"shared_memory_exchange": 0, "lr": 0.1})
    assert resolved == WorkerConfig(shared_memory_exchange=False)


def test_a_users_own_config_gets_no_warning_and_both_forms_at_once_are_an_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert WorkerConfig.resolve(WorkerConfig(gradient_chunk_rows=0), {"lr": 0.1}) == WorkerConfig(gradient_chunk_rows=0)
    with pytest.raises(InvalidArgumentError, match=r"config has zoo_lite's settings \['collective_timeout_s'\] and "
                                                   r"worker_config is given too"):
        WorkerConfig.resolve(WorkerConfig(), {"collective_timeout_s": 5})
    with pytest.raises(InvalidArgumentError, match=r"worker_config=\{'collective_timeout_s': 5\} must be a zoo_lite WorkerConfig"):
        WorkerConfig.resolve({"collective_timeout_s": 5}, None)


def test_from_torch_and_from_keras_take_the_old_config_keys_into_their_worker_config() -> None:
    import keras
    import torch

    from zoo_lite.learn.pytorch import Estimator as TorchEstimator
    from zoo_lite.learn.tf2 import Estimator as KerasEstimator

    net = torch.nn.Linear(2, 1)
    with pytest.warns(DeprecationWarning, match="collective_timeout_s"):
        torch_est = TorchEstimator.from_torch(model=net, loss=torch.nn.MSELoss(), config={"collective_timeout_s": 30, "lr": 1})
    assert torch_est.spec.worker_config.collective_timeout_s == 30 and torch_est.spec.config["lr"] == 1
    model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    keras_est = KerasEstimator.from_keras(model=model, worker_config=WorkerConfig(gradient_chunk_rows=0))
    assert keras_est.spec.worker_config.gradient_chunk_rows == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")   # the swallowed interrupt, by design
def test_a_ctrl_c_that_lands_in_a_finaliser_still_ends_the_fit() -> None:
    import os
    import signal
    import weakref

    from zoo_lite.learn.base.estimator import _Interrupts

    class Referent:
        pass

    with _Interrupts() as interrupts:
        referent = Referent()
        # Python runs a weakref callback when its referent dies; a KeyboardInterrupt raised in it is only printed
        finaliser = weakref.ref(referent, lambda ref: os.kill(os.getpid(), signal.SIGINT))
        del referent
        assert finaliser() is None and interrupts.seen
        with pytest.raises(KeyboardInterrupt, match="fit interrupted"):
            interrupts.check()
    assert signal.getsignal(signal.SIGINT) is not interrupts._note   # the previous handler is back
