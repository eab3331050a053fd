"""The cross-motion payload error taken apart by source (issue 29; bench/accuracy.py's xtraj cell, tools/xtraj_cell.py).

The robot is identified on one excitation, the payload on another (<robot>_payload); the simulator's truths are
switched off one at a time, in a chain, and each term is the change of the estimate when its truth goes:

  robot      θ̂_a's identification error carried through the payload run's regressor: the seed's identification
             against a noise-free identification of the same excitation (its covariance kept, so every weighting and
             σ is the seed's own)
  noise      the loaded run's torque noise (1 N·m), with the robot exact
  friction   the loaded run's friction 3 % higher than the calibration's, with no noise
  lag        the 3 ms command-to-motion lag (estimated by every method)
  rest       what is left with all of them off: the friction shape (the same family, its α searched), the rotor
             inertia, the identification's own structure
  offsets    difference-rls only: its free friction offsets ΔB_j against the same fit with them out (khalil-2's
             load_changeable_friction), on the bench's runs

The drive gains and the command's sample spacing are exact in this cell (efforts are torques; commands on every
sample), so they are no term here.

xsrc_<robot>_<method>_<term>_mass_pct_rms     RMS over XSRC_SEEDS of the term's mass change, % of the mass
xsrc_<robot>_<method>_<term>_com_mm_rms_<x|y|z>  the same for each CoM axis, mm
xsrc_<robot>_<method>_total_...               the bench's error itself
xsrc_<robot>_<method>_robot_share_mass / _com_<x|y|z>  RMS over the seeds of the robot term over the σ the robot's
                                              covariance adds (√(σ² − σ² without include_robot_uncertainty)):
                                              about 1 where C_a describes θ̂_a's error
xsrc_<robot>_<method>_noise_z_rms_mass / _com_<x|y|z>  RMS of the noise term over the σ without the robot's share
xsrc_<robot>_<method>_z_max_com               the largest |CoM error| / σ over seeds and axes (the confident count's)
<method> difference_rls | difference_rls_offsets_out | khalil_1 | khalil_2 (XSRC_VARIANTS, comma-separated, default
all four; the offsets term needs difference-rls offsets out). XSRC_ROBOTS (default panda), XSRC_SEEDS (default 10:
0..9, bench/accuracy.py's seeds and their cached identifications; or a comma-separated list, e.g. 4,6). The robot
here has no offset-drift record (bench/accuracy.py's with_drift_runs), so difference-rls's offsets are free. The
last stdout line is one JSON object.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from payload_id_core.blas import limit_blas_threads
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.excitation.fourier import load_trajectory
from payload_id_core.payload.load_friction import load_changeable_friction
from payload_id_core.payload.methods import identify_payload
from payload_id_core.payload.online import difference_rls
from payload_id_core.payload_estimate import readable_vector
from payload_id_core.robot_id import fit_given_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from xtraj_cell import RATE, cached, xtraj_cell  # noqa: E402 - tools/: bench/accuracy.py's cell and cache

ROBOTS = os.environ.get("XSRC_ROBOTS", "panda").split(",")
_SEEDS = os.environ.get("XSRC_SEEDS", "10")   # a count (seeds 0..n-1) or a comma-separated list of seeds
SEEDS = tuple(int(s) for s in _SEEDS.split(",")) if "," in _SEEDS else tuple(range(int(_SEEDS)))
PAYLOADS = {"ur10": (4.0, np.array([0.02, -0.03, 0.08]), np.diag([0.02, 0.03, 0.015])),   # bench/accuracy.py's
            "panda": (1.5, np.array([0.01, -0.02, 0.05]), np.diag([0.004, 0.005, 0.003]))}
VARIANTS = tuple(os.environ.get("XSRC_VARIANTS",
                                "difference-rls,difference-rls offsets out,khalil-1,khalil-2").split(","))
# (robot exact, loaded noise std, loaded friction scale, lag) of each link of the chain
CHAIN = {"bench": (False, 1.0, 1.03, 0.003), "exact_robot": (True, 1.0, 1.03, 0.003),
         "no_noise": (True, 0.0, 1.03, 0.003), "no_friction_change": (True, 0.0, 1.0, 0.003),
         "no_lag": (True, 0.0, 1.0, 0.0)}
TERMS = {"robot": ("bench", "exact_robot"), "noise": ("exact_robot", "no_noise"),
         "friction": ("no_noise", "no_friction_change"), "lag": ("no_friction_change", "no_lag")}


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def estimate(variant: str, model, robot, loaded, frame, **options):
    """identify_payload's estimate; 'offsets out': difference-rls with ΔB_j left out of its friction change."""
    if variant != "difference-rls offsets out":
        return identify_payload(variant, model, robot, loaded, frame, **options)
    full = difference_rls.difference_jacobian

    def offsets_out(m, r, f, friction_change=True, changeable=None):
        return full(m, r, f, friction_change, changeable=load_changeable_friction(r.friction))

    difference_rls.difference_jacobian = offsets_out
    try:
        return identify_payload("difference-rls", model, robot, loaded, frame, **options)
    finally:
        difference_rls.difference_jacobian = full


