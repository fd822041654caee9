"""Every built-in preset trains in the real DeepSpeed on this CPU machine: on the newest release it is verified
with, and on every release of its ``verified_with`` with DSCONFIG_ALL_RELEASES=1 (``make presets-releases``).

Each preset (with "auto" resolved by core.autofill) goes through ``deepspeed.initialize`` with a small
MLP in a fresh subprocess (one process group per preset, world size 1) and runs 4 optimizer steps on a
fixed batch; the loss must be finite and must change from step to step at least twice. (The first two
steps run at lr 0 by DeepSpeed's construction: WarmupLR/WarmupDecayLR/WarmupCosineLR start at their
minimum and warm up over at least 2 steps, so the loss first moves after step 3; a loss that moved
during those steps would be a bug.) Gradient accumulation, ZeRO stage, offload,
precision and monitoring settings are those of the preset. What the CPU run has to change is decided
in ``cpu_adaptation`` below, returned as text, asserted in the test and printed in the results (run
with ``-s`` to see them); nothing is skipped:

* every preset: optimizer lr 1e-2 and scheduler warmup over 1 step. The presets' fine-tuning lrs
  (2e-5, warm up over 500 steps) move a 4-step run by less than bf16/fp16 can resolve, so the loss could
  not be seen to change.
* fp16 depends on the host: DeepSpeed's CPU accelerator supports it only where torch's oneDNN check
  says the processor can (AVX512-FP16 or AMX-FP16). Each run first asks the accelerator, as the engine
  does. Where fp16 is supported, the ZeRO-2 fp16 preset trains as it is (fp16 weights, dynamic loss
  scaler starting at 2^16) and the test checks exactly that. Where it is not, ``deepspeed.initialize``
  must refuse it with DeepSpeed's own "Type fp16 is not supported on your device.", the validator's
  verdict on the preset must be the same as on any host (no error), and the bf16 stand-in of the same
  config (fp16 switched off, bf16 on, everything else unchanged) trains the 4 steps instead. The same
  holds for bf16 on a host without it.
* NVMe: with DSCONFIG_ALL_RELEASES=1 (``make presets-releases``) nvme_path → a temp dir on the local
  disk when DeepSpeed's async_io op builds (it needs libaio-dev, which the install step adds), and the
  swap folders are checked; otherwise device nvme → cpu with the reason. CI takes the second way: the
  async_io op is ten heavy C++ units, ~9 CPU-minutes to build cold, the largest single item of CI's
  35-minute budget, for one preset's swap path. The tuned aio block stays in the config either way, and
  the preset's NVMe settings are still parsed by every release's DeepSpeedConfig in CI
  (test_export_releases.py).
* ZeRO++: zero_hpz_partition_size stays 8 (DeepSpeed clamps the hpZ group to min(8, world size), so
  one process runs the hpZ code path with a group of 1). qwZ/qgZ are kept if DeepSpeed's quantizer op
  loads, otherwise turned off with the reason (on the CPU accelerator it raises "This op had not been
  implemented on CPU backend."), so on a CPU the quantized communication itself is not exercised.
* monitoring: TensorBoard and W&B are turned off when their packages are not installed (DeepSpeed
  imports them at start-up); output paths point into a temp dir; the flops profiler runs at step 2.
* HF presets: "auto" resolved for 1 process, micro batch 2, accumulation 2, bf16, hidden size 64,
  30 training steps.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.autofill import find_auto, resolve_auto
from core.presets import BUILTIN_DIR, list_presets, validate_preset
from core.schema.base import version_tuple
from tests.conftest import stale_op_locks, torch_extensions_dir
from tests.oracle.ds0195_worker import DEVICE_REFUSAL, precision_stand_in
from tests.oracle.initialize import single_rank_env
from tests.oracle.ops_cache import PREBUILT_OPS

REPO = Path(__file__).resolve().parent.parent

#: Every (preset, release) pair of the presets' ``verified_with`` trains with DSCONFIG_ALL_RELEASES=1 (``make
#: presets-releases``). By default (CI) each preset trains on the newest release it is verified with: each older
#: release JIT-builds its own copy of every op it loads (DeepSpeed's include paths differ per install, so nothing
#: is shared; even one preset on 0.19.5 costs ~7 CPU-minutes of fused Adam and shm builds), which the 35-minute
#: budget cannot hold. The older releases' runtime stays in CI through the initialize proofs
#: (``test_versions_initialize.py``: deepspeed.initialize and two steps on each minor line and the newest patch;
#: on every installed release with DSCONFIG_ALL_RELEASES=1).
#: It also runs the NVMe preset's real swap to disk (``cpu_adaptation``).
ALL_RELEASES = os.environ.get("DSCONFIG_ALL_RELEASES") == "1"
NVME_SWAP_ONLY_IN_MAKE = ("CI does not build DeepSpeed's async_io op (~9 CPU-minutes cold); "
                          "`make presets-releases` runs the real NVMe swap")

HIDDEN = 64
STEPS = 4
#: seconds before a worker dumps its stacks and exits; a cold build of every op it needs takes ~5 min
WATCHDOG_SECONDS = 1200
CPU_LR = 1e-2


def _aio_builds() -> tuple[bool, str]:
    from deepspeed.ops.op_builder import AsyncIOBuilder

    ok = bool(AsyncIOBuilder().is_compatible(False))
    return ok, "" if ok else "DeepSpeed's async_io op is not compatible here (libaio-dev headers/.so not found)"


def _zeropp_quantization_on_cpu() -> tuple[bool, str]:
    """Whether qwZ/qgZ can run here: ZeRO-3 builds a CUDAQuantizer from DeepSpeed's quantizer op."""
    from deepspeed.ops.op_builder import QuantizerBuilder

    try:
        QuantizerBuilder().load()
    except Exception as exc:  # the op builder raises ValueError/RuntimeError/ImportError depending on the box
        return False, f"DeepSpeed's quantizer op does not load here ({exc}); ZeRO-3 needs it for qwZ/qgZ"
    return True, ""


