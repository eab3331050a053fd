"""payload_id_ros.sim_clock.ClockStall: the wall seconds a node's simulated time has stood still (h186), the estimator's
watch for a clock whose owner died (its other timers run on that clock and stop with it)."""
from payload_id_ros.sim_clock import ClockStall


class Times:
    """A node's time and the monotonic clock, set by hand."""

    def __init__(self) -> None:
        self.ros, self.wall, self.simulated = 100.0, 5.0, True


def _stall(times: Times) -> ClockStall:
    return ClockStall(lambda: times.ros, lambda: times.simulated, lambda: times.wall)


def test_the_stall_is_counted_in_wall_seconds_from_the_last_move_of_simulated_time():
    times = Times()
    stall = _stall(times)
    assert stall.stalled_for() == 0.0
    times.wall += 0.3
    assert abs(stall.stalled_for() - 0.3) < 1e-12      # no move in 0.3 wall s
    times.ros += 0.01
    times.wall += 0.1
    assert stall.stalled_for() == 0.0                  # it moved: counted afresh
    times.wall += 0.75
    assert abs(stall.stalled_for() - 0.75) < 1e-12
    times.ros = 50.0                                   # a new owner starting earlier is a move too
    assert stall.stalled_for() == 0.0


def test_the_wall_clock_never_stalls():
    times = Times()
    times.simulated = False
    stall = _stall(times)
    times.wall += 10.0                                 # the wall clock read in the same nanosecond: no stall
    assert stall.stalled_for() == 0.0


def test_no_stall_before_the_first_clock_message():
    times = Times()
    times.ros = 0.0                                    # use_sim_time and no /clock yet
    stall = _stall(times)
    times.wall += 10.0
    assert stall.stalled_for() == 0.0
    times.ros = 3.0                                    # the owner's first message, then nothing
    assert stall.stalled_for() == 0.0
    times.wall += 0.6
    assert abs(stall.stalled_for() - 0.6) < 1e-12
