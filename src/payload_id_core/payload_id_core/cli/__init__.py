"""The `payload-id` command line: one module per subcommand, each with add_arguments() and run()."""
