"""The one main() of every payload_id node: init, spin, shut down, exit code.

    raise SystemExit(run_node("mock_hardware", MockHardware, args, close=MockHardware.stop))

Exit codes: 0 after Ctrl-C / SIGTERM / an external shutdown, 2 when the node refuses its
configuration or input (PayloadIdError, printed as one line "<name>: error: ..." on stderr).

Signals. By default rclpy's own handlers take SIGINT and SIGTERM: they shut the context down and
the executor returns. A node that must still talk after a signal (the excitation player's decelerating
stop: a player killed mid-trajectory would leave the arm following its last command; the estimator's
answer to the goal it was running) passes `own_signals=True`: rclpy installs no handler, the first signal
asks the spin loop to end, and a second one leaves at once. Before leaving, `wind_down(node, reason)`
(when given) starts the node's orderly end of what it is doing and returns a predicate "done"; the
executor keeps spinning (so goal results, cancels and the stop still travel) until it holds, for at most
WIND_DOWN_LIMIT s, then FLUSH s more so DDS delivers the last answers. Then `close(node)` runs while the
context is still up. Exit code 0 on a signal: the node did what a signal asks of it.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from payload_id_core.blas import limit_blas_threads
from payload_id_core.errors import PayloadIdError

N = TypeVar("N", bound=Node)

SIGNAL_POLL = 0.1       # s: how long the spin loop may block before it looks at the signal flag
# s a node may take to end its goal after a signal: the player's stop (~1-2 s) and the estimator's final estimate
# fit; ros2 launch escalates SIGINT to SIGTERM after 5 s, which (a second signal) leaves at once.
WIND_DOWN_LIMIT = 12.0
FLUSH = 0.3             # s spun after the wind-down so the last results and the stop leave the process

WindDown = Callable[[N, str], Callable[[], bool]]


def run_node(name: str, factory: Callable[[], N], args=None, *, close: Callable[[N], None] | None = None,
             own_signals: bool = False, wind_down: WindDown | None = None) -> int:
    """Create the node with `factory`, spin it on a SingleThreadedExecutor (the nodes run their long work on
    threads of their own: action_thread) until shutdown, wind it down (own_signals only), then `close(node)`
    and destroy it. Returns the exit code."""
    limit_blas_threads()
    if own_signals:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    else:
        rclpy.init(args=args)
    stop_requested = threading.Event()
    received: list[int] = []
    previous = _take_signals(stop_requested, received) if own_signals else {}
    node = None
    code = 0
    try:
        node = factory()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        if own_signals:
            # Short waits so the main thread returns to Python and sees the signal flag.
            while rclpy.ok() and not stop_requested.is_set():
                executor.spin_once(timeout_sec=SIGNAL_POLL)
            if wind_down is not None and stop_requested.is_set() and rclpy.ok():
                signame = signal.Signals(received[0]).name if received else "a signal"
                _spin_until(executor, wind_down(node, f"the {name} node is shutting down ({signame})"))
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # rclpy's handler shut the context down while the executor built its wait set (RCLError "the given
        # context is not valid": a race of SIGTERM, seen on the test's fake robot): a shutdown, not a failure.
        if rclpy.ok():
            raise
    except PayloadIdError as err:
        print(f"{name}: error: {err}", file=sys.stderr, flush=True)
        code = 2
    finally:
        if node is not None:
            if close is not None:
                try:
                    close(node)
                except KeyboardInterrupt:    # a further signal while closing: leave, quietly
                    pass
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code


def _spin_until(executor: SingleThreadedExecutor, done: Callable[[], bool]) -> None:
    """Spin until `done()` (at most WIND_DOWN_LIMIT s), then FLUSH s more. A second signal raises out of it."""
    deadline = time.monotonic() + WIND_DOWN_LIMIT
    while rclpy.ok() and not done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=SIGNAL_POLL)
    flush_end = time.monotonic() + FLUSH
    while rclpy.ok() and time.monotonic() < flush_end:
        executor.spin_once(timeout_sec=0.02)


def _take_signals(stop_requested: threading.Event, received: list[int]) -> dict:
    """SIGINT/SIGTERM set `stop_requested` (the signal number appended to `received`); a second one raises
    KeyboardInterrupt. Returns the old handlers."""

    def on_signal(signum, _frame):
        if stop_requested.is_set():          # a second Ctrl-C: leave now
            raise KeyboardInterrupt
        received.append(signum)
        stop_requested.set()

    return {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
