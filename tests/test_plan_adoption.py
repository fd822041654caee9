"""Loading a Plan row into the session config (``adopt_candidate``): whatever precision keys the config holds (16-bit
master weights, Apex AMP) and whichever built-in preset it starts from, the loaded config is one the validator
accepts, what went is said with its reason, and the row was costed as it loads."""

from __future__ import annotations

import pytest

from core.models import get_spec
from core.perf.hardware import Cluster
from core.perf.recommend import adopt_candidate, adoption_removals, build_config, recommend
from core.presets import BUILTIN_DIR, list_presets
from core.validate import validate
from core.versions import NEWEST

LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
H100X8 = Cluster("NVIDIA H100 80GB", 8)
RELEASES = ("0.16.9", "0.19.7", "0.19.8")

#: Session configs with each master-weights key, and the precision of the rows loaded into them.
MASTER_WEIGHTS = {
    "bf16-master-weights": ({"bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}, "bf16"),
    "bf16-optimizer-states": ({"bf16": {"enabled": True, "bf16_optimizer_states": True}}, "bf16"),
    "fp16-master-weights": ({"fp16": {"enabled": True, "fp16_master_weights_and_grads": True}}, "fp16"),
    # fp16 off with its master-weights flag left behind, a bf16 row loaded
    "fp16-left-behind": ({"fp16": {"enabled": False, "fp16_master_weights_and_grads": True}}, "bf16"),
}


def _rank(base: dict, version: str, precision: str = "bf16", target: str = "deepspeed", **kwargs):
    return recommend(LLAMA7, H100X8, seq_len=4096, global_batch=64, precision=precision, base=base,
                     target=target, version=version, **kwargs)


def _errors(config: dict, version: str, target: str = "deepspeed") -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in validate(config, world_size=8, target=target, version=version).findings
            if f.severity == "error"]


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("name", list(MASTER_WEIGHTS))
def test_every_top_row_loaded_into_a_master_weights_config_is_accepted(name, version):
    """A session config with 16-bit master weights (or bf16 optimizer states) had them kept in every loaded row:
    0.19.x refuses them without the optimizer offloaded as DeepSpeedCPUAdam (precision.master-weights-offload),
    the states without the master weights (precision.bf16-optimizer-states), and all of them at ZeRO-0, so most
    rows loaded a refused config. Each row now keeps them only where the validator's rules accept them."""
    base, precision = MASTER_WEIGHTS[name]
    rows = _rank(base, version, precision).head(20)
    for row in rows.itertuples():
        adopted = adopt_candidate(base, row.config, version=version)
        assert adopted == row.config  # the row shows the config it loads
        assert _errors(adopted, version) == [], (name, row.stage, row.offload_optimizer, row.offload_param)


def test_master_weights_stay_where_they_run_and_go_with_their_reason_where_they_do_not():
    """Decided per row: a row with the optimizer offloaded to the CPU (DeepSpeedCPUAdam) keeps bf16 master weights,
    a row without loses them and says why."""
    base = MASTER_WEIGHTS["bf16-master-weights"][0]
    rows = _rank(base, "0.19.8")
    offloaded = rows[(rows["offload_optimizer"] == "cpu") & (rows["stage"] == 2)].iloc[0]
    assert offloaded["config"]["bf16"]["bf16_master_weights_and_grads"] is True
    assert adoption_removals(base, offloaded["config"], "0.19.8") == []
    plain = rows[(rows["offload_optimizer"] == "none") & (rows["stage"] == 2)].iloc[0]
    assert plain["config"]["bf16"] == {"enabled": True}
    assert adoption_removals(base, plain["config"], "0.19.8") == [(
        ("bf16.bf16_master_weights_and_grads",),
        "16-bit master weights, which DeepSpeed 0.19.8 runs at ZeRO-2 only with the optimizer offloaded to the CPU "
        "as DeepSpeedCPUAdam, which this row does not do")]
    states = MASTER_WEIGHTS["bf16-optimizer-states"][0]
    stage1 = build_config(stage=1, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                          grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
    assert adoption_removals(states, adopt_candidate(states, stage1, version="0.19.8"), "0.19.8") == [(
        ("bf16.bf16_optimizer_states",),
        "bf16 optimizer states, which DeepSpeed 0.19.8 refuses at ZeRO-1 without bf16_master_weights_and_grads")]
    both = {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}}
    stage0 = build_config(stage=0, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                          grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
    assert adoption_removals(both, adopt_candidate(both, stage0, version="0.19.8"), "0.19.8") == [(
        ("bf16.bf16_master_weights_and_grads", "bf16.bf16_optimizer_states"),
        "16-bit master weights or optimizer states, which DeepSpeed 0.19.8 does not support at the row's ZeRO-0")]


def test_a_row_that_loses_its_master_weights_is_costed_without_them():
    """The rows were costed with the base's bf16 master weights (2 bytes a parameter less) that the loaded config
    cannot keep: each row without them must cost what the same row of a config without them costs."""
    base = MASTER_WEIGHTS["bf16-master-weights"][0]
    keys = ["stage", "offload_optimizer", "offload_param", "zeropp", "micro_batch", "recompute"]
    ranked = _rank(base, "0.19.8").set_index(keys)
    plain = _rank({"bf16": {"enabled": True}}, "0.19.8").set_index(keys)
    lost = [i for i, config in ranked["config"].items() if "bf16_master_weights_and_grads" not in config["bf16"]]
    assert lost and len(lost) < len(ranked)  # decided per row
    for i in lost:
        assert ranked.loc[i, "gpu_peak_gib"] == plain.loc[i, "gpu_peak_gib"], i
        assert ranked.loc[i, "step_seconds"] == plain.loc[i, "step_seconds"], i


@pytest.mark.parametrize("version", ["0.16.9", "0.19.7", "0.19.8"])
def test_apex_amp_switched_on_goes_since_the_row_decides_the_precision(version):
    """``"amp": {"enabled": true}`` was kept beside the row's bf16: 0.19.8 refuses any config with `amp`
    (removed.enabled-section), and the older releases stop at initialize ("Amp and ZeRO are not currently
    compatible", or "Cannot enable both amp with (legacy) fp16 or bfloat16 mode" at ZeRO-0)."""
    base = {"amp": {"enabled": True, "opt_level": "O1"}}
    for stage in (0, 1, 3):
        row = build_config(stage=stage, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                           grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
        adopted = adopt_candidate(base, row, version=version)
        assert "amp" not in adopted and _errors(adopted, version) == []
        assert adoption_removals(base, adopted, version) == [(("amp",), (
            "DeepSpeed 0.19.8 refuses any config containing it; the row trains in bf16" if version == "0.19.8" else
            "Apex AMP, which the row's bf16 replaces: DeepSpeed stops with AMP beside ZeRO, fp16 or bf16"))]


def test_apex_amp_switched_off_stays_where_the_release_accepts_it():
    off = {"amp": {"enabled": False}}
    row = build_config(stage=2, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                       grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
    assert adopt_candidate(off, row, version="0.19.7")["amp"] == off["amp"]
    assert "amp" not in adopt_candidate(off, row, version="0.19.8")  # refused on sight there, off or not


PRESETS = list_presets([BUILTIN_DIR])[0]


@pytest.mark.parametrize("precision", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
def test_the_top_rows_loaded_into_every_preset_are_accepted(preset, precision):
    """Every built-in preset as the session config, on the newest release and for its own target: the top rows of
    each precision, as "Use this config" loads them, are configs the validator accepts."""
    assert len(PRESETS) >= 10
    target = preset.meta.get("target", "deepspeed")
    assert _errors(preset.config, NEWEST, target) == []  # the preset itself is accepted
    rows = _rank(preset.config, NEWEST, precision, target).head(12)
    for row in rows.itertuples():
        adopted = adopt_candidate(preset.config, row.config, target=target, version=NEWEST)
        assert _errors(adopted, NEWEST, target) == [], (row.stage, row.offload_optimizer, row.offload_param)
