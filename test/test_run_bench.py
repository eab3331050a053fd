"""tools/run_bench.py: every bench script's last JSON line merged into one flat file; failures named."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_merges_the_figures_of_every_script_and_reports_failures(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "a.py").write_text('print("warming up")\nprint(\'{"a_time_s": 1.5, "a_err_pct": 0.1}\')\n')
    (bench / "b.py").write_text('import json\nprint(json.dumps({"b_update_us": 42}))\n')
    (bench / "c.py").write_text('raise SystemExit("broken benchmark")\n')
    (bench / "_helper.py").write_text('raise SystemExit("helpers are not benchmarks")\n')
    out = tmp_path / "out" / "bench.json"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "run_bench.py"), str(bench), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1                       # c.py failed, and the exit code says so
    assert "c.py: FAILED" in proc.stderr and "broken benchmark" in proc.stderr
    assert "_helper" not in proc.stderr
    assert json.loads(out.read_text()) == {"a_time_s": 1.5, "a_err_pct": 0.1, "b_update_us": 42}


def test_all_good_exits_zero(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "a.py").write_text('print(\'{"x_s": 2}\')\n')
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "run_bench.py"), str(bench), str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    assert json.loads(out.read_text()) == {"x_s": 2}
