"""Benchmark: the frameworks' own floor under bench_start's figures, without zoo_lite.

Two processes that have already imported the framework (as warm workers have) wait for a signal;
from the signal each does only what the framework needs before and during its first data-parallel
step on data already in memory, and rank 0 notes when its first step ends. The figure is the time
from the signal to that end:

- Keras: ``TF_CONFIG`` for 2 workers, ``MultiWorkerMirroredStrategy`` (its gRPC server and
  rendezvous), the MLP of ``_mlp_data.py`` built and compiled, and one
  compiled step whose gradients the strategy's all-reduce sums (Keras 3's ``fit`` fails under the
  strategy, so this loop is the least that works): the step's trace and TensorFlow's first
  collectives;
- torch: ``init_process_group("gloo")`` over TCP, the MLP of ``bench_torch_fit.py``, one
  agreement, and one step whose gradients one all-reduce sums in a flat buffer (as zoo_lite
  does). The processes have imported ``torch._dynamo``, as zoo_lite's warm workers do: the first
  optimizer (or ``DistributedDataParallel``) built in a process imports it, 1.1-1.5 s here.

zoo_lite's (rk), (sk) and (rt) of ``bench_start.py`` do this and more (loading the rows, placing
the workers, sending the model); their targets cannot be lower than these floors.

Run from the repository root::

    .venv/bin/python benchmarks/bench_framework_floor.py            # 5 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from _harness import Timing, command_line, heading, load_line, log

HERE = Path(__file__).resolve().parent
WORKERS = 2
BATCH = 32

KERAS_WORKER = r"""
import json, os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np
import tensorflow as tf
import keras
sys.path.insert(0, sys.argv[3])
from _mlp_data import FEATURES, CLASSES, make_keras_mlp
rank = int(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()   # the signal
started = time.time()
os.environ["TF_CONFIG"] = sys.argv[2]
strategy = tf.distribute.MultiWorkerMirroredStrategy()
model = make_keras_mlp()   # plain variables: the gradients are summed explicitly, as zoo_lite's runner does
model.optimizer.build(model.trainable_variables)
rng = np.random.default_rng(rank)
x = tf.constant(rng.normal(size=(%(batch)d, FEATURES)).astype("float32"))
y = tf.constant(rng.integers(0, CLASSES, size=%(batch)d))
variables = model.trainable_variables

@tf.function
def step(features, labels):
    # Keras 3's fit fails under the strategy (keras-team/keras#20585): the least that works is
    # this loop, the gradients summed by the strategy's all-reduce and applied by the optimizer
    with tf.GradientTape() as tape:
        loss = model.loss(labels, model(features, training=True)) / %(workers)d
    flat = tf.concat([tf.reshape(g, [-1]) for g in tape.gradient(loss, variables)], 0)
    summed = strategy.run(lambda v: tf.distribute.get_replica_context().all_reduce("sum", tf.identity(v)), args=(flat,))
    summed = strategy.experimental_local_results(summed)[0]
    parts = tf.split(summed, [int(np.prod(v.shape)) for v in variables])
    model.optimizer.apply_gradients([(tf.reshape(g, v.shape), v) for g, v in zip(parts, variables)])

step(x, y)
ended = [time.time()]
print(json.dumps({"rank": rank, "started": started, "first_step_end": ended[0]}), flush=True)
"""

TORCH_WORKER = r"""
import json, os, sys, time
import torch
import torch._dynamo   # the first optimizer built imports it (1.1 s); warm workers import it ahead, too
import torch.distributed as dist
from torch import nn
sys.path.insert(0, sys.argv[3])
from bench_torch_fit import make_model, make_optimizer
from _mlp_data import FEATURES, CLASSES
rank = int(sys.argv[1])
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()   # the signal
started = time.time()
master, port = sys.argv[2].rsplit(":", 1)
dist.init_process_group("gloo", init_method=f"tcp://{master}:{port}", rank=rank, world_size=%(workers)d)
model = make_model()
dist.broadcast_object_list([0])   # the workers agree before the first step, as DistributedDataParallel's broadcast does
optimizer = make_optimizer(model.parameters())
generator = torch.Generator().manual_seed(rank)
x = torch.randn(%(batch)d, FEATURES, generator=generator)
y = torch.randint(0, CLASSES, (%(batch)d,), generator=generator)
optimizer.zero_grad()
(nn.CrossEntropyLoss()(model(x), y) / %(workers)d).backward()
flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
dist.all_reduce(flat)   # the gradients summed in one buffer
offset = 0
for p in model.parameters():
    p.grad.copy_(flat[offset:offset + p.numel()].view_as(p)); offset += p.numel()
optimizer.step()
ended = time.time()
print(json.dumps({"rank": rank, "started": started, "first_step_end": ended}), flush=True)
dist.destroy_process_group()
"""


def free_ports(count: int) -> list[int]:
    """Ports free now on loopback (a benchmark's own processes bind them at once after)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for handle in sockets:
            handle.bind(("127.0.0.1", 0))
        return [handle.getsockname()[1] for handle in sockets]
    finally:
        for handle in sockets:
            handle.close()


def worker_arguments(framework: str) -> list[str]:
    """Each worker's second argument: its cluster description."""
    if framework == "torch":
        address = f"127.0.0.1:{free_ports(1)[0]}"
        return [address] * WORKERS
    workers = [f"127.0.0.1:{port}" for port in free_ports(WORKERS)]
    return [json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}})
            for rank in range(WORKERS)]


def signal_to_first_step(framework: str, timeout_s: float = 300.0) -> float:
    """Start the workers, wait for their imports, signal them; seconds to rank 0's first step end."""
    source = (KERAS_WORKER if framework == "keras" else TORCH_WORKER) % {"batch": BATCH, "workers": WORKERS}
    processes = [subprocess.Popen([sys.executable, "-c", source, str(rank), argument, str(HERE)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                 for rank, argument in enumerate(worker_arguments(framework))]
    try:
        for process in processes:
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a {framework} worker did not start")
        signalled = time.time()
        for process in processes:
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [json.loads(process.communicate(timeout=timeout_s)[0].strip().splitlines()[-1]) for process in processes]
        rank0 = next(result for result in results if result["rank"] == 0)
        return rank0["first_step_end"] - signalled
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    command = command_line("bench_framework_floor.py", argv)
    cases = {"keras": Timing(), "torch": Timing()}
    load_before = os.getloadavg()
    for round_index in range(args.repeat):
        for framework in (("keras", "torch") if round_index % 2 == 0 else ("torch", "keras")):
            seconds = signal_to_first_step(framework)
            cases[framework].add([seconds])
            log(f"round {round_index + 1}: {framework} {seconds:.2f} s")
    load_after = os.getloadavg()
    print("\n".join([
        *heading("bench_framework_floor", command),
        f"- {WORKERS} processes with the framework imported; from a signal to the end of rank 0's first step, "
        f"batch {BATCH}, data in memory; {args.repeat} round(s), medians (range)",
        load_line(load_before, load_after),
        "",
        "| framework: what the first step needs | s | bench_start target above it |",
        "|---|---:|---|",
        f"| Keras: MultiWorkerMirroredStrategy, build and compile, one all-reduced step | "
        f"{cases['keras'].spread_cell()} | (rk) <= 1.5 s, (sk) <= 2 s |",
        f"| torch: gloo process group, one agreement, one all-reduced step | {cases['torch'].spread_cell()} | (rt) <= 0.5 s |",
        "",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
