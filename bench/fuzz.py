"""Property-based fuzzing of the offline command line at scale (issue 32 item 3): every target of
tools/cli_fuzz.py (mutated bags, UR CSVs, robot.yaml, payload.yaml, trajectory.yaml, each read by a command)
with many drawn cases, where `make test` runs a few (test/test_cli_fuzz.py).

Prints one JSON object as the last stdout line: fuzz_cases (cases run: a mutation a bag cannot hold is not one),
fuzz_clean, fuzz_defects, fuzz_defect_<class> per class of broken contract (a traceback names its exception and
where it escaped), fuzz_seconds. Usage: bench/fuzz.py [EXAMPLES_PER_TARGET (default 30)] [SEED (default random)];
the defects' mutations go to stderr, one line each, so a defect can be replayed.
"""

from __future__ import annotations

import collections
import json
import re
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cli_fuzz  # noqa: E402 - found through the sys.path entry above


def main(examples: int, rng_seed: int | None) -> dict[str, float]:
    counts: collections.Counter[str] = collections.Counter()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="payload_id_fuzz_") as tmp:
        root = Path(tmp)
        inputs = cli_fuzz.make_inputs(root / "inputs")
        work = root / "work"
        work.mkdir()
        for name, target in cli_fuzz.TARGETS.items():
            def case(mutation, target=target, name=name):
                outcome = target.case(inputs, mutation, cli_fuzz.fresh_dir(work))
                if outcome.defect == "unwritable mutation":
                    return
                counts["cases"] += 1
                if outcome.clean:
                    counts["clean"] += 1
                    return
                counts[f"defect {outcome.defect}"] += 1
                print(f"{name}: {outcome.defect}: {mutation}: {' '.join(outcome.err.split())[:300]}", file=sys.stderr)

            run = settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
                           suppress_health_check=list(HealthCheck))(given(target.mutations)(case))
            (seed(rng_seed)(run) if rng_seed is not None else run)()
    figures: dict[str, float] = {"fuzz_cases": counts["cases"], "fuzz_clean": counts["clean"],
                                 "fuzz_defects": counts["cases"] - counts["clean"]}
    for key, n in sorted(counts.items()):
        if key.startswith("defect "):
            figures["fuzz_defect_" + re.sub(r"[^a-z0-9]+", "_", key[7:].lower()).strip("_")] = n
    figures["fuzz_seconds"] = round(time.monotonic() - t0, 1)
    return figures


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(int(args[0]) if args else 30, int(args[1]) if len(args) > 1 else None)))
