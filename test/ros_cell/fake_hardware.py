"""A kinematic stand-in for a robot + joint_trajectory_controller, for node tests that need bad inputs.

It follows every JointTrajectory on /joint_trajectory_controller/joint_trajectory exactly as the
controller would interpolate it (signals.commanded.sample_commanded) and publishes /joint_states at
200 Hz with effort = the rigid-body torque of the model (no payload). argv[1] picks a misbehaviour:
  normal        as above
  missing_joint the last joint is left out of every JointState
  nan           efforts are NaN
  static        ignores commands (a controller that does not respond)
  stale         stamps lag 5 s behind the clock
  duplicate     every JointState is published twice
  nan_some      every 7th JointState has a NaN position, every 11th an Inf effort (the others are good)
  jumpy         every 13th JointState is stamped 0.5 s early (out of order), every 29th 1e6 s late (a clock
                jump forward), every 37th 1e6 s early (backwards)
  split         each tick as two JointStates (the first three joints, the others), as two drivers would
  noisy         efforts with white noise DRIVE_NOISE (ros_cell/assets.py: half a real UR10e's)
  drifted       as noisy, then × DRIFT: drive gains 5 % off those robot.yaml was identified with (warmer drives,
                gains given by hand), a run identify-payload calls suspect (payload/effort_drift.py)
  pause         publishes nothing from PAUSE_AT to PAUSE_AT + PAUSE_S s into a trajectory of 3 s or more (the
                excitation), as a driver that pauses or a subscriber queue overwritten in a stall leaves it
argv[2]: robot name (default ur10). argv[3]: mass (kg) of a payload on tool0 (CoM PAYLOAD_COM, default 0): its torques
are added to the efforts. argv[4]: seconds after "ready" at which that payload is picked (default 0: carried from the
start), for the payload monitor; it prints {"picked": t} (its time) at the first tick carrying it. argv[5]: its clock,
`wall` (default: the node's, 200 Hz on an rclpy timer) or `sim`: it owns simulated time as mock_hardware does
(payload_id_ros.sim_clock, /clock every CLOCK_PERIOD), one TICK of it per timer tick, so a starved process stretches
its time instead of leaving holes in the stamps; the time starts at the wall time, so a fake restarted within a test
never moves its subscribers' clocks back (their inboxes drop samples stamped before the last). Prints "fake hardware
ready", then one JSON line per trajectory it receives ({"trajectory": summary}): what the robot was told, heard by the
one process that was matched with the player long before any goal (a probe started later may miss the first messages
while its discovery completes). SIGUSR1 puts the payload down at the next tick: it prints {"placed": t} there.
argv[6] (`sim` only): holds, comma-separated, one per excitation (a trajectory of 3 s or more) in the order received,
'-' for none: its clock stops at that many s into that excitation (no /clock, no joint state until SIGUSR2), and it
prints {"held": t, "into_excitation": s, "excitation": k}. A test then acts at that instant of the motion however late
its own process runs (test_monitor_restart_ros kills the estimator there), and resumes the clock with SIGUSR2.
"""
import json
import signal
import sys
import time

import numpy as np
import rclpy
from assets import DRIVE_NOISE  # noqa: E402 - sibling module in test/ros_cell
from probe import player_matched, traj_summary  # noqa: E402 - sibling script in test/ros_cell
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.signals.commanded import sample_commanded
from payload_id_ros.conversions import joint_state_msg, msg_to_commanded, sec_to_time
from payload_id_ros.sim_clock import ClockPublisher

