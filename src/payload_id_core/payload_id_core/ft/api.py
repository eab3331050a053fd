"""From a Recording with /ft_sensor/wrench to a payload estimate, sensor offsets and base tilt (method `ft`)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from payload_id_core.dynamics.consistency import PROJECTION_SIGMA_NOTABLE, project_feasible
from payload_id_core.dynamics.inertia import from_mass_com_inertia
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError, parse_choice
from payload_id_core.ft.align import align_wrench
from payload_id_core.ft.compensate import FtParameters, residual_rmse
from payload_id_core.ft.identify import FtIdentification, FtMode, fit_ft, phi_covariance, to_payload_frame
from payload_id_core.ft.kinematics import (
    SensorFrame,
    SensorMotion,
    payload_transform,
    resolve_sensor_frame,
    sensor_motion,
)
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_core.signals.conditioning import conditioned_signals
from payload_id_core.signals.recording import Recording, WrenchSamples


def _readings(recording: Recording, what: str, hint: str) -> WrenchSamples:
    """The recording's F/T readings; PayloadIdError (with `hint`) when it has none."""
    if recording.wrench is None:
        raise PayloadIdError(f"{recording.source or what} holds no F/T sensor readings", hint)
    return recording.wrench


def _sensor_for(model: RobotModel, recording: Recording, wrench: WrenchSamples, sensor_frame: str | None,
                sensor_mount: tuple[str, pin.SE3] | None, notes: list[Note]) -> SensorFrame:
    frame_id = wrench.frame_id
    name = sensor_frame or frame_id
    if not name:
        raise PayloadIdError(f"{recording.source or 'recording'}: the F/T readings carry no frame_id",
                             "pass the sensor frame (sensor_frame / --sensor-frame)")
    if sensor_frame and frame_id and frame_id != sensor_frame:
        notes.append(Note(NoteCode.FT_FRAME_OVERRIDDEN,
                          f"ft: readings stamped in frame '{frame_id}' taken as frame '{sensor_frame}' as asked"))
    return resolve_sensor_frame(model, name, sensor_mount)


def _aligned_data(model: RobotModel, recording: Recording, wrench: WrenchSamples, sensor: SensorFrame, source: str,
                  cutoff_hz, delay, force_range, torque_range):
    # conditioned_signals already drops the filter transients at both ends of filtered signals.
    signals = conditioned_signals(recording, model.joint_names, source=source, cutoff_hz=cutoff_hz, delay=delay)
    aligned = align_wrench(wrench, signals.t, force_range=force_range, torque_range=torque_range,
                           source=recording.source or "recording")
    aligned.counts = {"joint_samples": len(recording.joints.t),
                      "dropped_by_conditioning": len(recording.joints.t) - len(signals.t), **aligned.counts}
    k = aligned.keep
    motion = sensor_motion(model, sensor, signals.q[k], signals.qd[k], signals.qdd[k])
    return signals, aligned, motion


