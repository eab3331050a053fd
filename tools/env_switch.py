"""On/off switches the bench scripts read from the environment (MONITOR_LOAD_FRICTION_EXPECTED=1, ...).

A switch is spelt 1/0, true/false, yes/no or on/off (any case); unset or empty is its default. Anything else stops the
bench with exit code 2 naming the variable: before, any value but "" and "0" read as on, so MONITOR_..._ALARM=false
turned the setting ON and the figures were measured with what the user meant to switch off (h220)."""
from __future__ import annotations

import os
import sys

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def env_switch(name: str, default: bool = False) -> bool:
    """The switch `name` in the environment, `default` where it is unset or empty; exit 2 on any other spelling."""
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in _ON:
        return True
    if value in _OFF:
        return False
    print(f"{name}={os.environ[name]!r} is not a switch: set it to 1 or 0 (true/false, yes/no, on/off)",
          file=sys.stderr)
    raise SystemExit(2)
