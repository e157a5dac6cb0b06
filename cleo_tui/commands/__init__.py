"""Subcommands of the CLI, one module per area; each has `register(subparsers)`."""
