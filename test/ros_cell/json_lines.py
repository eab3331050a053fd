"""The node tests' probes and clients (probe.py, the fake controller, the injector, payload-id's --json) print one
JSON object a line among their other output: json_lines reads those objects back, in order."""
import json


def json_lines(text: str) -> list[dict]:
    """Every line of `text` that starts with "{", parsed; the other lines (logs, tables) skipped."""
    return [json.loads(x) for x in text.splitlines() if x.startswith("{")]
