"""bench/monitor.py's command line: --help printed the bench's whole run (minutes of simulation, then its JSON)
instead of the usage. Now --help prints the usage with its MONITOR_* settings and exits 0, an unknown argument exits
2, both before any work (the simulation's first step is made to fail here, so a bench that starts is seen at once)."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "monitor.py"


@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_monitor_args", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def started(*_a, **_k):
        raise AssertionError("the bench started its work")

    monkeypatch.setattr(module.RobotModel, "from_urdf", started)
    return module


@pytest.mark.parametrize(("argv", "code"), [(["--help"], 0), (["-h"], 0), (["--seeds", "3"], 2)])
def test_the_bench_parses_its_arguments_before_any_work(bench, monkeypatch, capsys, argv, code):
    monkeypatch.setattr("sys.argv", ["bench/monitor.py", *argv])
    with pytest.raises(SystemExit) as stop:
        bench.main()
    assert stop.value.code == code
    out, err = capsys.readouterr()
    if code == 0:
        assert out.startswith("usage: bench/monitor.py") and "MONITOR_HUMAN_SEEDS (7,8,9)" in out, out[:300]
        assert "monitor_human_contact_called_load_fraction" in out      # the figures it prints, described
    else:
        assert "unrecognized arguments: --seeds 3" in err, err
