"""core.memory.estimate: the full per-GPU / per-node picture, solvers and sweeps."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import memory as m
from core import models
from core.hardware import GPU_BY_NAME
from core.memory.activations import layer_terms

LLAMA7 = models.get_spec("meta-llama/Llama-2-7b-hf")
HW = m.Hardware(gpus_per_node=8, nodes=1, gpu_memory_bytes=GPU_BY_NAME["NVIDIA A100 80GB"].memory_bytes,
                cpu_ram_per_node_bytes=1024 * m.GIB)


def _cfg(stage, opt="none", param="none", precision="fp16", optimizer="Adam", **zero):
    cfg = {
        "zero_optimization": {
            "stage": stage,
            "offload_optimizer": {"device": opt},
            "offload_param": {"device": param},
            **zero,
        },
        "optimizer": {"type": optimizer},
    }
    if precision != "fp32":
        cfg[precision] = {"enabled": True}
    return cfg


@pytest.mark.parametrize(("stage", "paper_gb"), [(0, "120"), (1, "31.4"), (2, "16.6"), (3, "1.9")])
def test_zero_paper_figure_1(stage, paper_gb):
    """ZeRO paper Fig. 1: 7.5B params, N_d = 64, mixed precision Adam (K = 12)."""
    model = m.ModelCounts(7_500_000_000, 0)
    est = m.estimate(_cfg(stage), model, m.Hardware(gpus_per_node=64), m.Shape())
    gb = est.model_states_gpu_bytes() / 1e9
    digits = len(paper_gb.split(".")[1]) if "." in paper_gb else 0
    assert f"{gb:.{digits}f}" == paper_gb


@pytest.mark.parametrize("n_gpus", [1, 2, 4, 8, 64])
def test_stage2_matches_deepspeed_estimator_gpu(n_gpus):
    """DeepSpeed's ZeRO-2 GPU figure = our persistent model states + the fp32 gradient partition of the step."""
    total = 1_234_567_891
    hw = m.Hardware(gpus_per_node=n_gpus)
    _, ds_gpu = m.estimate_zero2_model_states_mem_needs(total, n_gpus, 1, cpu_offload=False)
    est = m.estimate(_cfg(2), m.ModelCounts(total, 0), hw, m.Shape())
    step = next(c.bytes for c in est.components if c.name == "fp32 gradient partition during step")
    assert abs(est.model_states_gpu_bytes() + step - ds_gpu) <= 18  # ceil(P/N) padding vs int(18*P/N)
    _, ds_gpu_offload = m.estimate_zero2_model_states_mem_needs(total, n_gpus, 1, cpu_offload=True)
    est = m.estimate(_cfg(2, "cpu"), m.ModelCounts(total, 0), hw, m.Shape())
    assert est.model_states_gpu_bytes() == ds_gpu_offload


def test_stage2_offload_cpu_model_states_match_deepspeed_without_buffer_factor():
    total, gpn = 3_000_000_000, 4
    ds_cpu, _ = m.estimate_zero2_model_states_mem_needs(total, gpn, 1, cpu_offload=True, additional_buffer_factor=1)
    est = m.estimate(_cfg(2, "cpu"), m.ModelCounts(total, 0), m.Hardware(gpus_per_node=gpn), m.Shape())
    cpu_states = sum(c.bytes for c in est.components if c.device == "cpu" and c.category == "model_states")
    assert cpu_states == ds_cpu  # 16 bytes/param: fp32 grads + master + Adam m, v


