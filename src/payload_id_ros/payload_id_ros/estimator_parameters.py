"""The payload_estimator's ROS parameters (config/<robot>.yaml, section /**/payload_estimator): names, defaults,
what each means and its valid range (parameters.declare_parameters reads this table)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from payload_id_core.errors import parse_choice
from payload_id_core.monitor import PUBLISHER_SILENCE_S
from payload_id_ros.controller_payload import ControllerKind, ControllerSettings
from payload_id_ros.parameters import Range, parameter


@dataclass(frozen=True)
class EstimatorParameters:
    """The payload_estimator's ROS parameters (config/<robot>.yaml, section /**/payload_estimator)."""

    urdf: str = parameter("ur10", "bundled robot name or a URDF path")
    robot_yaml: str = parameter("", "robot.yaml of the unloaded robot (payload-id identify-robot); required "
                                "for a goal")
    payload_frame: str = parameter("", "URDF frame the payload is identified in; '' = the robot's flange frame")
    method: str = parameter("difference-rls", "online method when a goal leaves it empty: difference-rls | "
                            "direct-rls")
    trajectory: str = parameter("", "excitation when a goal leaves it empty: bundled name or trajectory YAML path")
    effort_scale: tuple[float, ...] = parameter((0.0,), "torque = effort x scale per joint; zeros = the "
                                                "robot.yaml's scale (given as well, they must agree with it)")
    effort_unit: str = parameter("unknown", "what the driver's joint_states.effort are: current (UR drivers: motor "
                                 "currents, converted with robot.yaml's drive gains) | torque | unknown")
    joint_states_topic: str = parameter("/joint_states", "sensor_msgs/JointState topic of the robot driver")
    trajectory_topic: str = parameter("/joint_trajectory_controller/joint_trajectory",
                                      "JointTrajectory topic the controller is commanded on (heard, not published)")
    wrench_topic: str = parameter("/ft_sensor/wrench", "geometry_msgs/WrenchStamped topic of the F/T sensor")
    sensor_frame: str = parameter("", "URDF frame of the F/T sensor; '' = the WrenchStamped frame_id")
    excite_action: str = parameter("excitation_player/excite", "the excitation player's Excite action")
    result_path: str = parameter("", "YAML the last result is written to and loaded from at start; '' = none")
    stale_timeout: float = parameter(0.5, "s: joint states older than this abort a goal",
                                     valid=Range(low=0.0, low_open=True))
    joint_states_wait: float = parameter(3.0, "s a goal waits for live joint states (a just started driver's "
                                         "discovery)", valid=Range(low=0.0))
    excite_timeout: float = parameter(5.0, "s to find the excitation player's action server",
                                      valid=Range(low=0.0, low_open=True))
    excite_answer_timeout: float = parameter(15.0, "s the excitation player has to accept or reject a goal once "
                                             "found (discovery on a loaded machine can take seconds)",
                                             valid=Range(low=0.0, low_open=True))
    # -- what is known of the payload (payload_id_core.payload.priors): a goal's own fields override them --
    bounding_box: tuple[float, ...] = parameter((0.0,), "m, payload frame: the box holding all of the payload's "
                                                "mass, x0 y0 z0 x1 y1 z1; zeros = none (goals and the monitor's "
                                                "re-estimates use it)")
    known_mass: float = parameter(0.0, "kg: the payload's weighed mass; 0 = none (goals and the monitor's "
                                  "re-estimates use it)", valid=Range(low=0.0))
    known_mass_std: float = parameter(0.0, "kg: the weighed mass's standard deviation; 0 = 0.5 % of it",
                                      valid=Range(low=0.0))
    use_wrench_inertia: bool = parameter(True, "compensate the payload's inertial wrench too, not only its weight")
    monitor: bool = parameter(False, "watch the payload during task motion between goals (~/payload_event); "
                              "the service ~/monitor starts and stops it (stopping at most once per 0.5 s; what "
                              "it carries is kept). Its floor, the smallest mass change its alarm sees at the "
                              "arm's pose, is logged when it starts; ~/payload's mass σ is kept at least half of it")
    publisher_silence_s: float = parameter(PUBLISHER_SILENCE_S, "s: a second publisher of the robot's joints pauses "
                                           "the monitor (two drivers' samples are not one robot's) until it has "
                                           "been silent for max(this, 3 of its periods); a publisher heard once is "
                                           "given this as its period", valid=Range(low=0.0, low_open=True))
    monitor_apply_to_controller: bool = parameter(False, "apply the monitor's determined re-estimates to the "
                                                  "controller (the same refusals as a goal's; a part put down "
                                                  "applies the empty payload)")
    # -- applying the result to the robot controller (controller_payload.py) --
    apply_to_controller: bool = parameter(False, "apply every finished goal's estimate to the controller, also "
                                          "when the goal does not ask (apply_to_controller)")
    controller: str = parameter("auto", "the controller's payload service: ur (ur_msgs SetPayload) | franka "
                                "(franka_msgs SetLoad) | auto (whichever is installed, ur first)")
    controller_service: str = parameter("", "its service name; '' = /io_and_status_controller/set_payload (ur), "
                                        "/service_server/set_load (franka)")
    controller_frame: str = parameter("", "URDF frame the controller takes CoM and inertia in (its flange: UR tool0, "
                                      "Franka panda_link8); '' = the payload frame")
    rated_payload_kg: float = parameter(0.0, "the robot's rated payload: heavier estimates are never applied; "
                                        "0 = not configured, nothing is applied (the monitor's loads are then bounded "
                                        "by the URDF's: its name's rated payload or its joints' holding capacity)",
                                        valid=Range(low=0.0))
    controller_wait: float = parameter(2.0, "s to find the controller's service before the apply step is skipped",
                                       valid=Range(low=0.0))
    controller_timeout: float = parameter(5.0, "s for the controller's answer",
                                          valid=Range(low=0.0, low_open=True))

    @property
    def controller_settings(self) -> ControllerSettings:
        return ControllerSettings(parse_choice(ControllerKind, self.controller, "controller"),
                                  self.controller_service, self.controller_frame, self.rated_payload_kg,
                                  self.controller_wait, self.controller_timeout)

    @property
    def bounding_box_given(self) -> list[float] | None:
        """The bounding box parameter, or None when it is all zeros (not configured)."""
        return [float(v) for v in self.bounding_box] if any(v != 0.0 for v in self.bounding_box) else None

    @property
    def effort_scale_override(self) -> np.ndarray | None:
        """The per-joint effort scale given here, or None: use the robot.yaml's."""
        scale = [s for s in self.effort_scale if s != 0.0]
        return np.array(scale, dtype=float) if scale else None
