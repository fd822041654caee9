"""parse_log on logs real DeepSpeed writes, and calibrate against one measurement."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli import main
from core.memory import Hardware, Shape, estimate
from core.models import get_spec
from core.perf import (
    CalibrationError,
    Cluster,
    PlanInputError,
    calibrate,
    parse_log,
    predict,
    step_seconds_from_log,
)
from core.perf.calibrate import SLOWEST_RATE_FACTOR, _rates_scaled
from core.perf.recommend import hardware_for
from tests.conftest import stale_op_locks

FIXTURE = Path(__file__).with_name("test_perf_deepspeed_cpu.log")
LLAMA7 = get_spec("meta-llama/Llama-2-7b-hf")
CONFIG = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "train_batch_size": 128,
          "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}

# the script that wrote the fixture (deepspeed 0.19.8, CPU, bf16, wall_clock_breakdown, flops profiler)
TRAIN = textwrap.dedent('''
    import torch, deepspeed
    from deepspeed.utils.logging import set_log_level_from_string
    set_log_level_from_string("info")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    cfg = {
        "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
        "bf16": {"enabled": True}, "zero_optimization": {"stage": 1},
        "wall_clock_breakdown": True, "steps_per_print": 2,
        "flops_profiler": {"enabled": True, "profile_step": 2, "module_depth": -1, "top_modules": 1,
                           "detailed": False},
    }
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    for step in range(8):
        x = torch.randn(4, 64, dtype=torch.bfloat16)
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
''')


def test_parse_log_reads_the_real_fixture():
    summary = parse_log(FIXTURE.read_text())
    # "time (ms) | fwd: 62.35 | bwd: 89.71 | bwd_inner: 75.77 | bwd_allreduce: 13.88 | step: 84.89"
    assert summary.step_seconds[0] == pytest.approx((62.35 + 89.71 + 84.89) / 1000)
    assert len(summary.step_seconds) == 4  # 8 micro-steps, accumulation 2
    assert len(summary.micro_step_seconds) == 8
    assert summary.optimizer_step_seconds[0] == pytest.approx(0.06616)
    assert summary.samples_per_second == pytest.approx((814.0289624191288,))
    assert summary.running_avg_samples_per_second == pytest.approx(74.39429756005632)
    assert summary.max_memory_allocated_gib == 0.38
    assert summary.profiler["iter_latency_s"] == pytest.approx(0.20387)
    assert summary.profiler["fwd_latency_s"] == pytest.approx(0.04004)
    assert summary.profiler["batch_size_per_gpu"] == 4
    assert summary.profiler["flops_per_gpu"] == pytest.approx(3.87e6)
    assert summary.typical_step_seconds() == pytest.approx(sorted(summary.step_seconds[1:])[1])
    assert summary.to_dict()["typical_step_seconds"] == summary.typical_step_seconds()


def test_a_coloured_log_reads_as_the_plain_one():
    """A hunt: a wrapper's ANSI colours around each line hid every timer line ("no step times found")."""
    plain = FIXTURE.read_text()
    coloured = "\n".join(f"\x1b[36m{line}\x1b[0m" if line else line for line in plain.split("\n"))
    assert parse_log(coloured).to_dict() == parse_log(plain).to_dict()
    assert parse_log(coloured).step_seconds


def test_step_seconds_from_throughput_and_megatron_lines():
    log = ("[INFO] [timer.py:264:stop] epoch=0/micro_step=20/global_step=10, RunningAvgSamplesPerSec=31.5, "
           "CurrSamplesPerSec=32.0, MemAllocated=11.2GB, MaxMemAllocated=20.5GB\n")
    summary = parse_log(log)
    assert summary.typical_step_seconds() is None
    assert step_seconds_from_log(summary, global_batch=64) == pytest.approx(2.0)
    assert summary.max_memory_allocated_gib == 20.5
    mega = parse_log(" iteration 10/ 100 | elapsed time per iteration (ms): 1500.2 | TFLOPs: 150.31 |\n"
                     " iteration 11/ 100 | elapsed time per iteration (ms): 1400.0 | TFLOPs: 151.00 |\n")
    assert mega.megatron_tflops == (150.31, 151.0)
    assert mega.typical_step_seconds() == pytest.approx(1.4)


