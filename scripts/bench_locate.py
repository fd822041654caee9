"""Where findings point (``core.source_map.key_positions``) against ``core.validate`` of the same config, on
configs at the 1 MB limit and on a real preset: in-process, median of 5 runs each.

Run: ``.venv/bin/python scripts/bench_locate.py``
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench import median_time  # scripts/ is on the path when run as a script

from core import validate
from core.io import MAX_CONFIG_BYTES, load_config
from core.source_map import key_positions

ROOT = Path(__file__).resolve().parent.parent


def at_the_limit(make: Callable[[int], str]) -> str:
    """The largest ``make(n)`` within the config size limit."""
    low, high = 1, 2
    while len(make(high).encode()) <= MAX_CONFIG_BYTES:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if len(make(middle).encode()) <= MAX_CONFIG_BYTES else (low, middle)
    return make(low)


def main() -> None:
    preset = json.loads((ROOT / "presets" / "zero3-bf16.json").read_text())["config"]
    texts = {
        "a preset (zero3-bf16)": json.dumps(preset, indent=2),
        "flat keys, compact": at_the_limit(lambda n: json.dumps({f"k{i}": i for i in range(n)})),
        "nested sections, indented": at_the_limit(lambda n: json.dumps(
            {f"s{i}": {"a": i, "b": [1, 2], "c": {"d": "x"}} for i in range(n)}, indent=2)),
    }
    for name, text in texts.items():
        config = load_config(text)
        locate_s = median_time(lambda text=text: key_positions(text), 5)
        validate_s = median_time(lambda config=config: validate(config, world_size=8), 5)
        print(f"{name}: {len(text.encode()) / 1e6:.2f} MB, {len(key_positions(text))} paths: "
              f"key_positions {locate_s * 1000:.1f} ms, validate {validate_s * 1000:.1f} ms")


if __name__ == "__main__":
    main()