def cpu_adaptation(name: str, config: dict[str, Any], tmp: Path, *, nvme_swap: bool = ALL_RELEASES,
                   ) -> tuple[dict[str, Any], list[str]]:
    """The preset config as this CPU box can run it, and one line per change made (with the reason).

    ``nvme_swap`` (default: with DSCONFIG_ALL_RELEASES=1 only) lets an NVMe offload really swap to a temp dir.
    """
    changes: list[str] = []
    cfg = json.loads(json.dumps(config))
    if find_auto(cfg):
        cfg = resolve_auto(cfg, world_size=1, per_device_train_batch_size=2, gradient_accumulation_steps=2,
                           max_grad_norm=1.0, learning_rate=CPU_LR, adam_beta1=0.9, adam_beta2=0.999,
                           adam_epsilon=1e-8, weight_decay=0.0, fp16=False, bf16=True, hidden_size=HIDDEN,
                           num_training_steps=30, warmup_steps=1)
        changes.append(f'"auto" resolved as the HF Trainer would (1 process, micro 2, accumulation 2, bf16, '
                       f"lr {CPU_LR}, hidden_size {HIDDEN}, 30 steps, warmup 1)")
        left = find_auto(cfg)
        if left:
            changes.append(f"left as \"auto\" by the Trainer (DeepSpeed uses defaults): {', '.join(left)}")
    params = cfg.get("optimizer", {}).get("params", {})
    if params.get("lr") != CPU_LR:
        params["lr"] = CPU_LR
        changes.append(f"optimizer lr → {CPU_LR}: a fine-tuning lr cannot move a 4-step half-precision loss visibly")
    sched = cfg.get("scheduler", {}).get("params", {})
    if sched.get("warmup_num_steps", 1) != 1 or sched.get("warmup_max_lr", CPU_LR) != CPU_LR:
        sched["warmup_num_steps"] = 1
        if "warmup_max_lr" in sched:
            sched["warmup_max_lr"] = CPU_LR
        changes.append("scheduler warmup → 1 step (to lr 1e-2): a 500-step warmup keeps a 4-step run at lr≈0")
    zero = cfg.get("zero_optimization", {})
    for key in ("offload_optimizer", "offload_param"):
        off = zero.get(key)
        if isinstance(off, dict) and off.get("device") == "nvme":
            ok, why = _aio_builds() if nvme_swap else (False, NVME_SWAP_ONLY_IN_MAKE)
            if ok:
                off["nvme_path"] = str(tmp / "nvme")
                changes.append(f"{key}.nvme_path → a temp dir (the preset's /local_nvme does not exist here)")
            else:
                off["device"] = "cpu"
                for nvme_only in ("nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "fast_init"):
                    off.pop(nvme_only, None)
                changes.append(f"{key}.device nvme → cpu: {why}")
    if zero.get("zero_quantized_weights") or zero.get("zero_quantized_gradients"):
        ok, why = _zeropp_quantization_on_cpu()
        if not ok:
            zero["zero_quantized_weights"] = zero["zero_quantized_gradients"] = False
            changes.append(f"zero_quantized_weights/gradients → false: {why}")
    for section, package in (("tensorboard", "tensorboard"), ("wandb", "wandb"), ("comet", "comet_ml")):
        if cfg.get(section, {}).get("enabled") is True:
            if importlib.util.find_spec(package) is None:
                cfg[section]["enabled"] = False
                changes.append(f"{section} off: the {package} package is not installed (DeepSpeed imports it "
                               "at start-up)")
            elif "output_path" in cfg[section]:
                cfg[section]["output_path"] = str(tmp / section)
    if cfg.get("csv_monitor", {}).get("enabled") is True:
        cfg["csv_monitor"]["output_path"] = str(tmp / "csv")
        changes.append("csv_monitor.output_path → a temp dir")
    if cfg.get("flops_profiler", {}).get("enabled") is True:
        cfg["flops_profiler"]["profile_step"] = 2
        cfg["flops_profiler"]["output_file"] = str(tmp / "flops.txt")
        changes.append("flops_profiler.profile_step → 2 and output_file → a temp file, so the 4-step run profiles")
    return cfg, changes


# ---------------------------------------------------------------- the worker (runs in the subprocess)


def worker(config_path: str) -> None:
    """Train a small MLP for STEPS optimizer steps with the config; print one RESULT json line."""
    import faulthandler

    # a hang (e.g. an op build waiting on a lock) ends with every thread's stack on stderr, well before
    # the test's own time-out, so the failure says where it stuck
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
    import deepspeed
    import torch
    from ds0195_worker import enabled_half_precisions, host_precision_support  # on sys.path in the subprocess

    torch.manual_seed(0)
    cfg = json.loads(Path(config_path).read_text())
    model = torch.nn.Sequential(
        torch.nn.Linear(16, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 1),
    )
    # ask what the engine asks before it builds anything: which half precisions the config enables
    # (DeepSpeed's own parser) and which this host's accelerator supports
    host = {"supported": host_precision_support(), "enabled": enabled_half_precisions(cfg)}
    try:
        engine, _, _, scheduler = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                       config=cfg)
    except Exception as exc:  # reported, so the test decides whether this host explains it
        print("RESULT " + json.dumps({**host, "deepspeed": deepspeed.__version__,
                                      "initialize_error": [type(exc).__name__, str(exc)]}), flush=True)
        raise
    micro = engine.train_micro_batch_size_per_gpu()
    accum = engine.gradient_accumulation_steps()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(micro, 16, generator=gen)
    y = x.sum(dim=1, keepdim=True) / 4
    dtype = next(p for p in engine.module.parameters()).dtype
    losses: list[float] = []
    lrs: list[float] = []
    for _ in range(STEPS):
        for micro_step in range(accum):
            out = engine(x.to(dtype))
            loss = torch.nn.functional.mse_loss(out.float(), y)
            if micro_step == 0:
                losses.append(float(loss.detach()))
            engine.backward(loss)
            engine.step()
        lrs.append(float(engine.get_lr()[0]))
    out = engine(x.to(dtype))
    losses.append(float(torch.nn.functional.mse_loss(out.float(), y).detach()))
    result = {
        **host,
        "deepspeed": deepspeed.__version__,
        "losses": losses, "lrs": lrs, "global_steps": engine.global_steps, "micro": micro, "accum": accum,
        "stage": engine.zero_optimization_stage(), "dtype": str(dtype), "optimizer": type(engine.optimizer).__name__,
        "basic_optimizer": type(getattr(engine, "basic_optimizer", None)).__name__,
        "scheduler": type(scheduler).__name__ if scheduler is not None else None,
        "hpz": engine.zero_hpz_partition_size() if engine.zero_optimization() else None,
        "dynamic_loss_scale": bool(engine.dynamic_loss_scale()) if engine.fp16_enabled() else None,
        "loss_scale": float(getattr(engine.optimizer, "cur_scale", 0.0)) if engine.fp16_enabled() else None,
        "offload_optimizer": str(getattr(engine.zero_offload_optimizer(), "device", None))
        if engine.zero_optimization() else None,
    }
    print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------- the tests

