"""contact_wrench's comparison with a push on a link before the flange in both models (h149, issue 31): a real load
whose rows also hold a person's push on the upper arm is not refuted as a push, while a push on the flange or the wrist
still is. Rows made from the UR10's rigid-body payload regressor and the push's joint-torque columns on a smooth
joint motion (no simulator, no observer: LoadOrPush compares whatever rows it is given)."""

import numpy as np
import pytest

from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.monitor.contact_wrench import (
    WRENCH,
    FilteredContactJacobian,
    LoadOrPush,
    LoadOrPushSettings,
    pushed_links,
)

FRAME = "tool0"
REFUTE = LoadOrPushSettings().refute_chi2
NOISE = 0.3          # N·m, the rows' whitening unit


@pytest.fixture(scope="module")
def ur10():
    model = RobotModel.from_urdf("ur10")
    t = np.arange(0.0, 3.0, 0.01)
    q0 = np.array([0.3, -1.2, 1.4, -1.6, -1.5, 0.2])
    amp = np.array([0.5, 0.3, 0.4, 0.5, 0.4, 0.6])
    w = 2 * np.pi / np.array([3.0, 2.5, 2.0, 3.0, 2.2, 2.8])
    q = q0 + amp * np.sin(w * t[:, None])
    qd = amp * w * np.cos(w * t[:, None])
    qdd = -amp * w**2 * np.sin(w * t[:, None])
    A = payload_regressor(model, FRAME, q, qd, qdd)
    links = pushed_links(model, FRAME)
    G = np.concatenate([FilteredContactJacobian(model, f, np.full(model.n, 50.0)).columns(q)
                        for f in (FRAME, *links)], axis=2)
    return model, t, A, G, links


def push_torque(G: np.ndarray, block: int, force, point) -> np.ndarray:
    """The joint torques (N, n) of `force` (N, base frame) on `point` (m, in the pushed link's frame) of push block
    `block` (0 the flange, then pushed_links)."""
    f, d = np.asarray(force, float), np.asarray(point, float)
    w = np.concatenate([f, np.outer(d, f).ravel()])
    return G[:, :, WRENCH * block: WRENCH * (block + 1)] @ w


def judged(ur10, torque: np.ndarray, seed: int = 0):
    model, t, A, G, links = ur10
    rng = np.random.default_rng(seed)
    lp = LoadOrPush(links=len(links))
    lp.restart(np.zeros(10), 0.0)
    b = torque + rng.normal(0.0, NOISE, torque.shape)
    lp.add(t, A, G, b, np.full(model.n, NOISE), np.ones(t.size, bool))
    return lp.judge(1.0)


def load_torque(ur10, mass: float) -> np.ndarray:
    _, _, A, _, _ = ur10
    phi = np.zeros(10)
    phi[0], phi[1:4] = mass, mass * np.array([0.0, 0.02, 0.08])
    return A @ phi


def test_the_earlier_link_is_the_upper_arm_and_the_links_after_it(ur10):
    assert ur10[4] == ["shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint"]


def test_a_load_with_a_push_on_the_upper_arm_is_not_refuted(ur10):
    """2 kg on the flange and 60 N held on the upper arm: the flange's push alone fits the upper arm's torques and the
    load's do not, so without that push in the load's model the rows read push over load; with it, load."""
    torque = load_torque(ur10, 2.0) + push_torque(ur10[3], 1, [20.0, -30.0, -45.0], [0.05, 0.0, 0.3])
    j = judged(ur10, torque)
    assert j.statistic <= -REFUTE, j                               # the loss h139 measured
    assert j.with_earlier_push is not None and j.with_earlier_push.statistic >= REFUTE, j.with_earlier_push
    assert j.most_for_load.statistic >= REFUTE, j


@pytest.mark.parametrize("block, force", [(0, [0.0, 0.0, -40.0]), (4, [25.0, 10.0, -30.0])],
                         ids=["flange-down", "wrist-2"])
def test_a_push_on_the_flange_or_the_wrist_is_refuted_either_way(ur10, block, force):
    j = judged(ur10, push_torque(ur10[3], block, force, [0.02, 0.03, 0.05]))
    assert j.statistic <= -REFUTE and j.most_for_load.statistic <= -REFUTE, j


def test_a_load_alone_is_confirmed_either_way(ur10):
    j = judged(ur10, load_torque(ur10, 2.0))
    assert j.statistic >= REFUTE and j.most_for_load.statistic >= REFUTE, j
