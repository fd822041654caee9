"""Monitoring: ``tensorboard``, ``wandb``, ``csv_monitor``, ``comet``, ``comms_logger``, ``flops_profiler``.

The first five mirror DeepSpeed 0.19.8's pydantic models (``deepspeed/monitor/config.py``,
``deepspeed/comm/config.py``: strict); ``flops_profiler`` is read with ``dict.get``
(``deepspeed/profiling/config.py``: lenient).
"""

from __future__ import annotations

from core.schema.base import LenientSection, Section, ds_field

_OUTPUT_PATH_NOTE = "The docs give `~/tensorboard/` as the default; DeepSpeed's default is an empty string."


class TensorBoardConfig(Section):
    """Write loss, learning rate, loss scale and (with `wall_clock_breakdown`) step timings as
    TensorBoard event files. Needs the `tensorboard` package."""

    enabled: bool = ds_field(False, description="Log to TensorBoard (rank 0 only). Needs `tensorboard` installed.")
    output_path: str = ds_field(
        "",
        widget="path",
        description="Directory for the event files. Empty: under the directory the training script is launched from.",
        doc_note=_OUTPUT_PATH_NOTE,
    )
    job_name: str = ds_field(
        "DeepSpeedJobName",
        description="Name of this run; becomes a sub-directory of `output_path`. Give each run its own name.",
    )


class WandbConfig(Section):
    """Log to Weights & Biases. Needs the `wandb` package and a login (`wandb login` or WANDB_API_KEY)."""

    enabled: bool = ds_field(False, description="Log to Weights & Biases (rank 0 only). Needs `wandb` installed.")
    group: str | None = ds_field(None, description="W&B group name, to group related runs together.")
    team: str | None = ds_field(None, description="W&B team (entity) the run belongs to. Unset: your default.")
    project: str = ds_field("deepspeed", description="W&B project name.")


class CSVMonitorConfig(Section):
    """Write the monitored values to local CSV files (no extra package needed)."""

    enabled: bool = ds_field(False, description="Log to CSV files (rank 0 only).")
    output_path: str = ds_field(
        "",
        widget="path",
        description="Directory for the CSV files. Empty: under the directory the training script is launched from.",
    )
    job_name: str = ds_field(
        "DeepSpeedJobName", description="Name of this run; becomes a sub-directory of `output_path`."
    )


class CometConfig(Section):
    """Log to Comet (an `Experiment` object). Needs the `comet_ml` package. Every optional field can also
    come from `.comet.config` or COMET_* environment variables."""

    enabled: bool = ds_field(False, description="Log to Comet (rank 0 only). Needs `comet_ml` installed.")
    samples_log_interval: int = ds_field(
        100,
        unit="samples",
        description="Send metrics to Comet after every this many processed samples. Lower is finer-grained "
        "and chattier.",
    )
    project: str | None = ds_field(None, description="Comet project name (or COMET_PROJECT_NAME).")
    workspace: str | None = ds_field(None, description="Comet workspace name (or COMET_WORKSPACE).")
    api_key: str | None = ds_field(
        None,
        description="Comet API key (or COMET_API_KEY). Prefer the environment variable: a key in a config "
        "file ends up in logs and repositories.",
    )
    experiment_name: str | None = ds_field(None, description="Name of the Comet experiment.")
    experiment_key: str | None = ds_field(
        None,
        description="Key of the Comet experiment to log to: alphanumeric, 32 to 50 characters (used with `mode: get`).",
    )
    online: bool | None = ds_field(
        None, unset_means=True,
        description="true (default): send to the Comet server; false: store an offline experiment locally.",
    )
    mode: str | None = ds_field(
        None,
        choices=("get", "create", "get_or_create"),
        widget="select",
        description="`get`: continue the experiment named by `experiment_key`; `create`: always start a new "
        "one (HPO sweeps); `get_or_create` (default): new unless it already exists.",
    )


class CommsLoggerConfig(Section):
    """Log the collective operations issued through `deepspeed.comm` (sizes, latency, bandwidth).
    Summarise with `deepspeed.comm.log_summary()`. Logged calls are synchronised, which slows training."""

    enabled: bool = ds_field(
        False,
        description="Log communication operations. Not read by DeepSpeed: the logger is on whenever the "
        "`comms_logger` key is present (`enabled` false too) and off only without the section.",
    )
    prof_all: bool = ds_field(True, description="Profile every operation (true) or only those in `prof_ops`.")
    prof_ops: list = ds_field(
        default_factory=list,
        description='Names of the operations to profile when `prof_all` is false, e.g. `["all_reduce", "all_gather"]`.',
    )
    verbose: bool = ds_field(False, description="Print every logged operation immediately (very noisy).")
    debug: bool = ds_field(False, description="Add the calling function's name to each log entry.")


class FlopsProfilerConfig(LenientSection):
    """Profile FLOPs, latency and parameter counts per module once, at `profile_step`."""

    enabled: bool = ds_field(
        False,
        description="Run the flops profiler. Also turns on `wall_clock_breakdown` (extra synchronisation).",
        doc_note="DeepSpeed computes `wall_clock_breakdown | enabled`, so a non-boolean value (e.g. a "
        "string) fails while the config is parsed.",
    )
    recompute_fwd_factor: float = ds_field(
        0.0, as_written="profile", auto="fails",
        description="Fraction of the forward pass recomputed in the backward (activation checkpointing), "
        "counted in the FLOPs: 0.0 none, 1.0 full recomputation.",
    )
    profile_step: int = ds_field(
        1, as_written="step", auto="fails",
        unit="steps",
        description="Global step at which to profile. Use a step after warm-up for accurate timings.",
    )
    module_depth: int = ds_field(
        -1, as_written="profile", auto="fails",
        description="Depth of the module tree in the aggregated output; -1 prints every level.",
    )
    top_modules: int = ds_field(
        1, as_written="profile", auto="fails", description="How many top modules the aggregated output lists."
    )
    detailed: bool = ds_field(True, description="Print the detailed per-module profile.")
    output_file: str | None = ds_field(
        None, widget="path", description="File to write the profile to. Unset: standard output."
    )