@pytest.mark.timeout(60)
def test_a_log_of_one_long_line_is_read_in_one_pass():
    """A lazy gap up to the rest of the line rescanned it from every partial match: one 740 KB line took minutes
    (`dsconfig predict --log` seemed to hang). The gaps are bounded now (1,000 characters, ~4x a real line's)."""
    assert parse_log("elapsed time per iteration (ms): 1.0 " * 20000 + "\n").megatron_tflops == ()
    assert parse_log("steps: 1 loss: 2.0 " * 20000 + "\n").pipe_iteration_seconds == ()
    far = parse_log("elapsed time per iteration (ms): 1500.0 |" + " x" * 600 + " TFLOPs: 150.0 |\n")
    assert far.typical_step_seconds() == pytest.approx(1.5) and far.megatron_tflops == ()


def test_predict_reads_the_tail_of_a_log_and_a_stream_only_up_to_the_limit(tmp_path):
    """--log read the whole file: /dev/zero ran out of memory (a MemoryError traceback)."""
    from core.io import read_log_tail

    log = tmp_path / "train.log"
    log.write_text("early line\n" * 100 + "elapsed time per iteration (ms): 1500.2 | TFLOPs: 150.31 |\n")
    text, note = read_log_tail(log)
    assert note is None and text.startswith("early line")
    text, note = read_log_tail(log, limit=200)
    assert note == "read the last 200 bytes of 1,159 bytes" and len(text) < 200
    assert text.splitlines()[0] == "early line"  # the line cut in the middle is dropped
    assert parse_log(text).megatron_tflops == (150.31,)
    if Path("/dev/zero").exists():
        text, note = read_log_tail("/dev/zero", limit=1000)
        assert len(text) == 1000 and note == ("read the first 1,000 bytes only (a stream); 100% of it is not text: "
                                              "is this the training log DeepSpeed wrote?")


def test_a_throughput_of_zero_measures_nothing():
    """A stalled interval prints CurrSamplesPerSec=0.0: it is no step time (dividing by it was a ZeroDivisionError
    that reached `dsconfig predict --log` as a traceback)."""
    summary = parse_log("epoch=0/micro_step=10/global_step=10, RunningAvgSamplesPerSec=0.0, CurrSamplesPerSec=0.0\n")
    assert summary.samples_per_second == () and summary.running_avg_samples_per_second is None
    assert step_seconds_from_log(summary, 64) is None
    with pytest.raises(PlanInputError, match="global_batch=-4 must be a positive number of samples per step"):
        step_seconds_from_log(parse_log("global_step=1, RunningAvgSamplesPerSec=2.0, CurrSamplesPerSec=2.0"), -4)


def test_numbers_with_an_exponent_and_a_vanishing_throughput(tmp_path, capsys):
    """Megatron's "1e3" ms was read as 1 ms (the exponent dropped); a throughput of 1e-320 samples/s gave an
    infinite step, reported as a bad measured_step_seconds instead of naming the log."""
    summary = parse_log("elapsed time per iteration (ms): 1.5e3 | TFLOPs: 1.2e2 |\n")
    assert summary.megatron_iteration_seconds == (1.5,) and summary.megatron_tflops == (120.0,)
    assert parse_log(" steps: 10 loss: 2.0 iter time (s): 1.2e1 samples/sec: 3e2\n").pipe_iteration_seconds == (12.0,)
    log = tmp_path / "train.log"
    log.write_text("global_step=10, RunningAvgSamplesPerSec=1e-320, CurrSamplesPerSec=1e-320\n")
    with pytest.raises(ValueError, match="gives no step time") as refused:
        step_seconds_from_log(parse_log(log.read_text()), 64)
    assert "--calibrate-step" not in str(refused.value)  # core does not name the CLI's flags
    config = tmp_path / "ds.json"
    config.write_text('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true}}')
    assert main(["predict", str(config), "--model", "Qwen/Qwen2.5-0.5B", "--gpu", "NVIDIA H100 80GB",
                 "--log", str(log)]) == 2
    err = capsys.readouterr().err  # the CLI says which flag takes the measured step
    assert f"--log {log}: the log's throughput timer" in err and "with --calibrate-step SECONDS." in err


