"""Plan adoption: the optimizer ZeRO was not tested with, and the user's NVMe offload tuning."""

from __future__ import annotations

import pytest
from app_support import app, html_tables

from core.models import get_config, get_spec
from core.perf.hardware import Cluster
from core.perf.recommend import adopt_candidate, adoption_notes, build_config, recommend
from core.schema.zero import NVME_PATH_EXAMPLE, NVME_SUB_GROUP_SIZE
from core.validate import validate

LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
H100X8 = Cluster("NVIDIA H100 80GB", 8)
LAMB = {"train_batch_size": 64, "bf16": {"enabled": True}, "optimizer": {"type": "Lamb", "params": {"lr": 1e-4}}}


def _errors(config: dict, version: str, target: str) -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in validate(config, world_size=8, target=target, version=version).findings
            if f.severity == "error"]


@pytest.mark.parametrize("target", ["deepspeed", "hf"])
# not 0.16.x: under bf16 it sets a static loss scale of 1.0, which Lamb refuses whatever the row (real 0.16.9:
# "DeepSpeed lamb optimizer requires dynamic loss scaling"; optimizer.lamb-static-loss-scale)
@pytest.mark.parametrize("version", ["0.17.6", "0.19.7", "0.19.8"])
def test_top_rows_loaded_into_an_untested_optimizer_config_are_accepted(version, target):
    """Every ZeRO row loaded into a Lamb config was refused (optimizer.untested-with-zero): adoption now sets
    zero_allow_untested_optimizer where the loaded row needs it, asked as the validator asks, and says so."""
    rows = recommend(LLAMA7, H100X8, seq_len=2048, global_batch=64, base=LAMB, target=target,
                     version=version).head(12)
    assert (rows.stage > 0).any()
    for row in rows.itertuples():
        adopted = adopt_candidate(LAMB, row.config, target=target, version=version)
        assert adopted == row.config
        assert _errors(adopted, version, target) == [], (row.stage, row.offload_optimizer, row.offload_param)
        if row.stage > 0 and row.offload_optimizer == "none":
            assert adopted["zero_allow_untested_optimizer"] is True
            assert any("zero_allow_untested_optimizer set to true" in note and "Lamb" in note
                       for note in adoption_notes(LAMB, adopted, version))


@pytest.mark.parametrize("optimizer", ["Lamb", "SGD"])
def test_every_row_with_an_untested_optimizer_is_accepted_offloads_included(optimizer):
    """DeepSpeed's own optimizers and torch.optim's alike, whatever the row offloads (a CPU optimizer offload
    changes what ZeRO was tested with)."""
    base = {**LAMB, "optimizer": {"type": optimizer, "params": {"lr": 1e-4}}}
    rows = recommend(LLAMA7, H100X8, seq_len=2048, global_batch=64, base=base, version="0.19.8")
    assert set(rows.offload_optimizer) == {"none", "cpu", "nvme"}
    for row in rows.drop_duplicates(["stage", "offload_optimizer", "offload_param", "zeropp"]).itertuples():
        assert _errors(row.config, "0.19.8", "deepspeed") == [], (row.stage, row.offload_optimizer)


