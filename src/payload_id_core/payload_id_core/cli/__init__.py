"""The `payload-id` command line: one module per subcommand, each with add_arguments() and run().

A plugin subcommand (the entry-point group payload_id.commands, e.g. `identify --ros`) builds its flags with the
same range-checked number parsers, from here."""

from payload_id_core.cli.numbers import finite, integer, number, positive_list

__all__ = ["finite", "integer", "number", "positive_list"]