def test_profiler_durations_of_a_thousand_seconds_and_more():
    """DeepSpeed's duration_to_string prints 1,200 s as '1.2 Ks' (number_to_string's prefixes)."""
    profiler = parse_log("DeepSpeed Flops Profiler\nfwd latency:      400 s\nbwd latency:      1.2 Ks\n"
                         "step latency:     3 ms\niter latency:     1.6 Ks\n").profiler
    assert profiler == pytest.approx({"fwd_latency_s": 400.0, "bwd_latency_s": 1200.0, "step_latency_s": 0.003,
                                      "iter_latency_s": 1600.0})


@given(st.text(max_size=400))
def test_parse_log_never_raises(text):
    summary = parse_log(text)
    assert all(s >= 0 for s in summary.step_seconds)


def test_parse_log_rejects_non_text():
    with pytest.raises(TypeError):
        parse_log(b"bytes")


def test_calibrate_reproduces_a_measured_step():
    cluster = Cluster("NVIDIA A100 80GB", 8, 2)
    shape = Shape(2, 4096, "flash")
    before = predict(CONFIG, LLAMA7, cluster, shape).step_seconds
    fitted = calibrate(CONFIG, LLAMA7, cluster, shape, measured_step_seconds=1.3 * before)
    assert fitted.efficiency.compute < cluster.efficiency.compute
    assert predict(CONFIG, LLAMA7, fitted, shape).step_seconds == pytest.approx(1.3 * before, rel=1e-3)
    # the fitted constants carry over to other shapes on the same cluster
    other = Shape(4, 4096, "flash")
    assert predict(CONFIG, LLAMA7, fitted, other).step_seconds > predict(CONFIG, LLAMA7, cluster, other).step_seconds


def test_calibrate_fits_the_network_when_compute_cannot_explain_it():
    cluster = Cluster("NVIDIA A100 80GB", 8, 4, inter_node_gbit_s=100)
    shape = Shape(1, 1024, "flash")
    before = predict(CONFIG, LLAMA7, cluster, shape).step_seconds
    fitted = calibrate(CONFIG, LLAMA7, cluster, shape, measured_step_seconds=3 * before)
    assert fitted.efficiency.link < cluster.efficiency.link
    assert predict(CONFIG, LLAMA7, fitted, shape).step_seconds == pytest.approx(3 * before, rel=1e-2)


