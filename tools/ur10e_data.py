"""The real UR10e recordings of ../shared/data/ur10e as identification inputs, and the whole pipeline on them.

Dataset-specific, so not part of the installed core: imported by bare name from tools/ (test/conftest.py
and bench/ur10e.py put tools/ on sys.path; tools/ur10e_report.py sits beside it).

The files (ur_csv.read_ur_csv) are logged at irregular instants (10 and 12 ms steps), start and end
with seconds of rest whose length differs between the loaded and the unloaded run of a pair, and
hold no commanded trajectory. What this module adds, shared by test/test_ur10e_real.py,
tools/ur10e_report.py and bench/ur10e.py:

  * `prepared_run`: the motion window only (rest cut, a little padding), resampled on a uniform grid
    (`rate_hz`, default 50 Hz: the excitations hold their energy below 2 Hz): read_ur_csv's smoothed
    stand-in command sampled there, torques (current × drive gain) filtered as conditioned_signals
    does for such recordings (`resampled`).
  * `prepared_pair`: the unloaded and loaded run of one trajectory put on the same trajectory time
    (the loaded run's offset found by least squares on the joint positions, to a fraction of a
    sample), so methods that subtract the two runs sample by sample (khalil-3) can. Both are the core's
    payload_id_core.signals.align (aligned_pair, resampled), which identify-payload uses as well.
  * `identify_ur10e_robot`, `identify_gains`, `identify_payloads`: the project's own
    identification code (payload_id_core.robot_id, payload_id_core.payload.methods) on those inputs.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.io.ur_csv import README_DRIVE_GAINS, SMOOTHING_CUTOFF_HZ, read_ur_csv
from payload_id_core.notes import Note
from payload_id_core.payload.methods import identify_payload, method_spec
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.robot_id import RobotIdentification, fit_given_model, identify_effort_scale, validate_robot
from payload_id_core.signals.align import DEFAULT_RATE_HZ, aligned_pair, padded_motion_window, resampled, uniform_grid
from payload_id_core.signals.effort import EffortUnit
from payload_id_core.signals.recording import CommandedTrajectory, JointSamples, Recording

LOAD_MASS_KG = 2.805   # ../shared/data/ur10e/README.md
PAIRS: dict[str, tuple[str, str]] = {
    "14harm": ("ur-20_02_19_14harm50sec.csv", "ur-20_02_19_14harm50secLoad.csv"),
    "15harm": ("ur-20_02_19_15harm50sec.csv", "ur-20_02_19_15harm50secLoad.csv"),
    "01_31": ("ur-20_01_31-unload.csv", "ur-20_01_31-load.csv"),
}
VALIDATION = ("validation-p1.csv", "validation-p2.csv", "validation-p3.csv")
# The pair the README's drive gains were fitted on (with the known mass): it cannot confirm the mass.
GAIN_PAIR = "14harm"
JUDGED_PAIRS = ("15harm", "01_31")

# Torques are filtered like the stand-in motion ur_csv smooths (and conditioned_signals would filter
# them): parallel filtering of both sides of τ = Y θ.
DEFAULT_CUTOFF_HZ = SMOOTHING_CUTOFF_HZ


def default_data_dir() -> Path:
    """../shared/data/ur10e beside the repository (env PAYLOAD_ID_UR10E_DATA overrides)."""
    env = os.environ.get("PAYLOAD_ID_UR10E_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ur10e"


DATA_SOURCE = "github.com/shamilmamedov/dynamic_calibration"   # where the recordings were published


def data_missing_reason(data_dir: Path) -> str | None:
    """Why the recordings cannot be used from `data_dir`, with how to get them (None: they are there)."""
    needed = [name for pair in PAIRS.values() for name in pair] + list(VALIDATION) + ["ur10e.urdf"]
    missing = [name for name in needed if not (data_dir / name).is_file()]
    if not missing:
        return None
    return (f"UR10e recordings not found in {data_dir} (missing {', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}): set PAYLOAD_ID_UR10E_DATA to a folder holding the "
            f"ur-*.csv files and ur10e.urdf of {DATA_SOURCE}")


def user_path_robot(data_dir: Path):
    """(model, robot) as the README's user path identifies them: `payload-id identify-robot` on the GAIN_PAIR with
    its known load (the drive gains from the loaded twin), read back from the robot.yaml it writes."""
    from payload_id_core.cli.main import main as cli_main  # noqa: PLC0415 - only the benches running the CLI need it

    urdf = str(data_dir / "ur10e.urdf")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "robot.yaml"
        unloaded, loaded = (str(data_dir / f) for f in PAIRS[GAIN_PAIR])
        code = cli_main(["identify-robot", "--urdf", urdf, "--csv-ur", unloaded, "--loaded-csv-ur", loaded,
                         "--known-payload-mass", str(LOAD_MASS_KG), "--out", str(path)])
        if code != 0:
            raise RuntimeError(f"identify-robot on the {GAIN_PAIR} pair exited {code}")
        model = RobotModel.from_urdf(urdf)
        return model, RobotIdentification.load(path, model)


def prepared_run(path: str | os.PathLike, effort_scale=README_DRIVE_GAINS, *, rate_hz: float = DEFAULT_RATE_HZ,
                 cutoff_hz: float | None = DEFAULT_CUTOFF_HZ, recording: Recording | None = None) -> Recording:
    """One file's motion window (± signals.align.MOTION_PAD_S) on a uniform grid; see the module docstring.
    `recording`: that file already read (read_ur_csv(path, effort_scale)), so it is not read again."""
    rec = recording if recording is not None else read_ur_csv(path, effort_scale)
    a, b = padded_motion_window(rec)
    return resampled(rec, uniform_grid(a, b, rate_hz), cutoff_hz, t_zero=0.0)


@dataclass
class PreparedPair:
    name: str
    unloaded: Recording
    loaded: Recording
    offset_s: float            # loaded clock − unloaded clock for the same trajectory time
    max_mismatch_rad: float    # largest joint position difference between the runs after alignment
    notes: list[Note] = field(default_factory=list)


def prepared_pair(unloaded_path, loaded_path, effort_scale=README_DRIVE_GAINS, *, name: str = "",
                  rate_hz: float = DEFAULT_RATE_HZ, cutoff_hz: float | None = DEFAULT_CUTOFF_HZ) -> PreparedPair:
    """The two runs of one trajectory on one trajectory clock, same grid, same length (signals.align)."""
    pair = aligned_pair(read_ur_csv(unloaded_path, effort_scale), read_ur_csv(loaded_path, effort_scale),
                        rate_hz=rate_hz, cutoff_hz=cutoff_hz, name=name)
    return PreparedPair(name, pair.unloaded, pair.loaded, pair.fit.offset_s, pair.fit.max_rad, [pair.note])


def load_pairs(data_dir=None, effort_scale=README_DRIVE_GAINS, names: Sequence[str] = tuple(PAIRS), **kw
               ) -> dict[str, PreparedPair]:
    d = Path(data_dir) if data_dir is not None else default_data_dir()
    return {k: prepared_pair(d / PAIRS[k][0], d / PAIRS[k][1], effort_scale, name=k, **kw) for k in names}


def rescaled(recording: Recording, factor) -> Recording:
    """The same recording with torques × factor (per joint): new drive gains = factor × old ones."""
    j = recording.joints
    joints = JointSamples(j.t, list(j.joint_names), j.q, j.qd, j.tau * np.asarray(factor, dtype=float), j.temperature)
    return Recording(joints, list(recording.commanded), recording.wrench, recording.source, list(recording.notes))


# -- the pipeline ---------------------------------------------------------------------------------

PAYLOAD_METHODS = ("khalil-1", "khalil-2", "khalil-3", "khalil-4", "gaz-dtau", "direct-rls", "difference-rls")
# Both runs of a pair follow the same commanded trajectory, but what the files hold is the measured
# motion: with the load the UR tracks it up to 1.7 mrad differently (prepared_pair's alignment), so
# "same trajectory" is judged with the tolerance for measured signals, not the commanded one's 1 mrad.
SAME_TRAJECTORY_TOL_RAD = 2e-2
# No load-dependent friction column (payload/load_friction.py): the drive gains are identified from the
# known mass without it, and a friction term proportional to the load torque is nearly collinear with a
# gain error, so modelling it in the payload step only would count the same effect twice (measured on
# 15harm / 01_31: difference-rls +3.9 % / +4.3 % with the column, +1.5 % / −0.8 % without).
PAYLOAD_OPTIONS = {"delay": 0.0, "same_trajectory_tol_rad": SAME_TRAJECTORY_TOL_RAD, "load_friction": False}


def identify_ur10e_robot(model, pair_or_run, friction: str = "linear", validate: Sequence[Recording] = (),
                         gains=None, gains_std=None, gear_friction: bool = False):
    """identification.fit_given_model on a prepared unloaded run (the stand-in commanded motion,
    no delay: it is the measured motion itself); validation RMSE per joint for each `validate` run.
    `gains`, `gains_std`: the drive gains the run's torques were computed with and their std
    (identify_gains), recorded in the result as robot.yaml records them, so the payload methods
    propagate the gains' uncertainty (payload/gain_uncertainty.py)."""
    run = pair_or_run.unloaded if isinstance(pair_or_run, PreparedPair) else pair_or_run
    ident = fit_given_model(model, run, friction=friction, delay=0.0, effort_scale=gains, gear_friction=gear_friction)
    if gains is not None:
        ident.effort_unit = EffortUnit.CURRENT.value
        ident.effort_scale_std = None if gains_std is None else np.asarray(gains_std, dtype=float)
        ident.effort_scale_source = "identified from the 14harm pair and the known load mass"
    rmse = [validate_robot(ident, v, model, delay=0.0) for v in validate]
    return ident, rmse


