"""The operator's prompt waits a bounded time, on a real pipe as on a terminal."""

from __future__ import annotations

import io
import os

import pytest
from r2s2r_eval.episodes.operator_prompt import OperatorPrompt, OperatorTimeout


def test_answers_are_read_in_order_from_a_pipe_even_when_buffered_together() -> None:
    r, w = os.pipe()
    os.write(w, b"\ny\nslipped\n")  # three answers arrive in one write: all in the stream's buffer at once
    with os.fdopen(r, encoding="utf-8") as stdin:
        prompt = OperatorPrompt(stdin, timeout_s=60.0)
        answers = [prompt.ask("reset? "), prompt.ask("success? "), prompt.ask("reason? ")]
        assert answers == ["", "y", "slipped"]
        os.close(w)
        with pytest.raises(OperatorTimeout, match="stdin closed"):
            prompt.ask("again? ")
        with pytest.raises(OperatorTimeout, match="stdin closed"):
            prompt.ask("and again? ")


def test_an_absent_operator_times_out_naming_the_question(capsys: pytest.CaptureFixture) -> None:
    r, w = os.pipe()
    with os.fdopen(r, encoding="utf-8") as stdin:
        prompt = OperatorPrompt(stdin, timeout_s=0.2)
        expected = r"no answer within 0.2 s \(operator_timeout_s\).*success"
        with pytest.raises(OperatorTimeout, match=expected):
            prompt.ask("[evaluator] episode 3 (seed 3): success? [y/n] ")
        assert "success? [y/n]" in capsys.readouterr().out
        os.write(w, b"n\n")  # a late answer is not lost: it answers the next question
        assert prompt.ask("success? ") == "n"
        os.close(w)  # end the reader thread before the stream closes (it holds the stream's lock)
        with pytest.raises(OperatorTimeout, match="stdin closed"):
            prompt.ask("success? ")


def test_in_memory_streams_work_too() -> None:
    prompt = OperatorPrompt(io.StringIO("y\n"), timeout_s=5.0)
    assert prompt.ask("success? ") == "y"
    with pytest.raises(OperatorTimeout, match="stdin closed"):
        prompt.ask("success? ")
