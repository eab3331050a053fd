"""What `payload-id identify --ros` prints for people (issue 33 item 5): the CoM in mm with its σ in the streaming
feedback, and a truth read back from payload.yaml without round-off shown as a number (the demo printed
-4.3368e-19 as a true product of inertia)."""

from types import SimpleNamespace

from payload_id_core.payload_estimate import PayloadEstimate
from payload_id_ros.cli.identify import feedback_line, print_estimate
from payload_id_ros.demo import HIDDEN_PAYLOAD


def test_the_truth_prints_without_round_off(capsys):
    truth = PayloadEstimate.from_dict(HIDDEN_PAYLOAD).to_dict()   # as identify --truth reads it
    print_estimate(truth, truth)
    table = capsys.readouterr().out
    assert "e-1" not in table and "e-2" not in table, table
    ixy = next(line for line in table.splitlines() if line.strip().startswith("ixy"))
    assert ixy.split()[-1] == "0", ixy


def test_the_feedback_prints_the_com_in_millimetres_with_its_sigma():
    vec = lambda x, y, z: SimpleNamespace(x=x, y=y, z=z)  # noqa: E731
    payload = SimpleNamespace(mass=3.512, mass_std=0.021, com=vec(0.0301, -0.0198, 0.0812),
                              com_std=vec(0.0012, 0.0015, 0.0031))
    fb = SimpleNamespace(elapsed=2.0, convergence_measure=0.006, estimate=SimpleNamespace(payload=payload))
    line = feedback_line(fb)
    assert "CoM [30.1 ± 1.2, -19.8 ± 1.5, 81.2 ± 3.1] mm" in line, line