def sources(out: dict, robot_name: str) -> None:
    xc = xtraj_cell(robot_name)
    m = xc.model
    frame = m.default_payload_frame
    mass, com, inertia = PAYLOADS[robot_name]
    phi = from_mass_com_inertia(mass, com, inertia)
    truth = readable_vector(phi)

    record = xc.recording

    exact = cached(f"xtraj sources {robot_name} calibration without noise", lambda: fit_given_model(
        m, record(xc.calibration_motion(), None, 1.0, 0, 0.0, 0.003), friction="nonlinear"))
    traj = load_trajectory(f"{robot_name}_payload").for_model(list(m.joint_names))
    t = np.arange(int(round(traj.duration * RATE))) / RATE
    motion = (t, *traj.evaluate(t))
    # [variant][link] -> (seeds, 4) errors (mass %, CoM mm); σ with and without the robot's covariance
    err: dict[str, dict[str, list[np.ndarray]]] = {v: {link: [] for link in CHAIN} for v in VARIANTS}
    std: dict[str, list[np.ndarray]] = {v: [] for v in VARIANTS}
    std_without_robot: dict[str, list[np.ndarray]] = {v: [] for v in VARIANTS}
    noise_free: dict[tuple, np.ndarray] = {}
    for seed in SEEDS:
        t0 = time.perf_counter()
        noisy = xc.robot(seed)
        for link, (is_exact, noise, scale, lag) in CHAIN.items():
            robot = replace(noisy, theta=exact.theta, friction=exact.friction) if is_exact else noisy
            loaded = None
            for v in VARIANTS:
                if noise == 0.0 and (link, v) in noise_free:   # the same run on every seed: once
                    err[v][link].append(noise_free[(link, v)])
                    continue
                if loaded is None:
                    loaded = record(motion, (phi, frame), scale, seed, noise, lag)
                est = estimate(v, m, robot, loaded, frame)
                got = readable_vector(est.phi)
                one = np.concatenate([[100 * (got[0] / truth[0] - 1)], 1e3 * (got[1:4] - truth[1:4])])
                err[v][link].append(one)
                if noise == 0.0:
                    noise_free[(link, v)] = one
                if link == "bench":
                    s = est.propagated_std()[:4]
                    std[v].append(np.concatenate([[100 * s[0] / truth[0]], 1e3 * s[1:4]]))
                    s = estimate(v, m, robot, loaded, frame, include_robot_uncertainty=False).propagated_std()[:4]
                    std_without_robot[v].append(np.concatenate([[100 * s[0] / truth[0]], 1e3 * s[1:4]]))
        log(f"{robot_name} seed {seed}: {time.perf_counter() - t0:.0f} s; bench " + ", ".join(
            f"{v} {np.round(err[v]['bench'][-1], 2).tolist()}" for v in VARIANTS))
    axes = ("x", "y", "z")
    for v in VARIANTS:
        key = f"xsrc_{robot_name}_{v.replace(' ', '_').replace('-', '_')}"
        e: dict[str, np.ndarray] = {link: np.array(rows) for link, rows in err[v].items()}
        rms = lambda a: np.sqrt(np.mean(np.square(a), axis=0))  # noqa: E731
        parts = {"total": e["bench"], "rest": e["no_lag"],
                 **{term: e[a] - e[b] for term, (a, b) in TERMS.items()}}
        if v == "difference-rls" and "difference-rls offsets out" in VARIANTS:
            parts["offsets"] = e["bench"] - np.array(err["difference-rls offsets out"]["bench"])
        for term, d in parts.items():
            r = rms(d)
            out[f"{key}_{term}_mass_pct_rms"] = float(r[0])
            for i, a in enumerate(axes):
                out[f"{key}_{term}_com_mm_rms_{a}"] = float(r[1 + i])
        s, s0 = np.array(std[v]), np.array(std_without_robot[v])
        robot_share = np.sqrt(np.maximum(s**2 - s0**2, 1e-30))
        share = rms(parts["robot"] / robot_share)
        noise_z = rms(parts["noise"] / s0)
        out[f"{key}_robot_share_mass"] = float(share[0])
        out[f"{key}_noise_z_rms_mass"] = float(noise_z[0])
        for i, a in enumerate(axes):
            out[f"{key}_robot_share_com_{a}"] = float(share[1 + i])
            out[f"{key}_noise_z_rms_com_{a}"] = float(noise_z[1 + i])
        z = np.abs(e["bench"]) / s
        out[f"{key}_z_max_com"] = float(np.max(z[:, 1:]))
        worst = np.unravel_index(np.argmax(z[:, 1:]), z[:, 1:].shape)
        log(f"{key}: mass |err| median {np.median(np.abs(e['bench'][:, 0])):.3f} %, σ median {np.median(s[:, 0]):.3f} "
            f"% (robot's share {np.median(robot_share[:, 0]):.3f}); RMS per term (mass %, CoM x/y/z mm): " + "; ".join(
                f"{term} {np.round(rms(d), 3).tolist()}" for term, d in parts.items())
            + f"; robot term / its σ share RMS {np.round(share, 2).tolist()}, noise term / σ without it "
            f"{np.round(noise_z, 2).tolist()}; largest CoM z {z[:, 1:][worst]:.2f} (seed {SEEDS[worst[0]]}, "
            f"{axes[worst[1]]}: robot {parts['robot'][worst[0], 1 + worst[1]]:+.2f} mm of share "
            f"{robot_share[worst[0], 1 + worst[1]]:.2f}, noise {parts['noise'][worst[0], 1 + worst[1]]:+.2f} mm of σ "
            f"{s0[worst[0], 1 + worst[1]]:.2f}, rest {e['no_noise'][worst[0], 1 + worst[1]]:+.2f} mm)")


def main() -> None:
    limit_blas_threads()
    out: dict[str, float] = {}
    for robot_name in ROBOTS:
        sources(out, robot_name)
    print(json.dumps({k: round(v, 4) for k, v in out.items()}))


if __name__ == "__main__":
    main()