PRESETS = list_presets([BUILTIN_DIR])[0]


def preset_runs(presets: list, all_releases: bool) -> list[tuple[Any, str]]:
    """The (preset, release) pairs that train: all of ``verified_with``, or the newest per preset."""
    runs = []
    for preset in presets:
        newest = max(preset.meta["verified_with"], key=version_tuple)
        runs += [(preset, release) for release in preset.meta["verified_with"] if all_releases or release == newest]
    return runs


#: The interpreter with each DeepSpeed version a preset can claim in meta.verified_with.
INTERPRETERS = {"0.19.8": Path(sys.executable), "0.19.5": REPO / ".venv-ds0195" / "bin" / "python"}


ORACLE_DIR = REPO / "tests" / "oracle"


def run_preset(name: str, config: dict[str, Any], tmp: Path, version: str = "0.19.8") -> dict[str, Any]:
    """Run ``worker`` on ``config`` with the interpreter of DeepSpeed ``version``; return its RESULT.

    The RESULT always holds ``supported`` (the accelerator's answers) and ``enabled`` (the half
    precisions DeepSpeed's parser enables); ``initialize_error`` ([type, message]) when
    ``deepspeed.initialize`` raised, else the training figures.
    """
    python = INTERPRETERS[version]
    assert python.exists(), f"no interpreter with DeepSpeed {version} at {python} (preset {name} claims it)"
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(config, indent=2))
    env = single_rank_env()
    env.pop("PYTHONPATH", None)
    # each DeepSpeed version JIT-builds its own ops; a shared folder would rebuild on every switch
    env["TORCH_EXTENSIONS_DIR"] = str(torch_extensions_dir(version))
    # the worker runs from its source so that it needs neither pytest nor this repository's packages; the
    # host questions come from the oracle's stand-alone worker module (standard library + DeepSpeed only)
    code = (f"import json, sys\nfrom pathlib import Path\nsys.path.insert(0, {str(ORACLE_DIR)!r})\n"
            f"HIDDEN = {HIDDEN}\nSTEPS = {STEPS}\n"
            f"WATCHDOG_SECONDS = {WATCHDOG_SECONDS}\n" + inspect.getsource(worker) + "\nworker(sys.argv[1])\n")
    proc = subprocess.run([str(python), "-c", code, str(path)], capture_output=True, text=True, env=env,
                          timeout=1500, cwd=tmp)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if lines and "initialize_error" in lines[-1] and proc.returncode != 0:
        return json.loads(lines[-1][len("RESULT "):])
    assert proc.returncode == 0 and lines, (
        f"DeepSpeed {version} failed on preset {name} (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-6000:]}\nop locks no process holds (a killed build's; torch waits on them forever): "
        f"{[str(p) for p in stale_op_locks()] or 'none'}"
    )
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["deepspeed"] == version, result["deepspeed"]
    return result


