"""Notes a result carries: a machine-readable code for programs, a sentence for people.

Commands print the text; programs (the CLI's decisions, the nodes, tests) act on the code, never on
the wording, so a sentence can be improved without breaking a caller. Codes are dotted
`<layer>.<what>` names, grouped here so the full vocabulary is visible in one place; add a member
when a new kind of note is introduced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class NoteCode(str, Enum):
    """Every kind of note the core emits. The value is what payload.yaml / robot.yaml store."""

    INFO = "info"                                   # a plain remark; also what older files' notes read as

    # -- payload layer: offline methods (payload/methods/) and the finishing path (payload/finish.py) --
    PAYLOAD_MEASURED_SIGNALS = "payload.measured_signals"      # no command recorded: measured motion used
    PAYLOAD_RESIDUAL = "payload.residual"                      # the fit's torque residual std per joint
    PAYLOAD_ROBOT_REIDENTIFIED = "payload.robot_reidentified"  # khalil-2: the loaded robot's re-identification
    PAYLOAD_UNLOADED_REFERENCE = "payload.unloaded_reference"  # what the unloaded torques / gravity came from
    PAYLOAD_STATIC_SAMPLES = "payload.static_samples"          # gaz-static: static samples and poses used
    PAYLOAD_ROW_SPACE = "payload.row_space"                    # gaz-static: solved in the static regressor's row space
    PAYLOAD_STICTION = "payload.stiction"                      # gaz-static: friction at rest in the uncertainty
    PAYLOAD_SERIAL_CORRELATION = "payload.serial_correlation"  # online σ widened for correlated residuals
    PAYLOAD_GEAR_MODEL_ERROR = "payload.gear_model_error"      # σ widened for the gear friction robot.yaml leaves out
    PAYLOAD_MODEL_ERROR_MEASURED = "payload.model_error_measured"  # σ's model error from robot.yaml's held-out runs
    PAYLOAD_MODEL_ERROR_OTHER_FRAME = "payload.model_error_other_frame"  # measured on another body: not used
    PAYLOAD_OFFSET_DRIFT_SIGMA = "payload.offset_drift_sigma"  # σ widened for robot.yaml's offsets' measured drift
    PAYLOAD_ROBOT_PRIOR = "payload.robot_prior"    # robot.yaml's parameters fitted with the run under their C_a
    PAYLOAD_LOAD_FRICTION_OFF = "payload.load_friction_off"    # not modelled: identified gains absorbed it
    PAYLOAD_MOMENTS_DISAGREE = "payload.moments_disagree"      # difference-rls: the wrist and the shoulder disagree
    PAYLOAD_LOAD_FRICTION = "payload.load_friction"            # load-dependent Coulomb μ per joint estimated
    PAYLOAD_FRICTION_CHANGE = "payload.friction_change"        # Δφ_f under load estimated
    PAYLOAD_FRICTION_CHANGE_SPREAD = "payload.friction_change_spread"  # σ widened by the fit with Δφ_f's disagreement
    PAYLOAD_OFFSET_DRIFT = "payload.offset_drift"          # the fit with the friction offsets free: shift, χ², power
    PAYLOAD_GEAR_DRIFT = "payload.gear_drift"              # the fit with robot.yaml's known μ_j free: shift, χ², power
    PAYLOAD_GAIN_DRIFT = "payload.gain_drift"              # each joint's factor of its effort free: the furthest out
    PAYLOAD_CHANGE = "payload.change"                      # a step in the payload during the run: χ², when
    PAYLOAD_GAIN_CHECK_WIDENING = "payload.gain_check_widening"  # robot.yaml's check runs widened a gain σ: not judged
    PAYLOAD_NOT_IDENTIFIABLE = "payload.not_identifiable"      # entries fixed to the prior / not determined
    PAYLOAD_MODEL_ERROR = "payload.model_error"                # residual RMS / unloaded identification RMS
    PAYLOAD_MODEL_ERROR_HIGH = "payload.model_error_high"      # that ratio above the limit: std understates
    PAYLOAD_NOT_CONVERGED = "payload.not_converged"            # online method run offline did not converge
    PAYLOAD_MONITOR = "payload.monitor"                        # re-estimated by the payload monitor (task motion)
    PAYLOAD_PROJECTED = "payload.projected"                    # raw estimate inconsistent: projected > 1σ away
    PAYLOAD_PROJECTED_WITHIN_NOISE = "payload.projected_within_noise"  # ... projected, within 1σ: not news
    PAYLOAD_ONLINE_PROGRESS = "payload.online.progress"      # online: samples and motion fed, the convergence rule
    # -- io, signals, ft, sim, testing (helper A2) --------------------------------------------------
    IO_TRUNCATED_LINE = "io.truncated_line"                 # a UR CSV's last line was cut short, ignored
    IO_CORRUPT_ROWS_DROPPED = "io.corrupt_rows_dropped"     # UR logger rows with impossible times dropped
    IO_CURRENTS_AS_TORQUES = "io.currents_as_torques"       # no drive gains: torques are motor currents
    IO_EMPTY_TRAJECTORY_IGNORED = "io.empty_trajectory_ignored"    # a JointTrajectory without points
    IO_PARTIAL_DERIVATIVES_IGNORED = "io.partial_derivatives_ignored"  # velocities/accelerations on some points only
    SIGNALS_MEASURED_AS_COMMANDED = "signals.measured_as_commanded"  # no command recorded: smoothed motion stands in
    SIGNALS_STAND_IN_SMOOTHING = "signals.stand_in_smoothing"  # how the stand-in command was smoothed
    SIGNALS_STATIC_RECORDING = "signals.static_recording"      # the arm does not move
    SIGNALS_STAMPS_ON_GRID = "signals.stamps_on_grid"          # jittered stamps: samples on the nominal grid
    SIGNALS_DELAY_ESTIMATED = "signals.delay_estimated"
    SIGNALS_DELAY_NOT_ESTIMATED = "signals.delay_not_estimated"  # estimation failed, 0 used
    SIGNALS_OUTSIDE_COMMAND_DROPPED = "signals.outside_command_dropped"
    SIGNALS_TRACKING_ERROR_ADDED = "signals.tracking_error_added"  # measured deviation from the command added
    SIGNALS_TORQUES_FILTERED = "signals.torques_filtered"      # commanded source: torques low-passed at the cutoff
    SIGNALS_TORQUES_FILTERED_LIKE_STAND_IN = "signals.torques_filtered_like_stand_in"  # ... at the stand-in's cutoff
    SIGNALS_MEASURED_FILTERED = "signals.measured_filtered"    # measured source: positions, torques low-passed
    SIGNALS_EDGES_TRIMMED = "signals.edges_trimmed"            # zero-phase filter transients dropped
    SIGNALS_DECIMATED = "signals.decimated"
    FT_SETUP = "ft.setup"                                     # mode, sensor and payload frames
    FT_SUMMARY = "ft.summary"                                 # offsets, tilt, noise, sample counts
    FT_RESIDUAL_RMSE = "ft.residual_rmse"
    FT_SATURATED = "ft.saturated"                             # saturated readings, neighbours dropped
    FT_RANGE_UNKNOWN = "ft.range_unknown"                     # saturation not checked
    FT_OUTSIDE_READINGS_DROPPED = "ft.outside_readings_dropped"
    FT_READING_GAP_DROPPED = "ft.reading_gap_dropped"
    FT_MOVING_SAMPLES_UNUSED = "ft.moving_samples_unused"     # static mode
    FT_FRAME_OVERRIDDEN = "ft.frame_overridden"               # readings' frame_id replaced as asked
    FT_PROJECTED = "ft.projected"                             # raw estimate projected onto consistent bodies
    FT_PROJECTED_WITHIN_NOISE = "ft.projected_within_noise"   # ... by less than 1σ: not news
    SIM_SETUP = "sim.setup"                                   # profile, physics step, control rate
    SIM_PAYLOAD = "sim.payload"                               # the payload mounted (ground truth)
    TESTING_SYNTHETIC = "testing.synthetic"                   # synthetic data settings
    # -- signals: two runs of one trajectory aligned (signals/align.py, issue 12 helper AL) --
    SIGNALS_RESAMPLED = "signals.resampled"                   # motion window resampled on a uniform grid
    SIGNALS_RUNS_ALIGNED = "signals.runs_aligned"             # loaded run put on the unloaded run's trajectory clock
    # -- drive gains and effort units (issue 12, helper U) -------------------------------------------
    GAINS_APPLIED = "gains.applied"                     # which drive gains turned efforts into torques, from where
    GAINS_UNIT_UNDECLARED = "gains.unit_undeclared"     # a recording or robot.yaml does not declare its effort unit
    GAINS_NONE_ON_CURRENTS = "gains.none_on_currents"   # a model identified on currents without drive gains
    GAINS_GIVEN_NOT_USED = "gains.given_not_used"       # given gains within robot.yaml's σ but not equal: its used
    # -- quality and scale plausibility (issue 12, helper Q): robot_id/scale_check.py, payload/finish.py --
    ROBOT_SCALE_CHECKED = "robot.scale_checked"          # identified gravity parameters / URDF's: plausible
    ROBOT_SCALE_IMPLAUSIBLE = "robot.scale_implausible"  # ... a common factor away: currents or wrong gains
    ROBOT_GAIN_UNDETERMINED = "robot.gain_undetermined"  # a drive gain the calibration run does not determine
    # a determined gain the calibration run cannot separate from its joint's load friction (σ widened)
    ROBOT_GAIN_LOAD_FRICTION_COLLINEAR = "robot.gain_load_friction_collinear"
    ROBOT_GEAR_FRICTION = "robot.gear_friction"          # μ|τ| per joint identified (robot_id/gear_friction.py)
    ROBOT_FRICTION_CHOSEN = "robot.friction_chosen"      # friction model chosen on held-out runs (friction_choice.py)
    ROBOT_MODEL_ERROR_FEW_MOTIONS = "robot.model_error_few_motions"  # held-out motions too few to declare on
    PAYLOAD_LOAD_FRICTION_CHOSEN = "payload.load_friction_chosen"  # on/off as robot.yaml records it for the method
    PAYLOAD_MODEL_ERROR_SEVERE = "payload.model_error_severe"  # ratio far above the limit: estimate suspect
    # σ's model error measured on fewer held-out motions than can bound another motion's: estimate suspect
    PAYLOAD_MODEL_ERROR_FEW_MOTIONS = "payload.model_error_few_motions"
    PAYLOAD_QUALITY = "payload.quality"                  # the estimate is suspect or failed: the reasons
    PAYLOAD_SCALE_UNCERTAINTY = "payload.scale_uncertainty"  # robot.yaml's scale factor off 1: σ carries it
    PAYLOAD_MODEL_RESOLUTION_FLOOR = "payload.model_resolution_floor"  # residual below 0.5 % of effort RMS: σ floored
    # -- identifiability judged from the recorded data, no payload (issue 16, helper P): payload/finish.py --
    PAYLOAD_UNDETERMINED = "payload.undetermined"        # CoM or inertia not determined by this motion (σ vs scale)
    PAYLOAD_NO_PAYLOAD = "payload.no_payload"            # mass within k σ of zero: no payload detected
    # -- prior knowledge of the payload (issue 30): payload/priors.py --
    PAYLOAD_PRIOR = "payload.prior"                      # the box / known mass used, what they determined
    PAYLOAD_PRIOR_CONTRADICTED = "payload.prior_contradicted"  # the data contradict the prior: estimate suspect
    # -- physical consistency's σ (issues 29/30): payload/physical_posterior.py --
    PAYLOAD_PHYSICALLY_NARROWED = "payload.physically_narrowed"  # σ of entries J ⪰ 0 narrowed, against the motion's
    # -- ROS nodes (payload_id_ros) --
    GOAL_CANCELLED = "node.goal_cancelled"          # the identify goal was cancelled: the estimate is partial
    GOAL_INTERRUPTED = "node.goal_interrupted"      # the cell ended the goal (shutdown, player lost): partial
    # -- ROS node inputs (issue 16, helper R) --
    NODE_INPUTS_DROPPED = "node.inputs_dropped"     # joint state / wrench messages dropped during the goal, by reason
    NODE_JOINT_STATES_LOST = "node.joint_states_lost"   # a stretch of the goal's joint states never arrived (stamps)


@dataclass(frozen=True)
class Note:
    code: NoteCode
    text: str

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict:
        return {"code": self.code.value, "text": self.text}

    @classmethod
    def from_any(cls, item: Note | str | dict) -> Note:
        """A note as stored: {code, text}; a bare string (files written before codes existed) reads as INFO."""
        if isinstance(item, Note):
            return item
        if isinstance(item, dict):
            try:
                code = NoteCode(str(item.get("code", NoteCode.INFO.value)))
            except ValueError:
                code = NoteCode.INFO  # a code from a newer release: keep the text, forget the code
            return cls(code, str(item.get("text", "")))
        return cls(NoteCode.INFO, str(item))


def has_note(notes: Iterable[Note | str], code: NoteCode) -> bool:
    return any(Note.from_any(n).code is code for n in notes)


def notes_with(notes: Iterable[Note | str], code: NoteCode) -> list[Note]:
    """The notes carrying `code` (plain strings, not yet converted by their layer, read as INFO)."""
    return [note for note in map(Note.from_any, notes) if note.code is code]
