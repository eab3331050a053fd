"""Issue 29 on the real UR10e, judged on held-out recordings: robot.yaml's model error measured on ONE held-out motion.

bench/ur10e.py's user path gives identify-robot both other unloaded runs (15harm, 01_31) as --held-out-csv-ur, so the
model error (C_me, robot_id/model_error.py) khalil-1 and the online methods add to σ was measured on each judged
loaded run's own unloaded twin: the same trajectory, another recording. Here it is measured on one of them only and
the payload judged on the loaded runs whose twin it was not given (leave one run out):

    payload-id identify-robot --csv-ur 14harm --loaded-csv-ur 14harmLoad --known-payload-mass 2.805
                              --held-out-csv-ur <15harm or 01_31 unloaded> --out robot.yaml
    payload-id identify-payload --robot robot.yaml --csv-ur <the other loaded runs> --method khalil-1|difference-rls

Measured (h204, main at 7b2b49a), mass error / σ, % of the 2.805 kg:
  held-out 15harm: khalil-1 14harm +0.09 / 0.31, 01_31 +0.85 / 0.51 (1.67σ); difference-rls +0.19 / 0.33, +0.09 /
    0.44; every CoM withheld (15harm's spurious m·c_x −15.3 g·m sets a first-moment σ of 5.5 mm).
  held-out 01_31:  khalil-1 14harm +0.39 / 1.13, 15harm +0.24 / 1.15; difference-rls +0.42 / 1.14, +0.59 / 1.17; the
    CoM reported with x σ 1.1-1.8 mm (01_31's spurious m·c_x is −2.9 g·m): difference-rls within 1.7σ of khalil-3's
    on both, khalil-1 within 1.6σ on 14harm but 6.9 mm off on 15harm in x (−48.3 ± 1.3 against −41.4 ± 1.2 mm), 4.0σ,
    converged and ok: a confident wrong CoM (the strict xfail below).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA as DATA
from conftest import requires_ur10e_data

from payload_id_core.cli.main import main as cli_main

LOAD_MASS_KG = 2.805
PAIRS = {"14harm": ("ur-20_02_19_14harm50secLoad.csv", "ur-20_02_19_14harm50sec.csv"),
         "15harm": ("ur-20_02_19_15harm50secLoad.csv", "ur-20_02_19_15harm50sec.csv"),
         "01_31": ("ur-20_01_31-load.csv", "ur-20_01_31-unload.csv")}
HELD_OUT = ("15harm", "01_31")
# (held-out run, judged loaded run): every loaded run but the held-out run's own twin
JUDGED = [(h, p) for h in HELD_OUT for p in PAIRS if p != h]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """identify-robot once per held-out run, identify-payload once per (held-out run, method, judged run): cached."""
    tmp = tmp_path_factory.mktemp("ur10e_one_held_out")
    robots: dict[str, object] = {}
    estimates: dict[tuple[str, str, str], dict] = {}

    def robot(held: str):
        if held not in robots:
            out = tmp / f"robot_{held}.yaml"
            assert cli_main(["identify-robot", "--urdf", str(DATA / "ur10e.urdf"),
                             "--csv-ur", str(DATA / PAIRS["14harm"][1]),
                             "--loaded-csv-ur", str(DATA / PAIRS["14harm"][0]),
                             "--known-payload-mass", str(LOAD_MASS_KG),
                             "--held-out-csv-ur", str(DATA / PAIRS[held][1]), "--out", str(out)]) == 0
            robots[held] = out
        return robots[held]

    def estimate(held: str, method: str, pair: str) -> dict:
        if (held, method, pair) not in estimates:
            out = tmp / f"{held}_{method}_{pair}.yaml"
            assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot(held)),
                             "--csv-ur", str(DATA / PAIRS[pair][0]), "--unloaded-csv-ur", str(DATA / PAIRS[pair][1]),
                             "--method", method, "--out", str(out)]) == 0
            estimates[held, method, pair] = yaml.safe_load(out.read_text())
        return estimates[held, method, pair]

    return estimate


@requires_ur10e_data
@pytest.mark.parametrize("method", ["khalil-1", "difference-rls"])
@pytest.mark.parametrize(("held", "pair"), JUDGED)
def test_mass_sigma_covers_the_error_on_runs_whose_twin_was_not_held_out(runs, held, method, pair):
    d = runs(held, method, pair)
    err, std = d["mass"] - LOAD_MASS_KG, d["std"]["mass"]
    assert d["quality"]["status"] == "ok", (held, pair, d["quality"])
    # measured |err|/σ 0.21-1.67 over these eight; 2.5 is issue 29's "none above"
    assert abs(err) <= 2.5 * std, (held, method, pair, err, std)
    # one held-out motion's C_me: 0.31-1.17 % of the load (two, on the user path: 0.83-0.93 %)
    assert std <= 0.0125 * LOAD_MASS_KG, (held, method, pair, std)


_CONFIDENT_WRONG_COM = pytest.mark.xfail(strict=True, reason=(
    "robot.yaml's model error measured on 01_31's unloaded run alone: khalil-1 on 15harm reports the CoM x −48.3 ± 1.3 "
    "mm against khalil-3's −41.4 ± 1.2 mm (6.9 mm, 4.0 combined σ), converged and ok. One motion's spurious m·c_x "
    "(−2.9 g·m) is no measure of another motion's (15harm's own unloaded run: −15.3 g·m); no friction, gain, offset "
    "or wrist-3 position column takes it out of the 15harm run (h204's diagnosis, docs/design.md)"))


@requires_ur10e_data
@pytest.mark.parametrize(("held", "pair", "method"), [
    pytest.param(h, p, m, marks=_CONFIDENT_WRONG_COM) if (h, p, m) == ("01_31", "15harm", "khalil-1") else (h, p, m)
    for h, p in JUDGED for m in ("khalil-1", "difference-rls")])
def test_com_withheld_or_within_3_sigma_of_khalil_3_on_runs_whose_twin_was_not_held_out(runs, held, pair, method):
    d, ref = runs(held, method, pair), runs(held, "khalil-3", pair)
    if d["com"][0] is None:        # withheld: the honest answer where the one held-out motion's error is large
        assert any(n["code"] == "payload.undetermined" and "CoM" in n["text"] for n in d["notes"]), d["notes"]
        return
    com, com_std = np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float)
    ref_com, ref_std = np.array(ref["com"], dtype=float), np.array(ref["std"]["com"], dtype=float)
    gap = np.abs(com - ref_com)
    assert np.all(com_std <= 0.005), (held, method, pair, com_std)
    assert np.all((gap <= 3 * np.hypot(com_std, ref_std)) | (gap <= 0.003)), (held, method, pair, com, ref_com, com_std)
