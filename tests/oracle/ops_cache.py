"""Where the tests' DeepSpeed releases JIT-build their C++ ops: one folder per release and processor.

Standard library only: the oracle's workers and conftest both use it.
"""

from __future__ import annotations

import hashlib
import platform
from functools import cache
from pathlib import Path

#: DeepSpeed JIT-builds its C++ ops (cpu_adam, async_io, shm_comm, ...) under TORCH_EXTENSIONS_DIR. The
#: tests keep them inside this clone, one folder per DeepSpeed version: a shared ~/.cache is rebuilt
#: anyway whenever the venv path or the version changes, and a process killed while it holds an op's
#: ``lock`` file there makes every later load of that op wait forever (torch's FileBaton has no
#: time-out), which once hung a CI run for 25 minutes.
TORCH_EXTENSIONS_ROOT = Path(__file__).resolve().parents[2] / ".torch_extensions"


@cache
def cpu_fingerprint(cpuinfo: str | None = None) -> str:
    """A short hash of this processor's model and instruction-set flags (``/proc/cpuinfo``).

    DeepSpeed compiles its CPU ops (CPU-Adam, async I/O, ...) with ``-march=native`` and a SIMD width
    chosen from these flags, so ops built on one CPU can crash with an illegal instruction, or run
    without the wide vectors, on another; the cache folder is therefore per processor.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    wanted = {"model name", "flags", "Features", "CPU implementer", "CPU part"}  # x86 and arm64 spellings
    lines = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in wanted and key not in lines:
            lines[key] = " ".join(sorted(value.split())) if key in ("flags", "Features") else value.strip()
    identity = repr(sorted(lines.items())) if lines else f"{platform.machine()} {platform.processor()}"
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


def torch_extensions_dir(version: str) -> Path:
    """Where the DeepSpeed ``version`` of the tests JIT-builds its ops on this processor."""
    return TORCH_EXTENSIONS_ROOT / f"ds{version.replace('.', '')}-cpu{cpu_fingerprint()}"


#: The C++ ops that the CI's real-DeepSpeed runs JIT-build, per release, named as DeepSpeed's CPU accelerator
#: names their builders (``create_op_builder``): the presets' trainings on their newest release (CPU-Adam for
#: offload, pinned memory for the offloaded ZeRO-3 presets, fused Adam for ``"type": "AdamW"``, the shared-memory
#: collectives every CPU run sets up). ``prebuild_ops.py`` builds them in the background while the install step's
#: pip runs, and the install waits for it; an op missing here is still built, later, by the test that loads it.
#: No async I/O: CI's NVMe preset training offloads to the CPU instead (the op alone was ~9 CPU-minutes cold);
#: ``make presets-releases`` builds it when it runs the real NVMe swap.
PREBUILT_OPS: dict[str, tuple[str, ...]] = {
    # the communication op and the Adam ops every training loads first
    "0.19.8": ("ShareMemCommBuilder", "FusedAdamBuilder", "CPUAdamBuilder", "PinMemoryBuilder"),
}
