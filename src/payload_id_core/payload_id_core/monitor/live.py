"""The payload monitor fed live joint states between identify goals (the payload_estimator's monitor mode), free
of ROS: PayloadMonitor built on the last estimate the project stands behind, efforts turned into torques with the
drive gains, its re-estimates as PayloadEstimates, and the joint states that stop arriving noticed (they feed
nothing, so the monitor itself cannot notice).

What survives (issue 31): switching the monitor off and on keeps its PayloadMonitor (`suspend`; the carried
payload, its σ, the tare and a change being re-estimated), and it is switched off at most once per
`MIN_TOGGLE_INTERVAL_S` (ToggleLimit; switching on, which resumes, is never refused); a node restart starts from
the saved re-estimate, its tare, the unloaded robot's friction learnt, whether the payload was still unconfirmed
the last joint-state stamp watched and the covariance it decided with beyond the published one, robot.yaml's held-out
model error in it included, and the state itself: its fit, a change still being re-estimated, a doubt, whether it was
armed (`saved_tare`, `saved_unloaded`, `saved_unconfirmed`, `saved_watched_until`, `saved_carried`,
payload.result_file); that state is saved with every publication and whenever it changes materially between them
(`LiveStep.save`, carried_saves.CarriedSaves: rate-limited). A second publisher
of the same joints pauses it (`feed`'s `second_source`), said once, until that publisher has been silent for
`OtherPublisher.wait` (several of its periods: one that sends a message every few drains paused only the drains it
landed in, and the pause was said 572 times while a real pick went unseen). Its floor, the smallest mass change the
alarm can see here (PayloadMonitor.mass_floor), is said at its start and kept in every re-estimate's mass σ
(`floored`) but one conditioned on a weighed mass (the node's known_mass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.errors import PayloadIdError
from payload_id_core.monitor.carried_saves import CarriedSaves
from payload_id_core.monitor.detect import DetectorSettings
from payload_id_core.monitor.monitor import PayloadMonitor
from payload_id_core.monitor.settings import MonitorSettings
from payload_id_core.monitor.state import MonitorUpdate, PayloadState
from payload_id_core.notes import Note, NoteCode
from payload_id_core.payload.finish import judge_quality
from payload_id_core.payload.mass_limit import monitor_max_mass
from payload_id_core.payload.priors import PayloadPrior, apply_prior
from payload_id_core.payload.result_file import MonitorCarried, SavedResult
from payload_id_core.payload_estimate import PayloadEstimate, Quality
from payload_id_core.robot_id.result import RobotIdentification

MIN_TOGGLE_INTERVAL_S = 0.5   # s between two switches off of the monitor (a change's decision takes ~0.1 s)
# s: the least silence of another publisher of the same joints before the monitor resumes. `ros2 topic pub`, the way
# a second publisher is most often started by hand, sends once a second by default; its period is also what is
# assumed of a publisher heard once (its own not known yet).
PUBLISHER_SILENCE_S = 1.0
PUBLISHER_PERIODS = 3         # periods of that publisher it must have missed: one lost message is no silence


def publisher_wait(silence_s: float, interval: float | None) -> float:
    """s a publisher heard every `interval` s (None: heard once, its period not known, taken as `silence_s`) must be
    silent before it counts as gone: max(silence_s, PUBLISHER_PERIODS × its interval)."""
    return max(silence_s, PUBLISHER_PERIODS * (silence_s if interval is None else interval))


class OtherPublisher:
    """Another publisher of the same joints over time (LiveMonitor's pause): heard at the times `heard` is given, gone
    once silent for `wait` (publisher_wait of the largest interval between two of its hearings)."""

    def __init__(self, silence_s: float = PUBLISHER_SILENCE_S) -> None:
        self.silence_s = silence_s
        self.last: float | None = None        # when it was last heard (None: not heard, or gone)
        self.interval: float | None = None    # the largest interval between two hearings (None: heard once)
        self.why = ""

    def heard(self, t: float, why: str) -> bool:
        """It was heard at `t` (`why`: what the inbox said of it); True when it was not heard before (a new pause)."""
        last = self.last
        if last is not None and t > last:
            self.interval = max(self.interval or 0.0, t - last)
        self.last, self.why = t if last is None else max(last, t), why
        return last is None

    @property
    def wait(self) -> float:
        return publisher_wait(self.silence_s, self.interval)

    def gone(self, t: float) -> bool:
        """True (once) when at `t` it has been silent for `wait`: it is forgotten (heard again, it is a new pause)."""
        if self.last is None or t - self.last < self.wait:
            return False
        self.last, self.interval = None, None
        return True


class ToggleLimit:
    """At most one switch (off) per `interval` s: a client toggling at 100 Hz is told so, not obeyed."""

    def __init__(self, interval: float = MIN_TOGGLE_INTERVAL_S) -> None:
        self.interval = interval
        self._last: float | None = None

    def refusal(self, now: float) -> str:
        """'' when a switch at `now` (monotonic s) may happen (and it is counted), else why not."""
        if self._last is not None and now - self._last < self.interval:
            return (f"monitor switched off {now - self._last:.2f} s ago; switch it off at most once per "
                    f"{self.interval:g} s "
                    "(its state is kept while it is off: there is nothing to gain by toggling)")
        self._last = now
        return ""


JOINT_STATES_SILENCE, CLOCK_SILENCE = "joint states", "the simulated clock"   # LiveMonitor._silent


@dataclass
class LiveStep:
    """What one batch of joint states made: the monitor's update and its re-estimate as the identify path
    reports a payload (None: nothing newly determined)."""

    update: MonitorUpdate
    estimate: PayloadEstimate | None = None
    # Why the monitor resumed after a pause (another publisher's; a silence or a stopped clock), each said once: both
    # when one batch ends both (the node logs each line)
    resumed: list[str] = field(default_factory=list)
    # Why the monitor's state is to be saved with this batch ('' : not): every publication is, and a material change of
    # the carried state between publications (carried_saves.CarriedSaves)
    save: str = ""


def weighed_mass_applied(est: PayloadEstimate) -> bool:
    """The estimate's mass is conditioned on a weighed mass (payload/priors.apply_prior with a known mass the data
    do not contradict)."""
    return bool(np.asarray(est.identifiable, dtype=bool)[0]) and (est.prior or {}).get("known_mass") is not None \
        and "known_mass" not in (est.prior_not_applied or {})


class LiveMonitor:
    """Feed joint-state batches with `feed`; `restart` makes the next batch start a new monitor on the then last
    estimate (after a goal: on the goal's)."""

    def __init__(self, model: RobotModel, robot: RobotIdentification, frame: str, gains: np.ndarray | None,
                 rated_payload_kg: float = 0.0, stale_timeout: float = 0.5, prior: PayloadPrior | None = None,
                 publisher_silence_s: float = PUBLISHER_SILENCE_S) -> None:
        """`publisher_silence_s`: OtherPublisher's least silence; 0 when `feed`'s second_source is already named for
        as long as the other publisher lives (the node's inbox, joint_state_merge.SharedJointWatch)."""
        self.model, self.robot, self.frame = model, robot, frame
        # What is known of the payload (the node's bounding_box / known_mass): applied to every re-estimate of a
        # carried part as an identify goal applies it (a part it contradicts is suspect, the prior not applied).
        self.prior = prior
        self.gains = gains                     # torque = effort × gains (None: the efforts are torques)
        # A carried mass above 1.5 × the rated payload (0: not configured; then the URDF's name or its joints' holding
        # capacity) is no part the robot can carry.
        self.max_mass_kg = monitor_max_mass(model, rated_payload_kg)
        self.stale_timeout = stale_timeout
        self.monitor: PayloadMonitor | None = None
        # What was said to have stopped ('' : nothing): "joint states" or "the simulated clock". Said once per silence,
        # and its end once, at the first batch after it (LiveStep.resumed): the node's log then says the monitor is
        # fed again, which a test waits for instead of a fixed sleep (h200).
        self._silent = ""
        # (kg, kg²): the tare saved with the re-estimate the node started on (result_file); the first monitor
        # built takes it, so its reported part is the one carried before the restart.
        self.saved_tare: tuple[float, float] | None = None
        # The unloaded robot's friction saved with it (UnloadedFriction.to_dict; None: none saved): a monitor started
        # with a part on cannot learn it before the next place.
        self.saved_unloaded: dict | None = None
        self.saved_refused = ""                # why the saved friction was not taken ('' : it was, or none saved)
        # Why the saved payload was not confirmed yet ('' : it was; PayloadState.unconfirmed): the first monitor built
        # starts on it all the same (its estimate is suspect for that reason alone) and goes on doubting it.
        self.saved_unconfirmed = ""
        # The last joint-state stamp the monitor that saved it had seen (None: not known): a change made after it, while
        # the node was down, is not located before the first monitor's alarm (PayloadMonitor.carry_on_from_part).
        self.saved_watched_until: float | None = None
        # The covariance the saved payload was decided with, what publishing added to it and robot.yaml's held-out model
        # error in that (None: a file saved before they were kept; the monitor then decides with the published one).
        self.saved_carried: MonitorCarried | None = None
        self._fingerprint = ""                 # robot.yaml's (RobotIdentification.fingerprint), once asked for
        # Another publisher of the same joints, heard at the stamps of the batches naming it: the monitor is paused
        # while it lives (PayloadMonitor.stop_watching: its state published not watched meanwhile, restored on resume).
        self.other = OtherPublisher(publisher_silence_s)
        self._paused_for_other = False
        # What of the carried state was saved last, to save it again when it changes materially (LiveStep.save)
        self.saves = CarriedSaves()

    def carry_on_from(self, saved: SavedResult) -> None:
        """The result file the node started on (payload.result_file): the first monitor built goes on from its
        monitor re-estimate's state (all None / '' for a goal's result)."""
        self.saved_tare, self.saved_unloaded = saved.monitor_tare, saved.monitor_unloaded
        self.saved_unconfirmed, self.saved_watched_until = saved.monitor_unconfirmed, saved.monitor_watched_until
        self.saved_carried = saved.monitor_carried

    def restart(self) -> None:
        """After a goal: the next batch starts a new monitor on the goal's estimate (nothing of the old kept)."""
        self.monitor = None
        self.other = OtherPublisher(self.other.silence_s)    # a publisher still there pauses the new one, said again
        self._paused_for_other = False
        self.saved_tare = None
        self.saved_unloaded = None
        self.saved_unconfirmed = ""
        self.saved_watched_until = None
        self.saved_carried = None

    def suspend(self) -> None:
        """Switched off: what the monitor holds is kept for when it is switched on (PayloadMonitor.suspend)."""
        if self.monitor is not None:
            self.monitor.suspend()

    @property
    def tare(self) -> tuple[float, float]:
        """(kg, kg²): the empty flange's re-estimated mass and its variance, to save with a re-estimate."""
        if self.monitor is None:
            return self.saved_tare or (0.0, 0.0)
        return self.monitor.state.tare_mass, self.monitor.state.tare_var

    @property
    def carried(self) -> MonitorCarried | None:
        """The carried payload's covariance beyond the published one, to save with a re-estimate (None: none held)."""
        if self.monitor is None:
            return self.saved_carried
        if not self._fingerprint:
            self._fingerprint = self.robot.fingerprint()
        return MonitorCarried(robot_yaml=self._fingerprint, **self.monitor.carried_fields())

    @property
    def unconfirmed(self) -> str:
        """Why the carried payload is not confirmed yet ('' : it is), to save with a re-estimate."""
        if self.monitor is None:
            return self.saved_unconfirmed
        return self.monitor.state.unconfirmed

    @property
    def unloaded_friction(self) -> dict | None:
        """The unloaded robot's friction as learnt (PayloadMonitor.unloaded_friction), to save with a re-estimate."""
        if self.monitor is None:
            return self.saved_unloaded
        return self.monitor.unloaded_friction

    def floor(self, q: np.ndarray, last: PayloadEstimate | None) -> tuple[float, int]:
        """(kg, joint) of PayloadMonitor.mass_floor at q (the monitor built first if need be)."""
        if self.monitor is None:
            self.monitor = self.new_monitor(last)
        return self.monitor.mass_floor(q)

    def current_floor(self, q: np.ndarray) -> tuple[float, str]:
        """(kg, where): the floor `floored` keeps the mass σ at half of (0.0 before any monitor)."""
        if self.monitor is None:
            return 0.0, "at rest"
        # As the alarm stands over the samples just watched (fast moves and a payload still being re-estimated
        # raise it), else at rest at q (before any sample).
        floor = self.monitor.recent_floor()
        if math.isfinite(floor):
            return floor, "over the last samples"
        return self.monitor.mass_floor(q)[0], "at rest"

    def floored(self, est: PayloadEstimate, q: np.ndarray) -> PayloadEstimate:
        """`est` with its mass σ at least half the floor (of `hidden_change`, which the floor is unless no change the
        robot can carry would reach it): a change below the floor cannot be excluded by the alarm,
        and a re-estimate's 2σ band must cover it (a 0.2 kg part once went unseen while ~/payload said 0.000 ± 0.02
        kg). The floor is the alarm's as it stood over the samples just watched (PayloadMonitor.recent_floor: fast
        moves raise it), mass_floor's at rest at q before any.

        A weighed mass applied (the node's known_mass, not contradicted by the data: `weighed_mass_applied`) is left
        as the prior has it, pinned by it or not: the floor stands for a change the alarm cannot see since the data
        were fitted, and the weighed mass bounds the part carried whatever the alarm saw (the premise of applying it
        at all: the cell carries the part it weighed). Its σ combined with the data's is then the mass's σ; raising it
        to the floor published 0.018-0.034 kg for a weighed 0.004 kg exactly when the data were sharper than the
        scale (h190). A change that breaks the premise (another part picked) is the alarm's and the prior check's:
        once the data put it beyond the prior's 3 combined σ the known mass is not applied, and the floor is back."""
        if weighed_mass_applied(est):
            return est
        floor, where = self.current_floor(q)
        hidden, said = self.hidden_change(floor, est.mass)
        var = float(est.covariance[0, 0])
        if not (hidden > 0 and math.isfinite(hidden)) or (math.isfinite(var) and var >= (hidden / 2) ** 2):
            return est
        cov = est.covariance.copy()
        cov[0, 0] = (hidden / 2) ** 2
        notes = list(est.notes) + [Note(NoteCode.PAYLOAD_MONITOR, f"mass σ raised to half {said} ({where}): a "
                                        "smaller change is not seen by its alarm")]
        return replace(est, covariance=cov, notes=notes)

    def hidden_change(self, floor: float, mass: float) -> tuple[float, str]:
        """(kg, what it is): the largest mass change the alarm could have missed with its floor at `floor` and `mass`
        carried: the floor, but no more than a change can move the mass, since a place takes off at most what is
        carried and a pick adds at most what the robot can carry (`max_mass_kg`). Where no joint feels the flange's
        mass at rest (the arm upright: the real UR10e's 01_31-load ends there at a floor of 98.5 kg, 15harm's 25.6 kg,
        14harm's 13.9 kg), the floor's half stood as the σ of a payload re-estimated to ± 0.2 kg: 2.836 ± 49.267 kg
        for the 2.805 kg carried, a mass range no part the robot lifts spans."""
        reach = max(abs(mass), self.max_mass_kg - mass)
        if not floor > reach:
            return floor, f"the monitor's floor {floor:.3f} kg"
        return reach, (f"the most a change can move the mass, {reach:.3f} kg (the alarm sees none the robot can carry "
                       f"here: its floor {floor:.3f} kg is above it)")

    def new_monitor(self, last: PayloadEstimate | None) -> PayloadMonitor:
        """A monitor starting from `last` when its quality is OK, or suspect only for being unconfirmed (the saved
        mark, `saved_unconfirmed`), or saved with the monitor's state itself (MonitorCarried.fit: the state says why it
        is suspect, and goes on as it was), else from no payload."""
        phi = cov = None
        unconfirmed = self.saved_unconfirmed if self.saved_tare is not None else ""
        only_unconfirmed = bool(unconfirmed) and last is not None and last.quality is Quality.SUSPECT and \
            all(reason == unconfirmed for reason in last.quality_reasons)
        # h197: what ~/payload said need not be what the monitor carried. A load fitted on a carried part and not named
        # yet is published as the payload before it ± the fit (1.933 ± 3.408 kg for 2 kg carried and a 40 N push), which
        # judge_quality calls suspect (within 3σ of nothing), and so is a doubt: the restarted monitor started from
        # nothing, ok, while the part was carried. The state saved is the monitor's, its doubts in it.
        state_saved = self.saved_tare is not None and self.saved_carried is not None and \
            self.saved_carried.fit is not None
        only_unconfirmed = only_unconfirmed or (state_saved and last is not None)
        if last is not None and (last.quality is Quality.OK or only_unconfirmed):
            phi, cov = last.phi, np.nan_to_num(last.covariance, nan=0.0)
        settings = MonitorSettings(detector=DetectorSettings(max_mass_kg=self.max_mass_kg))
        # An identify goal's inertia, identified and determined, is published as such while the monitor carries it.
        inertia = phi is not None and last is not None and bool(np.all(last.identified_entries()[4:]))
        monitor = PayloadMonitor(self.model, self.robot, self.frame, phi, cov, settings, inertia_identified=inertia)
        if self.saved_tare is not None and phi is not None:
            still = unconfirmed if only_unconfirmed else ""
            try:
                monitor.carry_on_from_part(*self.saved_tare, unloaded=self.saved_unloaded, unconfirmed=still,
                                           watched_until=self.saved_watched_until, carried=self.saved_carried)
            except PayloadIdError as err:
                # The part and its tare are kept; only the friction is learnt again (on the empty flange).
                monitor.carry_on_from_part(*self.saved_tare, unconfirmed=still, watched_until=self.saved_watched_until,
                                           carried=self.saved_carried)
                self.saved_refused = (f"monitor: {err.problem}; not used, it is learnt again once nothing is "
                                      "carried")
        self.saved_tare, self.saved_unloaded, self.saved_unconfirmed = None, None, ""
        self.saved_watched_until, self.saved_carried = None, None
        # Its state is the one saved: the file's (a restart), or a goal's estimate the node saved with its result.
        self.saves.start(monitor)
        return monitor

    def feed(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray, effort: np.ndarray,
             last: PayloadEstimate | None, second_source: str = "") -> LiveStep:
        """One batch (t (N,), q, q̇, effort (N, n), model order); `last`: the estimate a new monitor starts on.
        `second_source`: why these samples may be two drivers' (another publisher of the same joints). From the first
        batch naming it until it has been silent for OtherPublisher.wait (by the batches' stamps), nothing is fed (one
        residual of two robots' samples made phantom contacts and a phantom part), the monitor stops watching (its
        carried payload kept, not determined, and published as not watched: PayloadMonitor.stop_watching) and the pause
        said once; on resume that is said once, the payload published again as watched, and
        the observers start from zero: a change made meanwhile rises at the restart and is named not located
        (PayloadMonitor._unwatched_change), no event is made of the gap itself. `LiveStep.save` says when the state is
        to be saved (every publication, and a material change between them: carried_saves)."""
        step = self._step(t, q, qd, effort, last, second_source)
        assert self.monitor is not None
        now = float(t[-1])
        step.save = "published" if step.estimate is not None else self.saves.due(self.monitor, now)
        if step.save:
            self.saves.saved(self.monitor, now)
        return step

    def _step(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray, effort: np.ndarray,
              last: PayloadEstimate | None, second_source: str) -> LiveStep:
        if self.monitor is None:
            self.monitor = self.new_monitor(last)
        now = float(t[-1])
        if second_source and self.other.heard(now, second_source):
            self._paused_for_other = True
            update = self.monitor.stop_watching(second_source)
            until = (f"once the other publisher has been silent for max({self.other.silence_s:g} s, "
                     f"{PUBLISHER_PERIODS} of its periods) ({self.other.wait:g} s until its period is known)"
                     if self.other.silence_s > 0
                     else "once the other publisher is no longer named")
            update.paused = f"monitor paused: {second_source}; it resumes {until}, no event meanwhile"
            return LiveStep(update, self._published(update.estimate, q[-1]))
        if self._paused_for_other:
            silent = now - (self.other.last if self.other.last is not None else now)
            if not self.other.gone(now):
                return LiveStep(MonitorUpdate())
            self._paused_for_other = False
            watched = self.monitor.resume_watching()
            resumed = (f"monitor resumed: the other publisher of these joints has been silent for {silent:.2f} s; its "
                       "observers restart from zero, and a change made while it was paused is named with its time "
                       "not located")
            step = self._fed(t, q, qd, effort)
            step.resumed.insert(0, resumed)
            if step.update.estimate is None:
                # ~/payload said the pause (unwatched, suspect): it says the payload watched again.
                step.update.estimate = watched
                step.estimate = self._published(watched, q[-1])
            return step
        return self._fed(t, q, qd, effort)

    def _fed(self, t: np.ndarray, q: np.ndarray, qd: np.ndarray, effort: np.ndarray) -> LiveStep:
        assert self.monitor is not None
        tau = effort if self.gains is None else effort * self.gains[None, :]
        update = self.monitor.update(t, q, qd, tau)
        step = LiveStep(update, self._published(update.estimate, q[-1]))
        if self._silent:
            moves = "the simulated clock moves again and " if self._silent == CLOCK_SILENCE else ""
            step.resumed.append(f"monitor resumed: {moves}joint states arrive again (stamped from "
                                f"{float(t[0]):.3f} s), watched from there")
            self._silent = ""
        return step

    def _published(self, state: PayloadState | None, q: np.ndarray) -> PayloadEstimate | None:
        """The monitor's state as ~/payload publishes it (None: nothing to publish): the identify path's estimate, the
        node's prior applied to a carried part, its mass σ floored at q."""
        if state is None:
            return None
        estimate = state.to_estimate(self.frame)
        if self.prior is not None and not state.carries_nothing:
            estimate = judge_quality(apply_prior(estimate, self.prior))
        return self.floored(estimate, q)

    def silence(self, now: float, last_stamp: float) -> str:
        """Why the monitor hears nothing, once per silence ('' otherwise): the last joint state is older than
        stale_timeout at `now`."""
        if self._silent:
            return ""
        age = now - last_stamp
        if age <= self.stale_timeout:
            return ""
        self._silent = JOINT_STATES_SILENCE
        return (f"monitor paused: no joint states for {age:.2f} s; it restarts on the next good sample, "
                "no event meanwhile")

    def clock_stopped(self, stalled_s: float) -> str:
        """Why the monitor hears nothing on simulated time whose clock stopped, once per silence ('' otherwise): the
        node's time has not moved for more than stale_timeout of wall time (`stalled_s`). `silence` cannot say it: it
        is judged on that time, and the node's timers run on it too, so when the clock's owner (a simulator) dies
        they stop with it and the monitor would say nothing at all."""
        if self._silent or stalled_s <= self.stale_timeout:
            return ""
        self._silent = CLOCK_SILENCE
        return (f"monitor paused: the simulated clock has not moved for {stalled_s:.2f} s of wall time (its owner, "
                "the simulator, stopped or died), so no joint state arrives; it restarts on the next good sample, "
                "no event meanwhile")
