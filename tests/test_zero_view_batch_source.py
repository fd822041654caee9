"""ui.zero_view.batch_source: where the GPU-count sweep's micro batch comes from, in words."""

from __future__ import annotations

import pytest

from ui.zero_view import batch_source

ELASTIC = {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4],
                          "min_gpus": 1, "max_gpus": 16, "version": 0.1}, "train_micro_batch_size_per_gpu": 4}


@pytest.mark.parametrize(("config", "said"), [
    ({"train_micro_batch_size_per_gpu": 4}, "the config writes (train_micro_batch_size_per_gpu 4) on every count"),
    ({"train_micro_batch_size_per_gpu": 4, "train_batch_size": 64}, "the config writes"),
    ({"train_batch_size": 64}, "DeepSpeed derives there from train_batch_size (÷ the data-parallel ranks)"),
    ({"train_batch_size": 64, "gradient_accumulation_steps": 2},
     "DeepSpeed derives there from train_batch_size and gradient_accumulation_steps"),
    (ELASTIC, "elastic training picks there"),
])
def test_batch_source_names_what_sets_the_micro_batch(config: dict, said: str) -> None:
    assert said in batch_source(config, "0.19.7")
