"""identify-payload on the real UR10e pairs whose runs differ in length (issue 12 item 4).

The 15harm and 01_31 pairs of ../shared/data/ur10e were refused by khalil-3 and gaz-dtau ("lasts
55.03 s and the loaded one 63.24 s"): their rests differ. The CLI now aligns the loaded run on the
unloaded one (signals.align) and says so in a signals.runs_aligned note. Drive gains: identified by
`identify-robot --loaded-csv-ur … --known-payload-mass` on the 14harm pair, given back with
--effort-scale (the README's gains are 13-16 % off for this model: they were fitted by another toolbox).

Measured (gains 10.86, 12.32, 10.00, 10.41, 10.38, 10.32): khalil-3 −0.40 % / +0.00 %, gaz-dtau −0.33 % /
−0.31 % on 15harm / 01_31, equal to 4 decimals to tools/ur10e_data.py's library path on the same gains.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

import ur10e_data as rd  # tools/ur10e_data.py, on sys.path through conftest.py
from payload_id_core.cli.main import main as cli_main
from payload_id_core.notes import Note, NoteCode

pytestmark = requires_ur10e_data
MASS_TOL = 0.01     # the target; measured at most 0.40 %


@pytest.fixture(scope="module")
def gains_and_robot(ur10e_robot_yaml) -> tuple[str, Path]:
    """The drive gains and the unloaded robot (in N·m with those gains), both from the 14harm pair."""
    out = ur10e_robot_yaml
    return ",".join(repr(float(k)) for k in yaml.safe_load(out.read_text())["effort_scale"]), out


@pytest.mark.parametrize("pair", rd.JUDGED_PAIRS)
@pytest.mark.parametrize("method", ["khalil-3", "gaz-dtau"])
def test_cli_aligns_pairs_of_different_length(tmp_path, capsys, gains_and_robot, pair, method):
    gains, robot = gains_and_robot
    un, lo = (str(DATA / f) for f in rd.PAIRS[pair])
    out = tmp_path / "payload.yaml"
    rc = cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot), "--csv-ur", lo,
                   "--unloaded-csv-ur", un, "--method", method, "--effort-scale", gains, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    d = yaml.safe_load(out.read_text())
    assert abs(d["mass"] / rd.LOAD_MASS_KG - 1) < MASS_TOL, d["mass"]
    aligned = [n for n in map(Note.from_any, d["notes"]) if n.code is NoteCode.SIGNALS_RUNS_ALIGNED]
    assert len(aligned) == 1
    assert aligned[0].text in err          # printed for the user too
    # The library path aligns the same way (same offset).
    p = rd.prepared_pair(un, lo)
    assert f"clock offset {p.offset_s:+.4f} s" in aligned[0].text
