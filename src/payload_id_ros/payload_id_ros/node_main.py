"""The one main() of every payload_id node: init, spin, shut down, exit code.

    raise SystemExit(run_node("mock_hardware", MockHardware, args, close=MockHardware.stop))

Exit codes: 0 after Ctrl-C / SIGTERM / an external shutdown, 2 when the node refuses its
configuration or input (PayloadIdError, printed as one line "<name>: error: ..." on stderr).

Signals. By default rclpy's own handlers take SIGINT and SIGTERM: they shut the context down and
the executor returns. A node that must still publish after a signal (the excitation player's
decelerating stop: a player killed mid-trajectory would leave the arm following its last command)
passes `own_signals=True`: rclpy installs no handler, the first signal only asks the spin loop to
end, `close(node)` runs while the context is still up, and a second signal leaves at once.
"""

from __future__ import annotations

import signal
import sys
import threading
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


def run_node(name: str, factory: Callable[[], N], args=None, *, close: Callable[[N], None] | None = None,
             own_signals: bool = False) -> int:
    """Create the node with `factory`, spin it on a SingleThreadedExecutor (the nodes run their long work on
    threads of their own: action_thread) until shutdown, then `close(node)` and destroy it. Returns the
    exit code."""
    limit_blas_threads()
    if own_signals:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    else:
        rclpy.init(args=args)
    stop_requested = threading.Event()
    previous = _take_signals(stop_requested) if own_signals else {}
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
        else:
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PayloadIdError as err:
        print(f"{name}: error: {err}", file=sys.stderr, flush=True)
        code = 2
    finally:
        if node is not None:
            if close is not None:
                close(node)
            node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code


def _take_signals(stop_requested: threading.Event) -> dict:
    """SIGINT/SIGTERM set `stop_requested`; a second one raises KeyboardInterrupt. Returns the old handlers."""

    def on_signal(_signum, _frame):
        if stop_requested.is_set():          # a second Ctrl-C: leave now
            raise KeyboardInterrupt
        stop_requested.set()

    return {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
