"""Make SIGINT stop a node process from its first instruction; imported first by every node module.

A process that starts with SIGINT *ignored* (a shell's background job ``cmd &``, CI runners and test
harnesses that start from one, anything they spawn) keeps it ignored until ``rclpy.init()`` installs
rclpy's handler, seconds later, after the heavy imports (MuJoCo, NumPy, rclpy). A Ctrl-C or a launcher's
SIGINT that lands in that window is dropped, and the node then starts and serves forever: the main thread
waits in ``rcl_wait``, the physics thread waits for the policy, the context is never shut down, and the
launcher has to escalate to SIGTERM/SIGKILL. Restoring Python's default handler at import closes the
window: an early SIGINT raises KeyboardInterrupt, as it does for a process started from a terminal.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["honour_sigint"]


def honour_sigint() -> bool:
    """Restore Python's SIGINT handler if SIGINT is ignored; returns whether it was (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return True


honour_sigint()