def identify_ft(model: RobotModel, recording: Recording, frame: str | None = None, sensor_frame: str | None = None,
                source: str = "commanded", *, sensor_mount: tuple[str, pin.SE3] | None = None,
                mode: FtMode | str = FtMode.DYNAMIC, force_range=None, torque_range=None,
                cutoff_hz: float | None = None,
                delay: str | float = "estimate", estimate_tilt: bool = True,
                gravity_norm: float | None = None, project: bool = True, static_accel_tol: float = 0.01,
                validation: Recording | None = None) -> FtIdentification:
    """Payload (in `frame`, default the model's payload frame), sensor offsets and base tilt from F/T readings.

    The sensor frame is `sensor_frame` or the readings' frame_id: a URDF frame, or the name given
    to `sensor_mount` = (URDF frame, SE3 of the sensor in it). Joint motion comes from the
    commanded trajectory (delay-corrected) or the filtered measured positions (`source`).
    mode 'static' is Duan 2022 §2 (mass, CoM, offsets, tilt) on the held samples (payload acceleration
    below `static_accel_tol`); 'dynamic' adds the inertia from the Newton–Euler wrench (Atkeson 1986)
    and uses every sample. Readings at or beyond `force_range` / `torque_range` (N,
    N·m, scalar or per axis) are dropped and counted. `project`: report a physically consistent
    payload (projection when the raw estimate is not). `validation`: a second contact-free
    recording on which the residual RMSE before/after compensation is reported.
    """
    mode = parse_choice(FtMode, mode, "F/T identification mode")
    frame = model.payload_frame(frame)
    notes: list[Note] = []
    wrench = _readings(recording, "recording",
                       "record /ft_sensor/wrench (geometry_msgs/WrenchStamped) or pick a joint-torque method")
    sensor = _sensor_for(model, recording, wrench, sensor_frame, sensor_mount, notes)
    x_sp = payload_transform(model, sensor, frame)
    g = float(np.linalg.norm(model.gravity)) if gravity_norm is None else float(gravity_norm)

    signals, aligned, motion = _aligned_data(model, recording, wrench, sensor, source, cutoff_hz, delay,
                                             force_range, torque_range)
    if mode is FtMode.STATIC:
        # Duan §2 ignores inertia: only samples where the payload's acceleration (up to 20 cm from the
        # sensor) is below static_accel_tol are used, else the tilt is biased by the motion.
        still = _still(motion, static_accel_tol)
        aligned.counts["dropped_moving"] = int((~still).sum())
        if still.sum() < 12:
            raise PayloadIdError(
                f"static F/T identification needs held poses: only {int(still.sum())} samples have the payload "
                f"accelerating less than {static_accel_tol} m/s²",
                "hold the robot still in many wrist orientations, or use mode 'dynamic' for moving data")
        idx = np.flatnonzero(aligned.keep)
        aligned.keep[idx[~still]] = False
        aligned.force, aligned.torque = aligned.force[still], aligned.torque[still]
        motion = SensorMotion(motion.rotation[still], motion.velocity[still], motion.acceleration[still])
        aligned.counts["used"] = int(aligned.keep.sum())
        if aligned.counts["dropped_moving"]:
            aligned.notes.append(Note(NoteCode.FT_MOVING_SAMPLES_UNUSED,
                                      f"ft: static mode, {aligned.counts['dropped_moving']} moving samples "
                                      f"(payload acceleration ≥ {static_accel_tol} m/s²) not used"))
    fit, duan = fit_ft(motion, aligned.force, aligned.torque, g, mode=mode, estimate_tilt=estimate_tilt)

    params = FtParameters(sensor, fit.phi, fit.offset, (float(fit.tilt[0]), float(fit.tilt[1])), g)
    n_phi = int(fit.phi_mask.sum())
    std = np.sqrt(np.maximum(np.diag(fit.cov), 0.0))
    tilt_std = std[n_phi + 6:] if estimate_tilt else np.zeros(2)
    k = aligned.keep
    fit_rmse = residual_rmse(model, params, signals.q[k], signals.qd[k], signals.qdd[k],
                             np.hstack([aligned.force, aligned.torque]), motion=motion)
    phi_p, cov_p, ident_p = to_payload_frame(fit.phi, phi_covariance(fit), fit.phi_mask, x_sp)
    if mode is FtMode.STATIC and phi_p[0] > 1e-6:
        # Gravity alone says nothing about the inertia: report a point mass at the CoM (marked unknown).
        phi_p = from_mass_com_inertia(phi_p[0], phi_p[1:4] / phi_p[0], np.zeros((3, 3)))
    consistent = True
    if project:
        # The reported payload is projected onto physically consistent bodies (F's SDP, Wensing 2017);
        # compensation keeps the raw least-squares fit, which is what minimises the residual wrench.
        projected, consistent, dist = project_feasible(phi_p, cov_p, ident_p)
        if not consistent:
            notable = not dist <= PROJECTION_SIGMA_NOTABLE    # NaN: the projection failed, which is news
            notes.append(Note(NoteCode.FT_PROJECTED if notable else NoteCode.FT_PROJECTED_WITHIN_NOISE,
                              "ft: raw estimate not physically consistent: reported payload projected onto the "
                              f"feasible set ({dist:.3g} standard deviations away"
                              f"{'' if notable else ', within the noise'}); compensation uses the raw fit"))
            phi_p = projected
    ident = FtIdentification(
        payload=PayloadEstimate(frame=frame, phi=phi_p, covariance=cov_p, method="ft", identifiable=ident_p,
                                converged=True, convergence_time=float(signals.t[k][-1] - signals.t[k][0]),
                                physically_consistent=consistent),
        params=params, offset_std=std[n_phi:n_phi + 6], tilt_std=tilt_std, noise_std=fit.sigma,
        fit_rmse=fit_rmse, counts=dict(aligned.counts), mode=mode.value, duan=duan)
    validation_notes: list[Note] = []
    if validation is not None:
        ident.validation_rmse = validate_ft(model, ident, validation, source=source, cutoff_hz=cutoff_hz,
                                            delay=delay, force_range=force_range, torque_range=torque_range)
        validation_notes = _rmse_notes("validation", ident.validation_rmse)
    ident.payload.notes = [Note(NoteCode.FT_SETUP,
                                f"ft: {mode} identification, sensor frame '{sensor.name}', payload frame '{frame}'"),
                           *ident.summary_notes(), *_rmse_notes("identification data", fit_rmse),
                           *validation_notes,
                           *aligned.notes, *notes, *signals.notes]
    return ident


