"""Reading and writing files: rosbag2 recordings, UR CSV recordings, all-or-nothing output files.

Callers outside the package import from here. The face is lazy (lazy_exports): writing a YAML file must not
load rosbags or the CSV reader's filters."""

# ruff: noqa: F401 - the TYPE_CHECKING imports are the face's names, typed; __all__ lists them at run time
from typing import TYPE_CHECKING

from payload_id_core.lazy_exports import lazy_exports

_EXPORTS = {
    "bag": ["read_bag", "read_effort_unit", "write_bag"],
    "files": ["OutputNotWritable", "atomic_write_bytes", "atomic_write_text", "atomic_write_yaml",
              "check_output_file", "read_yaml_mapping"],
    "ur_csv": ["read_ur_csv"],
}
__all__ = sorted(name for names in _EXPORTS.values() for name in names)
if TYPE_CHECKING:  # the same names, for type checkers (test_architecture checks that the two agree)
    from payload_id_core.io.bag import read_bag, read_effort_unit, write_bag
    from payload_id_core.io.files import (
        OutputNotWritable,
        atomic_write_bytes,
        atomic_write_text,
        atomic_write_yaml,
        check_output_file,
        read_yaml_mapping,
    )
    from payload_id_core.io.ur_csv import read_ur_csv
else:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
