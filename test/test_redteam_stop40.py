"""Red team on what landed today (h55's masked drift, h56's identify-robot held-out loaded runs of known mass,
c30ea97's `excite --from T --periods N`). Each test failed on the code it names before its fix; simulated, seconds
each."""

from __future__ import annotations


import numpy as np
import pytest
import yaml

from payload_id_core.cli.main import main as cli_main
from payload_id_core.excitation.fourier import load_trajectory

# -- excite --from T --periods N ------------------------------------------------------------------------------------


def _bad_copy_source(tmp_path, design_change: dict) -> str:
    """The bundled UR10 inertia excitation as a user's YAML with `design_change` in its design block."""
    src = tmp_path / "bundled.yaml"
    load_trajectory("ur10_payload_inertia").save(src)
    doc = yaml.safe_load(src.read_text())
    doc["design"].update(design_change)
    bad = tmp_path / "edited.yaml"
    bad.write_text(yaml.safe_dump(doc))
    return str(bad)


@pytest.mark.parametrize("change, words", [
    ({"margin": "five percent"}, "margin or acceleration_limits that is not a number"),
    ({"margin": [0.05]}, "margin or acceleration_limits that is not a number"),
    ({"acceleration_limits": ["fast"] * 6}, "margin or acceleration_limits that is not a number"),
    ({"cartesian": [{"frame": "tool0", "axis": "up", "lower": 0.3}]}, "Cartesian limit"),
    ({"cartesian": [{"frame": "tool0", "axis": "z", "lower": "table"}]}, "Cartesian limit"),
    ({"cartesian": [{"axis": "z", "lower": 0.3}]}, "Cartesian limit"),
])
def test_excite_from_a_yaml_with_a_malformed_design_block_exits_2(tmp_path, capsys, change, words):
    """The copy checks T against its own design block's margin, acceleration and Cartesian limits; a value there that
    is no number crashed with a traceback (ValueError / TypeError, exit 1) instead of exit 2 naming it."""
    out = tmp_path / "copy.yaml"
    rc = cli_main(["excite", "--urdf", "ur10", "--from", _bad_copy_source(tmp_path, change), "--periods", "2",
                   "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and words in err and err.count("\n") == 1, err
    assert not out.exists()


def test_excite_from_records_the_robot_it_was_checked_against(tmp_path):
    """A UR10 excitation copied for a UR10e (same joints, checked against the UR10e's limits) kept the source's
    design block verbatim: the file said robot 'ur10', urdf 'ur10' while its command said --urdf ur10e."""
    out = tmp_path / "copy.yaml"
    assert cli_main(["excite", "--urdf", "ur10e", "--from", "ur10_payload_inertia", "--periods", "2",
                     "--out", str(out)]) == 0
    design = load_trajectory(out).design
    assert design["robot"] == "ur10e" and design["urdf"] == "ur10e", design
    assert design["copied_from"] == "ur10_payload_inertia" and design["periods"] == 2
