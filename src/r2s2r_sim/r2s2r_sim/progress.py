"""Progress with an ETA for every long command: a tqdm bar on a terminal, plain lines anywhere else.

tqdm redraws its bar with carriage returns, which a log file or CI console keeps as one ever-growing line;
off a terminal the same updates are therefore written as separate lines, at most one per
``min_interval_s`` (plus the first and the last), each with the count, the rate and the ETA.  Everything
is silent when ``quiet``.  tqdm is imported only when a bar is drawn, so ``r2s2r --help`` stays fast.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

__all__ = ["PLAIN_INTERVAL_S", "Progress", "format_seconds"]

# Off a terminal, the fewest seconds between two lines: a 30-minute run writes some 180 lines, not 30 000.
PLAIN_INTERVAL_S = 10.0


def format_seconds(seconds: float) -> str:
    """``[h:]mm:ss`` as tqdm writes it, so that both modes read alike."""
    s = int(round(max(0.0, seconds)))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """Progress of ``total`` units of work, as a context manager; ``update(n)`` or ``set(done)`` reports.

    Args:
        total: units of work in all.
        desc: what is being done (the line's prefix).
        unit: name of one unit ("ep", "step", "iter").
        quiet: report nothing.
        initial: units already done before this run (resumed work): counted, but not in the rate.
        file: where to write (default ``sys.stderr``); a terminal gets tqdm's bar, anything else plain lines.
        min_interval_s: off a terminal, the fewest seconds between two lines.
        clock: the time source (seconds), for tests.
    """

    def __init__(
        self,
        total: int,
        desc: str,
        unit: str = "it",
        *,
        quiet: bool = False,
        initial: int = 0,
        file: TextIO | None = None,
        min_interval_s: float = PLAIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if total < 0 or initial < 0:
            raise ValueError(f"progress {desc!r}: total and initial must be >= 0, got {total} and {initial}")
        self.total, self.desc, self.unit, self.quiet = total, desc, unit, quiet
        self.n = self._initial = initial
        self._file = file if file is not None else sys.stderr
        self._interval, self._clock = min_interval_s, clock
        self._start = clock()
        self._last_line: float | None = None
        self._printed_n = -1
        self._postfix = ""
        self._bar: Any = None
        if not quiet and _is_terminal(self._file):
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, initial=initial, desc=desc, unit=unit, file=self._file, smoothing=0.1
            )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def update(self, n: int = 1, **postfix: object) -> None:
        """``n`` more units done; ``postfix`` (name=value) is shown after the count."""
        self.set(self.n + n, **postfix)

    def set(self, done: int, **postfix: object) -> None:
        """``done`` units done in all."""
        if self.quiet:
            return
        self.n = done
        if postfix:
            self._postfix = ", ".join(f"{k}={_short(v)}" for k, v in postfix.items())
        if self._bar is not None:
            self._bar.n = done
            if postfix:
                self._bar.set_postfix_str(self._postfix, refresh=False)
            self._bar.refresh()
            return
        now = self._clock()
        if self._last_line is None or done >= self.total or now - self._last_line >= self._interval:
            self._line(now)

    def close(self) -> None:
        """End the bar, or write the last count if it was not written yet."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._printed_n != self.n:
            self._line(self._clock())

    def _line(self, now: float) -> None:
        elapsed = now - self._start
        done_now = self.n - self._initial
        rate = done_now / elapsed if elapsed > 0 and done_now > 0 else None
        left = max(0, self.total - self.n)
        eta = format_seconds(left / rate) if rate else "?"
        pct = 100.0 * self.n / self.total if self.total else 100.0
        speed = f"{rate:.3g} {self.unit}/s" if rate else f"? {self.unit}/s"
        tail = f", {self._postfix}" if self._postfix else ""
        print(
            f"{self.desc}: {self.n}/{self.total} {self.unit} ({pct:.0f}%), "
            f"elapsed {format_seconds(elapsed)}, "
            f"eta {eta}, {speed}{tail}",
            file=self._file,
            flush=True,
        )
        self._last_line, self._printed_n = now, self.n


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