@pytest.mark.parametrize(
    ("optimizer", "momentum", "states"),
    [
        ("Adam", None, 2),
        ("AdamW", None, 2),
        ("Lion", None, 1),
        ("Adagrad", None, 1),
        ("SGD", 0.9, 1),
        ("SGD", 0, 0),
        ("OneBitLamb", None, 2),
    ],
)
def test_optimizer_state_count(optimizer, momentum, states):
    cfg = _cfg(1)
    cfg["optimizer"] = {"type": optimizer, "params": {} if momentum is None else {"momentum": momentum}}
    est = m.estimate(cfg, LLAMA7, HW, m.Shape())
    assert est.settings.optimizer_states == states
    opt = next(c for c in est.components if c.name.startswith("optimizer states"))
    assert opt.bytes == states * 4 * -(-LLAMA7.total_params // 8)


def test_sub_group_size_zero_is_one_sub_group_per_tensor_not_the_default():
    """ZeRO-3 closes a sub-group once it holds >= sub_group_size elements (stage3.py ``_create_fp16_sub_groups``): 0
    makes every tensor its own sub-group, so the NVMe swap buffers and the sub-group gradients of the step are sized by
    the largest module's share of a rank. The model read 0 as the default (1e9), ~10x too much for Llama-2-7B on 8."""
    shape = m.Shape(1, 2048, "flash")
    per_tensor = m.estimate(_cfg(3, "nvme", "nvme", sub_group_size=0), LLAMA7, HW, shape)
    default = m.estimate(_cfg(3, "nvme", "nvme"), LLAMA7, HW, shape)
    assert per_tensor.settings.sub_group_size == 0

    def swap(est):
        return next(c for c in est.components if c.name == "optimizer swap buffers (pinned)")

    largest_share = -(-LLAMA7.largest_layer_params // 8)
    buffer_count = per_tensor.settings.offload_optimizer_buffer_count
    assert swap(per_tensor).bytes == buffer_count * 4 * largest_share * 8  # fp32, per rank x 8 ranks of the node
    assert "sub_group_size 0" in swap(per_tensor).formula
    assert swap(default).bytes == buffer_count * 4 * -(-LLAMA7.total_params // 8) * 8  # the whole partition < 1e9
    assert per_tensor.cpu_bytes_per_node < default.cpu_bytes_per_node


def test_offload_moves_bytes_off_the_gpu():
    shape = m.Shape(1, 2048, "flash")
    on_gpu = m.estimate(_cfg(3), LLAMA7, HW, shape)
    offloaded = m.estimate(_cfg(3, "cpu", "cpu"), LLAMA7, HW, shape)
    # NVMe swap buffers are buffer_count x sub-group sized: use the small sub_group_size NVMe configs use
    nvme = m.estimate(_cfg(3, "nvme", "nvme", sub_group_size=100_000_000), LLAMA7, HW, shape)
    big_groups = m.estimate(_cfg(3, "nvme", "nvme"), LLAMA7, HW, shape)
    assert offloaded.gpu_bytes < on_gpu.gpu_bytes
    assert offloaded.cpu_bytes_per_node > on_gpu.cpu_bytes_per_node
    assert offloaded.cpu_pinned_bytes_per_node > 0 and on_gpu.cpu_pinned_bytes_per_node == 0
    # master weights + Adam states, the fp32 gradients swapped with them (stage3.py swap_out_gradients) and the
    # 16-bit parameters, per rank x 8 ranks
    assert nvme.nvme_bytes_per_node == 8 * (4 + 2 * 4 + 4) * -(-LLAMA7.total_params // 8) + 2 * 8 * -(
        -LLAMA7.total_params // 8
    )
    assert on_gpu.nvme_bytes_per_node == 0
    assert nvme.cpu_bytes_per_node < offloaded.cpu_bytes_per_node < big_groups.cpu_bytes_per_node


def test_offload_param_ignored_below_stage3_with_note():
    est = m.estimate(_cfg(2, "cpu", "cpu"), LLAMA7, HW, m.Shape())
    assert est.settings.offload_param == "none"
    assert any("offload_param" in n for n in est.notes)


@pytest.mark.parametrize("precision", ["fp32", "fp16", "bf16"])
def test_precision_sets_bytes_per_param(precision):
    est = m.estimate(_cfg(0, precision=precision), LLAMA7, HW, m.Shape())
    params = next(c for c in est.components if c.name == "parameters")
    assert params.bytes == (4 if precision == "fp32" else 2) * LLAMA7.total_params
    master = [c for c in est.components if c.name.startswith("fp32 master")]
    assert bool(master) == (precision != "fp32")


def test_more_gpus_less_memory_and_more_tokens_more_memory():
    cfg = _cfg(3)
    base = m.estimate(cfg, LLAMA7, HW, m.Shape(2, 2048)).gpu_bytes
    assert m.estimate(cfg, LLAMA7, m.Hardware(gpus_per_node=8, nodes=4), m.Shape(2, 2048)).gpu_bytes < base
    assert m.estimate(cfg, LLAMA7, HW, m.Shape(4, 2048)).gpu_bytes > base
    assert m.estimate(cfg, LLAMA7, HW, m.Shape(2, 4096)).gpu_bytes > base


def test_recompute_and_attention_modes():
    cfg = _cfg(2)

    def act(attention, recompute):
        est = m.estimate(cfg, LLAMA7, HW, m.Shape(1, 4096, attention, recompute))
        return sum(c.bytes for c in est.components if c.category == "activations")

    assert act("flash", "full") < act("flash", "none") < act("eager", "none")
    assert act("eager", "selective") < act("eager", "none")
    assert act("flash", "selective") == act("flash", "none")


def test_cpu_checkpointing_moves_checkpoints_to_cpu():
    cfg = _cfg(2)
    cfg["activation_checkpointing"] = {"cpu_checkpointing": True, "partition_activations": True}
    shape = m.Shape(2, 4096, "flash", "full")
    with_cpu = m.estimate(cfg, LLAMA7, HW, shape)
    cfg["activation_checkpointing"]["cpu_checkpointing"] = False
    without = m.estimate(cfg, LLAMA7, HW, shape)
    ckpt = next(c for c in with_cpu.components if c.name == "activation checkpoints on CPU")
    assert ckpt.bytes == 8 * 32 * 2 * 2 * 4096 * 4096  # gpus_per_node * L * e*b*s*h
    assert with_cpu.gpu_bytes < without.gpu_bytes


def test_counts_only_model_has_no_activations_and_a_note():
    est = m.estimate(_cfg(3), m.ModelCounts(10**9, 10**7), HW, m.Shape())
    assert not [c for c in est.components if c.category == "activations"]
    assert any("counts only" in n for n in est.notes)


def test_every_component_has_a_formula_and_to_dict_is_json():
    est = m.estimate(_cfg(3, "cpu", "nvme"), LLAMA7, HW, m.Shape(2, 1024, "eager", "selective"))
    assert all(c.formula for c in est.components)
    data = json.loads(json.dumps(est.to_dict()))
    assert data["totals"]["gpu_bytes"] == est.gpu_bytes
    frame = est.components_frame()
    assert {"name", "device", "bytes", "gib", "formula", "phase", "category"} <= set(frame.columns)
    gpu = frame[frame.device == "gpu"]
    persistent = gpu[gpu.phase == "persistent"].bytes.sum()
    peak = max(gpu[gpu.phase == "forward_backward"].bytes.sum(), gpu[gpu.phase == "step"].bytes.sum())
    assert est.gpu_bytes == persistent + peak


junk = (
    st.none()
    | st.booleans()
    | st.integers(-10, 10**10)
    | st.floats(allow_nan=True)
    | st.text(max_size=5)
    | st.just("auto")
    | st.lists(st.integers(), max_size=2)
    | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "zero_optimization": st.fixed_dictionaries(
                {},
                optional={
                    "stage": junk,
                    "offload_optimizer": st.fixed_dictionaries({}, optional={"device": junk, "pin_memory": junk})
                    | junk,
                    "offload_param": st.fixed_dictionaries({}, optional={"device": junk, "buffer_count": junk}) | junk,
                    "reduce_bucket_size": junk,
                    "overlap_comm": junk,
                    "stage3_prefetch_bucket_size": junk,
                    "sub_group_size": junk,
                    "cpu_offload": junk,
                },
            )
            | junk,
            "fp16": st.fixed_dictionaries({}, optional={"enabled": junk}) | junk,
            "bf16": st.fixed_dictionaries({}, optional={"enabled": junk}) | junk,
            "optimizer": st.fixed_dictionaries({}, optional={"type": junk, "params": junk}) | junk,
            "activation_checkpointing": st.fixed_dictionaries({}, optional={"cpu_checkpointing": junk}) | junk,
        },
    )
)
def test_any_config_dict_never_crashes(cfg):
    est = m.estimate(cfg, LLAMA7, HW, m.Shape(1, 512))
    assert est.gpu_bytes > 0 and est.settings.stage in (0, 1, 2, 3)
    assert all(c.bytes >= 0 for c in est.components)


def test_auto_values_use_defaults_with_note():
    cfg = {
        "zero_optimization": {"stage": "auto", "reduce_bucket_size": "auto"},
        "bf16": {"enabled": "auto"},
        "optimizer": {"type": "auto"},
    }
    est = m.estimate(cfg, LLAMA7, HW, m.Shape())
    # bf16 "auto" is estimated as bf16, as the Precision page shows it (it was fp32 beside a bf16 radio)
    assert est.settings.reduce_bucket_size == 500_000_000 and est.settings.precision == "bf16"
    assert any('bf16.enabled is "auto"' in n and "as if --bf16 is passed" in n for n in est.notes)
    assert m.estimate(cfg, LLAMA7, HW, m.Shape(), precision="fp16").settings.precision == "fp16"


def test_bad_shape_is_a_clear_error():
    with pytest.raises(ValueError, match="attention must be one of"):
        m.estimate({}, LLAMA7, HW, m.Shape(attention="xformers"))
    with pytest.raises(ValueError, match="recompute must be one of"):
        m.estimate({}, LLAMA7, HW, m.Shape(recompute="some"))


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_vectorised_equals_scalar(stage):
    cfg = _cfg(stage, "cpu" if stage else "none", "cpu" if stage == 3 else "none", precision="bf16")
    shape = m.Shape(1, 1024, "sdpa", "none")
    batches, seqs = np.array([1, 3, 8]), np.array([256, 1000, 8192])
    res = m.evaluate_arrays(cfg, LLAMA7, HW, shape, micro_batch=batches, seq_len=seqs)
    for b, s, got in zip(batches, seqs, res["gpu_bytes"], strict=True):
        est = m.estimate(cfg, LLAMA7, HW, m.Shape(int(b), int(s), "sdpa", "none"))
        assert abs(got - est.gpu_bytes) <= len(est.components)  # per-component rounding only
    gpn, nodes = np.array([1, 4, 8, 8]), np.array([1, 1, 2, 16])
    res = m.evaluate_arrays(cfg, LLAMA7, HW, shape, gpus_per_node=gpn, nodes=nodes)
    for g, n, got in zip(gpn, nodes, res["cpu_bytes_per_node"], strict=True):
        est = m.estimate(cfg, LLAMA7, m.Hardware(int(g), int(n)), shape)
        assert abs(got - est.cpu_bytes_per_node) <= len(est.components)


def test_max_micro_batch_is_the_boundary():
    cfg, shape = _cfg(3, precision="bf16"), m.Shape(1, 2048, "flash", "full")
    best = m.max_micro_batch(cfg, LLAMA7, HW, shape)
    assert best > 1
    assert m.estimate(cfg, LLAMA7, HW, m.Shape(best, 2048, "flash", "full")).fits
    assert not m.estimate(cfg, LLAMA7, HW, m.Shape(best + 1, 2048, "flash", "full")).fits
    small = m.Hardware(8, 1, 16 * m.GIB)
    assert m.max_micro_batch(_cfg(0), LLAMA7, small, shape) == 0


def test_min_gpus_is_minimal():
    spec = models.get_spec("meta-llama/Llama-2-70b-hf")
    cfg, shape = _cfg(3, precision="bf16"), m.Shape(1, 4096, "flash", "full")
    hw = m.min_gpus(cfg, spec, HW, shape)
    assert hw is not None and m.estimate(cfg, spec, hw, shape).fits
    smaller = (
        m.Hardware(hw.gpus_per_node - 1, 1, HW.gpu_memory_bytes, HW.cpu_ram_per_node_bytes)
        if hw.nodes == 1
        else m.Hardware(8, hw.nodes - 1, HW.gpu_memory_bytes, HW.cpu_ram_per_node_bytes)
    )
    assert not m.estimate(cfg, spec, smaller, shape).fits
    # ZeRO-2 keeps all 16-bit weights on every GPU: 70B never fits 80 GB
    assert m.min_gpus(_cfg(2, precision="bf16"), spec, HW, shape, max_nodes=8) is None


@pytest.mark.parametrize("cpu_gib", [96, 128, 140, 160, 256])
def test_min_gpus_uses_part_of_each_node_when_a_nodes_cpu_ram_limits(cpu_gib):
    """With everything offloaded, a node's CPU RAM holds its ranks' share plus each rank's own: fewer ranks per
    node can fit where whole nodes do not. min_gpus must find the fewest nodes that fit in any layout (by
    brute force over estimate), and on them as many GPUs per node as fit; it used to try only whole nodes beyond
    one (24 GPUs on 3 nodes where 8 on 2 fit)."""
    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    cfg = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
           "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                 "offload_param": {"device": "cpu"}}}
    shape = m.Shape(1, 2048, "flash", "full")
    hw = m.Hardware(8, 1, 24 * m.GIB, cpu_gib * m.GIB)

    def fits(gpn: int, nodes: int) -> bool:
        return m.estimate(cfg, spec, m.Hardware(gpn, nodes, hw.gpu_memory_bytes, hw.cpu_ram_per_node_bytes), shape).fits

    layouts = [(g, 1) for g in range(1, 9)] + [(g, n) for n in range(2, 9) for g in range(8, 0, -1)]
    expected = next(layout for layout in layouts if fits(*layout))
    found = m.min_gpus(cfg, spec, hw, shape, max_nodes=8)
    assert found is not None and (found.gpus_per_node, found.nodes) == expected
    if cpu_gib == 140:  # the case that showed it: a whole second node is too many ranks for 140 GiB
        assert expected == (4, 2) and not fits(8, 2)
    # only multiples of the divisor asked for (sequence parallelism's whole groups)
    by_three = m.min_gpus(cfg, spec, hw, shape, max_nodes=8, gpus_multiple_of=3)
    assert by_three is not None and by_three.total_gpus % 3 == 0 and fits(by_three.gpus_per_node, by_three.nodes)
    first_by_three = next(layout for layout in layouts if layout[0] * layout[1] % 3 == 0 and fits(*layout))
    assert by_three == m.Hardware(*first_by_three, hw.gpu_memory_bytes, hw.cpu_ram_per_node_bytes)


def test_options_table_covers_all_options():
    table = m.options_table(_cfg(0, precision="bf16"), LLAMA7, HW, m.Shape(1, 2048, "flash", "full"), batch_limit=64)
    assert len(table) == 1 + 4 + 9
    assert (
        table.loc[table.stage == 0, "gpu_bytes"].item()
        > table.loc[
            (table.stage == 3) & (table.offload_param == "cpu") & (table.offload_optimizer == "cpu"), "gpu_bytes"
        ].item()
    )
    assert (table.fits == (table.max_micro_batch > 0)).all()


@pytest.mark.parametrize("axis", m.SWEEP_AXES)
def test_sweeps_10k_points(axis):
    values = np.arange(1, 10_001)
    frame = m.sweep(_cfg(3, precision="bf16"), LLAMA7, HW, m.Shape(1, 1024, "flash"), axis, values)
    n_components = frame["component"].nunique()
    assert len(frame) == 10_000 * n_components
    totals = m.sweep_totals(_cfg(3, precision="bf16"), LLAMA7, HW, m.Shape(1, 1024, "flash"), axis, values)
    assert len(totals) == 10_000
    diffs = np.diff(totals["gpu_bytes"].to_numpy())
    if axis == "total_gpus":
        assert (diffs <= 1e-6).all()
    else:
        # flat while the optimizer-step peak dominates, then growing with the activations
        assert (diffs >= 0).all() and diffs[-1] > 0


def test_sweep_bad_axis():
    with pytest.raises(ValueError, match="sweep axis"):
        m.sweep({}, LLAMA7, HW, m.Shape(), "learning_rate", [1, 2])


def test_symbols_give_the_formula_letters_their_values():
    est = m.estimate(_cfg(3, precision="bf16"), LLAMA7, HW, m.Shape(2, 1024))
    sym = est.to_dict()["symbols"]
    assert (sym["P"], sym["N"], sym["e"], sym["k"], sym["b"], sym["s"], sym["V"]) == (
        LLAMA7.total_params,
        8,
        2,
        2,
        2,
        1024,
        32000,
    )
    part = next(c for c in est.components if c.name == "parameters (partition)")
    assert part.formula == "2*P/N" and part.bytes == -(-sym["P"] // sym["N"]) * sym["e"]


def test_zero_plus_plus_hpz_adds_secondary_partition():
    cfg = _cfg(3, precision="bf16", zero_hpz_partition_size=8)
    est = m.estimate(cfg, LLAMA7, m.Hardware(8, 4), m.Shape())
    hpz = next(c for c in est.components if c.name.startswith("hpZ"))
    assert hpz.bytes == 2 * -(-LLAMA7.total_params // 8)
    assert m.estimate(_cfg(3, precision="bf16"), LLAMA7, m.Hardware(8, 4), m.Shape()).gpu_bytes < est.gpu_bytes


def test_bf16_zero1_fp32_grad_accumulation_uses_bf16_optimizer_buffers():
    cfg = _cfg(1, precision="bf16")
    plain = m.estimate(cfg, LLAMA7, HW, m.Shape())
    cfg["data_types"] = {"grad_accum_dtype": "fp32"}
    fp32_accum = m.estimate(cfg, LLAMA7, HW, m.Shape())
    grads = next(c for c in fp32_accum.components if c.name.startswith("gradients"))
    assert "BF16_Optimizer" in grads.name and grads.bytes == 4 * LLAMA7.total_params
    assert fp32_accum.gpu_bytes > plain.gpu_bytes


def test_layer_terms_sum_to_one_layer():
    terms = layer_terms(LLAMA7, 2, 1024, 2, "eager", "none")
    assert sum(t.value for t in terms) == m.activation_breakdown(LLAMA7, 2, 1024, 2, "eager").per_layer
    assert min(len(t.formula) for t in terms) > 0


@pytest.mark.parametrize(("stage", "opt", "param"), [(0, "none", "none"), (2, "cpu", "none"), (3, "cpu", "cpu")])
def test_gpu_peak_by_category_adds_up_to_the_peak(stage, opt, param):
    est = m.estimate(_cfg(stage, opt, param), LLAMA7, HW, m.Shape(micro_batch=2, seq_len=2048))
    by_category = est.gpu_peak_by_category()
    assert sum(by_category.values()) == est.gpu_bytes
    assert by_category["model_states"] == est.model_states_gpu_bytes()
    assert set(by_category) <= {"model_states", "activations", "buffers", "overhead"}


@pytest.mark.parametrize("micro_batch", [10**8, 10**20, 10**290], ids=["1e8", "1e20", "1e290"])
def test_absurd_micro_batch_is_an_honest_does_not_fit(micro_batch):
    """Past 2**63 bytes the estimate counts in floats (was an OverflowError from the int64 arithmetic)."""
    spec = models.get_spec("meta-llama/Llama-2-70b-hf")
    small = m.estimate({}, spec, m.Hardware(8, 1), m.Shape(1, 2048))
    est = m.estimate({}, spec, m.Hardware(8, 1), m.Shape(micro_batch, 2048))
    assert not est.fits_gpu
    # activations grow linearly with the micro batch: the total is at least micro_batch x the one-sequence part
    act = next(c.bytes for c in small.components if c.name == "activations (saved for backward)")
    assert est.gpu_bytes >= micro_batch * act


def test_micro_batch_beyond_float_range_is_a_clear_error():
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    with pytest.raises(ValueError, match="too large to estimate; check train_micro_batch_size_per_gpu"):
        m.estimate({}, spec, m.Hardware(8, 1), m.Shape(10**400, 2048))


def test_max_micro_batch_search_is_bounded():
    """A config's micro batch of 1e30 asks for a search up to 1e30 - 1: searched up to the bound instead (was
    numpy's "Maximum allowed size exceeded")."""
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    hw = m.Hardware(8, 1, gpu_memory_bytes=10**6 * m.GIB)
    assert m.max_micro_batch({}, spec, hw, m.Shape(1, 16), limit=10**30) == m.solve.MAX_MICRO_BATCH_SEARCH


def _states_of(est: m.MemoryEstimate) -> dict[str, int]:
    return {c.name: c.bytes for c in est.components}


def test_16bit_master_weights_and_optimizer_states_are_sized_as_deepspeed_keeps_them():
    """bf16_master_weights_and_grads keeps the master weights and the gradient partition in bf16
    (_configure_master_weights); bf16_optimizer_states also the states, on the GPU (zeros_like the master) or
    in DeepSpeedCPUAdam (fp32_optimizer_states forced off). Read as pydantic's lax bool: "true" is on."""
    part = -(-LLAMA7.total_params // 8)
    master_on = {"enabled": True, "bf16_master_weights_and_grads": "true"}
    offload = m.estimate({**_cfg(2, "cpu", precision="bf16"), "bf16": master_on}, LLAMA7, HW, m.Shape())
    parts = _states_of(offload)
    assert parts["16-bit master weights (offloaded)"] == 2 * part * 8
    assert parts["16-bit gradients (partition, offloaded)"] == 2 * part * 8
    assert parts["optimizer states (adam, offloaded)"] == 2 * 4 * part * 8  # DeepSpeedCPUAdam: fp32 by default
    assert not any("refuses" in n for n in offload.notes)
    both = {**master_on, "bf16_optimizer_states": True}
    on_gpu = m.estimate({**_cfg(2, precision="bf16"), "bf16": both}, LLAMA7, HW, m.Shape())
    parts = _states_of(on_gpu)
    assert parts["16-bit master weights"] == 2 * part
    assert parts["optimizer states (adam: 2 16-bit tensors)"] == 2 * 2 * part
    assert parts["16-bit gradient partition during step"] == 2 * part
    cpu_adam = m.estimate({**_cfg(3, "cpu", precision="bf16"), "bf16": both}, LLAMA7, HW, m.Shape())
    assert _states_of(cpu_adam)["optimizer states (adam, offloaded: 2 16-bit tensors)"] == 2 * 2 * part * 8
    nvme = m.estimate({**_cfg(3, "nvme", precision="bf16"), "bf16": both}, LLAMA7, HW, m.Shape())
    assert nvme.nvme_bytes_per_node == (2 + 2 * 2 + 2) * part * 8  # the 16-bit gradients are swapped with them


def test_16bit_master_weights_refused_or_ignored_say_so():
    master_on = {"enabled": True, "bf16_master_weights_and_grads": True}
    # without offload (and without bf16_optimizer_states) DeepSpeed's ZeRO optimizer refuses the flag
    refused = m.estimate({**_cfg(2, precision="bf16"), "bf16": master_on}, LLAMA7, HW, m.Shape())
    assert any("refuses" in n and "DeepSpeedCPUAdam" in n for n in refused.notes)
    # bf16 + ZeRO-1 + fp32 accumulation runs BF16_Optimizer, which is not given the flag: fp32 master weights
    bf16_opt = {**_cfg(1, precision="bf16"), "bf16": master_on, "data_types": {"grad_accum_dtype": "fp32"}}
    est = m.estimate(bf16_opt, LLAMA7, HW, m.Shape())
    assert "fp32 master weights" in _states_of(est) and any("BF16_Optimizer" in n for n in est.notes)
    # "auto" is the field's default (off), stage 0 refuses the flag at config time: both fp32
    for cfg in ({**_cfg(2, precision="bf16"), "bf16": {"enabled": True, "bf16_master_weights_and_grads": "auto"}},
                {**_cfg(0, precision="bf16"), "bf16": master_on}):
        assert "fp32 master weights" in _states_of(m.estimate(cfg, LLAMA7, HW, m.Shape()))


@pytest.mark.parametrize("gpus_per_node", [1, 4, 8])
def test_cpu_ram_of_zero2_offload_is_the_larger_of_loading_and_training_as_deepspeeds_estimator_says(gpus_per_node):
    """The model each rank builds before deepspeed.initialize is on the GPU before the optimizer creates its
    offloaded states: DeepSpeed's estimator takes P x max(4 x GPUs, 16) (estimate_zero2_model_states_mem_needs);
    the product added the two (a 13B model on 4 GPUs: 404 GiB, "does not fit" in 384, where 210 GiB is needed)."""
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    spec = models.get_spec("meta-llama/Llama-2-13b-hf")
    hardware = m.Hardware(gpus_per_node=gpus_per_node)
    est = m.estimate(config, spec, hardware)
    overhead = sum(c.bytes for c in est.components if c.device == "cpu" and c.category == "overhead"
                   and c.phase == "persistent")
    ds_cpu, _ = estimate_zero2_model_states_mem_needs(spec.total_params, gpus_per_node, 1, True, 1.0)
    assert est.cpu_bytes_per_node - overhead == pytest.approx(ds_cpu, rel=1e-6)
    vectorised = m.evaluate_arrays(config, spec, hardware, m.Shape(1, 4096))["cpu_bytes_per_node"]
    assert float(vectorised) == pytest.approx(m.estimate(config, spec, hardware, m.Shape(1, 4096)).cpu_bytes_per_node,
                                              abs=1)


def test_sequence_parallelism_estimates_each_gpus_share_of_the_sequence_and_unmodelled_settings_are_said():
    """The planner costed sequence_parallel_size 8 at 32768 tokens as 4096 per GPU, while the memory model held
    all 32768 on every GPU (218 GiB, "does not fit", and a slower way to fit offered); autotp_size and a partial
    offload ratio changed nothing and said nothing."""
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    base = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}
    sharded = m.estimate({**base, "sequence_parallel_size": 8}, spec, shape=m.Shape(1, 32768))
    share = m.estimate(base, spec, shape=m.Shape(1, 4096))
    assert [c.bytes for c in sharded.components] == [c.bytes for c in share.components]
    assert any("sequence_parallel_size 8" in n for n in sharded.notes)
    arrays = m.evaluate_arrays({**base, "sequence_parallel_size": 8}, spec, m.Hardware(), m.Shape(1, 32768))
    assert float(arrays["gpu_bytes"]) == pytest.approx(sharded.gpu_bytes, abs=1)
    tp = m.estimate({**base, "tensor_parallel": {"autotp_size": 8}}, spec, shape=m.Shape(1, 4096))
    assert any("autotp_size 8" in n and "overestimated" in n for n in tp.notes)
    ratio = {**base, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    assert any("ratio 0.3" in n for n in m.estimate(ratio, spec, shape=m.Shape(1, 4096)).notes)


def test_auto_bucket_sizes_say_what_the_estimate_assumed():
    """"auto" ZeRO bucket sizes were sized at DeepSpeed's 5e8 with no note, while the HF Trainer fills
    hidden_size² (0.12 GiB instead of 3.7 GiB of reduce buckets for a 7B)."""
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    config = {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}
    est = m.estimate(config, spec, m.Hardware(8, 1, 80 * m.GIB, 512 * m.GIB),
                     m.Shape(1, 2048))
    assert any(note.startswith('reduce_bucket_size "auto": estimated at DeepSpeed\'s default') for note in est.notes)
    written = m.estimate({**config, "zero_optimization": {"stage": 2, "reduce_bucket_size": 500_000_000}},
                         spec, m.Hardware(8, 1, 80 * m.GIB, 512 * m.GIB), m.Shape(1, 2048))
    assert written.gpu_bytes == est.gpu_bytes and not any("auto" in note for note in written.notes if "bucket" in note)


def test_an_auto_stage_is_named_in_what_the_figures_assumed():
    """With stage "auto" the verdict was stage 0's (289 GiB for a 7B in fp32) without saying so; the Trainer runs
    Accelerate's 2 (223.6 GiB)."""
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    hardware, shape = m.Hardware(8, 1, 80 * m.GIB, 512 * m.GIB), m.Shape(1, 2048)
    auto = m.estimate({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": "auto"}}, spec, hardware,
                      shape)
    assert auto.assumptions.startswith('ZeRO-0 for stage "auto"')
    written = m.estimate({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 0}}, spec, hardware,
                         shape)
    assert "ZeRO" not in written.assumptions and written.gpu_bytes == auto.gpu_bytes


def test_min_gpus_bounds_the_layouts_it_tries_for_giant_nodes(monkeypatch):
    """``dsconfig plan --sweep --gpus-per-node 16384`` (the CLI allows up to a million) ran out of memory once every
    node count tried every partial layout (16,384 x 1,024 evaluations); the partial layouts are bounded, and
    ordinary nodes still get every node count's."""
    from core.memory import solve

    sizes: list[int] = []
    real = solve.evaluate_arrays

    def counting(*args, **kwargs):
        sizes.append(len(kwargs["gpus_per_node"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(solve, "evaluate_arrays", counting)
    spec = models.get_spec("meta-llama/Llama-2-7b-hf")
    shape = m.Shape(1, 2048, "flash", "full")
    for per_node in (16_384, 1_000_000):
        m.min_gpus(_cfg(3, precision="bf16"), spec, m.Hardware(per_node, 1, 80 * m.GIB), shape)
        assert sizes[-1] <= per_node + solve.PARTIAL_LAYOUTS + 1024
    m.min_gpus(_cfg(3, precision="bf16"), spec, m.Hardware(8, 1, 80 * m.GIB), shape)
    assert sizes[-1] == 8 + 1023 * 8  # one node 1..8, then 8..1 on each of 2..1024 nodes


def test_nvme_optimizer_swaps_its_fp32_gradients_and_keeps_one_sub_group_buffer_in_cpu_ram():
    """ZeRO-Infinity with the optimizer on NVMe writes each sub-group's fp32 gradients to NVMe with its states
    (stage3.py ``swap_out_gradients``) and keeps one CPU buffer of the largest sub-group for them all
    (``initialize_optimizer_states``: ``gradient_buffer``). The model counted the whole fp32 gradient partition in
    CPU RAM (257 GiB a node for a 70B model on 8 GPUs), so the NVMe way looked short of CPU RAM when it fits.
    With the optimizer in CPU RAM the partition stays there."""
    spec = models.get_spec("meta-llama/Llama-2-70b-hf")
    shape = m.Shape(1, 2048, "flash", "full")
    nvme = m.estimate(_cfg(3, "nvme", precision="bf16", sub_group_size=100_000_000), spec, HW, shape)
    cpu = m.estimate(_cfg(3, "cpu", precision="bf16", sub_group_size=100_000_000), spec, HW, shape)
    part = -(-spec.total_params // 8)
    on = {(c.device, c.name): c.bytes for c in nvme.components}
    assert on[("nvme", "fp32 gradients (partition, swapped to NVMe)")] == 4 * part * 8
    assert on[("cpu", "fp32 gradient buffer of one sub-group (CPU)")] == 4 * 100_000_000 * 8
    assert not any(c.device == "cpu" and "gradients (partition" in c.name for c in nvme.components)
    assert {(c.device, c.name) for c in cpu.components} >= {("cpu", "fp32 gradients (partition, offloaded)")}


@pytest.mark.parametrize(("key", "text", "attribute"), [
    ("sub_group_size", "100000000", "sub_group_size"), ("zero_hpz_partition_size", " 4 ", "hpz_partition_size"),
    ("reduce_bucket_size", "200_000_000", "reduce_bucket_size"),
    ("stage3_max_live_parameters", "1000", "max_live_parameters")])
def test_whole_numbers_written_as_text_are_read_as_deepspeed_reads_them(key, text, attribute):
    """DeepSpeed's pydantic ZeRO section reads "100000000" as 100,000,000 (lax mode); the memory model read the
    default, so the estimate sized other buffers than DeepSpeed's, without a note."""
    from core.memory.settings import TrainingSettings
    from core.rules.context import lax_int

    config = {"zero_optimization": {"stage": 3, key: text}}
    assert getattr(TrainingSettings.from_ds_config(config), attribute) == lax_int(text)
    written = {"zero_optimization": {"stage": 3, key: lax_int(text)}}
    assert m.estimate(config, LLAMA7, HW, m.Shape()).gpu_bytes == m.estimate(written, LLAMA7, HW, m.Shape()).gpu_bytes
    assert getattr(TrainingSettings.from_ds_config({"zero_optimization": {"stage": 3, key: "auto"}}), attribute) == \
        getattr(TrainingSettings.from_ds_config({"zero_optimization": {"stage": 3}}), attribute)


def test_the_memory_models_zero_defaults_are_the_schemas():
    """An empty config is sized with DeepSpeed's defaults as the schema records them (one source)."""
    from core.memory.settings import TrainingSettings
    from core.schema.zero import OffloadOptimizerConfig, OffloadParamConfig, ZeroConfig

    read = TrainingSettings.from_ds_config({"zero_optimization": {"stage": 3}})
    zero = ZeroConfig.model_fields
    assert (read.reduce_bucket_size, read.allgather_bucket_size, read.prefetch_bucket_size,
            read.param_persistence_threshold, read.max_live_parameters, read.sub_group_size,
            read.hpz_partition_size) == tuple(zero[name].default for name in (
                "reduce_bucket_size", "allgather_bucket_size", "prefetch_bucket_size", "param_persistence_threshold",
                "max_live_parameters", "sub_group_size", "zero_hpz_partition_size"))
    assert (read.offload_param_buffer_count, read.offload_param_buffer_size, read.offload_optimizer_buffer_count) == (
        OffloadParamConfig.model_fields["buffer_count"].default, OffloadParamConfig.model_fields["buffer_size"].default,
        OffloadOptimizerConfig.model_fields["buffer_count"].default)


def test_the_estimate_reads_bf16_master_weight_keys_as_the_chosen_release_does():
    """0.16.x never read bf16's master-weights pair (validate warns that it is ignored), yet the memory model sized
    bf16 master weights and states there, ~5.9 GiB per GPU too little for Llama-3-8B on 8 GPUs with ZeRO-2. The
    estimate, and the app's (its context's release), now read the config as that release does."""
    from core.memory import Hardware, Shape, estimate
    from core.models import get_spec
    from ui import memory as ui_memory

    plain = {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    asks = {**plain, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True,
                              "bf16_optimizer_states": True}}
    model, hardware, shape = get_spec("meta-llama/Meta-Llama-3-8B"), Hardware(gpus_per_node=8), Shape(1, 2048)
    old = estimate(asks, model, hardware, shape, version="0.16.9").gpu_bytes
    assert old == estimate(plain, model, hardware, shape, version="0.16.9").gpu_bytes
    assert estimate(asks, model, hardware, shape).gpu_bytes < old - 5 * 2**30  # 0.19.8 keeps them in bf16
    from core.models import CATALOG
    from ui.app_state import default_context

    context = {**default_context(), "model": "meta-llama/Meta-Llama-3-8B", "gpus_per_node": 8, "nodes": 1,
               "model_config": dict(CATALOG["meta-llama/Meta-Llama-3-8B"]), "seq_len": 2048, "version": "0.16.9"}
    assert ui_memory.current_estimate(asks, context).gpu_bytes == old
    assert ui_memory.current_estimate(asks, {**context, "version": "0.19.8"}).gpu_bytes < old
