"""Property-based fuzzing of the offline command line at scale (issue 32 item 3): every target of
tools/cli_fuzz.py (mutated bags, UR CSVs, robot.yaml, payload.yaml, trajectory.yaml, each read by a command)
with many drawn cases, where `make test` runs a few (test/test_cli_fuzz.py).

Prints one JSON object as the last stdout line: fuzz_cases (cases run: a mutation a bag cannot hold is not one),
fuzz_clean, fuzz_defects, fuzz_defect_<class> per class of broken contract (a traceback names its exception and
where it escaped), the same as fuzz_outside_* for cases run as their own process (the exit code and stderr a
user sees), and fuzz_seconds. The defects' mutations go to stderr, one line each, so a defect can be replayed.

Usage: bench/fuzz.py [EXAMPLES_PER_TARGET (30)] [OUTSIDE_EXAMPLES_PER_TARGET (2)] [SEED (default: random)]
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


def _case_counter(inputs, work: Path, name: str, target, outside: bool, counts: collections.Counter):
    """The property one target's drawn cases run: the case judged and counted (no assertion: all are counted)."""
    def case(mutation) -> None:
        outcome = target.case(inputs, mutation, cli_fuzz.fresh_dir(work), outside)
        if outcome.defect == "unwritable mutation":
            return
        counts["cases"] += 1
        if outcome.clean:
            counts["clean"] += 1
            return
        counts[f"defect {outcome.defect}"] += 1
        print(f"{'outside ' if outside else ''}{name}: {outcome.defect}: {mutation}: "
              f"{' '.join(outcome.err.split())[:300]}", file=sys.stderr)
    return case


def _run(inputs, work: Path, examples: int, rng_seed: int | None, outside: bool, counts: collections.Counter) -> None:
    for name, target in cli_fuzz.TARGETS.items():
        run = settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
                       suppress_health_check=list(HealthCheck))(
            given(target.mutations)(_case_counter(inputs, work, name, target, outside, counts)))
        (seed(rng_seed)(run) if rng_seed is not None else run)()


def _figures(prefix: str, counts: collections.Counter) -> dict[str, float]:
    figures: dict[str, float] = {f"{prefix}_cases": counts["cases"], f"{prefix}_clean": counts["clean"],
                                 f"{prefix}_defects": counts["cases"] - counts["clean"]}
    for key, n in sorted(counts.items()):
        if key.startswith("defect "):
            figures[f"{prefix}_defect_" + re.sub(r"[^a-z0-9]+", "_", key[7:].lower()).strip("_")] = n
    return figures


def main(examples: int, outside_examples: int, rng_seed: int | None) -> dict[str, float]:
    t0 = time.monotonic()
    inside: collections.Counter[str] = collections.Counter()
    outside: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="payload_id_fuzz_") as tmp:
        root = Path(tmp)
        inputs = cli_fuzz.make_inputs(root / "inputs")
        work = root / "work"
        work.mkdir()
        _run(inputs, work, examples, rng_seed, False, inside)
        if outside_examples:
            _run(inputs, work, outside_examples, rng_seed, True, outside)
    figures = _figures("fuzz", inside)
    if outside_examples:
        figures.update(_figures("fuzz_outside", outside))
    figures["fuzz_seconds"] = round(time.monotonic() - t0, 1)
    return figures


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print(json.dumps(main(args[0] if args else 30, args[1] if len(args) > 1 else 2,
                          args[2] if len(args) > 2 else None)))