def identify_gains(model, pair: PreparedPair, mass: float = LOAD_MASS_KG, frame: str | None = None,
                   friction: str = "linear", decimate: int = 2):
    """Drive gains (N·m per unit of the pair's efforts) from one pair and the known load mass
    (identification.identify_effort_scale, Gautier & Briot 2014). `decimate` thins both runs
    first (the excitations hold their energy below 2 Hz; the filter already ran at 5 Hz)."""
    frame = model.payload_frame(frame)
    un, lo = (thinned(r, decimate) for r in (pair.unloaded, pair.loaded))
    return identify_effort_scale(model, un, lo, mass, frame, friction=friction, delay=0.0)


def thinned(recording: Recording, every: int) -> Recording:
    """One sample in `every` (the signals were already low-passed well below the new Nyquist rate)."""
    if every <= 1:
        return recording
    j = recording.joints
    c = recording.commanded[0]
    k = slice(None, None, every)
    joints = JointSamples(j.t[k], list(j.joint_names), j.q[k], _every(j.qd, k), j.tau[k])
    cmd = CommandedTrajectory(c.start_time, list(c.joint_names), c.time_from_start[k], c.positions[k],
                              _every(c.velocities, k), _every(c.accelerations, k))
    return Recording(joints, [cmd], None, recording.source, list(recording.notes))