EXPECTED_CHANGES = {
    # presets whose CPU run must change more than the lr/warmup (the test fails if a change appears or
    # disappears unexpectedly, so the list in the module docstring stays true)
    "zero-infinity-nvme": ["nvme"],
    "monitoring-rich": ["csv_monitor.output_path", "flops_profiler.profile_step"],
    "hf-auto-zero2": ['"auto" resolved'],
    "hf-auto-zero3": ['"auto" resolved'],
}


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.long
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("preset", "version"),
                         preset_runs(PRESETS, ALL_RELEASES),
                         ids=lambda x: getattr(x, "name", x))
def test_preset_trains_in_real_deepspeed(preset, version, tmp_path):
    cfg, changes = cpu_adaptation(preset.name, preset.config, tmp_path)
    for fragment in EXPECTED_CHANGES.get(preset.name, []):
        assert any(fragment in c for c in changes), (fragment, changes)
    assert find_auto(cfg) == [] or preset.target == "hf"
    result = run_preset(preset.name, cfg, tmp_path, version)
    unsupported = [name for name in result["enabled"] if not result["supported"][name]]
    if unsupported:
        # a property of this host, not of the preset: DeepSpeed refuses it with its device error ...
        refusal = DEVICE_REFUSAL.format(precision=unsupported[0])
        assert result.get("initialize_error") == ["ValueError", refusal], result
        # ... the project's verdict does not change (no error, on any host) ...
        for checked_version, report in validate_preset(preset, world_size=1):
            assert report.ok, (checked_version, [(f.code, f.path, f.message) for f in report.errors])
        # ... and the same config with a precision this host has trains, so the rest is still proven
        cfg = precision_stand_in(cfg, unsupported[0], result["supported"])
        changes.append(f"{unsupported[0]} → {'bf16' if result['supported']['bf16'] else 'fp32'} stand-in: "
                       f"DeepSpeed refuses {unsupported[0]} on this host ({refusal!r}), as it should")
        result = run_preset(preset.name, cfg, tmp_path, version)
    assert "initialize_error" not in result, result
    print(f"\n[{preset.name} @ {version}] CPU changes: " + ("; ".join(changes) or "none"))
    print(f"[{preset.name} @ {version}] result: " + json.dumps(result))
    losses = result["losses"]
    assert len(losses) == STEPS + 1
    assert all(l == l and abs(l) != float("inf") for l in losses), losses  # noqa: E741
    moves = sum(1 for a, b in itertools.pairwise(losses) if a != b)
    assert moves >= 2, f"loss did not change over at least 2 steps: {losses}"
    if "scheduler" in cfg:
        assert losses[0] == losses[1], f"lr is 0 for the first step, yet the loss moved: {losses}"
    assert result["global_steps"] == STEPS
    zero = cfg.get("zero_optimization", {})
    assert result["stage"] == zero.get("stage", 0)
    assert result["accum"] == cfg.get("gradient_accumulation_steps")
    if cfg.get("bf16", {}).get("enabled"):
        assert result["dtype"] == "torch.bfloat16"
    if cfg.get("fp16", {}).get("enabled") is True:
        assert result["dtype"] == "torch.float16"
        assert result["dynamic_loss_scale"] is True
        # starts at 2^initial_scale_power; can only have been halved by overflows, never raised in 4 steps
        start = 2.0 ** cfg["fp16"].get("initial_scale_power", 16)
        assert 0 < result["loss_scale"] <= start
    if zero.get("offload_optimizer", {}).get("device") == "cpu":
        assert "cpu" in str(result["offload_optimizer"]).lower()
    if "scheduler" in cfg:
        assert result["scheduler"] == cfg["scheduler"]["type"]
    if zero.get("zero_hpz_partition_size", 1) > 1:
        assert result["hpz"] == zero["zero_hpz_partition_size"]
    if any("nvme_path → a temp dir" in c for c in changes):
        # the real NVMe swappers (async_io) were set up under the temp dir
        assert result["offload_optimizer"] == "nvme"
        for sub in ("optimizer", "bfloat16params"):
            assert (tmp_path / "nvme" / "zero_stage_3" / sub / "rank0").is_dir(), sub
    if preset.name == "monitoring-rich":
        csv_files = list((tmp_path / "csv").rglob("*.csv"))
        assert csv_files, "csv_monitor wrote nothing"
        assert (tmp_path / "flops.txt").is_file() and "params" in (tmp_path / "flops.txt").read_text().lower()




