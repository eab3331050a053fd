"""Run every bench/*.py script and merge the JSON objects they print into one flat file.

Each script prints one JSON object (figure name -> number, the unit in the name) as the last
line of its stdout; one that cannot run here exits with SKIPPED_EXIT (77) and says why on stderr. A
script that fails is reported and the merge goes on, so one broken
benchmark does not hide the others; the exit code says whether any failed.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

from payload_id_core.blas import limit_blas_threads

SKIPPED_EXIT = 77   # automake's "skipped": a script that needs files absent here (bench/ur10e.py)


def main(bench_dir: str, out_path: str) -> int:
    limit_blas_threads()  # every script inherits it, including those that start processes of their own
    figures: dict[str, float] = {}
    failed = []
    for script in sorted(Path(bench_dir).glob("*.py")):
        if script.name.startswith("_"):
            continue
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        if proc.returncode == SKIPPED_EXIT:     # cannot run here (e.g. no real recordings): said, not failed
            print(f"bench {script.name}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'skipped'}",
                  file=sys.stderr)
            continue
        lines = [line for line in proc.stdout.strip().splitlines() if line.strip()]
        try:
            result = json.loads(lines[-1]) if proc.returncode == 0 and lines else None
        except json.JSONDecodeError:
            result = None
        if not isinstance(result, dict):
            failed.append(script.name)
            print(f"bench {script.name}: FAILED (exit {proc.returncode})\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        print(f"bench {script.name}: {len(result)} figures in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        figures.update(result)
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    Path(out_path).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    print(json.dumps(figures, indent=2, sort_keys=True))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