def _every(samples: np.ndarray | None, k: slice) -> np.ndarray | None:
    return None if samples is None else samples[k]


def identify_payloads(model, robot, pair: PreparedPair, methods: Sequence[str] = PAYLOAD_METHODS,
                      frame: str | None = None, **options) -> dict[str, PayloadEstimate | str]:
    """method -> PayloadEstimate (or the PayloadIdError's text when the method does not apply)."""
    out: dict[str, PayloadEstimate | str] = {}
    for method in methods:
        try:
            # The pair's options that this method reads (the others would be refused as not read by it).
            spec = method_spec(method)
            shared = {k: v for k, v in PAYLOAD_OPTIONS.items() if spec.reads(k)}
            out[method] = identify_payload(method, model, robot, pair.loaded, frame, unloaded=pair.unloaded,
                                           **{**shared, **options})
        except PayloadIdError as err:
            out[method] = str(err)
    return out


# The judged loaded runs with their unloaded twins, as bench/ur10e.py's user path passes them (loaded, unloaded), and
# the unloaded runs that path measures robot.yaml's model error and offsets' drift on (--held-out-csv-ur,
# --drift-csv-ur).
USER_PATH_HELD_OUT = ("ur-20_02_19_15harm50sec.csv", "ur-20_01_31-unload.csv")


def user_path_robot_yaml(data_dir: Path, out: Path, held_out: Sequence[str] = USER_PATH_HELD_OUT,
                         held_out_loaded: Sequence[str] = ()) -> Path:
    """`payload-id identify-robot` as bench/ur10e.py's user path runs it, written to `out`: the drive gains from the
    GAIN_PAIR with its known load, the model error measured and the offsets' drift recorded on `held_out` (unloaded
    recordings in `data_dir`); `held_out_loaded`: loaded recordings of other motions carrying the same known load
    (--held-out-loaded-csv-ur: each method's load friction, and the model error on a loaded run)."""
    from payload_id_core.cli.main import main as cli_main  # noqa: PLC0415 - only the benches running the CLI need it

    unloaded, loaded = (str(data_dir / f) for f in PAIRS[GAIN_PAIR])
    others = [a for f in held_out
              for a in ("--held-out-csv-ur", str(data_dir / f), "--drift-csv-ur", str(data_dir / f))]
    others += [a for f in held_out_loaded for a in ("--held-out-loaded-csv-ur", str(data_dir / f))]
    code = cli_main(["identify-robot", "--urdf", str(data_dir / "ur10e.urdf"), "--csv-ur", unloaded, "--loaded-csv-ur",
                     loaded, "--known-payload-mass", str(LOAD_MASS_KG), *others, "--out", str(out)])
    if code != 0:
        raise RuntimeError(f"identify-robot on the {GAIN_PAIR} pair exited {code}")
    return out


# An online estimate's |error| / σ is judged from this many seconds of motion on: before, it rests on a handful of
# reversals (bench/ur10e_online.py, bench/ur10e_loaded_record.py).
TRACED_FROM_S = 8.0