def test_a_lock_left_by_a_killed_build_is_removed_at_session_start_and_a_held_one_kept():
    """The CI hang: a killed process's op lock made every later DeepSpeed process wait forever."""
    from types import SimpleNamespace

    from tests import conftest

    op_dir = torch_extensions_dir("0.19.8") / "an_op_for_the_lock_test"
    op_dir.mkdir(parents=True, exist_ok=True)
    stale, held = op_dir / "lock", op_dir.parent / "an_op_building_now" / "lock"
    held.parent.mkdir(exist_ok=True)
    stale.touch()
    fd = os.open(held, os.O_CREAT | os.O_EXCL)  # exactly what torch's FileBaton does while it builds
    try:
        assert stale in conftest.stale_op_locks()
        assert held not in conftest.stale_op_locks()
        conftest.pytest_sessionstart(SimpleNamespace(config=SimpleNamespace(workerinput={})))  # an xdist worker
        assert stale.exists()
        conftest.pytest_sessionstart(SimpleNamespace(config=SimpleNamespace()))
        assert not stale.exists() and held.exists()
    finally:
        os.close(fd)
        held.unlink()
        held.parent.rmdir()
        op_dir.rmdir()
    assert os.environ["TORCH_EXTENSIONS_DIR"] == str(torch_extensions_dir("0.19.8"))


