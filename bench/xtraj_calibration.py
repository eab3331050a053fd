"""Whether each share of a method's σ covers its error off the robot's own motion (issue 29 item 4, h111), on
bench/accuracy.py's cross-motion cell (tools/xtraj_cell.py), share by share over many draws, where
bench/xtraj_sources.py takes single seeds apart.

xcal_<robot>_<method>_noise_z_rms_<mass|x|y|z>
    the loaded run's noise: over XCAL_NOISE_DRAWS noise seeds (default 40; XCAL_FIRST_NOISE_SEED on, default 100:
    none of the bench's loaded seeds), the robot identified without noise, the estimate minus the same on the run
    without noise, over the σ reported without the robot's share (include_robot_uncertainty=False): 1 where that
    share is right. _z_max the largest |z|.
xcal_<robot>_<method>_robot_z_rms_<mass|x|y|z>
    the robot identification's error: on the loaded run without noise, the estimate with each of the bench's
    identifications (XCAL_ROBOT_SEEDS, default 20: noise seeds 1000 + 0..19, cached with bench/accuracy.py's)
    minus the same with the identification without noise, over the σ reported there (C_a's share: the noise share
    is floored at the model's resolution on a run without noise). 1 where C_a describes θ̂_a's error.

XCAL_ROBOTS (default panda), XCAL_METHODS (default khalil-1,khalil-2). The last stdout line is one JSON object.
Panda, h111 (docs/design.md "The methods", Panda seed 4): khalil-2 noise |z| RMS mass 0.89, CoM 0.97 / 0.88 / 1.12,
robot 0.51 / 0.80 / 0.90 / 0.79; khalil-1 noise 0.80 / 0.87 / 0.92 / 0.96, robot 0.52 / 0.69 / 0.88 / 0.76
(~2 h on a saturated 2-core machine).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload_estimate import readable_vector
from payload_id_core.robot_id import fit_given_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from xtraj_cell import RATE, cached, xtraj_cell  # noqa: E402 - tools/: bench/accuracy.py's cell and cache

ROBOTS = os.environ.get("XCAL_ROBOTS", "panda").split(",")
METHODS = os.environ.get("XCAL_METHODS", "khalil-1,khalil-2").split(",")
FIRST_NOISE_SEED = int(os.environ.get("XCAL_FIRST_NOISE_SEED", "100"))
NOISE_DRAWS = int(os.environ.get("XCAL_NOISE_DRAWS", "40"))
ROBOT_SEEDS = tuple(range(int(os.environ.get("XCAL_ROBOT_SEEDS", "20"))))
PAYLOADS = {"ur10": (4.0, np.array([0.02, -0.03, 0.08]), np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's
            "panda": (1.5, np.array([0.01, -0.02, 0.05]), np.diag([0.004, 0.005, 0.003]))}
AXES = ("mass", "x", "y", "z")


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def calibration(out: dict, robot_name: str) -> None:
    xc = xtraj_cell(robot_name)
    m = xc.model
    frame = m.default_payload_frame
    payload = (from_mass_com_inertia(*PAYLOADS[robot_name]), frame)
    exact = cached(f"xtraj sources {robot_name} calibration without noise", lambda: fit_given_model(
        m, xc.recording(xc.calibration_motion(), None, 1.0, 0, noise_std=0.0), friction="nonlinear"))
    traj = load_trajectory(f"{robot_name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    noise_free = xc.recording(motion, payload, 1.03, 0, noise_std=0.0)

    def estimate(method, robot, run, **options):
        est = identify_payload(method, m, robot, run, frame, **options)
        return readable_vector(est.phi)[:4], est.readable_std()[:4]

    z: dict[tuple[str, str], list[np.ndarray]] = {}
    for method in METHODS:
        ref, _ = estimate(method, exact, noise_free, include_robot_uncertainty=False)
        for seed in range(FIRST_NOISE_SEED, FIRST_NOISE_SEED + NOISE_DRAWS):
            got, std = estimate(method, exact, xc.recording(motion, payload, 1.03, seed),
                                include_robot_uncertainty=False)
            z.setdefault((method, "noise"), []).append((got - ref) / std)
        ref, _ = estimate(method, exact, noise_free)
        for seed in ROBOT_SEEDS:
            t0 = time.perf_counter()
            got, std = estimate(method, xc.robot(seed), noise_free)
            z.setdefault((method, "robot"), []).append((got - ref) / std)
            log(f"{robot_name} {method} identification {seed}: z {np.round(z[(method, 'robot')][-1], 2).tolist()} "
                f"({time.perf_counter() - t0:.0f} s)")
    for (method, share), rows in z.items():
        a = np.array(rows)
        key = f"xcal_{robot_name}_{method.replace('-', '_')}_{share}"
        rms = np.sqrt(np.mean(a**2, axis=0))
        for i, axis in enumerate(AXES):
            out[f"{key}_z_rms_{axis}"] = float(rms[i])
        out[f"{key}_z_max"] = float(np.max(np.abs(a)))
        log(f"{key}: |z| RMS mass/x/y/z {np.round(rms, 2).tolist()} over {len(rows)}, mean "
            f"{np.round(a.mean(axis=0), 2).tolist()}, largest {np.max(np.abs(a)):.2f}")


def main() -> None:
    limit_blas_threads()
    out: dict[str, float] = {}
    for robot_name in ROBOTS:
        calibration(out, robot_name)
    print(json.dumps({k: round(v, 4) for k, v in out.items()}))


if __name__ == "__main__":
    main()
