"""The ROS package stays wiring (docs/design.md, Layout): no class in it grows past 300 lines, and the estimator
node, which wires the most, stays within 350. What a node decides without ROS belongs to a core module."""

import ast
from pathlib import Path

import pytest

ROS = Path(__file__).resolve().parents[1] / "src/payload_id_ros/payload_id_ros"
MAX_CLASS_LINES = 300
MAX_ESTIMATOR_LINES = 350


@pytest.mark.parametrize("path", sorted(ROS.rglob("*.py")), ids=lambda p: str(p.relative_to(ROS)))
def test_no_class_of_the_ros_package_is_over_300_lines(path):
    tree = ast.parse(path.read_text())
    long = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES}
    assert not long, f"{path.name}: {long} lines; move what is not ROS wiring to the core"


def test_the_estimator_node_is_wiring():
    lines = len((ROS / "payload_estimator.py").read_text().splitlines())
    assert lines <= MAX_ESTIMATOR_LINES, f"payload_estimator.py has {lines} lines"
