"""The operator's answers on a real cell (reset done, success or not), with a time limit.

An operator who walked away must not hold a run forever: each question waits at most ``timeout_s`` and then
raises :class:`OperatorTimeout`, which the evaluator turns into a recorded outcome and a stop. Lines are read
by one daemon thread into a queue, so a bounded wait works on any text stream (a terminal, a pipe, a file;
``select`` on the descriptor would miss lines already in the stream's buffer).
"""

from __future__ import annotations

import queue
import threading
from typing import TextIO

__all__ = ["OperatorPrompt", "OperatorTimeout"]

_EOF = None


class OperatorTimeout(RuntimeError):
    """The operator did not answer within the limit, or stdin closed."""


class OperatorPrompt:
    """Asks questions on stdout and reads one answer line each from ``stdin``, within ``timeout_s``."""

    def __init__(self, stdin: TextIO, timeout_s: float) -> None:
        """Bind the stream; reading starts with the first question."""
        self._stdin = stdin
        self.timeout_s = timeout_s
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None

    def _read(self) -> None:
        while line := self._stdin.readline():
            self._lines.put(line)
        self._lines.put(_EOF)

    def ask(self, question: str) -> str:
        """Print ``question`` and return the stripped answer.

        Raises:
            OperatorTimeout: no answer within ``timeout_s`` (``operator_timeout_s``), or stdin closed.
        """
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, name="operator-stdin", daemon=True)
            self._reader.start()
        print(question, end="", flush=True)
        try:
            line = self._lines.get(timeout=self.timeout_s)
        except queue.Empty:
            raise OperatorTimeout(
                f"operator prompt: no answer within {self.timeout_s:g} s (operator_timeout_s) to "
                f"{question.strip()!r}"
            ) from None
        if line is _EOF:
            self._lines.put(_EOF)  # every later question sees the closed stream too
            raise OperatorTimeout("operator prompt: stdin closed")
        return line.strip()
