"""Structure of the numerical payload Jacobian against the papers' symbolic ones (Xu 2024 eq. 12–16,
Gaz 2017 eq. 31–35), and the identifiability report."""

import numpy as np
import pinocchio as pin
import pytest

from payload_id_core.dynamics.base_params import compute_base_parameters
from payload_id_core.dynamics.inertia import PARAM_NAMES, transform_matrix
from payload_id_core.dynamics.model import RobotModel
from payload_id_core.dynamics.regressor import payload_regressor
from payload_id_core.payload.jacobian import identifiable_entries, payload_jacobian
from payload_id_core.payload.linear import generalized_lstsq

IDX = {n: i for i, n in enumerate(PARAM_NAMES)}


def _unit_rows(J):
    """Parameters i for which some row of J is exactly ±e_i: they enter ε directly."""
    out = set()
    for row in J:
        nz = np.flatnonzero(np.abs(row) > 1e-9)
        if nz.size == 1 and abs(abs(row[nz[0]]) - 1) < 1e-9:
            out.add(PARAM_NAMES[nz[0]])
    return out


@pytest.fixture(scope="module")
def ur10():
    m = RobotModel.from_urdf("ur10")
    # Xu's DH frame 6: origin at the last joint, z along its axis. In this URDF the last joint turns about
    # wrist_3_link's y, so add a frame rotated by -90° about x (its z = the joint's y).
    joint = m.model.getJointId("wrist_3_joint")
    parent = m.model.getFrameId("wrist_3_link")
    m.model.addFrame(pin.Frame("xu_frame6", joint, parent, pin.SE3(pin.rpy.rpyToMatrix(-np.pi / 2, 0, 0), np.zeros(3)),
                               pin.FrameType.OP_FRAME))
    m.data = m.model.createData()
    return m, compute_base_parameters(m)


def test_ur10_structure_matches_xu_eq_12_to_16(ur10):
    m, base = ur10
    J = payload_jacobian(m, base.K, "xu_frame6")
    # Eq. 12: Ixy, Ixz, Iyz, Izz, m·cx, m·cy are elements of ε themselves.
    assert {"Ixy", "Ixz", "Iyz", "Izz", "mcx", "mcy"} <= _unit_rows(J)
    # Eq. 13: the mass enters alone, scaled by the link lengths a3 = 0.612, a4 = 0.5723 and d5 = 0.1157.
    mass_only = [row[IDX["m"]] for row in J if abs(row[IDX["m"]]) > 1e-9 and np.all(np.abs(np.delete(row, 0)) < 1e-9)]
    scales = np.abs(mass_only)
    for length in (0.612, 0.5723, 0.1157):
        assert np.min(np.abs(scales - length)) < 1e-6
    # Eq. 15–16: Iyy never enters alone, only as Ixx − Iyy (our base also keeps an Ixx-only element,
    # grouped with link 5's Ixx5 − Iyy5, which Xu's base writes differently).
    assert "Iyy" not in _unit_rows(J)
    assert any(abs(r[IDX["Ixx"]] + r[IDX["Iyy"]]) < 1e-9 and abs(r[IDX["Ixx"]]) > 0.5 for r in J)
    # All ten are determined through ε (eq. 12–16 solve for every one of them).
    assert identifiable_entries(J).all()


def test_ur10_frame_of_the_urdf_has_the_same_structure_up_to_axis_naming(ur10):
    m, base = ur10
    J = payload_jacobian(m, base.K, "wrist_3_link")        # joint axis = y here
    assert {"Ixy", "Ixz", "Iyz", "Iyy", "mcx", "mcz"} <= _unit_rows(J)
    # The same Jacobian seen from another frame: J_frame = J_link · X(placement).
    J_tool = payload_jacobian(m, base.K, "tool0")
    _, placement = m.frame_in_joint("tool0")
    np.testing.assert_allclose(J_tool, J @ transform_matrix(placement), atol=1e-12)


