"""Build the tests' DeepSpeed C++ ops ahead of the test run, for the DeepSpeed this interpreter imports.

``scripts/install-test-deps.sh`` starts it in the background while pip installs the other releases (pip keeps
one core busy; the build takes the other), so that the tests find their ops built instead of compiling them
on the two cores the test workers share. Standard library and DeepSpeed only, like the oracle's workers: it
runs under every release's interpreter. Usage: ``PYTHON tests/oracle/prebuild_ops.py``; prints one line per
op and exits 1 if an op failed to build (the tests would then build it, or show its error, themselves).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> int:
    """Build every op of ``PREBUILT_OPS`` for the importable DeepSpeed into its ``torch_extensions_dir``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import deepspeed
    from deepspeed.accelerator import get_accelerator
    from ops_cache import PREBUILT_OPS, torch_extensions_dir

    version = deepspeed.__version__
    os.environ["TORCH_EXTENSIONS_DIR"] = str(torch_extensions_dir(version))
    failed = 0
    for builder_name in PREBUILT_OPS.get(version, ()):
        started = time.monotonic()
        builder = get_accelerator().create_op_builder(builder_name)
        try:
            builder.load(verbose=False)
        except Exception as exc:  # any build failure is reported; the tests decide
            failed += 1
            print(f"prebuild-ops {version} {builder_name}: FAILED ({type(exc).__name__}: {exc})", flush=True)
            continue
        print(f"prebuild-ops {version} {builder.NAME}: {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
