"""Mass steps in the flange load as the monitor names them: what a window called a contact left in the residual
(possible_step), a change named as one step or two (split_steps), and the net of two steps of opposite sign
(two_steps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from payload_id_core.monitor.detect import DetectorSettings, Event, EventKind
from payload_id_core.monitor.floor import AlarmFloor


def possible_step(F: np.ndarray, r: np.ndarray, W: np.ndarray, level: np.ndarray) -> float:
    """kg: the mass step that the residual r (N, n) left at a window's end would be, fitted on the mass column of F
    over its last fifth, trusted joints (W) only, each whitened by its running `level` (0.0: no joint to fit, or no
    step significant)."""
    k = max(1, r.shape[0] // 5)

    def step(rows: slice) -> tuple[float, float]:
        col, res, wt = F[rows, :, 0], r[rows], W[rows] / level[None, :]
        den = float(np.sum(wt * col**2))
        return (float(np.sum(wt * col * res)) / den, den) if den > 0 else (0.0, 0.0)

    dm, den = step(slice(-k, None))
    before, _ = step(slice(-2 * k, -k))
    # The k filtered rows are one observation, not k: a step not 3σ of it above none is no step seen (on joints
    # that barely feel a mass at the flange, the real UR10e's wrist, it read ±50 kg). And a step stays: a
    # contact's tail still falling (by e⁻¹ per 20 ms through the observer) is no step (a 0.1 s strike's 21 % left
    # read as +0.2 kg on the simulated cell).
    if den <= 0 or abs(dm) <= 3.0 / np.sqrt(den / k) or dm * before <= 0 or abs(dm) < 0.7 * abs(before):
        return 0.0
    return dm


def split_steps(named: Event, first: Event | None, second: Event | None, detector: DetectorSettings,
                floor: AlarmFloor, since: float) -> list[Event]:
    """The load `named` from the pending window's change (`first`, the load that window fitted; `second`, a later
    window's load of the same sign taken into it, or None) as one or two events. Two parts put on (or taken off)
    within `persist_s` of each other are two steps in the flange load; the change is named as their sum (it held),
    and the two window fits (Δm₁ ± σ₁ at the first step, Δm₂ ± σ₂ at the second, each fitted on the residual against
    the payload just before it) with the held sum H ± σ_H are three measurements of two masses: m₁, m₂ fitted by
    weighted least squares with m₁ + m₂ = H as the third row. Named apart when the residual between the steps fits a
    load of the first part's size (it stayed within the allowance on the first fit for `confirm_s` after its
    verdict before the second step), the three agree (χ² ≤ 9 on one degree of freedom) and each mass is a change
    the detector names (above `min_mass_change_kg` and 3σ, of the same sign); else one event, whose reason says it
    may be two parts. With no second window (a second part in the first second after a pick, in motion, raises no
    alarm: test_monitor_floor_after_change), the first window's fit against the held sum says so when they differ
    by more than the smallest change named and 3σ, and the event's σ takes in that difference; where the alarm could
    not see the load at some time after `since` (when the payload before it was named or confirmed), the rest may have
    come then, and the event is not located from `since` on (floor.AlarmFloor.unseen_span)."""
    d = detector
    if first is None or named.kind is EventKind.CHANGED or named.t_change != first.t_change or \
            not np.isfinite(first.delta_mass):
        return [named]
    a, sa, h, sh = first.delta_mass, first.delta_mass_std, named.delta_mass, named.delta_mass_std
    span = f"{named.t_verdict - named.t_change:.2f}"
    if second is None:
        gap = h - a
        if np.sign(a) != np.sign(h) or np.sign(gap) != np.sign(h) or \
            abs(gap) <= max(d.min_mass_change_kg, 3.0 * float(np.hypot(sa, sh))):
            return [named]
        # Either may be the change: the σ takes in the difference (as PayloadState.undecided_var does).
        two = replace(named, delta_mass_std=float(np.hypot(sh, gap)), reason=f"{named.reason}; two parts or "
                      f"one: its window fitted Δm {a:+.3f} ± {sa:.3f} kg, {abs(gap):.3f} kg "
                      f"{'less' if h > 0 else 'more'} than held, so a second part (or a push held) may have come "
                      f"within the {span} s before it was named, unseen (the alarm is deaf to it in the first "
                      f"second after a change); its σ takes in the difference")
        unseen = floor.unseen_span(named.t_change, h, since)
        if unseen is not None:
            two = replace(two, t_change=unseen[0], t_change_located=False, reason=f"{two.reason}; {unseen[1]}")
        return [two]
    b, sb = second.delta_mass, second.delta_mass_std
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y, wt = np.array([a, b, h]), np.array([sa, sb, sh]) ** -2.0
    cov = np.linalg.inv(A.T @ (A * wt[:, None]))
    m = cov @ A.T @ (wt * y)
    chi2 = float(np.sum(wt * (y - A @ m) ** 2))
    s1, s2 = float(np.sqrt(cov[0, 0])), float(np.sqrt(cov[1, 1]))
    apart = second.t_change - named.t_change
    # The second window's fit is made on the residual against the first's, so the sum agrees by construction: what
    # tells a second step from the first fit's error is the residual between them, within the allowance on the
    # first fit (the CUSUM at zero) for at least a verdict window's length after the first verdict. A first fit off
    # by a kilogram alarms again within a few samples of its window's end.
    quiet = second.t_change - first.t_verdict
    named_apart = all(np.sign(mk) == np.sign(h) and abs(mk) > max(d.min_mass_change_kg, 3.0 * sk)
                      for mk, sk in ((m[0], s1), (m[1], s2)))
    told = quiet >= d.confirm_s and chi2 <= 9.0 and named_apart
    steps = (f"window fits Δm {a:+.3f} ± {sa:.3f} kg at {named.t_change:.3f} s and {b:+.3f} ± {sb:.3f} kg at "
             f"{second.t_change:.3f} s ({quiet:.2f} s after the first's verdict), held together Δm {h:+.3f} ± "
             f"{sh:.3f} kg (χ² {chi2:.1f} on 1)")
    if not told:
        return [replace(named, reason=f"{named.reason}; two parts or one, within {apart:.2f} s: the {steps} do not "
                        "tell two steps apart")]
    kind = EventKind.PICKED if h > 0 else EventKind.PLACED
    return [replace(named, delta_mass=float(m[0]), delta_mass_std=s1, delta_phi=first.delta_phi.copy(),
                    reason=f"{named.reason}; the first of two parts {apart:.2f} s apart, Δm {m[0]:+.3f} ± "
                    f"{s1:.3f} kg from the {steps}"),
            Event(kind, second.t_change, second.t_alarm, named.t_verdict, float(m[1]), s2, second.delta_phi,
                  f"{second.reason}; the second of two parts, {apart:.2f} s after the first, Δm {m[1]:+.3f} ± "
                  f"{s2:.3f} kg from the {steps}", t_change_located=second.t_change_located)]


def two_steps(since: float, alarm: float, taken_in: tuple[float, float, float] | None,
              persist_s: float) -> tuple[float, str]:
    """(alarm, note) of a load named while a window's load of the other sign was taken into it (`taken_in`: its
    (t_change, t_alarm, Δm), PayloadMonitor._decide): the change named is the net of the two steps, and neither step's
    time is its time, so the event spans from its own change to that window's alarm, not located, and says so. ('' :
    none taken in.) A place followed within `persist_s` by a pick the motion could not yet tell from a push's release
    was named as one `picked` of the net, at the place's time, said located."""
    if taken_in is None:
        return alarm, ""
    t_step, t_alarm, dm = taken_in
    end = max(alarm, t_alarm)
    return end, (f"; its time is not located within [{since:.3f}, {end:.3f}] s: the net of two steps, the second "
                 f"({dm:+.3f} kg fitted at {t_step:.3f} s) within {persist_s:g} s of the first, which the "
                 "motion between could not tell from a push and its release")
