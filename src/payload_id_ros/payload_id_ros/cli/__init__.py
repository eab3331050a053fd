"""`payload-id identify --ros`, the subcommand this package adds to the core's command line (payload_id_core.cli)."""
