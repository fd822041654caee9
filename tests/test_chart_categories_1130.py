"""Memory categories named and coloured the same on every chart (a browser hunt of 30 Nov 2026: the Presets page's
comparison said "model_states" in red, the ZeRO page "model states" in blue; the ZeRO paper figure's labels said
fp16 on a bf16 config)."""

from __future__ import annotations

from ui import memory, zero_charts


def test_the_comparison_chart_colours_categories_as_the_zero_page_does():
    spec = zero_charts.config_comparison().to_dict(validate=False)
    bars = next(layer for layer in spec["layer"] if layer["encoding"].get("color"))
    scale = bars["encoding"]["color"]["scale"]
    assert scale == zero_charts.CATEGORY_COLORS.to_dict()
    assert zero_charts.category_label("model_states") in scale["domain"]


def test_the_paper_figure_labels_say_16_bit_not_fp16():
    assert [label for _, label in memory.PAPER_LABELS][:2] == ["parameters (16-bit)", "gradients (16-bit)"]