def test_calibrate_fits_the_memory_allowance_to_a_measured_peak():
    cluster = Cluster("NVIDIA A100 80GB", 8, 2)
    shape = Shape(2, 4096, "flash")
    bare = estimate(CONFIG, LLAMA7, hardware_for(cluster), shape,
                    allowances=replace(cluster.memory_allowances, allocator_fraction=0.0)).gpu_bytes
    measured = int(bare * 1.12)
    fitted = calibrate(CONFIG, LLAMA7, cluster, shape, measured_peak_bytes=measured)
    est = estimate(CONFIG, LLAMA7, hardware_for(fitted), shape, allowances=fitted.memory_allowances)
    assert est.gpu_bytes == pytest.approx(measured, rel=1e-6)
    # below the estimate, but above what the tensors themselves take: the CUDA context allowance shrinks
    context = cluster.memory_allowances.cuda_context_bytes
    small = calibrate(CONFIG, LLAMA7, cluster, shape, measured_peak_bytes=bare - context // 2)
    assert small.memory_allowances.allocator_fraction == 0
    assert small.memory_allowances.cuda_context_bytes == pytest.approx(context // 2, abs=1)
    assert isinstance(hardware_for(small), Hardware)


@pytest.mark.parametrize("measured", [-1, 0, float("nan"), float("inf"), True, "2"])
def test_calibrate_rejects_a_step_that_is_not_a_positive_number(measured):
    with pytest.raises(PlanInputError) as refused:
        calibrate(CONFIG, LLAMA7, Cluster("NVIDIA A100 80GB"), Shape(), measured_step_seconds=measured)
    assert refused.value.parameter == "measured_step_seconds" and refused.value.value is measured
    assert refused.value.reason == "must be a positive, finite number of seconds"


@pytest.mark.parametrize("measured", [0, -5, float("inf"), True])
def test_calibrate_rejects_a_peak_that_is_not_a_positive_number(measured):
    with pytest.raises(PlanInputError, match=r"^measured_peak_bytes=\S+ must be a positive, finite number of bytes$"):
        calibrate(CONFIG, LLAMA7, Cluster("NVIDIA A100 80GB"), Shape(), measured_peak_bytes=measured)


def test_calibrate_refuses_what_the_model_cannot_reproduce():
    """A step faster than the config can run at every efficiency 1, or 20x slower than predicted, and a peak below
    the model's own tensors or above twice the estimate, are measurements of other inputs: a clear error, not a
    cluster with clamped constants that predicts nonsense from then on."""
    cluster, shape = Cluster("NVIDIA A100 80GB", 8, 2), Shape(2, 4096, "flash")
    before = predict(CONFIG, LLAMA7, cluster, shape).step_seconds
    with pytest.raises(CalibrationError, match="faster than this config can run") as refused:
        calibrate(CONFIG, LLAMA7, cluster, shape, measured_step_seconds=before / 10)
    # an input error like any other: the parameter, the value and the reason, for the CLI to name its flag
    assert isinstance(refused.value, PlanInputError)
    assert (refused.value.parameter, refused.value.value) == ("measured_step_seconds", before / 10)
    assert refused.value.reason.startswith("is faster than this config can run")
    assert str(refused.value) == f"measured_step_seconds={before / 10:g} {refused.value.reason}"
    with pytest.raises(CalibrationError, match=r"slower than this config runs even with every rate at 0\.05"):
        calibrate(CONFIG, LLAMA7, cluster, shape, measured_step_seconds=1e9)
    # the message gives the real bound: the slowest step the factor reaches, which is under 20x the prediction
    # (latencies and host overheads do not scale), and a measurement just above it is refused with that figure
    slowest = predict(CONFIG, LLAMA7, _rates_scaled(cluster, SLOWEST_RATE_FACTOR), shape).step_seconds
    assert slowest < before / SLOWEST_RATE_FACTOR
    with pytest.raises(CalibrationError, match=rf"\({slowest:.3g} s, {slowest / before:.3g}x\)"):
        calibrate(CONFIG, LLAMA7, cluster, shape, measured_step_seconds=slowest * 1.1)
    with pytest.raises(CalibrationError, match="below what the model's own tensors take"):
        calibrate(CONFIG, LLAMA7, cluster, shape, measured_peak_bytes=1)
    with pytest.raises(CalibrationError, match="more than twice"):
        calibrate(CONFIG, LLAMA7, cluster, shape, measured_peak_bytes=10**30)


def test_calibrate_reaches_a_step_the_cpu_optimizer_dominates():
    """ZeRO-3 with optimizer and parameters offloaded to the CPU: the CPU optimizer's rate is fitted with the rest
    (fitting the GEMM rate alone could not make the step faster and missed by 21%)."""
    config = {**CONFIG, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                                              "offload_param": {"device": "cpu"}}}
    cluster, shape = Cluster("NVIDIA A100 80GB"), Shape(2, 2048, "flash")
    before = predict(config, LLAMA7, cluster, shape).step_seconds
    for ratio in (0.8, 1.25, 5.0):
        fitted = calibrate(config, LLAMA7, cluster, shape, measured_step_seconds=ratio * before)
        assert predict(config, LLAMA7, fitted, shape).step_seconds == pytest.approx(ratio * before, rel=0.02)


def test_a_communication_bound_measurement_does_not_wreck_compute_bound_predictions():
    """A ZeRO-3 step over a slow network measured 25% slower than predicted: one factor on every rate, so the
    GEMM efficiency stays near its default (fitting it alone put it at 3% of peak, and a one-node ZeRO-2 config on
    the same GPUs was then predicted 16x too slow)."""
    slow = Cluster("NVIDIA H100 80GB", 8, 2, inter_node_gbit_s=100)
    shape = Shape(1, 2048, "flash", "full")
    before = predict(CONFIG, LLAMA7, slow, shape).step_seconds
    fitted = calibrate(CONFIG, LLAMA7, slow, shape, measured_step_seconds=1.25 * before)
    assert predict(CONFIG, LLAMA7, fitted, shape).step_seconds == pytest.approx(1.25 * before, rel=0.02)
    assert fitted.efficiency.compute > 0.7 * slow.efficiency.compute
    one_node = {"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
                "zero_optimization": {"stage": 2}}
    node, fitted_node = replace(slow, nodes=1), replace(fitted, nodes=1)
    ratio = (predict(one_node, LLAMA7, fitted_node, Shape(8, 2048, "flash")).step_seconds
             / predict(one_node, LLAMA7, node, Shape(8, 2048, "flash")).step_seconds)
    assert 1.0 < ratio < 1.5


@pytest.mark.deepspeed
@pytest.mark.slow
@pytest.mark.long  # a cold run builds DeepSpeed's shm op (minutes): start it first
def test_parse_log_reads_what_deepspeed_writes_now(tmp_path):
    """Train the fixture's tiny model on the CPU with the installed DeepSpeed and parse its live output."""
    pytest.importorskip("deepspeed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1",
           "LOCAL_RANK": "0"}
    try:  # a cold run builds DeepSpeed's ops: minutes on a busy 2-core machine
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1500)
    except subprocess.TimeoutExpired:
        # the killed run may have been building an op: its lock would make every later DeepSpeed process wait
        for lock in stale_op_locks():
            lock.unlink(missing_ok=True)
        raise
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = parse_log(proc.stdout + proc.stderr)
    assert len(summary.step_seconds) == 4 and len(summary.micro_step_seconds) == 8
    assert summary.samples_per_second and summary.profiler["batch_size_per_gpu"] == 4
    assert summary.typical_step_seconds() > 0
    assert summary.logged_config == {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4,
                                     "gradient_accumulation_steps": 2, "world_size": 1}


