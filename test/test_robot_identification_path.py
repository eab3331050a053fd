"""The library's robot identification is the command line's (robot_identification.identify_robot): the same runs
through the API and through `payload-id identify-robot` give the same robot.yaml, number for number, every choice
made; and on the real UR10e the API's default gives the command line's payload figures, not the fixed rules' ones."""

import sys

import numpy as np
import pytest
import yaml
from conftest import UR10E_DATA, requires_ur10e_data

from payload_id_core.cli.main import main as cli_main
from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.bag import read_bag, write_bag
from payload_id_core.io.ur_csv import read_ur_csv
from payload_id_core.robot_identification import identify_robot
from payload_id_core.signals import conditioning
from payload_id_core.signals.recording import Recording
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.05, 0.02])
THETA_F = np.array([0.8, 1.5, 0.05, 0.4, 0.7, -0.02])
GAINS = np.array([8.0, 5.0])
MASS = 1.5
PHI = from_mass_com_inertia(MASS, [0.3, 0.1, 0.0], np.diag([0.01, 0.01, 0.04]))


def _recording(model, seed, payload=None):
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=seed)
    fm = make_friction_model("nonlinear", model.joint_names, alpha=[0.5, 0.6])
    return synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=THETA_F, rotor_inertia=[0.1, 0.05],
                               noise_std=NOISE, seed=seed, payload=payload, effort_scale=GAINS)


@pytest.fixture(scope="module")
def planar_runs(tmp_path_factory):
    """planar_2r in drive units (gains 8, 5): the fit run, its 1.5 kg calibration twin, two unloaded runs of other
    motions (the friction choice, and the offsets' drift) and a 1.5 kg run of another motion (the load-friction
    choice). Not the held-out model error: a planar arm cannot determine a payload's first moments (the real UR10e
    test below covers it, with the held-out runs)."""
    root = tmp_path_factory.mktemp("robot_path")
    model = RobotModel.from_urdf("planar_2r")
    runs = {"unloaded": (1, None), "loaded": (2, (PHI, "tool0")), "held_out_a": (3, None), "held_out_b": (4, None),
            "held_out_loaded": (5, (PHI, "tool0"))}
    return root, model, {k: str(write_bag(root / k, _recording(model, s, p))) for k, (s, p) in runs.items()}


def _without_clock(d: dict) -> dict:
    """robot.yaml without when it was written (identified.at: the wall clock of each call)."""
    d = dict(d)
    d["identified"] = {k: v for k, v in d["identified"].items() if k != "at"}
    return d


def test_the_api_and_the_command_line_write_the_same_robot_yaml(planar_runs):
    root, model, bags = planar_runs
    cli_out, api_out = root / "cli.yaml", root / "api.yaml"
    assert cli_main(["identify-robot", "--urdf", "planar_2r", "--bag", bags["unloaded"], "--loaded-bag", bags["loaded"],
                     "--known-payload-mass", str(MASS), "--payload-frame", "tool0",
                     "--friction-cv-bag", bags["held_out_a"], "--friction-cv-bag", bags["held_out_b"],
                     "--drift-bag", bags["held_out_a"], "--drift-bag", bags["held_out_b"],
                     "--held-out-loaded-bag", bags["held_out_loaded"], "--out", str(cli_out)]) == 0
    read = lambda name: read_bag(bags[name], joint_names=model.joint_names)  # noqa: E731
    held_out = [read("held_out_a"), read("held_out_b")]
    robot = identify_robot(model, read("unloaded"), loaded=read("loaded"), known_payload_mass=MASS,
                           payload_frame="tool0", friction_cv=held_out, drift=held_out,
                           held_out_loaded=[read("held_out_loaded")])
    robot.save(api_out)
    cli, api = (yaml.safe_load(p.read_text()) for p in (cli_out, api_out))
    assert _without_clock(api) == _without_clock(cli)
    # every choice robot.yaml records was made, not left to a fixed rule
    for key in ("friction_choice", "friction_offset_drift", "load_friction_choice"):
        assert api.get(key), key
    assert api["friction_choice"]["candidates"] and api["effort"]["gain_model"]["chosen"]
    np.testing.assert_allclose(robot.effort_scale, GAINS, rtol=0.02)


