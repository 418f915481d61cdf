"""Long waits say what they wait for, short ones say nothing, and the notice ends with the wait."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from zoo_lite.waiting import announced_wait


def _notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "zoo_lite.waits"]


def test_a_short_wait_says_nothing(caplog) -> None:
    caplog.set_level(logging.INFO, logger="zoo_lite.waits")
    with announced_wait("nothing much", bound_s=10, after_s=1.0):
        pass
    assert _notices(caplog) == []


def test_a_long_wait_says_what_it_waits_for_and_its_bound_then_repeats_it(caplog) -> None:
    caplog.set_level(logging.INFO, logger="zoo_lite.waits")
    with announced_wait("3 Spark executors to register", bound_s=120, after_s=0.1, every_s=0.2):
        time.sleep(0.65)
    notices = _notices(caplog)
    assert len(notices) == 3, notices   # at 0.1, 0.3 and 0.5 s
    assert notices[0] == "waiting for 3 Spark executors to register: 0 s so far, at most 120 s"


def test_the_notice_ends_with_the_wait_also_on_an_error(caplog) -> None:
    caplog.set_level(logging.INFO, logger="zoo_lite.waits")
    with pytest.raises(TimeoutError):
        with announced_wait("a reply", bound_s=1, after_s=0.05, every_s=0.05):
            time.sleep(0.12)
            raise TimeoutError("no reply")
    said = len(_notices(caplog))
    time.sleep(0.2)
    assert said >= 1 and len(_notices(caplog)) == said
    assert not [thread for thread in threading.enumerate() if thread.name == "zoo_lite-wait-notice"]