def validate_ft(model: RobotModel, ident: FtIdentification, recording: Recording, *, source: str = "commanded",
                cutoff_hz: float | None = None, delay: str | float = "estimate", force_range=None,
                torque_range=None) -> dict[str, list[float]]:
    """Per-axis residual RMSE on a contact-free recording: offsets only, gravity-only (Duan §2), full."""
    wrench = _readings(recording, "validation recording", "record /ft_sensor/wrench during the validation run")
    signals, aligned, motion = _aligned_data(model, recording, wrench, ident.params.sensor, source, cutoff_hz,
                                             delay, force_range, torque_range)
    k = aligned.keep
    return residual_rmse(model, ident.params, signals.q[k], signals.qd[k], signals.qdd[k],
                         np.hstack([aligned.force, aligned.torque]), motion=motion)


def _still(motion: SensorMotion, tol: float, reach: float = 0.2) -> np.ndarray:
    """Samples where a point within `reach` of the sensor origin accelerates less than `tol` (m/s²)."""
    v, w = motion.velocity[:, :3], motion.velocity[:, 3:]
    classical = motion.acceleration[:, :3] + np.cross(w, v)
    bound = (np.linalg.norm(classical, axis=1) + reach * np.linalg.norm(motion.acceleration[:, 3:], axis=1)
             + reach * np.sum(w ** 2, axis=1))
    return bound < tol


def _rmse_notes(what: str, rmse: dict[str, list[float]]) -> list[Note]:
    fmt = lambda v: f"force {np.round(v[:3], 3).tolist()} N, torque {np.round(v[3:], 4).tolist()} N·m"  # noqa: E731
    return [Note(NoteCode.FT_RESIDUAL_RMSE, f"ft: residual RMSE on {what}, {kind.replace('_', ' ')}: {fmt(v)}")
            for kind, v in rmse.items()]


def identify_payload_ft(model: RobotModel, recording: Recording, frame: str | None = None,
                        sensor_frame: str | None = None, source: str = "commanded", **options) -> PayloadEstimate:
    """Method `ft` for the identify-payload registry: identify_ft(...).payload (offsets, tilt, sample
    counts and residual RMSEs are in its notes)."""
    return identify_ft(model, recording, frame, sensor_frame, source, **options).payload
