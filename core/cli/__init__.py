"""``dsconfig``, the command line: one module per group of subcommands, shared exit codes, usage error and
argument types in ``core.cli.common``."""

from core.cli.commands import build_parser, main

__all__ = ["build_parser", "main"]