@pytest.mark.parametrize("line", [
    "time (ms) | fwd: nan | bwd: 1 | step: 1",
    "time (ms) | fwd: inf | bwd: 1 | step: 1",  # was: calibrated to a measured inf s
    "time (ms) | fwd: -500 | bwd: 1 | step: 1",
    "time (ms) | fwd: 0 | bwd: 0 | step: 0",
    "global_step=10, RunningAvgSamplesPerSec=1e5e5, CurrSamplesPerSec=...",  # was: could not convert string...
    "elapsed time per iteration (ms): 1.2.3",
    "elapsed time per iteration (ms): .",
    "DeepSpeed Flops Profiler\nfwd latency: 1.2.3 ms\nFLOPS per GPU = x: 1.2.3 T",
], ids=["nan", "inf", "negative", "zero", "garbled-throughput", "megatron-1.2.3", "megatron-dot", "profiler"])
def test_garbled_log_lines_measure_nothing(line, tmp_path):
    """A truncated or garbled line is no measurement: parse_log keeps none of it, so predict --log says it found
    no step times, naming the file, instead of a bare float() error or a calibration to inf."""
    summary = parse_log(line + "\n")
    assert summary.typical_step_seconds() is None and not summary.samples_per_second
    assert not summary.profiler
    config = tmp_path / "ds.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}')
    log = tmp_path / "train.log"
    log.write_text(line + "\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["predict", str(config), "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "NVIDIA H100 80GB",
                     "--log", str(log)], out=out)
    assert code == 2 and f"--log {log}: no step times found" in err.getvalue()