PAYLOAD_FRAME = "tool0"
PAYLOAD_COM = [0.02, -0.01, 0.06]
PAYLOAD_INERTIA = np.diag([0.004, 0.005, 0.003])
DRIFT = 1.05                   # "drifted" mode's factor on every effort
PAUSE_AT, PAUSE_S = 1.5, 0.3   # s: "pause" mode's silence, shorter than the estimator's stale_timeout (0.5 s)
TICK = 0.005                   # s between joint states (200 Hz)
CLOCK_PERIOD = 0.01            # s of simulated time between /clock messages, mock_hardware's default


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "normal"
    robot = sys.argv[2] if len(sys.argv) > 2 else "ur10"
    model = RobotModel.from_urdf(robot)
    mass = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    phi = from_mass_com_inertia(mass, PAYLOAD_COM, PAYLOAD_INERTIA) if mass > 0 else None
    pick_after = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    picked_at = [float("inf") if pick_after > 0 else -float("inf")]
    said_picked = [False]
    # s: when the payload is put down (SIGUSR1: at the next tick; inf: not asked)
    placed_at, said_placed, place_asked = [float("inf")], [False], [False]
    signal.signal(signal.SIGUSR1, lambda *_: place_asked.__setitem__(0, True))
    simulated = (sys.argv[5] if len(sys.argv) > 5 else "wall") == "sim"
    holds = [None if h == "-" else float(h) for h in sys.argv[6].split(",")] if len(sys.argv) > 6 else []
    held = [False]                 # the clock stands (a hold reached, SIGUSR2 not yet received)
    signal.signal(signal.SIGUSR2, lambda *_: held.__setitem__(0, False))
    rclpy.init()
    node = Node("fake_hardware")
    clock = ClockPublisher(node, CLOCK_PERIOD, TICK) if simulated else None
    sim_t = [time.time()]          # simulated time (s), advanced TICK per tick
    q0 = np.clip(np.array([0.0, -1.2, 1.2, -1.5, -1.5, 0.0][: model.n]), model.limits.lower, model.limits.upper)
    cmds = []
    pub = node.create_publisher(JointState, "/joint_states", 10)

    def now() -> float:
        return sim_t[0] if simulated else node.get_clock().now().nanoseconds * 1e-9

    def on_traj(msg):
        print(json.dumps({"trajectory": traj_summary(msg, time.time())}), flush=True)
        if mode != "static":
            cmds.append(msg_to_commanded(msg, now()))

    traj_sub = node.create_subscription(JointTrajectory, "/joint_trajectory_controller/joint_trajectory",
                                        on_traj, 10)
    names = list(model.joint_names)
    count = [0]
    noise = np.random.default_rng(5)

    excitations: list = []         # the trajectories of 3 s or more received, in order (the holds' count)
    holds_done: set[int] = set()   # the excitations (1, 2, ...) whose hold was reached

    def hold_reached(t: float) -> bool:
        """At the next tick's time `t`, this excitation's hold is reached: the clock stops before it."""
        if not cmds or cmds[-1].time_from_start[-1] < 3.0:
            return False
        if not excitations or excitations[-1] is not cmds[-1]:
            excitations.append(cmds[-1])
        k = len(excitations)
        hold = holds[k - 1] if k <= len(holds) else None
        if hold is None or k in holds_done or t - cmds[-1].start_time < hold:
            return False
        holds_done.add(k)
        print(json.dumps({"held": sim_t[0], "into_excitation": sim_t[0] - cmds[-1].start_time, "excitation": k}),
              flush=True)
        return True

    def tick():
        if held[0]:
            return
        if clock is not None and hold_reached(sim_t[0] + TICK):
            held[0] = True
            return
        if clock is not None:
            sim_t[0] += TICK
            clock.tick(sec_to_time(sim_t[0]))
        t = now()
        if cmds:
            q, qd, qdd = (a[0] for a in sample_commanded(cmds, np.array([t]), names))
        else:
            q, qd, qdd = q0, np.zeros(model.n), np.zeros(model.n)
        tau = model.rnea(q, qd, qdd)
        if place_asked[0] and not said_placed[0]:
            placed_at[0], said_placed[0] = t, True
            print(json.dumps({"placed": t}), flush=True)
        if phi is not None and picked_at[0] <= t < placed_at[0]:
            tau = tau + payload_regressor(model, PAYLOAD_FRAME, q, qd, qdd)[0] @ phi
            if not said_picked[0] and pick_after > 0:
                said_picked[0] = True
                print(json.dumps({"picked": t}), flush=True)
        keep = model.n - 1 if mode == "missing_joint" else model.n
        q, qd = np.asarray(q[:keep], dtype=float), np.asarray(qd[:keep], dtype=float)
        effort = np.full(keep, np.nan) if mode == "nan" else np.asarray(tau[:keep], dtype=float)
        if mode in ("noisy", "drifted"):
            effort = effort + noise.standard_normal(keep) * np.resize(DRIVE_NOISE, keep)
        if mode == "drifted":
            effort = DRIFT * effort
        count[0] += 1
        k = count[0]
        stamp = t - 5.0 if mode == "stale" else t
        if mode == "nan_some" and k % 7 == 0:
            q = q.copy()
            q[2] = np.nan
        if mode == "nan_some" and k % 11 == 0:
            effort = effort.copy()
            effort[4] = np.inf
        if mode == "jumpy":
            stamp += -0.5 if k % 13 == 0 else 1e6 if k % 29 == 0 else -1e6 if k % 37 == 0 else 0.0
        if mode == "pause" and cmds and cmds[-1].time_from_start[-1] >= 3.0 and \
                PAUSE_AT <= t - cmds[-1].start_time < PAUSE_AT + PAUSE_S:
            return
        if mode == "split":
            pub.publish(joint_state_msg(sec_to_time(stamp), names[:3], q[:3], qd[:3], effort[:3]))
            pub.publish(joint_state_msg(sec_to_time(stamp), names[3:], q[3:], qd[3:], effort[3:]))
            return
        msg = joint_state_msg(sec_to_time(stamp), names[:keep], q, qd, effort)
        pub.publish(msg)
        if mode == "duplicate":
            pub.publish(msg)

    node.create_timer(TICK, tick)
    # "ready" only once the player's trajectories and the estimator's joint states are matched: a goal sent
    # before discovery ends would have its first trajectory lost, and the arm left standing (a test race,
    # seen once in CI as a 0.3 rad tracking abort).
    deadline = time.monotonic() + 30.0
    def matched() -> bool:
        clock_heard = clock is None or clock.publisher.get_subscription_count() > 0
        return player_matched(node, traj_sub) and pub.get_subscription_count() > 0 and clock_heard

    while not matched() and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    if pick_after > 0:
        picked_at[0] = now() + pick_after
    print("fake hardware ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:        # RCLError: SIGTERM shut the context down while the executor built its wait set
        if rclpy.ok():
            raise


if __name__ == "__main__":
    main()
