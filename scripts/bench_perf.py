"""Time the planner: ``predict`` per call and ``recommend`` over about 500 candidates.

Usage: python scripts/bench_perf.py [--repeat N]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.memory import Shape
from core.models import get_spec
from core.perf import Cluster, predict, recommend


def _best_and_median(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    repeat = int(args[args.index("--repeat") + 1]) if "--repeat" in args else 7
    spec = get_spec("meta-llama/Llama-2-7b-hf")
    cluster = Cluster("NVIDIA H100 80GB", 8, 4)
    config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "train_batch_size": 256,
              "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "overlap_comm": True, "offload_optimizer": {"device": "cpu"}}}
    shape = Shape(2, 4096, "flash")
    calls = 1000
    best, median = _best_and_median(lambda: [predict(config, spec, cluster, shape) for _ in range(calls)], repeat)
    print(f"predict (ZeRO-3 + CPU offload, Llama-2-7B, 32 H100): best {best / calls * 1e3:.3f} ms/call, "
          f"median {median / calls * 1e3:.3f} ms/call")
    kwargs = dict(seq_len=4096, global_batch=1536, tokens=2e9, price_per_gpu_hour=2.5,
                  recompute=("none", "selective", "full"))
    rows = len(recommend(spec, cluster, **kwargs))
    best, median = _best_and_median(lambda: recommend(spec, cluster, **kwargs), repeat)
    print(f"recommend ({rows} candidates: 17 ZeRO/offload/ZeRO++ options x 10 micro batches x 3 recompute modes, "
          f"memory check included): best {best * 1e3:.0f} ms, median {median * 1e3:.0f} ms "
          f"({median / rows * 1e3:.3f} ms per candidate)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