def test_the_api_refuses_what_the_command_line_refuses(planar_runs):
    _, model, bags = planar_runs
    unloaded = read_bag(bags["unloaded"], joint_names=model.joint_names)
    with pytest.raises(PayloadIdError, match="needs both --known-payload-mass"):
        identify_robot(model, unloaded, loaded=read_bag(bags["loaded"], joint_names=model.joint_names))
    with pytest.raises(PayloadIdError, match="outside \\[0, 1\\] s"):
        identify_robot(model, unloaded, effort_scale=GAINS, delay=-0.01)
    with pytest.raises(PayloadIdError, match="outside \\[0.1, 3\\]"):
        identify_robot(model, unloaded, effort_scale=GAINS, alpha=5.0)
    uncommanded = Recording(unloaded.joints, [], unloaded.wrench, unloaded.source, list(unloaded.notes))
    with pytest.raises(PayloadIdError, match="no commanded trajectory"):   # the command line: its --trajectory-topic
        identify_robot(model, uncommanded, effort_scale=GAINS)
    with pytest.raises(PayloadIdError, match="a run the robot is fitted to"):
        identify_robot(model, unloaded, effort_scale=GAINS, held_out=[unloaded])
    loaded = read_bag(bags["loaded"], joint_names=model.joint_names)
    with pytest.raises(PayloadIdError, match="--gain-check runs check identified drive gains"):
        identify_robot(model, unloaded, effort_scale=GAINS, gain_checks=[loaded], gain_check_mass=MASS)
    with pytest.raises(PayloadIdError, match="2 --gain-check-mass values for 1 --gain-check runs"):
        identify_robot(model, unloaded, loaded=loaded, known_payload_mass=MASS, gain_checks=[unloaded],
                       gain_check_mass=[MASS, MASS])
    with pytest.raises(PayloadIdError, match="gain check run .* a run the robot is fitted to") as err:  # its own
        identify_robot(model, unloaded, loaded=loaded, known_payload_mass=MASS, gain_checks=[loaded])    # loaded run
    assert "--gain-check-csv-ur" in err.value.fix and "held-out" not in str(err.value), err.value
    with pytest.raises(PayloadIdError, match="drift run .* a run the robot is fitted to") as err:
        identify_robot(model, unloaded, effort_scale=GAINS, drift=[unloaded])
    assert "--drift-csv-ur" in err.value.fix, err.value


def _spy_on_the_conditioning(monkeypatch) -> list[tuple]:
    """Every conditioned_signals call from now on, wherever the core imported it: (run, source, cutoff_hz, decimate,
    delay) per call."""
    real = conditioning.conditioned_signals
    seen: list[tuple] = []

    def spy(recording, joint_names, source="commanded", cutoff_hz=None, decimate=1, delay="estimate",
            tracking_error=False):
        seen.append((recording.source, str(getattr(source, "value", source)), cutoff_hz, decimate, delay))
        return real(recording, joint_names, source=source, cutoff_hz=cutoff_hz, decimate=decimate, delay=delay,
                    tracking_error=tracking_error)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("payload_id_core") and \
                getattr(module, "conditioned_signals", None) is real:
            monkeypatch.setattr(module, "conditioned_signals", spy)
    return seen


@pytest.mark.parametrize("use_commanded", [True, False], ids=["commanded", "measured"])
def test_every_run_is_conditioned_with_the_calibrations_options(planar_runs, monkeypatch, use_commanded):
    """--cutoff-hz, --decimate, --delay and --use-measured reach every run identify_robot reads: the fit, the drive
    gains' fit on both calibration runs, the friction choice's, the drift runs', the held-out loaded runs' (every
    payload method's), the gain-check runs' and the validation run's (h121: the gains' fit and the held-out runs were
    conditioned with the defaults, a robot.yaml built from runs filtered differently)."""
    _, model, bags = planar_runs
    read = lambda name: read_bag(bags[name], joint_names=model.joint_names)  # noqa: E731
    runs = {name: read(name) for name in bags}
    options = {"cutoff_hz": 8.0, "decimate": 2, "delay": 0.01}
    seen = _spy_on_the_conditioning(monkeypatch)
    held_out = [runs["held_out_a"], runs["held_out_b"]]
    robot = identify_robot(model, runs["unloaded"], loaded=runs["loaded"], known_payload_mass=MASS,
                           payload_frame="tool0", friction_cv=held_out, drift=held_out,
                           held_out_loaded=[runs["held_out_loaded"]], gain_checks=[runs["held_out_loaded"]],
                           validation=runs["held_out_a"], use_commanded=use_commanded, **options)
    assert robot.offset_drift and robot.load_friction_choice and robot.gain_check and robot.validation_rmse is not None
    source = "commanded" if use_commanded else "measured"
    assert {s for s, *_ in seen} == {r.source for r in runs.values()}   # every run read, each through the one pipeline
    assert {tuple(rest) for _, *rest in seen} == {(source, *options.values())}, sorted(set(seen), key=str)
    # every path of the held-out loaded run: the load-friction choice's four methods, on and off, and the gain check
    assert sum(s == runs["held_out_loaded"].source for s, *_ in seen) >= 9


