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
    converged and ok: a confident wrong CoM.

Given the loaded run's own unloaded run (identify-payload --unloaded-csv-ur, as here), khalil-1 joins it to
robot.yaml's held-out runs as one more motion where that widens the model error (h209, robot_id/model_error.py
OWN_UNLOADED_RUN): 15harm's own unloaded run reads m·c_x −15.3 g·m, the CoM x −48.1 ± 4.0 mm, 1.6σ from khalil-3's;
14harm's is the calibration run (0.1 g·m: nothing widened), 01_31's already held out. Without it (khalil-1's use: no
twin) robot.yaml's one held-out motion is all there is: one draw of another motion's error does not bound this one's,
and no width from that one draw (a Student-t_1 predictive matched at ±1σ: every CoM withheld on the user path, mass σ
1.07-1.14 %) separates the two. So an estimate whose σ rests on that one motion (khalil-1 without its run's own
unloaded motion joined, difference-rls and direct-rls always: they read no unloaded run) is reported but suspect, not
converged, with the cause and the fix (h218, covariance_extra.few_motions_note): the 4.0σ CoM is still reported, no
longer as a confident answer.
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
# the quality reason of an estimate whose σ rests on robot.yaml's one held-out motion (few_motions_note)
FEW_MOTIONS = "--held-out-csv-ur / --held-out-bag run of another motion to identify-robot"
# (held-out run, judged loaded run): every loaded run but the held-out run's own twin
JUDGED = [(h, p) for h in HELD_OUT for p in PAIRS if p != h]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """identify-robot once per held-out run, identify-payload once per (held-out run, method, judged run): cached."""
    tmp = tmp_path_factory.mktemp("ur10e_one_held_out")
    robots: dict[str, object] = {}
    estimates: dict[tuple[str, str, str, bool], dict] = {}

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

    def estimate(held: str, method: str, pair: str, with_unloaded: bool = True) -> dict:
        if (held, method, pair, with_unloaded) not in estimates:
            out = tmp / f"{held}_{method}_{pair}_{with_unloaded}.yaml"
            unloaded = ["--unloaded-csv-ur", str(DATA / PAIRS[pair][1])] if with_unloaded else []
            assert cli_main(["identify-payload", "--urdf", str(DATA / "ur10e.urdf"), "--robot", str(robot(held)),
                             "--csv-ur", str(DATA / PAIRS[pair][0]), *unloaded,
                             "--method", method, "--out", str(out)]) == 0
            estimates[held, method, pair, with_unloaded] = yaml.safe_load(out.read_text())
        return estimates[held, method, pair, with_unloaded]

    return estimate


@requires_ur10e_data
@pytest.mark.parametrize("method", ["khalil-1", "difference-rls"])
@pytest.mark.parametrize(("held", "pair"), JUDGED)
def test_mass_sigma_covers_the_error_on_runs_whose_twin_was_not_held_out(runs, held, method, pair):
    d = runs(held, method, pair)
    err, std = d["mass"] - LOAD_MASS_KG, d["std"]["mass"]
    if method == "khalil-1":      # the run's own unloaded motion joined the one held-out motion: nothing against it
        assert d["quality"]["status"] == "ok", (held, pair, d["quality"])
    else:                         # difference-rls reads no unloaded run: σ rests on the one motion, suspect for that
        assert d["quality"]["status"] == "suspect" and not d["converged"], (held, pair, d["quality"])
        assert [r for r in d["quality"]["reasons"] if FEW_MOTIONS in r] == d["quality"]["reasons"], d["quality"]
    # measured |err|/σ 0.12-0.96 over these eight (0.21-1.67 before khalil-1 joined the run's own unloaded run: on
    # 01_31 with 15harm held out +0.85 ± 0.51 → +0.89 ± 0.93 %); 2.5 is issue 29's "none above"
    assert abs(err) <= 2.5 * std, (held, method, pair, err, std)
    # one held-out motion's C_me: 0.31-1.17 % of the load (two, on the user path: 0.83-0.93 %)
    assert std <= 0.0125 * LOAD_MASS_KG, (held, method, pair, std)


@requires_ur10e_data
@pytest.mark.parametrize(("held", "pair", "method"),
                         [(h, p, m) for h, p in JUDGED for m in ("khalil-1", "difference-rls")])
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


def _com_gap_sigma(d: dict, ref: dict) -> np.ndarray:
    com, com_std = np.array(d["com"], dtype=float), np.array(d["std"]["com"], dtype=float)
    ref_com, ref_std = np.array(ref["com"], dtype=float), np.array(ref["std"]["com"], dtype=float)
    return np.abs(com - ref_com) / np.hypot(com_std, ref_std)


@requires_ur10e_data
def test_khalil_1_joins_the_own_unloaded_run_only_where_it_is_another_motion(runs):
    joined = [n["text"] for n in runs("01_31", "khalil-1", "15harm")["notes"] if "as one more motion" in n["text"]]
    # 15harm's own unloaded run: m·c_x −15.3 g·m against 01_31's −2.9: the model-error σ of m·c_x 2.9 → 11.0 g·m
    assert len(joined) == 1 and "-15.3" in joined[0], joined
    # 14harm's own unloaded run is the calibration run (0.1 g·m): nothing widened
    assert not any("as one more motion" in n["text"] for n in runs("01_31", "khalil-1", "14harm")["notes"])


@requires_ur10e_data
def test_khalil_1_without_the_own_unloaded_run_is_no_confident_answer_on_15harm(runs):
    """robot.yaml's model error measured on 01_31's unloaded run alone and no unloaded run given with the payload run
    (khalil-1's use): khalil-1 on 15harm reports the CoM x −48.3 ± 1.3 mm against khalil-3's −41.4 ± 1.2 mm (6.9 mm,
    4.0 combined σ). One motion's spurious m·c_x (−2.9 g·m) is no measure of another motion's (15harm's own unloaded
    run: −15.3 g·m; h204); no width from that one draw separates the two (h209). Converged and ok before (a strict
    xfail); now reported, suspect and not converged, with the cause and the fix (h218)."""
    d, ref = runs("01_31", "khalil-1", "15harm", with_unloaded=False), runs("01_31", "khalil-3", "15harm")
    gap = _com_gap_sigma(d, ref)
    assert np.max(gap) > 3.0, gap                 # the premise: the number is still the 4.0σ one, reported
    # the bar: no estimate converged and ok beyond 3σ
    assert not (d["converged"] or d["quality"]["status"] == "ok"), (d["converged"], d["quality"])
    assert any(FEW_MOTIONS in r and "--unloaded-csv-ur" in r for r in d["quality"]["reasons"]), d["quality"]
