"""The ZeRO page's step-time prediction beside a config that does not fit (a browser hunt of 30 Nov 2026): it showed
"-78.6 GiB capacity" next to "Predicted step time 2.38 s ... larger micro-batches help" with nothing tying the two;
the prediction now says the config does not fit and that its advice holds only for a change that fits."""

from __future__ import annotations

from app_support import app

from core.models import get_spec

L7 = "meta-llama/Llama-2-7b-hf"
MODEL = dict(model=L7, total_params=get_spec(L7).total_params, largest_layer_params=get_spec(L7).largest_layer_params)


def _fit_warnings(at) -> list[str]:
    return [w.value for w in at.warning if "does not fit" in w.value and "speed it would run at" in w.value]


def test_a_config_that_does_not_fit_has_its_speed_qualified():
    at = app({"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": True}, "zero_optimization": {"stage": 0}},
             "pages/zero.py", **MODEL)
    assert any(m.label == "Predicted step time" for m in at.metric)
    assert _fit_warnings(at) and "GPU memory" in _fit_warnings(at)[0]


def test_a_config_that_fits_has_no_such_warning():
    at = app({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}, "pages/zero.py", **MODEL)
    assert any(m.label == "Predicted step time" for m in at.metric)
    assert not _fit_warnings(at)