def test_a_tested_optimizer_or_zero_0_gets_no_untested_flag():
    adamw = {**LAMB, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    z3 = build_config(stage=3, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                      grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
    z0 = build_config(stage=0, offload_optimizer="none", offload_param="none", zeropp=False, micro_batch=1,
                      grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)
    assert "zero_allow_untested_optimizer" not in adopt_candidate(adamw, z3)
    assert "zero_allow_untested_optimizer" not in adopt_candidate(LAMB, z0)


NVME_BASE = {"train_batch_size": 64, "bf16": {"enabled": True}, "zero_optimization": {
    "stage": 3,
    "offload_optimizer": {"device": "nvme", "nvme_path": "/mnt/fastdisk", "buffer_count": 5, "pin_memory": False},
    "offload_param": {"device": "nvme", "nvme_path": "/mnt/fastdisk", "buffer_size": 200_000_000},
    "sub_group_size": 50_000_000}}


def _candidate(opt: str, param: str) -> dict:
    return build_config(stage=3, offload_optimizer=opt, offload_param=param, zeropp=False, micro_batch=1,
                        grad_accum=8, world_size=8, precision="bf16", gpus_per_node=8)


def test_adoption_keeps_the_users_nvme_path_offload_tuning_and_smaller_sub_group_size():
    """Loading an NVMe/NVMe row wrote the placeholder /local_nvme over the user's drive and 1e8 over their
    sub_group_size, saying neither."""
    adopted = adopt_candidate(NVME_BASE, _candidate("nvme", "nvme"), version="0.19.8")
    zero = adopted["zero_optimization"]
    assert zero["offload_optimizer"] == {"device": "nvme", "nvme_path": "/mnt/fastdisk", "buffer_count": 5,
                                         "pin_memory": False}
    assert zero["offload_param"] == {"device": "nvme", "nvme_path": "/mnt/fastdisk", "buffer_size": 200_000_000,
                                     "pin_memory": True}
    assert zero["sub_group_size"] == 50_000_000
    assert adopt_candidate(NVME_BASE, adopted, version="0.19.8") == adopted
    notes = adoption_notes(NVME_BASE, adopted, "0.19.8")
    assert notes == ["your nvme_path /mnt/fastdisk kept"]


def test_a_larger_sub_group_size_gives_way_and_is_said_and_a_cpu_row_drops_nvme_tuning():
    base = {**NVME_BASE, "zero_optimization": {**NVME_BASE["zero_optimization"], "sub_group_size": 500_000_000}}
    adopted = adopt_candidate(base, _candidate("nvme", "cpu"), version="0.19.8")
    zero = adopted["zero_optimization"]
    assert zero["sub_group_size"] == NVME_SUB_GROUP_SIZE
    assert zero["offload_param"] == {"device": "cpu", "pin_memory": True}  # another device: nothing of theirs kept
    notes = adoption_notes(base, adopted, "0.19.8")
    assert any(note.startswith("sub_group_size set to 100,000,000 (was your 500,000,000)") for note in notes)
    # a CPU optimizer row with the user's NVMe parameters: their path is kept for the NVMe section only
    mixed = adopt_candidate(base, _candidate("cpu", "nvme"), version="0.19.8")["zero_optimization"]
    assert mixed["offload_optimizer"] == {"device": "cpu", "pin_memory": True}
    assert mixed["offload_param"]["nvme_path"] == "/mnt/fastdisk"


def test_the_users_nvme_path_from_the_other_section_or_else_a_placeholder_they_are_told_to_set():
    only_param = {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/mnt/x"}}}
    adopted = adopt_candidate(only_param, _candidate("nvme", "none"), version="0.19.8")
    assert adopted["zero_optimization"]["offload_optimizer"]["nvme_path"] == "/mnt/x"
    none = {"bf16": {"enabled": True}}
    adopted = adopt_candidate(none, _candidate("nvme", "nvme"), version="0.19.8")
    notes = adoption_notes(none, adopted, "0.19.8")
    assert any(NVME_PATH_EXAMPLE in note and "set it to your NVMe drive" in note for note in notes), notes


def test_nvme_rows_are_costed_as_loaded_with_the_users_offload_tuning():
    """The ranking reads each row as it will be loaded: the user's buffer_count (more pinned swap buffers) shows in
    the row's CPU memory."""
    model = get_spec("meta-llama/Llama-2-70b-hf")
    cluster = Cluster("NVIDIA A100 40GB", 8, 1, nvme_gib=8000, cpu_ram_gib=256)
    more = {**NVME_BASE, "zero_optimization": {**NVME_BASE["zero_optimization"], "offload_optimizer": {
        **NVME_BASE["zero_optimization"]["offload_optimizer"], "buffer_count": 12}}}
    cpu = {}
    for name, base in (("5", NVME_BASE), ("12", more)):
        rows = recommend(model, cluster, seq_len=2048, global_batch=64, base=base, version="0.19.8")
        row = rows[(rows.offload_optimizer == "nvme") & (rows.offload_param == "nvme")].iloc[0]
        assert row.config == adopt_candidate(base, row.config, version="0.19.8")
        cpu[name] = row.cpu_gib_per_node
    assert cpu["12"] > cpu["5"]


def test_app_loading_an_nvme_row_keeps_the_users_drive_and_says_so():
    name = "meta-llama/Llama-2-70b-hf"
    spec = get_spec(name)
    at = app(NVME_BASE, "pages/plan.py", version="0.19.8", gpu="NVIDIA A100 40GB", gpu_memory_gib=39.4,
             nvme_gib=8000, cpu_ram_gib=256, model=name, model_config=get_config(name),
             total_params=spec.total_params, largest_layer_params=spec.largest_layer_params)
    table = html_tables(at)[0]
    row = next(r for _, r in table.iterrows() if r["Offload optimizer"] == "nvme" and r["Offload params"] == "nvme")
    rank = int(row["Rank"])
    at.selectbox(key="plan_row").set_value(rank).run()
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    zero = at.session_state["config"]["zero_optimization"]
    assert zero["offload_optimizer"]["nvme_path"] == zero["offload_param"]["nvme_path"] == "/mnt/fastdisk"
    assert zero["offload_optimizer"]["buffer_count"] == 5 and zero["sub_group_size"] == 50_000_000
    message = next(s.value for s in at.success if s.value.startswith("Loaded rank"))
    assert "your nvme_path /mnt/fastdisk kept" in message
    # the loaded config is the row as ranked: the headline's GPU memory is the row's
    fit = next(m.value for m in at.markdown if "**Fits**" in m.value)
    assert f"GPU {float(row['GPU GiB']):.1f} of" in fit, (fit, row["GPU GiB"])


def test_app_loading_a_row_into_a_lamb_config_is_accepted_and_says_the_flag():
    name = "meta-llama/Llama-2-7b-hf"
    spec = get_spec(name)
    at = app(LAMB, "pages/plan.py", version="0.19.8", model=name, model_config=get_config(name),
             total_params=spec.total_params, largest_layer_params=spec.largest_layer_params)
    at.button(key="plan_use").click().run()
    assert not at.exception, at.exception
    assert at.session_state["config"]["zero_allow_untested_optimizer"] is True
    message = next(s.value for s in at.success if s.value.startswith("Loaded rank"))
    assert "zero_allow_untested_optimizer set to true" in message
    assert any("Accepted" in m.value for m in at.markdown)


def test_the_overlap_and_contiguous_switches_a_row_turns_back_on_are_said():
    """A config with overlap_comm and contiguous_gradients off: loading a ZeRO-3 row turned both on (the row is costed
    with them) and the message listed only the batch, precision, stage, offload and ZeRO++, as if the rest was kept."""
    base = {"train_micro_batch_size_per_gpu": 1,
            "zero_optimization": {"stage": 2, "contiguous_gradients": False, "overlap_comm": False}}
    adopted = adopt_candidate(base, _candidate("none", "none"), version="0.19.8")
    assert adopted["zero_optimization"]["overlap_comm"] is True
    notes = adoption_notes(base, adopted, "0.19.8")
    assert any(note.startswith("overlap_comm false → true and contiguous_gradients false → true: the row is costed")
               for note in notes), notes
    same = {"zero_optimization": {"stage": 2, "overlap_comm": True}}
    assert not any("overlap_comm" in note for note in adoption_notes(same, adopt_candidate(
        same, _candidate("none", "none"), version="0.19.8"), "0.19.8"))