def test_the_held_out_runs_model_error_is_measured_on_runs_conditioned_as_the_calibration(planar_runs, monkeypatch):
    """The held-out runs' spurious payloads (robot.yaml model_error) with the calibration's --cutoff-hz/--decimate:
    a planar arm's run cannot determine the payload's first moments, so the refusal ends the call, after the run
    was conditioned with the calibration's options."""
    _, model, bags = planar_runs
    read = lambda name: read_bag(bags[name], joint_names=model.joint_names)  # noqa: E731
    seen = _spy_on_the_conditioning(monkeypatch)
    with pytest.raises(PayloadIdError, match="too little motion to measure the model error"):
        identify_robot(model, read("unloaded"), loaded=read("loaded"), known_payload_mass=MASS, payload_frame="tool0",
                       held_out=[read("held_out_a")], cutoff_hz=8.0, decimate=2, delay=0.01)
    held_out_calls = [rest for s, *rest in seen if s == read("held_out_a").source]
    assert len(held_out_calls) >= 2 and set(map(tuple, held_out_calls)) == {("commanded", 8.0, 2, 0.01)}


@requires_ur10e_data
def test_on_the_real_ur10e_the_api_default_gives_the_command_lines_robot_and_payload(ur10e_robot_yaml, tmp_path):
    """The API called as a user would (the 14harm pair, the known 2.805 kg, nothing else) writes the command line's
    robot.yaml (conftest's ur10e_robot_yaml: identify-robot with the same runs); difference-rls on the 01_31 pair
    through it stays within the command line's figure (+0.09 % in bench/ur10e.py with the held-out runs; the one fit
    with the gains scaled in by hand, robot_id.fit_given_model, gave +4.6 %: load friction on)."""
    import ur10e_data  # noqa: PLC0415 - the dataset helpers, on the path conftest sets

    urdf = str(UR10E_DATA / "ur10e.urdf")
    model = RobotModel.from_urdf(urdf)
    unloaded, loaded = (str(UR10E_DATA / f) for f in ur10e_data.PAIRS[ur10e_data.GAIN_PAIR])
    robot = identify_robot(model, read_ur_csv(unloaded, joint_names=model.joint_names),
                           loaded=read_ur_csv(loaded, joint_names=model.joint_names),
                           known_payload_mass=ur10e_data.LOAD_MASS_KG)
    robot.save(tmp_path / "robot.yaml")
    api, cli = (yaml.safe_load(p.read_text()) for p in (tmp_path / "robot.yaml", ur10e_robot_yaml))
    assert _without_clock(api) == _without_clock(cli)
    out = tmp_path / "payload.yaml"
    assert cli_main(["identify-payload", "--urdf", urdf, "--robot", str(tmp_path / "robot.yaml"),
                     "--csv-ur", str(UR10E_DATA / "ur-20_01_31-load.csv"),
                     "--unloaded-csv-ur", str(UR10E_DATA / "ur-20_01_31-unload.csv"),
                     "--method", "difference-rls", "--out", str(out)]) in (0, 1)
    error_pct = 100 * (yaml.safe_load(out.read_text())["mass"] / ur10e_data.LOAD_MASS_KG - 1)
    assert abs(error_pct) < 1.0, error_pct


def test_the_old_name_of_the_one_fit_says_where_to_go():
    """robot_id.identify_robot was the one fit, no choice made: a caller of that name gets the way to both, not a
    robot.yaml without identify-robot's choices."""
    with pytest.raises(ImportError, match="robot_identification.identify_robot .* robot_id.fit_given_model"):
        from payload_id_core.robot_id import identify_robot as _  # noqa: F401, PLC0415 - the import is the test
