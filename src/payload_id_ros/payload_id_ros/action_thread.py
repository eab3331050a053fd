"""Long-running action goals on a worker thread, with a single-threaded executor.

rclpy's MultiThreadedExecutor costs a lot of CPU per message; at 500 Hz joint states plus 500 Hz
wrenches it alone kept a node at ~60 % of a core. The nodes therefore spin a SingleThreadedExecutor
and run each goal's blocking loop on its own thread: the execute callback is a coroutine that awaits
an rclpy Future the thread completes, so the executor keeps serving subscriptions meanwhile.
"""

from __future__ import annotations

import threading
import time

from rclpy.task import Future


def threaded(blocking):
    """Wrap `blocking(goal_handle) -> result` as an execute callback that runs it on a worker thread."""

    async def execute(goal_handle):
        done = Future()

        def work():
            try:
                done.set_result(blocking(goal_handle))
            except BaseException as err:  # noqa: BLE001 - surfaced to the executor by the awaiting task
                done.set_exception(err)

        threading.Thread(target=work, name="action_goal", daemon=True).start()
        return await done

    return execute


def wait_for_future(future, timeout: float) -> bool:
    """Block a goal thread until an rclpy Future the executor completes is done; False after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return future.done()