def test_a_pipeline_engine_log_is_read_per_iteration_not_per_timer_print():
    """The pipeline engine (and Megatron-DeepSpeed on it) logs its fwd/bwd/step timers every steps_per_print
    steps, summed over them, next to its own time per iteration: calibration took the sums, 10x one step."""
    from core.perf import parse_log

    steps_per_print, step_ms = 10, 1250.0
    timers = (f"time (ms) | fwd: {0.32 * step_ms * steps_per_print:.2f} | bwd: {0.64 * step_ms * steps_per_print:.2f}"
              f" | step: {0.04 * step_ms * steps_per_print:.2f}")
    pipe = (f"steps: {steps_per_print} loss: {2.3:0.4f} iter time (s): {step_ms / 1000:0.3f} samples/sec: "
            f"{64 / (step_ms / 1000):0.3f}")  # the f-string of PipelineEngine.train_batch
    for text in (f"{timers}\n{pipe}\n" * 3,
                 f"{timers}\n elapsed time per iteration (ms): {step_ms:.1f} | TFLOPs: 120.00 |\n" * 3):
        assert parse_log(text).typical_step_seconds() == pytest.approx(step_ms / 1000)
    assert parse_log(f"{timers}\n" * 3).typical_step_seconds() == pytest.approx(step_ms * steps_per_print / 1000)


@pytest.mark.parametrize("prefix", ["worker-0: ", "[default0]:", "[rank0]: "])
def test_parse_log_reads_the_profiler_behind_a_launchers_line_prefix(prefix):
    """pdsh (the deepspeed launcher on several nodes) and torchrun --tee put a prefix before every line of a
    worker; the profiler's summary is read behind it as the timer and throughput lines are."""
    plain = FIXTURE.read_text()
    prefixed = "\n".join(prefix + line for line in plain.splitlines())
    expected = parse_log(plain)
    assert expected.profiler  # the real log has the summary
    got = parse_log(prefixed)
    assert got.profiler == expected.profiler and got.step_seconds == expected.step_seconds


def test_a_log_powershell_wrote_as_utf16_is_read_and_a_binary_file_is_called_so(tmp_path):
    """A UTF-16 log (Windows PowerShell's > and Tee-Object) decoded as UTF-8 had no step time in it, and --log said
    "enable wall_clock_breakdown" of a log that had it; random bytes got the same advice."""
    from core.io import read_log_tail

    real = FIXTURE.read_text(encoding="utf-8")
    expected = parse_log(real)
    assert expected.typical_step_seconds()  # the fixture has step times
    for codec, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("utf-16-le", b"")):
        log = tmp_path / f"{codec}{len(bom)}.log"
        log.write_bytes(bom + real.encode(codec))
        text, note = read_log_tail(log)
        assert parse_log(text) == expected and note == "read as UTF-16 text", (codec, bom, note)
        odd = len(bom + real.encode(codec)) // 2 + 1  # a tail from an odd byte: still whole characters
        text, note = read_log_tail(log, limit=odd)
        assert "\ufffd" not in text and note.endswith("; read as UTF-16 text")
    noise = tmp_path / "noise.log"
    noise.write_bytes(bytes(range(128, 256)) * 64)
    text, note = read_log_tail(noise)
    assert note is not None and "of it is not text: is this the training log DeepSpeed wrote?" in note
    plain = tmp_path / "plain.log"
    plain.write_text(real, encoding="utf-8")
    assert read_log_tail(plain) == (real, None)


def test_binary_bytes_with_nuls_are_not_called_utf16():
    """00 01 02 ff (json.detect_encoding's NUL pattern for UTF-16) was "read as UTF-16 text", and the not-text check
    counted its decoded characters as text; a log without a BOM is UTF-16 only if its start decodes to text."""
    from core.io import decode_log, log_encoding

    assert log_encoding(b"\x00\x01\x02\xff") == "utf-8"
    _, note = decode_log(b"\x00\x01\x02\xff" * 100)
    assert "UTF-16" not in note and "not text" in note
    assert log_encoding("[2026".encode("utf-16-le")) == "utf-16-le"
    assert log_encoding("[2026".encode("utf-16-be")) == "utf-16-be"


