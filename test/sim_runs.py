"""The simulated UR10 run the effort-scale tests share (test_quality, test_redteam_issue29_h11)."""

import numpy as np

from payload_id_core.dynamics.friction import make_friction_model
from payload_id_core.testing.synthetic import sum_of_sines, synthetic_recording

NOISE = np.array([0.5, 0.5, 0.3, 0.1, 0.1, 0.05])


def linear_friction_run(model, seed, effort_scale=None, payload=None):
    """8 s of sum-of-sines at 100 Hz with linear friction and NOISE; efforts = torque / effort_scale (10 gives
    currents, 1/0.98 drives 2 % weaker than the model says); payload φ on tool0 when given."""
    fm = make_friction_model("linear", model.joint_names)
    t, q, qd, qdd = sum_of_sines(model, 8.0, 100.0, seed=seed)
    return synthetic_recording(model, t, q, qd, qdd, friction=fm, friction_params=np.tile([3.0, 2.0, 0.1], model.n),
                               noise_std=NOISE, seed=seed, effort_scale=effort_scale,
                               payload=None if payload is None else (payload, "tool0"))
