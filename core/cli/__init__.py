"""``dsconfig``, the command line: ``commands`` (the parser, ``main`` and the config commands), one module
per other group of subcommands, and ``common`` (exit codes, the one usage error, argument types)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TextIO


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run ``dsconfig`` and return its exit code (the ``dsconfig`` entry point)."""
    from core.cli.commands import main as run

    return run(argv, out)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dsconfig`` with every subcommand."""
    from core.cli.commands import build_parser as build

    return build()