@dataclass
class OnlineRun:
    """An online method along a real loaded run, fed as a goal that stops when converged feeds it (online_on_real_run).

    `declared`: (seconds of motion, mass, the mass σ the goal reports) when it declared convergence, None if never;
    `trace`: (K, 3) [seconds of motion, mass, reported σ] every ~`every_s` along the whole run (empty without);
    `final`: the same at the end of the run."""

    declared: tuple[float, float, float] | None
    trace: np.ndarray
    final: tuple[float, float, float]

    def figures(self, prefix: str, truth: float = LOAD_MASS_KG) -> dict:
        """bench/ur10e_online.py's figures of this run, each named `prefix`_<figure> (that module's doc): at the
        declaration (None: never declared), |error| / σ along the trace from TRACED_FROM_S of motion on, and at the
        end."""
        fig: dict = {f"{prefix}_declared_s": None, f"{prefix}_declared_err_pct": None,
                     f"{prefix}_declared_err_over_std": None}
        if self.declared is not None:
            at, mass, std = self.declared
            fig.update({f"{prefix}_declared_s": at, f"{prefix}_declared_err_pct": 100 * (mass / truth - 1),
                        f"{prefix}_declared_err_over_std": abs(mass - truth) / std})
        t, masses, stds = self.trace.T if self.trace.size else (np.zeros(0),) * 3
        ratio = (np.abs(masses - truth) / stds)[t >= TRACED_FROM_S]
        fig[f"{prefix}_err_over_std_max"] = float(ratio.max()) if ratio.size else None
        fig[f"{prefix}_err_over_std_rms"] = float(np.sqrt(np.mean(ratio**2))) if ratio.size else None
        fig[f"{prefix}_final_err_pct"] = 100 * (self.final[1] / truth - 1)
        fig[f"{prefix}_final_std_pct"] = 100 * self.final[2] / truth
        return fig


def online_on_real_run(robot_yaml: str | os.PathLike, loaded_csv: str | os.PathLike, method: str,
                       every_s: float | None = None, batch: int = 25) -> OnlineRun:
    """The online `method` on a real loaded UR10e run read as identify-payload reads it (robot.yaml's gains,
    payload.methods.online.run_online's signals and estimator), fed `batch` samples at a time, as a goal does. The
    reported mass σ is the estimator's with the gains' and covariance_extra's parts (what identify-payload writes),
    computed on the samples fed so far: at the declaration, every ~`every_s` of motion (None: not traced) and at the
    end. The estimator goes on being fed after it declares (its estimate does not depend on the declaration)."""
    from payload_id_core.io.ur_csv import read_ur_csv  # noqa: PLC0415 - only this helper reads single runs
    from payload_id_core.payload.methods import payload_request  # noqa: PLC0415
    from payload_id_core.payload.methods.common import method_signals  # noqa: PLC0415
    from payload_id_core.payload.methods.online import online_estimator  # noqa: PLC0415
    from payload_id_core.robot_id.drive_gains import resolve_drive_gains  # noqa: PLC0415

    data_dir = Path(loaded_csv).parent
    model = RobotModel.from_urdf(str(data_dir / "ur10e.urdf"))
    robot = RobotIdentification.load(str(robot_yaml), model)
    rec = read_ur_csv(str(loaded_csv), joint_names=model.joint_names)
    rec = rec.with_drive_gains(resolve_drive_gains(rec.joints.effort_unit, robot, None, model.n).scale)
    request = payload_request(method, model, robot, model.payload_frame(None))
    sig = method_signals(rec, model, request.options, robot)
    est = online_estimator(request.spec.method, model, robot, request.frame, request.options,
                           rate_hz=1.0 / float(np.median(np.diff(sig.t))))

    def reported(k: int) -> tuple[float, float, float]:
        z, cov, _ = est.payload_solution()
        extra, _ = est.covariance_extra(sig.q[:k], sig.qd[:k], sig.qdd[:k], sig.tau[:k])
        return float(sig.t[k - 1] - sig.t[0]), float(z[0]), float(np.sqrt(cov[0, 0] + extra[0, 0]))

    declared: tuple[float, float, float] | None = None
    trace: list[tuple[float, float, float]] = []
    k, next_at = 0, (np.inf if every_s is None else float(every_s))
    while k < sig.t.size:
        end = min(k + batch, sig.t.size)
        est.update_batch(sig.t[k:end], sig.q[k:end], sig.qd[k:end], sig.qdd[k:end], sig.tau[k:end])
        k = end
        if declared is None and est.converged:
            _, mass, std = reported(k)
            declared = (float(est.convergence_time), mass, std)
        if sig.t[k - 1] - sig.t[0] >= next_at:
            trace.append(reported(k))
            next_at = float(sig.t[k - 1] - sig.t[0]) + float(every_s or 0.0)
    return OnlineRun(declared, np.array(trace, dtype=float).reshape(-1, 3), reported(sig.t.size))
