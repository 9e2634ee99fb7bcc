"""The ``processes`` fixture's bounded read: a helper's result line counts, its exit does not."""

import sys

import pytest

BLOCK = "import time; time.sleep(600)"  # stands for a process that never exits by itself


def test_the_result_line_comes_back_while_the_process_is_still_running(processes) -> None:  # type: ignore[no-untyped-def]
    # Stands for a listener whose DDS teardown hangs after it printed what it got.
    proc = processes.start([sys.executable, "-c", "print('noise'); print('GOT 7', flush=True); " + BLOCK])
    assert processes.wait_for_line(proc, "GOT ", timeout_s=60) == "GOT 7\n"
    assert proc.poll() is None  # still blocked; the fixture stops it


def test_a_process_that_exits_without_the_line_is_named_with_what_it_printed(processes) -> None:  # type: ignore[no-untyped-def]
    proc = processes.start([sys.executable, "-c", "print('no result here')"])
    expected = r"exited \(code 0\) without a line starting 'GOT '.*no result here"
    with pytest.raises(AssertionError, match=expected):
        processes.wait_for_line(proc, "GOT ", timeout_s=60)


def test_the_wait_is_bounded_and_says_what_it_waited_for(processes) -> None:  # type: ignore[no-untyped-def]
    proc = processes.start([sys.executable, "-c", "print('started', flush=True); " + BLOCK])
    with pytest.raises(AssertionError, match=r"waited 0.5 s for a line starting 'GOT '.*started"):
        processes.wait_for_line(proc, "GOT ", timeout_s=0.5)