def test_op_cache_is_per_processor():
    """Ops compiled for one CPU's SIMD flags are never reused on another (CI may run on a different CPU)."""
    from tests.oracle.ops_cache import cpu_fingerprint

    avx512 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n"
    avx2 = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse avx2\n"
    same_flags_reordered = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: avx512_bf16 avx2 fpu sse avx512f\n"
    assert cpu_fingerprint(avx512) != cpu_fingerprint(avx2)
    assert cpu_fingerprint(avx512) == cpu_fingerprint(same_flags_reordered)
    assert cpu_fingerprint(avx512) != cpu_fingerprint(avx512.replace("AMD EPYC", "Intel Xeon"))
    assert torch_extensions_dir("0.19.8").name == f"ds0198-cpu{cpu_fingerprint()}"
    assert torch_extensions_dir("0.19.5") != torch_extensions_dir("0.19.8")


def test_ci_trains_every_preset_on_its_newest_release_and_make_trains_every_pair():
    every = {(p.name, v) for p, v in preset_runs(PRESETS, all_releases=True)}
    assert every == {(p.name, v) for p in PRESETS for v in p.meta["verified_with"]}
    ci = {(p.name, v) for p, v in preset_runs(PRESETS, all_releases=False)}
    assert ci == {(p.name, max(p.meta["verified_with"], key=version_tuple)) for p in PRESETS}
    assert len(every) > len(ci), "the presets name no older release: make presets-releases adds nothing"


def test_ci_offloads_the_nvme_preset_to_the_cpu_and_says_where_the_real_swap_runs(tmp_path):
    preset = next(p for p in PRESETS if p.name == "zero-infinity-nvme")
    cfg, changes = cpu_adaptation(preset.name, preset.config, tmp_path, nvme_swap=False)
    zero, written = cfg["zero_optimization"], preset.config["zero_optimization"]
    for key in ("offload_optimizer", "offload_param"):
        assert written[key]["device"] == "nvme" and zero[key]["device"] == "cpu"
        assert "nvme_path" not in zero[key] and "buffer_count" not in zero[key]
        assert any(c.startswith(f"{key}.device nvme → cpu") and "make presets-releases" in c for c in changes)
    assert cfg["aio"] == preset.config["aio"], "the tuned aio block stays"
    assert not ALL_RELEASES or cpu_adaptation(preset.name, preset.config, tmp_path)[1] != changes
    assert "AsyncIOBuilder" not in PREBUILT_OPS["0.19.8"]


@pytest.mark.deepspeed
def test_the_0195_interpreter_answers_the_libaio_question_as_the_main_one():
    """``.venv-ds0195`` borrows torch and the rest from ``.venv``; unless that folder's .pth files run too (setuptools'
    distutils shim), 0.19.5's op builder imports the standard library's distutils, torch later swaps in setuptools'
    copy, and the libaio check fails in the middle: the NVMe preset's async_io op "is not compatible" on a host
    with libaio (``make presets-releases``)."""
    probe = ("import deepspeed, torch.utils.cpp_extension; from deepspeed.ops.op_builder import AsyncIOBuilder; "
             "print(deepspeed.__version__, AsyncIOBuilder().is_compatible())")
    answers = {}
    for version in ("0.19.5", "0.19.8"):
        done = subprocess.run([str(INTERPRETERS[version]), "-c", probe], capture_output=True, text=True,
                              timeout=300, cwd=REPO, check=True)
        answers[version] = done.stdout.split()[-2:]
    assert answers["0.19.5"][0] == "0.19.5" and answers["0.19.8"][0] == "0.19.8", answers
    assert answers["0.19.5"][1] == answers["0.19.8"][1], answers


@pytest.mark.long  # it builds the ops when the install step has not
@pytest.mark.parametrize("version", sorted(PREBUILT_OPS))
def test_the_ops_ci_builds_ahead_are_real_builders_of_a_release_ci_trains_on(version):
    """``scripts/install-test-deps.sh`` builds PREBUILT_OPS while pip runs; each name must be a builder the release's
    CPU accelerator knows (a renamed one would silently build nothing ahead), for a release CI trains presets on, and
    the prebuild must succeed (here it loads what the install step built, or builds it)."""
    assert version in {release for _, release in preset_runs(PRESETS, all_releases=False)}
    python = INTERPRETERS[version]
    proc = subprocess.run([str(python), str(ORACLE_DIR / "prebuild_ops.py")], capture_output=True, text=True,
                          timeout=1500, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    built = [line.split()[2].rstrip(":") for line in proc.stdout.splitlines()
             if line.startswith(f"prebuild-ops {version} ")]
    assert len(built) == len(PREBUILT_OPS[version]) and "deepspeed_not_implemented" not in built, proc.stdout
    assert all((torch_extensions_dir(version) / name).is_dir() for name in built)
