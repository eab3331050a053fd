"""In-process checks of the nodes' parameter tables (payload_id_ros.parameters): declared with their
descriptions, read back typed, ranges refused with the parameter's name; the tables agree with the
parameter files the launch files and the supervisor pass."""

from dataclasses import fields
from pathlib import Path

import pytest
import rclpy
import yaml
from rclpy.node import Node
from rclpy.parameter import Parameter

from payload_id_core.errors import PayloadIdError
from payload_id_ros.cell import ROBOTS
from payload_id_ros.excitation_player import PlayerParameters
from payload_id_ros.mock_hardware import MockHardwareParameters
from payload_id_ros.parameters import declare_parameters, defaults
from payload_id_ros.payload_estimator import EstimatorParameters

REPO = Path(__file__).resolve().parents[1]
SHARE_SOURCE = REPO   # launch/ and config/: at the repository root, installed into share/payload_id_ros
TABLES = {"payload_estimator": EstimatorParameters, "excitation_player": PlayerParameters,
          "mock_hardware": MockHardwareParameters}


@pytest.fixture
def make_node():
    context = rclpy.Context()
    rclpy.init(context=context)
    made = []

    def _make(**overrides):
        node = Node("parameters_probe", context=context, start_parameter_services=False,
                    parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        made.append(node)
        return node

    yield _make
    for node in made:
        node.destroy_node()
    rclpy.shutdown(context=context)


def test_defaults_are_declared_with_descriptions_and_read_back_typed(make_node):
    node = make_node()
    params = declare_parameters(node, PlayerParameters)
    assert params == PlayerParameters()
    assert params.acceleration_limits == (0.0,) and isinstance(params.rate_hz, float)
    assert params.trajectory_topic == "/joint_trajectory_controller/joint_trajectory"
    descriptor = node.describe_parameter("start_delay")
    assert "controller has it in time" in descriptor.description
    assert descriptor.additional_constraints == ">= 0"


def test_given_values_are_typed_and_an_integer_factor_is_accepted(make_node):
    node = make_node(real_time_factor=4, sim_time=True, initial_positions=[0.1, 0.2], seed=3)
    params = declare_parameters(node, MockHardwareParameters)
    assert params.real_time_factor == 4.0 and isinstance(params.real_time_factor, float)
    assert params.initial_positions == (0.1, 0.2) and params.seed == 3 and params.sim_time is True


@pytest.mark.parametrize("table, name, value, expected", [
    (MockHardwareParameters, "rate_hz", -5.0, "rate_hz = -5 is out of range: it must be > 0; give a positive rate"),
    (MockHardwareParameters, "real_time_factor", -1.0, "it must be >= 0; give a factor > 0, or 0 for as fast"),
    (MockHardwareParameters, "clock_period", -0.01, "clock_period = -0.01 is out of range: it must be >= 0; give"),
    (PlayerParameters, "limit_margin", 1.0, "limit_margin = 1 is out of range: it must be >= 0 and < 1"),
    (PlayerParameters, "acceleration_limits", [3.0, -1.0], "acceleration_limits = (3.0, -1.0) is out of range"),
    (EstimatorParameters, "stale_timeout", float("nan"), "stale_timeout = nan is out of range: it must be > 0"),
])
def test_out_of_range_values_are_refused_with_the_parameter_name(make_node, table, name, value, expected):
    with pytest.raises(PayloadIdError, match="parameter") as err:
        declare_parameters(make_node(**{name: value}), table)
    assert expected in str(err.value)


def test_effort_scale_zeros_mean_the_robot_yaml_scale():
    assert EstimatorParameters().effort_scale_override is None
    assert list(EstimatorParameters(effort_scale=(0.0, 2.0)).effort_scale_override) == [2.0]


@pytest.mark.parametrize("robot", ROBOTS)
def test_parameter_files_set_only_declared_parameters_of_the_same_type(robot):
    data = yaml.safe_load((SHARE_SOURCE / "config" / f"{robot}.yaml").read_text())
    for node, table in TABLES.items():
        given = data[f"/**/{node}"]["ros__parameters"]
        known = defaults(table)
        assert set(given) <= set(known), (robot, node, set(given) - set(known))
        for name, value in given.items():
            # ROS refuses a value of another type than the declared default (1 for a double, say).
            assert type(value) is type(known[name]), (robot, node, name, value)


def test_every_field_has_a_description():
    for table in TABLES.values():
        for f in fields(table):
            assert f.metadata.get("description"), (table.__name__, f.name)
