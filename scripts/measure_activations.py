"""Measure the bytes autograd saves for backward during a training forward + loss (CPU, random weights).

Used by tests/test_memory_activations.py to check core.memory's activation formulas; also runnable:
    python scripts/measure_activations.py llama --batch 2 --seq 64 --dtype bfloat16 --attn eager
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.models.families import training_head


def measure_saved_bytes(
    hf_config: dict[str, Any],
    batch: int,
    seq: int,
    dtype: str = "float32",
    attn_implementation: str = "eager",
    seed: int = 0,
) -> dict[str, int]:
    """Sum of the bytes of distinct storages autograd saves for backward (parameters excluded).

    Returns ``{"saved": ..., "params_seen": ...}``; the model is built with random weights in train mode,
    the loss is the model's own (labels = input ids).
    """
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.AutoConfig.for_model(**hf_config)
    config._attn_implementation = attn_implementation
    auto = getattr(transformers, training_head(hf_config["model_type"]))
    model = auto.from_config(config, attn_implementation=attn_implementation).to(getattr(torch, dtype))
    model.train()
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}
    params_seen = 0

    def pack(t: torch.Tensor):
        nonlocal params_seen
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr in param_storages:
            params_seen += 1
        elif ptr not in seen:
            seen[ptr] = storage.nbytes()
        return t

    ids = torch.randint(0, config.vocab_size, (batch, seq))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids, labels=ids)
        loss = out.loss
    loss.backward()
    return {"saved": sum(seen.values()), "params_seen": params_seen}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model_type")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--attn", default="eager")
    parser.add_argument("--config", help="JSON dict of config overrides", default="{}")
    args = parser.parse_args()
    cfg = {"model_type": args.model_type, **json.loads(args.config)}
    print(json.dumps(measure_saved_bytes(cfg, args.batch, args.seq, args.dtype, args.attn)))


if __name__ == "__main__":
    main()