def test_parse_log_reads_the_runs_own_batch_and_world_size_from_deepspeeds_config_printout():
    assert parse_log(FIXTURE.read_text()).logged_config == {
        "train_batch_size": 8, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
        "world_size": 1}
    prefixed = "".join(f"[default0]:{line}\n" for line in FIXTURE.read_text().splitlines())  # torchrun's prefix
    assert parse_log(prefixed).logged_config["train_batch_size"] == 8


def test_predict_converts_the_logs_samples_per_second_with_the_logged_runs_batch_and_says_it_differs(tmp_path):
    """The throughput timer counts the logged run's train_batch_size; predict took this config's on the cluster
    given (4 x 2 x 8 GPUs = 64 here), so a 1-GPU log read as a step 8x too long, called measured."""
    text = "".join(line + "\n" for line in FIXTURE.read_text().splitlines() if "time (ms)" not in line)
    summary = parse_log(text)
    assert not summary.step_seconds and summary.samples_per_second  # only the throughput timer is left
    log = tmp_path / "throughput.log"
    log.write_text(text)
    config = tmp_path / "ds.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        main(["predict", str(config), "--model", "openai-community/gpt2", "--gpu", "NVIDIA A100 80GB", "--seq-len",
              "128", "--log", str(log), "--format", "json"], out=out)
    assert "the logged run trained train_batch_size 8 on 1 GPU(s); this prediction is for 64 on 8" in err.getvalue()
    said = f"({8 / summary.samples_per_second[0]:.3g} s)"  # 8 samples at the logged rate, not 64
    assert said in err.getvalue(), err.getvalue()


def test_no_step_times_names_deepspeeds_info_level(tmp_path):
    config = tmp_path / "ds.json"
    config.write_text('{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1}')
    log = tmp_path / "quiet.log"
    log.write_text("[WARNING] [real_accelerator.py:209:get_accelerator] Setting accelerator to CPU.\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["predict", str(config), "--model", "openai-community/gpt2", "--gpu", "NVIDIA A100 80GB",
                     "--log", str(log)], out=io.StringIO()) == 2
    assert "DeepSpeed 0.17 and later log at WARNING by default" in err.getvalue()
    assert "deepspeed.utils.logger.setLevel(logging.INFO)" in err.getvalue()


def test_a_measurement_beyond_float_range_of_the_prediction_is_worded_without_inf():
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 1}}
    with pytest.raises(CalibrationError) as refused:  # a step of ~28 ms: 1e308 s is beyond float range of it
        calibrate(config, get_spec("openai-community/gpt2"), Cluster("NVIDIA A100 80GB", 1), Shape(4, 128),
                  measured_step_seconds=1e308)
    assert "infx" not in str(refused.value) and "is over 2e+308 times the prediction" in str(refused.value)


def test_calibration_leaves_the_rates_the_step_does_not_depend_on_as_they_were():
    """One GPU without offload: no collective and no CPU optimizer in the step, so the measurement says nothing of
    the link efficiency or the CPU-Adam rate; they were scaled with the compute efficiency all the same, and the
    JSON reported them as fitted values."""
    from core.perf.calibrate import rates_used

    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4, "bf16": {"enabled": True},
              "zero_optimization": {"stage": 1}}
    spec, cluster, shape = get_spec("openai-community/gpt2"), Cluster("NVIDIA A100 80GB", 1), Shape(4, 128)
    assert rates_used(config, spec, cluster, shape) == {"link": False, "cpu_adam": False}
    before = predict(config, spec, cluster, shape).step_seconds
    fitted = calibrate(config, spec, cluster, shape, measured_step_seconds=before * 3)
    assert fitted.compute_efficiency < cluster.compute_efficiency
    assert fitted.efficiency.link == cluster.efficiency.link and fitted.cpu_adam_rate == cluster.cpu_adam_rate
    offloaded = {**config, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    assert rates_used(offloaded, spec, cluster, shape)["cpu_adam"]  # here the CPU optimizer is in the step