def _gaz_pi(phi_std):
    """Gaz 2017 eq. 29 from the URDF's standard parameters (link frames at the proximal joints; Gaz's DH
    frames at the distal ends, a1 = 1, a2 = 0.5)."""
    out = []
    dh = []
    for i, a in enumerate((1.0, 0.5)):
        X = transform_matrix(pin.SE3(np.eye(3), np.array([-a, 0.0, 0.0])))  # URDF frame seen from the DH frame
        p = X @ phi_std[10 * i:10 * i + 10]
        dh.append((p[0], p[1], p[2], p[9]))   # m, m·cx, m·cy, Jzz about the DH origin
    (m1, h1x, h1y, j1), (m2, h2x, h2y, j2) = dh
    a1, a2 = 1.0, 0.5
    out = [0.5 * (m2 * a2**2 + j2) + a2 * h2x, h2x + a2 * m2, h2y,
           0.5 * (j1 + a1**2 * m1 + a1**2 * m2) + a1 * h1x, h1x + a1 * m1 + a1 * m2, h1y]
    return np.array(out)


def test_planar_2r_reproduces_gaz_eq_31_to_35():
    m = RobotModel.from_urdf("planar_2r")
    base = compute_base_parameters(m)
    J = payload_jacobian(m, base.K, "tool0")
    # Eq. 33: only m, m·cx, m·cy (in the plane) and Jzz act.
    ok = identifiable_entries(J)
    assert [PARAM_NAMES[i] for i in np.flatnonzero(ok)] == ["m", "mcx", "mcy", "Izz"]
    # Gaz's coefficients are a linear map of the standard parameters; expressed on our base: G = T K.
    G = np.column_stack([_gaz_pi(e) for e in np.eye(20)])
    T = G @ np.linalg.pinv(base.K)
    np.testing.assert_allclose(T @ base.K, G, atol=1e-9)   # same row space: both are base parameter sets
    assert base.b == 6 and abs(np.linalg.det(T)) > 1e-6
    # Eq. 32: in Gaz's coordinates our Jacobian is exactly his reduced one (rows 1–5, zero row 6).
    cols = [IDX[k] for k in ("m", "mcx", "mcy", "Izz")]
    J_gaz = np.array([[0.125, 0.5, 0, 0.5], [0.5, 1, 0, 0], [0, 0, 1, 0], [0.5, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_allclose(T @ J[:, cols], J_gaz, atol=1e-9)
    # Eq. 34 -> 35: the paper's estimated coefficients, converted to our base, give its payload estimate.
    pi_hat = np.array([0.1112, 0.6, 0.04, 1.3651, 3.2, 0.03])
    pi_hat_l = np.array([0.6144, 1.8, 0.19, 2.1152, 4.7, 0.03])
    eps = np.linalg.solve(T, pi_hat_l - pi_hat)
    sol = generalized_lstsq(J, eps, np.eye(6))
    np.testing.assert_allclose(sol.x[cols], [1.5, 0.45, 0.15, 0.1814], atol=2e-4)
    assert list(sol.identifiable) == list(ok)
    # Jzz about the frame-2 origin 0.1814 = Izz about the CoM + m |c|² (c = (0.3, 0.1)): Izz ≈ 0.0314.
    assert abs(sol.x[IDX["Izz"]] - 1.5 * (0.3**2 + 0.1**2) - 0.0314) < 2e-4


def test_identifiable_entries_on_rank_deficient_motion():
    m = RobotModel.from_urdf("ur10")
    rng = np.random.default_rng(0)
    q = rng.uniform(-2, 2, (200, 6))
    # Static poses only: inertia is invisible, mass and first moments are determined.
    W = payload_regressor(m, "wrist_3_link", q, np.zeros_like(q), np.zeros_like(q))
    assert list(identifiable_entries(W.reshape(-1, 10))) == [True] * 4 + [False] * 6
    # The last joint never moves and stays at one angle while the others move: still all ten? no -
    # a single wrist orientation hides some inertia combinations; the report must not claim them.
    qd, qdd = rng.standard_normal((2, 200, 6))
    q[:, 5] = 0.3
    qd[:, 5] = qdd[:, 5] = 0.0
    W = payload_regressor(m, "wrist_3_link", q, qd, qdd).reshape(-1, 10)
    ok = identifiable_entries(W)
    assert ok[:4].all()
    s = np.linalg.svd(W / np.linalg.norm(W, axis=0), compute_uv=False)
    assert ok.all() == (s[-1] > 1e-8 * s[0])
