"""The driver's progress display (pure: no cluster)."""

from __future__ import annotations

import io
import logging

from zoo_lite.learn.base.progress import ProgressReporter


def bar_reporter(snapshots: list[dict], total_steps: int) -> tuple[ProgressReporter, io.StringIO]:
    """A reporter with a tqdm bar that writes into a buffer; ``snapshots`` are polled in order."""
    reporter = ProgressReporter(True, total_steps, lambda: snapshots.pop(0) if snapshots else {})
    out = io.StringIO()
    reporter.bar.fp = out
    return reporter, out


def test_a_stale_snapshot_never_moves_the_bar_back() -> None:
    # rank 0 published step 26 during epoch 2; epoch 2 ended at step 32; then the old snapshot came
    reporter, _ = bar_reporter([{"step": 26, "loss": 0.7}, {"step": 26, "loss": 0.7}, {"step": 40, "loss": 0.6}], 48)
    reporter.poll()
    assert reporter.bar.n == 26
    reporter.epoch_done({"epoch": 2, "loss": 0.7}, steps_done=32)
    reporter.poll()
    assert reporter.bar.n == 32
    reporter.poll()
    assert reporter.bar.n == 40
    reporter.close()


def test_each_finished_epoch_is_one_summary_line_above_the_bar() -> None:
    reporter, out = bar_reporter([], 4)
    reporter.epoch_done({"epoch": 1, "loss": 0.51234, "val_accuracy": 0.9}, steps_done=2)
    reporter.epoch_done({"epoch": 2, "loss": 0.41234, "val_accuracy": 0.95}, steps_done=4)
    assert "loss=0.4123" in str(reporter.bar)   # the epoch's loss, in place of rank 0's running one
    reporter.close()
    lines = [line for line in out.getvalue().replace("\r", "\n").splitlines() if line.startswith("epoch ")]
    assert lines == ["epoch epoch=1 loss=0.5123 val_accuracy=0.9", "epoch epoch=2 loss=0.4123 val_accuracy=0.95"]


def test_without_a_bar_each_epoch_is_a_log_line_unless_quiet(caplog) -> None:
    logger = logging.getLogger("zoo_lite.learn.test_progress")
    with caplog.at_level(logging.INFO, logger=logger.name):
        ProgressReporter(False, 2, dict, logger).epoch_done({"epoch": 1, "loss": 0.5}, steps_done=1)
        ProgressReporter(False, 2, dict, logger, quiet=True).epoch_done({"epoch": 1, "loss": 0.25}, steps_done=1)
    assert [record.getMessage() for record in caplog.records] == ["epoch epoch=1 loss=0.5"]
