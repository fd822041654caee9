"""The entries of the finding-code table (``core.rules.codes`` looks them up): one ``Code`` per finding code,
grouped by topic as the rules are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from core.findings import Severity

Fails = Literal["parse", "initialize", "training", "ignored", "n/a"]


@dataclass(frozen=True)
class Code:
    """One finding code."""

    code: str
    severity: Severity
    fails: Fails
    fix_safe: bool | None
    """True: the fix is safe; False: unsafe; None: no automatic fix."""
    summary: str
    why: str
    example: dict[str, Any] | None
    """A config that gets this finding (None only for defensive codes no known config triggers)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """``validate`` keyword arguments for the example (world_size, target, version)."""
    other_severity: Severity | None = None
    """The severity this code has in the other kind of section (e.g. a warning where DeepSpeed ignores)."""
    family: bool = False
    """The entry stands for every code that starts with its prefix (``type.<pydantic error type>``)."""

    @property
    def prefix(self) -> str:
        return self.code.split("<")[0]

    def example_settings(self) -> dict[str, Any]:
        """``validate`` keyword arguments for the example: its settings, else the newest release."""
        from core.versions import RELEASES

        return {"version": RELEASES[-1], **self.settings}


B: dict[str, Any] = {"train_micro_batch_size_per_gpu": 1}


def _c(code: str, severity: Severity, fails: Fails, fix_safe: bool | None, summary: str, why: str,
       example: dict[str, Any] | None, **extra: Any) -> Code:
    return Code(code, severity, fails, fix_safe, summary, why, example, **extra)


TABLE: tuple[Code, ...] = (
    # ---- the config as a whole
    _c("config.not-object", "error", "parse", None, "The config is not a JSON object.",
       "DeepSpeed reads a config as a dict; a list, string or number is refused before anything else.",
       None),
    _c("config.preset-file", "error", "ignored", False, "A preset file given where a ds_config belongs.",
       "A Config Studio preset is {\"meta\": ..., \"config\": ...}: DeepSpeed reads neither key, so the run would "
       "train with none of the preset's settings (and usually stops at the missing batch size). The DeepSpeed "
       "config is the object under `config`: the fix lifts it out (unsafe: DeepSpeed then reads the preset's settings, "
       "which it ignored before) and drops `meta`; `dsconfig export --preset NAME` writes it too.",
       {"meta": {"title": "ZeRO-2, bf16"}, "config": {**B, "zero_optimization": {"stage": 2}}}),
    # ---- keys
    _c("keys.unknown", "error", "parse", False, "Unknown key in a section DeepSpeed checks strictly.",
       "Pydantic sections of DeepSpeed (zero_optimization, fp16, ...) forbid extra keys: the whole config is "
       "rejected with \"Extra inputs are not permitted\". The fix renames the key to the closest known one or "
       "moves it to the section where it belongs, which starts DeepSpeed reading it.",
       {**B, "zero_optimization": {"stge": 1}}),
    _c("keys.unknown-ignored", "warning", "ignored", False, "Unknown key in a section DeepSpeed reads leniently.",
       "Sections read with dict.get (activation_checkpointing, ...) ignore keys they do not know, so a typo "
       "silently leaves the setting at its default.",
       {**B, "activation_checkpointing": {"partition_activation": True}}),
    _c("keys.comment", "info", "ignored", None, "A comment key (`_comment`, `//`, `description`, ...).",
       "JSON has no comments, so people write them as keys. Where DeepSpeed ignores unknown keys (the top level, "
       "sections read with dict.get) such a key is harmless and is never offered a rename (`_comment` is not a "
       "misspelt `comet`); in a section that rejects unknown keys it is a keys.unknown error whose fix moves it "
       "to the top level.",
       {**B, "_comment": "ZeRO-2 for the 7B runs"}),
    _c("keys.unknown-top-level", "warning", "ignored", False, "Unknown top-level key.",
       "DeepSpeed ignores top-level keys it does not know: `zero_optimisation` configures nothing, and the run "
       "trains without ZeRO. The fix renames it to the closest known key or moves it where it belongs.",
       {**B, "zero_optimisation": {"stage": 2}}),
    _c("keys.unknown-auto", "warning", "ignored", False, "Unknown key whose value is \"auto\".",
       "DeepSpeed drops keys whose value is \"auto\" before it checks a strict section, so this unknown key is "
       "ignored instead of rejected.",
       {**B, "bf16": {"enabled": True, "initial_scale_power": "auto"}}),
    _c("keys.not-in-version", "error", "parse", True, "A key the chosen DeepSpeed release does not have.",
       "The key was added after, or removed before, the release validated for. A strict section rejects it; "
       "a lenient one ignores it (then it is a warning). Removing it is safe: this release gives it no meaning.",
       {**B, "zero_optimization": {"stage": 1, "compute_grad_norm": True}}, settings={"version": "0.19.5"},
       other_severity="warning"),
    _c("keys.not-in-version-on", "error", "parse", False, "A key the chosen release does not have, set to "
       "what the releases that have it act on.",
       "As keys.not-in-version, but the value asks for something the releases that read the key do (a true flag, "
       "an enabled or non-empty section, a value other than their default). In a section that rejects it, "
       "removing it lets this release load the config but training then runs without it; in one the release reads "
       "with dict.get (0.16.x's bf16, a top-level key it does not know) it is ignored (a warning), and the config "
       "may be meant for a release that has it. Either way the fix is unsafe.",
       {**B, "zero_optimization": {"stage": 1, "compute_grad_norm": False}}, settings={"version": "0.19.5"},
       other_severity="warning"),
    _c("keys.alias-clash", "error", "parse", True, "A key and its alias are both set.",
       "DeepSpeed reads the alias (e.g. `stage3_prefetch_bucket_size`) and rejects the other spelling as an "
       "unknown key. Removing the spelling DeepSpeed does not read keeps the value it uses.",
       {**B, "zero_optimization": {"stage": 3, "prefetch_bucket_size": 20, "stage3_prefetch_bucket_size": 10}}),
    _c("keys.doc-only", "error", "parse", True, "A key the DeepSpeed docs mention but DeepSpeed does not read.",
       "The docs list keys the code never had or no longer reads. A strict section rejects them; elsewhere they "
       "are ignored (a warning). Removing one that asks for nothing (or that DeepSpeed ignores) changes nothing "
       "DeepSpeed does.",
       {**B, "zero_optimization": {"stage": 3, "cpu_offload_params": False}}, other_severity="warning"),
    _c("keys.doc-only-on", "error", "parse", False, "A documented key DeepSpeed rejects, whose value asks for "
       "something.",
       "As keys.doc-only, in a section that rejects it, with a value that asks for something (true, a number): "
       "removing it lets DeepSpeed load the config, but training then runs without what it asked for (e.g. "
       "cpu_offload_params true meant parameter offload: the key DeepSpeed reads is offload_param), so the fix "
       "is unsafe.",
       {**B, "zero_optimization": {"stage": 3, "cpu_offload_params": True}}),
    _c("keys.ignored", "warning", "ignored", False, "A documented key this DeepSpeed release ignores.",
       "The key is in the docs and the schema, but the release never reads it; where it has a replacement the "
       "fix renames it, which makes DeepSpeed start using the value.",
       {**B, "aio": {"thread_count": 4}}),
    _c("removed.key", "error", "parse", True, "A key DeepSpeed removed and now refuses.",
       "DeepSpeed 0.19.8 refuses any config that contains a removed section such as `amp` or `elasticity`, "
       "even a disabled one (deepspeedai/DeepSpeed#8489). Removing it is safe: this release gives it no meaning.",
       {**B, "amp": {"enabled": False}}),
    _c("removed.enabled-section", "error", "parse", False, "A removed key or section that is switched on.",
       "As removed.key, but the value asks for something earlier releases did: a section with `enabled: true` "
       "(amp's mixed precision, elastic batch sizes) or a non-empty one without `enabled` (sparse_attention), a "
       "true flag (sparse_gradients), a value other than their default (mics_shard_size 8). Removing it lets the "
       "config load, but training runs without what it asked for, so the fix is unsafe: set up the replacement "
       "the message names (e.g. bf16 or fp16 for amp).",
       {**B, "amp": {"enabled": True}}),
    _c("compression.shared-parameters-fails", "error", "parse", False,
       "compression_training.shared_parameters switched on stops the parse.",
       "Releases that still read compression_training (up to 0.19.6) take `compression_training.shared_parameters` "
       "for weight quantization's shared parameters when deciding whether to read the MoQ eigenvalue settings. "
       "Switched on, it stops releases up to 0.19.2 with NameError (QUANTIZE_TRAINING), and 0.19.3-0.19.6 with "
       "an AssertionError when quantize_training.eigenvalue is on too (or a failure when it is not an object); "
       "which release fails, and how, is probed from each release. The fix removes the block, which lets the "
       "config load; it is unsafe because the writer probably meant weight_quantization.shared_parameters, which "
       "turns quantization on.",
       {**B, "compression_training": {"shared_parameters": {"enabled": True}}}, settings={"version": "0.16.9"}),
    _c("compression.shared-parameters", "warning", "ignored", True,
       "compression_training.shared_parameters configures no compression technique.",
       "The block belongs inside a technique (weight_quantization, sparse_pruning, ...). At the top of "
       "compression_training, releases up to 0.19.6 read it only to decide whether to read the MoQ eigenvalue "
       "settings, whose values do nothing unless eigenvalues are on, which DeepSpeed refuses. Removing it "
       "changes nothing DeepSpeed does.",
       {**B, "compression_training": {"shared_parameters": {"enabled": False}}}, settings={"version": "0.19.6"}),
    # ---- types and values
    _c("type.truthy-string", "warning", "ignored", False, "A boolean written as a string that spells off.",
       "Where a release reads a key with dict.get (top-level keys, activation_checkpointing, fp16/bf16 before "
       "0.19) it uses the value as a Python truth value: \"false\", \"no\" or \"0\" is a non-empty string, so "
       "the setting is on. The fix writes false, which is what the string says (unsafe: it turns the setting off).",
       {**B, "prescale_gradients": "false"}),
    _c("type.<pydantic error type>", "error", "parse", False, "A value of the wrong type or out of bounds.",
       "DeepSpeed's pydantic models check types and bounds while reading the config; the code names pydantic's "
       "error type (type.int_parsing, type.bool_parsing, type.greater_than, type.literal_error, type.enum, "
       "type.model_type, type.value_error, ...). Every such error is collected, not only the first. For a "
       "single value the fix writes what it most likely meant (the item of [2], the number in \"5e8\", the "
       "nearest whole number of 0.5), else the field's default; a section that is not an object gets no fix.",
       {**B, "zero_optimization": {"stage": 2, "reduce_bucket_size": "lots"}}, family=True),
    _c("type.engine", "error", "initialize", False, "A wrong value DeepSpeed only notices at initialize.",
       "The section is read leniently, so the value passes parsing; deepspeed.initialize then fails using it. "
       "The fix is the type error's (what the value most likely meant, else the default). AutoEP's values are "
       "checked only with the section on, as DeepSpeed checks them.",
       {**B, "expert_parallel": {"enabled": True, "score_apply": None}}),
    _c("type.as-written", "error", "training", False, "A flops-profiler number written as text (or not a number).",
       "With the flops profiler on, DeepSpeed reads profile_step, recompute_fwd_factor, module_depth and "
       "top_modules with dict.get and computes with them as written: \"1\" passes the parse and initialize, then "
       "`global_steps >= profile_step` stops the first optimizer step and the other three stop the profiling step "
       "(TypeError). The fix writes the number the text says, else the default. (Pipeline keys used as written "
       "fail at initialize: type.engine.)",
       {**B, "flops_profiler": {"enabled": True, "profile_step": "1"}}),
    _c("type.dataloader", "warning", "training", False, "A data-loader switch that is not true or false.",
       "DeepSpeed reads dataloader_drop_last with dict.get and passes it unchanged to torch's DataLoader when it "
       "builds its own data loader (deepspeed.initialize(training_data=...) or engine.deepspeed_io); torch's "
       "BatchSampler refuses anything but a bool (ValueError: drop_last should be a boolean value), so \"false\", "
       "1 or null stop the first batch. A warning: a run with its own data loader (the HF Trainer's) never reads it. "
       "The fix writes the boolean the value spells.",
       {**B, "dataloader_drop_last": "false"}),
    _c("type.unchecked", "warning", "training", False, "A wrong value DeepSpeed does not check.",
       "The section is read with dict.get and the value is carried along unchecked; the mistake surfaces later, "
       "in training, if the value is used. The fix is the type error's (what the value most likely meant, else "
       "the default).",
       {**B, "activation_checkpointing": {"number_checkpoints": "four"}}),
    _c("type.section-ignored", "warning", "ignored", True, "A top-level section that is not an object, ignored.",
       "Some sections are read only through `key in section` tests (timers: `\"throughput\" in timers`), which a "
       "string or an empty list passes without failing: DeepSpeed then finds none of the section's settings and "
       "uses its defaults, as each release's parser was probed to do. The fix removes the value, which changes "
       "nothing DeepSpeed does.",
       {**B, "timers": "auto"}),
    _c("type.unreadable", "error", "parse", None, "DeepSpeed cannot read the config at all.",
       "A section's own validator failed outside pydantic's error handling (absurd numbers, deep nesting). No "
       "known config triggers it; it keeps such a failure a finding rather than a crash.",
       None),
    # ---- batch
    _c("batch.missing", "error", "parse", False, "No batch size is set.",
       "DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu, whatever gradient_accumulation_steps "
       "says (\"auto\" included: the HF Trainer does not add a missing micro batch). The fix sets a micro batch of "
       "1.",
       {}),
    _c("batch.product", "error", "parse", False, "The batch sizes do not multiply out on this GPU count.",
       "DeepSpeed checks train_batch_size = micro batch × gradient accumulation × data-parallel GPUs (GPUs ÷ "
       "sequence_parallel_size) and stops with \"Check batch related parameters\". A config can be right on 8 GPUs "
       "and wrong on 64: validate for the GPU count you run. For the HF target with sequence parallelism the "
       "Trainer checks over all GPUs and DeepSpeed over GPUs ÷ sp, so no written number satisfies both: the fix is "
       "\"auto\". Otherwise the fix picks values that work, which changes the training batch.",
       {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1},
       settings={"world_size": 3}),
    _c("hf.batch-never-matches", "error", "parse", False, "A written train_batch_size no value of the \"auto\" "
       "batch keys can match.",
       "The HF Trainer fills an \"auto\" micro batch or accumulation from TrainingArguments and then checks a "
       "written train_batch_size against micro batch × accumulation × every GPU (TrainingArguments.world_size; "
       "with sequence parallelism DeepSpeed checks GPUs ÷ sp, so no written number passes both); when the written "
       "values and the GPU count do not divide it (a missing accumulation counts as the 1 accelerate writes; with both "
       "\"auto\", the GPU count alone), every value the Trainer could fill fails that check (\"ds "
       "train_batch_size=... vs hf train_batch_size\"). The fix sets train_batch_size to \"auto\" (unsafe: the "
       "global batch becomes the Trainer's).",
       {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": "auto"},
       settings={"target": "hf", "world_size": 4}),
    _c("hf.batch-accumulation-missing", "error", "parse", False, "train_batch_size and the micro batch are "
       "written, gradient_accumulation_steps is not, and the HF Trainer / accelerate writes it as 1.",
       "Plain DeepSpeed derives a missing accumulation from train_batch_size ÷ (micro batch × data-parallel GPUs). "
       "accelerate's DeepSpeedPlugin, which the HF Trainer builds in TrainingArguments, writes a missing "
       "gradient_accumulation_steps as 1 first, so DeepSpeed checks train_batch_size = micro batch × 1 × GPUs and "
       "stops (\"Check batch related parameters\") unless the derivation is 1 anyway. The fix writes the "
       "accumulation DeepSpeed derives on the GPU count checked (pass the same gradient_accumulation_steps to "
       "TrainingArguments); it is unsafe since that number holds for that count only (validate --world-size).",
       {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}},
       settings={"target": "hf"}),
    _c("hf.never-matches", "error", "parse", False, "A value the HF Trainer compares with TrainingArguments and "
       "can never find equal.",
       "The HF Trainer checks the config's precision flags and learning rates against its TrainingArguments "
       "(transformers' fill_match) with Python's !=. A flag written as text (\"true\", which DeepSpeed reads as "
       "on) is never equal to a bool, and optimizer.params.lr and scheduler.params.warmup_max_lr are both compared "
       "with learning_rate, so two different numbers always leave one mismatched: the Trainer refuses the config "
       "whatever its arguments (\"mismatch TrainingArguments values\"). The fix sets the value to \"auto\" "
       "(unsafe: the Trainer's argument then decides it); for WarmupLR and WarmupDecayLR, which overwrite the "
       "optimizer's lr from the first step and train up to warmup_max_lr, it writes that peak as the optimizer's "
       "lr instead, so the schedule DeepSpeed trains stays.",
       {**B, "bf16": {"enabled": "true"}, "zero_optimization": {"stage": 2}}, settings={"target": "hf"}),
    _c("batch.tb-positive", "error", "parse", False, "train_batch_size is not positive.",
       "DeepSpeed asserts train_batch_size > 0 while reading the config. The fix picks batch values that work on "
       "the GPU count from the valid ones (here the micro batch), which sets the training batch.",
       {"train_batch_size": -8, "train_micro_batch_size_per_gpu": 2}),
    _c("batch.mb-positive", "error", "parse", False, "The micro batch per GPU is not positive.",
       "Set directly or derived (train_batch_size ÷ GPUs ÷ accumulation), the micro batch must be > 0: "
       "train_batch_size 2 on 4 GPUs gives 0.",
       {"train_batch_size": 2}, settings={"world_size": 4}),
    _c("batch.ga-positive", "error", "parse", False, "gradient_accumulation_steps is not positive.",
       "Set directly or derived (train_batch_size ÷ micro batch ÷ GPUs), the accumulation must be > 0.",
       {"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2}, settings={"world_size": 4}),
    _c("batch.zero-division", "error", "parse", False, "DeepSpeed divides by zero deriving a batch value.",
       "Deriving the missing batch value divides by the others; a 0 among them stops DeepSpeed.",
       {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 0}),
    _c("batch.overflow", "error", "parse", False, "The batch values are too large to compute with.",
       "A number beyond the floating-point range makes DeepSpeed's batch arithmetic fail.",
       {"train_batch_size": 10**400, "train_micro_batch_size_per_gpu": 1.0}),
    _c("batch.type", "error", "parse", False, "A batch value is not a number.",
       "DeepSpeed does arithmetic with the batch values while reading the config; a string such as \"8\" or "
       "\"eight\" fails. The fix writes the number without quotes when it is one.",
       {"train_batch_size": "8"}),
    _c("batch.sequence-parallel-path", "warning", "parse", False, "sequence_parallel_size in a config given as a "
       "file path, in a release that does not divide the GPUs by it then.",
       "DeepSpeed divides the GPUs by sequence_parallel_size before it checks or derives the batch, but in "
       "0.17.0-0.18.5 deepspeed.initialize hands a config path (the launcher's --deepspeed_config, or "
       "config=\"ds_config.json\") to DeepSpeedConfig unread, and it tests `\"sequence_parallel_size\" in config` "
       "on the path string: no division, so the batch is checked over every GPU (\"Check batch related "
       "parameters\"), or the micro batch and accumulation come out different from a dict's. A dict (the HF "
       "Trainer's, accelerate's, a script's json.load) divides; 0.18.6 on read the file first. Said when the two "
       "ways differ. The fix writes the dict's micro batch and accumulation without train_batch_size, which both "
       "ways train the same (unsafe: the config changes form).",
       {"train_batch_size": 2, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
        "sequence_parallel_size": 2}, settings={"world_size": 4, "version": "0.17.6"}),
    _c("batch.not-integer", "warning", "n/a", False, "A batch value is not a whole number.",
       "DeepSpeed accepts 1.5 as a micro batch (and true as 1), and ends with a float micro batch when one is "
       "written (4.0, in a config passed as a dict: DeepSpeed's own file loader, hjson, reads 4.0 as 4) or derived "
       "over GPUs ÷ sequence_parallel_size, but data loaders need whole numbers: torch's "
       "DataLoader refuses it when deepspeed.initialize(training_data=) builds the loader. The fix "
       "writes the closest whole trio that adds up on the GPU count (unsafe: it changes the batch).",
       {"train_micro_batch_size_per_gpu": 1.5, "gradient_accumulation_steps": 2}),
    _c("misc.sequence-parallel-invalid", "error", "parse", False, "sequence_parallel_size is not positive.",
       "DeepSpeed divides the GPU count by sequence_parallel_size to get the data-parallel size.",
       {**B, "sequence_parallel_size": 0}),
    _c("misc.sequence-parallel-swallowed", "warning", "ignored", False,
       "sequence_parallel_size DeepSpeed cannot divide by, caught.",
       "DeepSpeed 0.17-0.18 divide the GPU count by sequence_parallel_size inside a try that catches every error, so "
       "0 or a string makes the world size 1: the batch is checked (and train_batch_size counted) as on one GPU "
       "while every GPU trains. Later releases stop instead (misc.sequence-parallel-invalid). The fix removes it "
       "(unsafe: the batch is then checked on every GPU).",
       {**B, "sequence_parallel_size": 0}, settings={"version": "0.17.6", "world_size": 8}),
    _c("misc.sequence-parallel", "warning", "n/a", None, "sequence_parallel_size does not divide the GPUs.",
       "The data-parallel size (GPUs ÷ sequence_parallel_size) becomes a fraction.",
       {**B, "sequence_parallel_size": 3}, settings={"world_size": 8}),
    _c("elasticity.batch-keys", "error", "parse", False, "Elastic training with explicit batch keys.",
       "Elasticity (in the releases that read it, up to 0.19.7) computes the batch itself and refuses batch keys "
       "unless ignore_non_elastic_batch_info is true (ElasticityConfigError). For the HF Trainer / accelerate a "
       "config that writes none gets it too: accelerate's DeepSpeedPlugin writes a missing "
       "gradient_accumulation_steps as 1, so the Trainer runs elastic training only with the flag. The fix sets it "
       "(unsafe: DeepSpeed then trains with elastic training's micro batch and accumulation, silently replacing "
       "the written or the Trainer's ones).",
       {**B, "elasticity": {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4]}},
       settings={"version": "0.19.5"}),
    _c("elasticity.world-size", "error", "parse", False, "Elastic training refuses this GPU count.",
       "Elastic training (up to 0.19.7) picks one global batch for many GPU counts and stops with "
       "ElasticityIncompatibleWorldSize on any data-parallel size outside its list: the config starts on 8 GPUs and "
       "not on 64. The message lists the valid data-parallel sizes and, with sequence parallelism (0.17 on), the "
       "GPU counts (× sp); where a max_train_batch_size within 256 of the written one "
       "makes this count valid, the fix writes it (unsafe: it changes the batch size).",
       {"elasticity": {"enabled": True, "max_train_batch_size": 100, "micro_batch_sizes": [2, 4], "version": 0.1}},
       settings={"version": "0.19.7", "world_size": 32}),
    _c("elasticity.no-batch", "error", "parse", False, "Elastic training finds no batch for this GPU count.",
       "Version 0.2 of the search, on a GPU count outside its list, takes the largest multiple of a micro batch "
       "times the ranks within max_train_batch_size: 0 when even one micro batch per rank is above it, and "
       "DeepSpeed's batch check then fails. The fix writes the nearest max_train_batch_size that works (unsafe).",
       {"elasticity": {"enabled": True, "max_train_batch_size": 8, "micro_batch_sizes": [4], "version": 0.2}},
       settings={"version": "0.19.7", "world_size": 3}),
    _c("elasticity.overrides", "warning", "ignored", True, "Batch keys that elastic training replaces.",
       "With ignore_non_elastic_batch_info, DeepSpeed replaces the written train_batch_size, micro batch and "
       "accumulation with what elastic training computes and only logs it: the config says one batch and trains "
       "with another. The fix removes the batch keys (safe: DeepSpeed does not use them).",
       {"train_batch_size": 32, "elasticity": {"enabled": True, "max_train_batch_size": 100,
                                               "micro_batch_sizes": [2, 4], "ignore_non_elastic_batch_info": True}},
       settings={"version": "0.19.5", "world_size": 8}),
    _c("elasticity.batch", "info", "n/a", None, "The batch elastic training computes.",
       "What DeepSpeed will train with: elastic training's train_batch_size, micro batch and accumulation for this "
       "GPU count, and the data-parallel sizes it accepts (the list a scheduler may scale the job between).",
       {"elasticity": {"enabled": True, "max_train_batch_size": 2000, "micro_batch_sizes": [2, 4, 6],
                       "version": 0.1}}, settings={"version": "0.19.7", "world_size": 8}),
    # ---- "auto"
    _c("auto.crash", "error", "parse", None, "\"auto\" where plain DeepSpeed crashes.",
       "Only the HF Trainer / Accelerate replace \"auto\"; DeepSpeed itself computes with the batch values and "
       "fails on the string. Choose the HF target if the HF Trainer passes the config on.",
       {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}),
    _c("auto.fails", "error", "training", False, "\"auto\" DeepSpeed keeps and later fails on.",
       "Plain DeepSpeed keeps the string \"auto\" and training fails the first time it uses the value. The fix "
       "writes the default.",
       {**B, "gradient_clipping": "auto"}),
    _c("auto.kept-optimizer", "error", "initialize", None, "\"auto\" in the optimizer or scheduler section.",
       "Plain DeepSpeed passes \"auto\" on to the optimizer or scheduler constructor, and deepspeed.initialize "
       "fails.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}),
    _c("auto.kept", "warning", "training", None, "\"auto\" DeepSpeed keeps as a value.",
       "Plain DeepSpeed keeps the string as the value, which breaks when training uses it.",
       {**B, "prescale_gradients": "auto"}),
    _c("auto.default", "info", "n/a", True, "\"auto\" that means the default.",
       "A pydantic section drops \"auto\", so DeepSpeed uses the default. Writing the default explicitly is safe "
       "and makes the config self-explanatory.",
       {**B, "zero_optimization": {"parameter_alignment": "auto"}}),
    _c("auto.not-filled", "error", "parse", False, "\"auto\" the HF Trainer does not fill in.",
       "With the HF target, \"auto\" is fine only where the HF Trainer / Accelerate replace it (under the "
       "spelling they write: stage3_prefetch_bucket_size, not prefetch_bucket_size). Accelerate, which the Trainer "
       "runs, walks the config before DeepSpeed reads it and refuses every \"auto\" left (\"... not found in "
       "kwargs. Please specify ... without auto\"), even where DeepSpeed itself would drop it and use the default. "
       "The fix writes the default, or removes the key when DeepSpeed's default is no value.",
       {**B, "zero_optimization": {"stage": 2, "overlap_comm": "auto"}}, settings={"target": "hf"}),
    # ---- precision and communication
    _c("precision.fp16-and-bf16", "error", "parse", False, "fp16 and bf16 are both enabled.",
       "DeepSpeed allows one of them (\"bfloat16 and fp16 modes cannot be simultaneously enabled\"). The fix keeps "
       "bf16 (Ampere or newer GPUs).",
       {**B, "fp16": {"enabled": True}, "bf16": {"enabled": True}}),
    _c("precision.null", "error", "parse", False, "fp16 (or bf16 in releases that read it with dict.get) is null.",
       "DeepSpeed calls .get on the section and fails on null.",
       {**B, "fp16": None}),
    _c("precision.scale-power", "error", "parse", False, "fp16.initial_scale_power that 2** cannot take (0.16).",
       "DeepSpeed 0.16 reads fp16 with dict.get and computes 2**initial_scale_power while parsing when fp16 is on: a "
       "string, list or null fails (TypeError), a float above 1023 overflows, and a huge integer never finishes. "
       "Later releases refuse such values in their pydantic fp16 model. The fix writes the default, 16.",
       {**B, "fp16": {"enabled": True, "initial_scale_power": "16"}}, settings={"version": "0.16.9"}),
    _c("precision.master-weights-stage", "error", "parse", False, "Master-weight options at an unsupported stage.",
       "fp16/bf16_master_weights_and_grads and bf16_optimizer_states work only with some ZeRO stages, as the "
       "release's own check says. The fix switches the ZeRO stage.",
       {**B, "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}),
    _c("precision.bf16-optimizer-states", "error", "parse", False,
       "bf16_optimizer_states without bf16_master_weights_and_grads.",
       "DeepSpeed requires bf16 master weights for bf16 optimizer states.",
       {**B, "zero_optimization": {"stage": 1},
        "bf16": {"enabled": True, "bf16_optimizer_states": True}}),
    _c("precision.loss-scale-unused", "warning", "ignored", None, "fp16 loss-scaling keys with fp16 off.",
       "loss_scale, initial_scale_power, ... only act with fp16 enabled.",
       {**B, "fp16": {"enabled": False, "loss_scale": 128}}),
    _c("precision.autocast-dtype", "error", "parse", False, "torch_autocast.dtype is not a known dtype.",
       "DeepSpeed converts the name to a torch dtype while reading the config.",
       {**B, "torch_autocast": {"enabled": True, "dtype": "float8"}}),
    _c("precision.autocast-module-name", "error", "initialize", None,
       "A lower_precision_safe_modules entry without its module.",
       "With torch_autocast on, deepspeed.initialize imports each entry as \"package.Class\" (split at the last dot) "
       "and fails on a bare class name such as \"Linear\" (\"Failed to import lower precision safe module\"). No "
       "automatic fix: the module is the user's to name (torch.nn.Linear, or their own).",
       {**B, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": ["Linear"]}}),
    _c("precision.autocast-module-missing", "error", "initialize", False,
       "A lower_precision_safe_modules entry torch.nn does not have.",
       "With torch_autocast on, deepspeed.initialize imports each entry (the part before the last dot) and takes the "
       "class with getattr; a misspelt torch.nn class (\"torch.nn.Lnear\") or one named under the wrong "
       "torch.nn.modules file fails (\"Failed to import lower precision safe module\"). The classes are read from "
       "the pinned torch (scripts/gen_torch_checks.py); an entry of your own package is not judged. The fix writes "
       "the closest torch.nn class.",
       {**B, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": ["torch.nn.Lnear"]}}),
    _c("precision.autocast-module-nn", "warning", "initialize", False,
       "A lower_precision_safe_modules entry under `nn.` instead of `torch.nn.`.",
       "`nn` is how code usually imports torch.nn, but deepspeed.initialize imports the entry's module by its name: "
       "`nn.Linear` imports a package called nn, which fails unless your code has one. A warning, not an error: "
       "that package may exist. The fix writes the torch.nn name.",
       {**B, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": ["nn.Linear"]}}),
    _c("precision.autocast-modules", "error", "parse", None, "lower_precision_safe_modules is not a list of names.",
       "DeepSpeed expects module class names (strings) such as \"torch.nn.Linear\".",
       {**B, "torch_autocast": {"enabled": True, "lower_precision_safe_modules": [1]}}),
    _c("deprecated.bfloat16-ignored", "warning", "ignored", True, "`bfloat16` next to `bf16`.",
       "`bfloat16` is only read when `bf16` is absent; removing it changes nothing.",
       {**B, "bf16": {"enabled": True}, "bfloat16": {"enabled": True}}),
    _c("comm.dtype", "error", "parse", False, "communication_data_type is not fp32, fp16 or bf16.",
       "DeepSpeed accepts only these three and stops otherwise.",
       {**B, "communication_data_type": "fp8"}),
    _c("comm.allreduce-op", "error", "parse", False, "gradient_allreduce_op is not mean or sum.",
       "DeepSpeed accepts \"mean\" or \"sum\".",
       {**B, "gradient_allreduce_op": "max"}),
    _c("comm.allreduce-sum", "error", "parse", False, "gradient_allreduce_op \"sum\" with ZeRO-3, ZenFlow or "
       "DeepCompile.", "These do not support summed gradients; DeepSpeed refuses the combination.",
       {**B, "gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3}}),
    # ---- ZeRO
    _c("hf.zero-section", "error", "parse", False, "No `zero_optimization` section (or its boolean form) for the HF "
       "Trainer.",
       "The HF Trainer starts DeepSpeed through Accelerate's DeepSpeedPlugin, which refuses a config without a "
       "`zero_optimization` section (\"Please specify the ZeRO optimization config in the DeepSpeed config.\") and "
       "fails on the boolean form (it reads the section with .get). Plain DeepSpeed takes both. The fix writes the "
       "section: {\"stage\": 0} when there is none (a choice: unsafe), the boolean's own stage when it is one.",
       {**B}, settings={"target": "hf"}),
    _c("hf.auto-stage", "warning", "n/a", False, "`zero_optimization.stage` is \"auto\" for the HF Trainer.",
       "Accelerate's DeepSpeedPlugin, which the HF Trainer starts DeepSpeed through, fills an \"auto\" stage with "
       "its zero_stage: 2 unless ACCELERATE_DEEPSPEED_ZERO_STAGE (`accelerate launch --zero_stage`) sets another; "
       "`accelerate config` refuses a zero_stage beside a DeepSpeed config file. Plain "
       "DeepSpeed drops it and runs stage 0, and so do this studio's memory and speed figures until the stage is "
       "written. The fix writes Accelerate's default, 2 (unsafe: the launch may set another).",
       {**B, "zero_optimization": {"stage": "auto"}}, settings={"target": "hf"}),
    _c("deprecated.zero-bool", "warning", "n/a", True, "`zero_optimization` written as true/false.",
       "The deprecated boolean form: true is stage 1, false stage 0. The fix writes the same stage as an object.",
       {**B, "zero_optimization": True}),
    _c("zero.null", "error", "parse", False, "`zero_optimization` is null.",
       "DeepSpeed expects an object and fails reading null. The fix removes it (no ZeRO).",
       {**B, "zero_optimization": None}),
    _c("deprecated.key", "warning", "n/a", True, "A deprecated key with a newer spelling.",
       "cpu_offload, cpu_offload_param, `bfloat16`, ...: DeepSpeed still reads them (or ignores them), and "
       "`dsconfig migrate` rewrites them to the equivalent new form.",
       {**B, "zero_optimization": {"stage": 2, "cpu_offload": True}}),
    _c("deprecated.with-replacement", "error", "parse", False, "A deprecated key and its replacement both set.",
       "DeepSpeed stops (\"Cannot provide deprecated parameter ... and replacing parameter ... together\"). The "
       "fix removes the deprecated one; if the two disagree, that changes the setting.",
       {**B, "zero_optimization": {"stage": 2, "cpu_offload": True, "offload_optimizer": {"device": "cpu"}}}),
    _c("zero.offload-param-below-3", "warning", "ignored", False, "Parameter offload below ZeRO stage 3.",
       "Only stage 3 partitions and offloads parameters; below it offload_param does nothing. The fix switches "
       "to stage 3.",
       {**B, "zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}),
    _c("zero.offload-optimizer-stage-0", "warning", "ignored", False, "Optimizer offload without ZeRO.",
       "Optimizer offload needs ZeRO stage 1, 2 or 3. The fix switches to stage 2.",
       {**B, "zero_optimization": {"offload_optimizer": {"device": "cpu"}}}),
    _c("zero.nvme-below-3", "warning", "n/a", False, "NVMe optimizer offload below ZeRO stage 3.",
       "DeepSpeed's stage 1/2 optimizer offloads to the CPU for any device but none; only stage 3 swaps the "
       "states to NVMe. The fix writes \"cpu\", which is what runs (marked unsafe: the device the config names "
       "changes).",
       {**B, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}),
    _c("hf.auto-nvme-path", "warning", "n/a", False,
       "An NVMe offload's `nvme_path` is \"auto\" for the HF Trainer / Accelerate.",
       "Accelerate's DeepSpeedPlugin fills an \"auto\" nvme_path with \"none\", its default when "
       "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH / ..._PARAM_NVME_PATH is not in the environment (`accelerate "
       "launch`'s --*_nvme_path flags are not passed on, and `accelerate config` refuses them beside a DeepSpeed "
       "config file). DeepSpeed then swaps into a relative folder named \"none\" on whatever disk the job runs "
       "from. Plain DeepSpeed drops the \"auto\" and fails at initialize (zero.nvme-without-path). The fix sets a "
       "placeholder path to edit.",
       {**B, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "auto"}}},
       settings={"target": "hf"}),
    _c("zero.nvme-without-path", "error", "initialize", False, "NVMe offload without nvme_path at ZeRO stage 3.",
       "DeepSpeed's parser accepts it; deepspeed.initialize then fails setting up the swap files: parameter offload "
       "asserts \"nvme_path\" in DeepSpeed Config cannot be None if remote device is OffloadDeviceEnum.nvme, optimizer "
       "offload joins None into a path (TypeError). Below stage 3 nothing is swapped to NVMe (zero.nvme-below-3, "
       "zero.offload-param-below-3) and the path is unused. The fix sets a placeholder path to edit.",
       {**B, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}),
    _c("zero.elastic-checkpoint-step", "warning", "training", False,
       "elastic_checkpoint at ZeRO-1/2 with an optimizer that counts its step per parameter.",
       "The ZeRO-1/2 optimizer's elastic state dict saves the optimizer step only when it is in the parameter groups "
       "(\"step\" in param_groups[0]); DeepSpeed's CPU Adam (the optimizer offloaded), FusedLamb, the CPU Lion and "
       "Adagrad and every torch.optim class keep it per parameter, so save_checkpoint works and load_checkpoint "
       "fails (AssertionError in _restore_step_from_elastic_checkpoint). FusedAdam and FusedLion keep a group step. "
       "A warning: training runs until a resume. The fix removes elastic_checkpoint (rigid checkpoints load).",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
        "zero_optimization": {"stage": 2, "elastic_checkpoint": True, "offload_optimizer": {"device": "cpu"}}}),
    _c("zero.elastic-checkpoint-stage-3", "warning", "ignored", True, "elastic_checkpoint with ZeRO stage 3.",
       "DeepSpeed warns and ignores it at stage 3; removing it changes nothing.",
       {**B, "zero_optimization": {"stage": 3, "elastic_checkpoint": True}}),
    _c("zero.stage3-keys-unused", "info", "ignored", None, "Stage-3 settings at stage 1 or 2.",
       "stage3_* knobs do nothing below stage 3; fine to keep if you switch stages.",
       {**B, "zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1000000000}}),
    _c("zero.stage-not-integer", "warning", "n/a", True, "The ZeRO stage written as a bool, float or string.",
       "DeepSpeed's pydantic model coerces true, 3.0 or \"3\" to the stage, so DeepSpeed itself runs it; the HF "
       "Trainer and accelerate read zero_optimization.stage as written and compare it with 3 "
       "(HfDeepSpeedConfig.is_zero3), so a \"3\" trains without zero.Init at model loading and without their "
       "ZeRO-3 checkpoint handling. The fix writes the integer.",
       {**B, "zero_optimization": {"stage": "3"}}),
    _c("zero.hpz-partition", "error", "initialize", False, "zero_hpz_partition_size does not divide the GPUs.",
       "ZeRO-3 builds ZeRO++ hpZ's secondary partition groups of min(zero_hpz_partition_size, world size) ranks and "
       "asserts that they tile the world: a size that does not divide the GPU count fails at deepspeed.initialize "
       "(\"12 is not divisible by 8\"); one at or above the GPU count is capped to it and runs. Below stage 3 the "
       "key is not used. The fix turns hpZ off (1), which changes the communication: unsafe.",
       {**B, "zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}}, settings={"world_size": 12}),
    _c("zero.sub-group-zero", "info", "n/a", False, "sub_group_size 0 at ZeRO stage 3.",
       "DeepSpeed accepts 0 (the bound is >= 0), and ZeRO-3 then makes every parameter tensor its own sub-group: "
       "the least optimizer memory at once (some configs choose it for that, e.g. with max_live_parameters 0), "
       "but the optimizer step, and with offload the CPU-Adam call and the NVMe swap, run once per tensor; it "
       "is not \"no sub-groups\". The fix removes it (the default, 1e9 elements), or writes 1e8 where the optimizer "
       "swaps to NVMe (marked unsafe: the sub-group size sets how much memory the optimizer step holds at once).",
       {**B, "zero_optimization": {"stage": 3, "sub_group_size": 0}}),
    _c("zero.reduce-bucket-size", "error", "parse", False, "reduce_bucket_size is not greater than 0.",
       "Releases that bound it require a positive bucket size. The fix sets the default (5e8 elements).",
       {**B, "zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}),
    # ---- optimizer and scheduler
    _c("optimizer.not-object", "error", "parse", False, "`optimizer` is not an object.",
       "DeepSpeed reads type and params from it. The fix removes it (pass your own optimizer instead).",
       {**B, "optimizer": None}),
    _c("optimizer.params-not-object", "error", "parse", False, "optimizer.params is not an object.",
       "DeepSpeed passes the params as keyword arguments to the optimizer. \"auto\" is no exception: the HF "
       "Trainer fills the \"auto\" values inside params, and fails on a whole \"auto\" section.",
       {**B, "optimizer": {"type": "AdamW", "params": [1]}}),
    _c("scheduler.params-not-object", "error", "initialize", False, "scheduler.params is not an object.",
       "The engine builds the scheduler as cls(optimizer, **params), which fails on anything but an object. "
       "\"auto\" is no exception: the HF Trainer fills the \"auto\" values inside params, and fails on a whole "
       "\"auto\" section (AttributeError: 'str' object has no attribute 'get'). The fix writes {} (the "
       "scheduler's defaults).",
       {**B, "scheduler": {"type": "WarmupLR", "params": "auto"}, "zero_optimization": {"stage": 2}},
       settings={"target": "hf"}),
    _c("optimizer.type-not-string", "error", "parse", False, "optimizer.type is not a string.",
       "DeepSpeed calls .lower() on it while reading the config.",
       {**B, "optimizer": {"type": 3, "params": {}}}),
    _c("optimizer.no-type", "warning", "ignored", False, "optimizer.params without optimizer.type.",
       "DeepSpeed builds no optimizer and ignores the params. The fix sets AdamW.",
       {**B, "optimizer": {"params": {"lr": 0.001}}}),
    _c("optimizer.unknown", "error", "initialize", False, "An optimizer DeepSpeed does not know.",
       "DeepSpeed's own optimizers match in any case, torch.optim classes only in exact case; "
       "deepspeed.initialize fails (\"... is not a supported DeepSpeed Optimizer\"). The fix uses the closest "
       "name.",
       {**B, "optimizer": {"type": "sgd", "params": {"lr": 0.1}}}),
    _c("optimizer.unknown-param", "error", "initialize", False, "An optimizer parameter the class does not take.",
       "DeepSpeed calls the optimizer class with params as keyword arguments; an unknown one is a TypeError at "
       "deepspeed.initialize. The fix renames it to the closest parameter or removes it.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "beta": [0.9, 0.99]}}}),
    _c("optimizer.param-type", "error", "initialize", False, "An optimizer parameter of the wrong type.",
       "The optimizer constructor fails on it at deepspeed.initialize. A whole number written as a float "
       "(1000.0) fails only when the config is passed as a dict (HF Trainer, Accelerate): DeepSpeed's "
       "own file loader (hjson) reads it as an integer. "
       "The fix writes the whole number a float was meant as (100.5 -> 100), else the default.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": "fast"}}}),
    _c("optimizer.torch-raises", "error", "initialize", False, "A value a torch.optim constructor refuses.",
       "When the config names a torch.optim class (SGD, RMSprop, ...) or selects torch's Adam/AdamW (torch_adam) "
       "or Adagrad, deepspeed.initialize calls the class with params as keyword arguments, and its __init__ "
       "checks some values (a negative lr, betas outside [0, 1), Nesterov without momentum, a number written "
       "as a string) and raises. The checks are read from the pinned torch's code, and the message is torch's "
       "own. Where the parameter is one the schema knows (torch_adam's AdamW), the fix writes torch's default; "
       "otherwise there is none, the value to choose is yours.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "torch_adam": True, "weight_decay": None}}}),
    _c("optimizer.torch-step-raises", "error", "training", False, "A value a torch.optim class accepts and its "
       "first step refuses.",
       "Python's bool is an int, so a torch.optim constructor lets `weight_decay: true` through; the step then "
       "passes it to a tensor operation as a scale (`grad.add(param, alpha=True)`), which refuses a boolean for "
       "a float tensor: training stops at the first optimizer step. Which values fail is found by stepping the "
       "pinned torch's classes (scripts/gen_torch_checks.py), not typed. The fix writes torch's default; write "
       "the number you meant instead if it was not that.",
       {**B, "optimizer": {"type": "SGD", "params": {"lr": 0.1, "weight_decay": True}}}),
    _c("scheduler.torch-raises", "error", "initialize", None, "A value a torch LR scheduler's constructor refuses.",
       "When scheduler.type names a torch.optim.lr_scheduler class, deepspeed.initialize calls it with the "
       "optimizer and params as keyword arguments, and its __init__ checks some values (OneCycleLR's pct_start "
       "must be a float in [0, 1], CosineAnnealingWarmRestarts' T_0 a positive integer, ConstantLR's factor in "
       "[0, 1]) and raises. The checks are read from the pinned torch's code, and the message is torch's own. "
       "No fix: the value to choose is yours.",
       {**B, "optimizer": {"type": "SGD", "params": {"lr": 0.1}},
        "scheduler": {"type": "OneCycleLR", "params": {"max_lr": 0.1, "total_steps": 100, "pct_start": 1}}}),
    _c("optimizer.param-choice", "warning", "n/a", False, "An optimizer parameter outside its choices.",
       "The parameter accepts a fixed set of values, e.g. OneBitAdam's comm_backend_name. The fix writes the "
       "default.",
       {**B, "optimizer": {"type": "OneBitAdam", "params": {"comm_backend_name": "gloo"}}},
       settings={"version": "0.19.5"}),
    _c("optimizer.param-bool", "warning", "n/a", False, "A boolean where an optimizer takes a number.",
       "Python's bool is an int, so the optimizer trains with 0 or 1 (lr false trains nothing). The fix writes the "
       "default.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": False}}}),
    _c("optimizer.param-truthy", "warning", "n/a", True, "A value that is not true/false where an optimizer "
       "takes a boolean.",
       "DeepSpeed passes optimizer.params on as they are, and the optimizers use a boolean parameter as a Python "
       "truth value (\"1 if bias_correction else 0\", \"if amsgrad:\"), so \"false\" or [0] count as true. Only "
       "the C++ kernel of the CPU Adam refuses a string or list for bias_correction (a type error). The fix writes "
       "the truth value the optimizer already uses.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "torch_adam": "yes"}}}),
    _c("optimizer.param-range", "warning", "initialize", False, "An optimizer parameter out of range.",
       "For example a negative learning rate, which torch optimizers refuse at deepspeed.initialize, or an Adam "
       "beta outside [0, 1), which DeepSpeed's own Adams train with (the moment estimate then never decays or "
       "diverges). The fix writes the default.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": -1.0}}}),
    _c("optimizer.max-grad-norm", "error", "initialize", False, "max_grad_norm in optimizer params.",
       "DeepSpeed refuses it (ValueError at deepspeed.initialize): clipping is set with gradient_clipping. The "
       "fix moves the value there.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "max_grad_norm": 1.0}}}),
    _c("optimizer.max-grad-norm-type", "error", "parse", False, "max_grad_norm in optimizer params, not a number.",
       "DeepSpeed compares it with 0 while reading the config and fails on a non-number. The fix removes it and "
       "sets gradient_clipping to 1.0.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "max_grad_norm": "x"}}}),
    _c("optimizer.lamb-static-loss-scale", "error", "initialize", False, "Lamb/OneBit optimizers with a static "
       "loss scale.", "They need dynamic loss scaling; DeepSpeed checks fp16.loss_scale even with fp16 off. The "
       "fix sets loss_scale 0 (dynamic).",
       {**B, "optimizer": {"type": "Lamb"}, "fp16": {"loss_scale": 128}}),
    _c("optimizer.untested-with-zero", "error", "initialize", False, "An optimizer ZeRO was not tested with.",
       "deepspeed.initialize refuses it unless zero_allow_untested_optimizer is true; the fix sets it, which "
       "accepts the risk.",
       {**B, "zero_optimization": {"stage": 1}, "optimizer": {"type": "Lamb", "params": {"lr": 0.001}}}),
    _c("scheduler.not-object", "error", "parse", False, "`scheduler` is not an object.",
       "DeepSpeed reads type and params from it. The fix removes it.",
       {**B, "scheduler": None}),
    _c("hf.optimizer-no-type", "error", "initialize", False, "An optimizer section without a type, for the HF "
       "Trainer.",
       "transformers' deepspeed_optim_sched only asks whether the config has an optimizer key: with one it leaves "
       "the optimizer to DeepSpeed (a DummyOptim in its place), and DeepSpeed builds none without optimizer.type, "
       "so deepspeed.initialize fails (\"zero stage 2 requires an optimizer\"; at stage 0 the first backward). "
       "Plain DeepSpeed only ignores the params (optimizer.no-type). The fix removes the section, so the Trainer "
       "builds its optimizer from TrainingArguments (unsafe: the section's settings go).",
       {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto", "zero_optimization": {"stage": 2},
        "optimizer": {"params": {"lr": "auto"}}}, settings={"target": "hf"}),
    _c("hf.scheduler-no-type", "error", "training", False, "A scheduler section without a type, for the HF "
       "Trainer.",
       "With a scheduler key in the config the HF Trainer leaves the schedule to DeepSpeed (a DummyScheduler in "
       "its place), which builds none without scheduler.type, and the Trainer's first step fails (\"'DummyScheduler' "
       "object has no attribute 'get_last_lr'\"). The fix removes the section, so the Trainer builds its scheduler "
       "from TrainingArguments (unsafe: the section's settings go).",
       {"train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto", "zero_optimization": {"stage": 2},
        "scheduler": {"params": {"warmup_num_steps": "auto"}}}, settings={"target": "hf"}),
    _c("scheduler.no-type", "warning", "ignored", False, "scheduler.params without scheduler.type.",
       "DeepSpeed builds no scheduler. The fix sets WarmupLR.",
       {**B, "scheduler": {"params": {"warmup_num_steps": 10}}}),
    _c("scheduler.unknown", "error", "initialize", False, "A scheduler DeepSpeed does not know.",
       "Scheduler names are case-sensitive; deepspeed.initialize fails. The fix uses the closest name.",
       {**B, "scheduler": {"type": "warmuplr", "params": {}}}),
    _c("scheduler.needs-objects", "error", "initialize", None, "A torch scheduler that needs Python objects.",
       "LambdaLR, SequentialLR, ... take functions or schedulers, which JSON cannot hold; build it in Python "
       "and pass lr_scheduler= to deepspeed.initialize.",
       {**B, "scheduler": {"type": "LambdaLR", "params": {}}}),
    _c("scheduler.params-missing", "error", "initialize", False, "A scheduler without params.",
       "DeepSpeed calls the scheduler with **params; a missing params section fails.",
       {**B, "scheduler": {"type": "WarmupLR"}}),
    _c("scheduler.unknown-param", "error", "initialize", False, "A scheduler parameter the class does not take.",
       "An unknown keyword is a TypeError at deepspeed.initialize. The fix renames it to the closest one.",
       {**B, "scheduler": {"type": "WarmupLR", "params": {"warmup_max": 0.001}}}),
    _c("scheduler.missing-param", "error", "initialize", None, "A required scheduler parameter is missing.",
       "For example WarmupDecayLR's total_num_steps or StepLR's step_size.",
       {**B, "scheduler": {"type": "StepLR", "params": {"gamma": 0.5}}}),
    _c("scheduler.param-type", "error", "initialize", False, "A scheduler parameter of the wrong type.",
       "The scheduler fails on it at deepspeed.initialize. A whole number written as a float "
       "(1000.0) fails only when the config is passed as a dict (HF Trainer, Accelerate): DeepSpeed's "
       "own file loader (hjson) reads it as an integer. "
       "The fix writes the whole number a float was meant as (100.5 -> 100), else the default.",
       {**B, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100.5}}}),
    _c("scheduler.param-text", "warning", "n/a", True, "A scheduler parameter written as text that DeepSpeed "
       "reads as a number.",
       "OneCycle's cycle_first_step_size and cycle_second_step_size go through float() before any check, so "
       "\"100\" trains a 100-step half cycle; other tools reading the file see text. The fix writes the number, "
       "which DeepSpeed reads the same way.",
       {**B, "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4,
                                                          "cycle_first_step_size": "100"}}}),
    _c("scheduler.param-choice", "warning", "ignored", False, "A scheduler parameter outside its choices.",
       "For example WarmupLR's warmup_type, which is \"log\" or \"linear\"; DeepSpeed warns and uses \"log\". "
       "The fix writes the default.",
       {**B, "scheduler": {"type": "WarmupLR", "params": {"warmup_type": "cosine"}}}),
    _c("scheduler.param-bool", "warning", "n/a", False, "A boolean where a scheduler takes a number.",
       "Python's bool is an int: the scheduler's own check (isinstance(value, int)) passes and it reads true as 1. "
       "The fix writes the default.",
       {**B, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": True}}}),
    _c("scheduler.param-range", "error", "initialize", False, "A scheduler parameter out of range.",
       "The scheduler's constructor refuses it in the releases whose code checks it: for example "
       "warmup_num_steps 0, which the WarmupLR family refuses from 0.19.3 (\"warmup_num_steps must be a positive "
       "integer\") and earlier releases raise to 2. The fix writes the default.",
       {**B, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}}}),
    _c("scheduler.total-below-warmup", "warning", "n/a", None, "total_num_steps below warmup_num_steps.",
       "The schedule never finishes warming up.",
       {**B, "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 10, "warmup_num_steps": 100}}}),
    # ---- initialize-time combinations
    _c("engine.compute-grad-norm-clipping", "error", "initialize", False,
       "compute_grad_norm false with gradient clipping.",
       "Clipping needs the norm: \"compute_grad_norm=false requires gradient_clipping=0\" at deepspeed.initialize "
       "(ZeRO 1/2). The fix turns clipping off.",
       {**B, "zero_optimization": {"stage": 2, "compute_grad_norm": False}}),
    _c("engine.compute-grad-norm-bf16-stage1", "error", "initialize", False,
       "compute_grad_norm false with ZeRO 1, bf16 and fp32 accumulation.",
       "DeepSpeed does not support this combination at deepspeed.initialize.",
       {**B, "gradient_clipping": 0.0, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"},
        "zero_optimization": {"stage": 1, "compute_grad_norm": False}}),
    _c("engine.compute-grad-norm-offload", "error", "initialize", False,
       "compute_grad_norm false with optimizer offload or ZenFlow.",
       "ZeRO-1/2's optimizer needs the norm for both: \"compute_grad_norm=false does not support optimizer "
       "offload\" (or \"... ZenFlow\") at deepspeed.initialize, in the releases whose optimizer checks it. The fix "
       "turns compute_grad_norm back on.",
       {**B, "gradient_clipping": 0.0,
        "zero_optimization": {"stage": 2, "compute_grad_norm": False, "offload_optimizer": {"device": "cpu"}}}),
    _c("engine.dtype-mix", "error", "initialize", False, "Without ZeRO, a precision and gradient accumulation "
       "dtype the release's engine refuses.",
       "What the engine accepts differs by release (read from each release's _do_optimizer_sanity_check): 0.19.8 "
       "refuses bf16 with fp32 accumulation (\"unsupported mix of model_dtype and grad_accum_dtype\"), which "
       "0.16.0-0.18.4 wrap in BF16_Optimizer, and 0.16.0-0.17.5 refuse bf16 with bf16 accumulation. The fix removes "
       "grad_accum_dtype where the release's default for the precision trains.",
       {**B, "bf16": {"enabled": True}, "data_types": {"grad_accum_dtype": "fp32"}}),
    _c("engine.autocast-conflict", "error", "initialize", False, "torch_autocast beside what the release's "
       "initialize refuses with it.",
       "runtime/torch_autocast.py asserts at deepspeed.initialize: \"Cannot enable both torch autocast and "
       "bfloat16\" (and fp16) in 0.17.2-0.18.2, \"... and zero quantized weights\" in every release with the "
       "section, a 16-bit communication_data_type in 0.17.2-0.17.5 (read from each release's code). The fix "
       "turns the other setting off.",
       {**B, "torch_autocast": {"enabled": True}, "zero_optimization": {"stage": 3, "zero_quantized_weights": True}}),
    _c("engine.param-dtype-conflict", "error", "initialize", False, "data_types.param_dtype conflicts with the "
       "enabled precision.", "deepspeed.initialize refuses the conflict. The fix removes param_dtype.",
       {**B, "data_types": {"param_dtype": "bf16"}}),
    _c("engine.managed-accumulation-overlap", "error", "initialize", False,
       "managed_gradient_accumulation false with overlap_comm below stage 2.",
       "deepspeed.initialize supports this only with ZeRO stage 2. The fix turns overlap_comm off.",
       {**B, "managed_gradient_accumulation": False, "zero_optimization": {"stage": 1, "overlap_comm": True}}),
    _c("engine.managed-accumulation-deepcompile", "error", "initialize", False,
       "managed_gradient_accumulation false with DeepCompile.",
       "deepspeed.initialize asserts \"managed_gradient_accumulation=False is not supported with DeepCompile\" (every "
       "release that reads the key). The fix removes the key, so DeepSpeed manages gradient accumulation again.",
       {**B, "managed_gradient_accumulation": False, "compile": {"deepcompile": True}}),
    _c("engine.allgather-bucket-alignment", "error", "initialize", False,
       "An odd allgather_bucket_size at ZeRO stage 1 or 2.",
       "The ZeRO-1/2 optimizer aligns its all-gather buffers to 2 elements and asserts that allgather_bucket_size is a "
       "multiple of 2 (its profile's check); ZeRO-3 does not. The fix adds one element.",
       {**B, "zero_optimization": {"stage": 2, "allgather_bucket_size": 500000001}}),
    _c("engine.muon-reduce-scatter", "error", "initialize", False,
       "The Muon optimizer at ZeRO stage 3 with reduce_scatter on.",
       "ZeRO-3's optimizer refuses Muon while reduce_scatter is on, its default (\"Muon and reduce scatter cannot be "
       "used together\", in the releases whose profile records it). The fix sets reduce_scatter to false.",
       {**B, "optimizer": {"type": "Muon", "params": {"lr": 0.02}}, "zero_optimization": {"stage": 3}}),
    _c("engine.torch-scheduler-wrapped", "error", "initialize", None,
       "A torch scheduler named in the config, on an optimizer DeepSpeed wraps.",
       "DeepSpeed builds a torch.optim.lr_scheduler class named in the config on the optimizer it trains with: a "
       "ZeRO optimizer at stage 1-3, or the fp16/bf16 wrapper without ZeRO, none of which is a torch Optimizer, so "
       "torch raises TypeError (\"DeepSpeedZeroOptimizer is not an Optimizer\"). Without ZeRO in fp32 it works. No "
       "automatic fix: choose one of DeepSpeed's schedulers, or build the torch one in Python.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 2},
        "scheduler": {"type": "StepLR", "params": {"step_size": 10}}}),
    _c("engine.autotp-size-string", "error", "initialize", False, "tensor_parallel.autotp_size is a string.",
       "deepspeed.initialize (in the releases whose profile records the comparison) compares autotp_size "
       "with 0 before the config is parsed, and the HF Trainer compares it with 1: \"2\" or \"auto\" is a "
       "TypeError there, although DeepSpeed's parser alone reads \"2\" as 2 and drops \"auto\". The fix "
       "writes the number, or removes \"auto\" (no AutoTP).",
       {**B, "tensor_parallel": {"autotp_size": "1"}}),
    _c("engine.autotp-world-size", "error", "initialize", None,
       "tensor_parallel.autotp_size does not divide the GPU count.",
       "deepspeed.initialize lays the GPUs out as (GPUs // autotp_size) data-parallel x autotp_size tensor-parallel "
       "ranks: with fewer GPUs than autotp_size (e.g. 2 on one GPU) it fails building the groups (AssertionError); "
       "with a GPU count it does not divide, the remainder is left outside every group, and DeepSpeed's group "
       "builder asserts that autotp_size divides the world size. No automatic fix: the tensor-parallel degree or the "
       "GPU count is the user's choice.",
       {**B, "tensor_parallel": {"autotp_size": 2}}),
    _c("engine.sequence-mesh", "error", "initialize", False,
       "data_parallel_size beside sequence_parallel_size that is not the job's device mesh.",
       "With both top-level keys written, deepspeed.initialize (every release) builds a (data_parallel_size, "
       "sequence_parallel_size) device mesh from them as written; DeepSpeed's parser does not know "
       "data_parallel_size, so nothing checks it before. A mesh bigger than the GPUs fails on every rank (\"Mesh "
       "should not be bigger than default world size\"), a smaller one on the ranks outside it (IndexError), a "
       "size that is no whole number when torch builds it. The fix sets data_parallel_size to GPUs ÷ "
       "sequence_parallel_size, or removes it (no mesh: DeepSpeed derives the data-parallel ranks).",
       {**B, "sequence_parallel_size": 2, "data_parallel_size": 2}, settings={"world_size": 2}),
    _c("engine.predivide-reduce-scatter", "error", "initialize", False,
       "gradient_predivide_factor other than 1 with ZeRO 2/3 and reduce_scatter on.",
       "The ZeRO-2 and ZeRO-3 optimizers assert at deepspeed.initialize that gradient_predivide_factor is 1.0 while "
       "zero_optimization.reduce_scatter is on, its default (\"gradient_predivide_factor != 1.0 is not yet supported "
       "with ZeRO-2 with reduce scatter enabled\"); ZeRO stage 1, and reduce_scatter false, take it. The fix removes "
       "the factor (the gradients are then averaged after the reduction, as by default).",
       {**B, "gradient_predivide_factor": 2.0, "zero_optimization": {"stage": 2}}),
    _c("engine.prescale-reduce-scatter", "error", "initialize", False,
       "prescale_gradients with ZeRO 2/3 and reduce_scatter on.",
       "The ZeRO-2 and ZeRO-3 optimizers assert at deepspeed.initialize that gradients are not pre-scaled while "
       "zero_optimization.reduce_scatter is on, its default (\"pre-scale gradients is not yet supported with ZeRO-2 "
       "with reduce scatter enabled\"); ZeRO stage 1, and reduce_scatter false, take it. prescale_gradients is read "
       "as a Python truth value, so \"false\" is on. The fix removes it.",
       {**B, "prescale_gradients": True, "zero_optimization": {"stage": 2}}),
    _c("engine.zenflow-without-offload", "error", "initialize", False,
       "ZenFlow without ZeRO-1/2 optimizer offload.",
       "ZenFlow (zero_optimization.zenflow, DeepSpeed 0.17.5 on; any object, {} too, turns it on) updates the "
       "parameters on the CPU: at ZeRO stage 1-2 without offload_optimizer deepspeed.initialize fails (\"Zenflow must "
       "be used with cpu offload\"), and without ZeRO training fails at the first step (the plain optimizer has no "
       "ZenFlow state). The fix offloads the optimizer to the CPU (stage 1-2) or removes zenflow (stage 0).",
       {**B, "zero_optimization": {"stage": 2, "zenflow": {"topk_ratio": 0.1}}}),
    _c("engine.zenflow-optimizer-params", "error", "initialize", False,
       "ZenFlow's torch AdamW given a keyword it does not take, or no optimizer.params.",
       "With ZenFlow at ZeRO stage 1-2 and the optimizer offloaded, DeepSpeed (0.17.5 on) builds ZenFlow's selective "
       "optimizer, a torch.optim.AdamW, with optimizer.params passed as keyword arguments as written: DeepSpeed's "
       "own keys (bias_correction, adam_w_mode, torch_adam, fp32_optimizer_states) make deepspeed.initialize fail "
       "with TypeError (unexpected keyword argument), and so does an optimizer section without params (None is not "
       "a mapping). The fix removes the key (it may change which optimizer runs: unsafe) or writes empty params.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "bias_correction": True}},
        "zero_optimization": {"stage": 2, "zenflow": {"topk_ratio": 0.1}, "offload_optimizer": {"device": "cpu"}}}),
    _c("engine.partial-offload-optimizer", "error", "initialize", False,
       "ZeRO-3 partial optimizer offload (ratio below 1) with an optimizer other than DeepSpeedCPUAdam.",
       "With offload_optimizer.ratio below 1 the stage-3 optimizer keeps part of the step on the GPU and asserts at "
       "deepspeed.initialize that the optimizer is DeepSpeedCPUAdam (\"Hybrid Optimizer Only Supports "
       "DeepSpeedCPUAdam\"): Adam or AdamW with CPU offload, not torch_adam, SGD or another class (the class is "
       "core.effective's reading). The fix removes ratio (the whole optimizer is offloaded).",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}},
        "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}),
    _c("precision.master-weights-offload", "error", "initialize", None,
       "16-bit master weights without ZeRO-Offload and DeepSpeedCPUAdam.",
       "With fp16_master_weights_and_grads, or bf16_master_weights_and_grads whose optimizer states stay in fp32 "
       "(bf16_optimizer_states off), the ZeRO optimizer (stages 1-3) asserts at deepspeed.initialize that the "
       "optimizer is offloaded to the CPU and is DeepSpeedCPUAdam (\"Master weights feature requires ZeRO-N "
       "Offload with DeepSpeedCPUAdam\"); the release's own ZeRO optimizer code says whether it checks. No "
       "automatic fix: offloading the optimizer, keeping bf16 optimizer states or turning the option off each "
       "change memory or speed.",
       {**B, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}, "zero_optimization": {"stage": 2},
        "bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}),
    _c("engine.legacy-stage1", "error", "initialize", False, "legacy_stage1 is set.",
       "The old ZeRO stage 1 is gone; deepspeed.initialize fails.",
       {**B, "zero_optimization": {"stage": 1, "legacy_stage1": True}}),
    _c("engine.amp-zero", "error", "initialize", None, "Apex AMP (`amp.enabled`) with ZeRO stage 1-3.",
       "Releases that still read `amp` (up to 0.19.7) assert in deepspeed.initialize that AMP and ZeRO are not both "
       "on (\"Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode which performs similar to "
       "amp opt_mode=O2\"), before they look for apex. `enabled` is read with dict.get as a Python truth value, so "
       "\"false\" is on. No automatic fix: replacing amp with fp16/bf16 changes the numerics, and dropping ZeRO "
       "changes the memory per GPU.",
       {**B, "amp": {"enabled": True}, "zero_optimization": {"stage": 2}}, settings={"version": "0.19.7"}),
    _c("engine.amp-half-precision", "error", "initialize", None,
       "Apex AMP with fp16 or bf16, without ZeRO.",
       "Without ZeRO, releases up to 0.19.7 refuse amp together with DeepSpeed's own fp16 or bf16 at "
       "deepspeed.initialize (\"Cannot enable both amp with (legacy) fp16 or bfloat16 mode\"), before they look "
       "for apex; with ZeRO, engine.amp-zero comes first. Where gradients accumulate in another dtype (bf16 "
       "without ZeRO does by default up to 0.17.5) the same check stops earlier, at \"Model data type and "
       "gradient accumulation data type must be equal to use Amp\". No automatic fix: which mixed precision to "
       "keep is the user's choice (amp's O1/O2 casts and loss scaling differ from DeepSpeed's fp16/bf16).",
       {**B, "amp": {"enabled": True}, "bf16": {"enabled": True}}, settings={"version": "0.19.7"}),
    _c("engine.amp-managed-accumulation", "error", "initialize", None,
       "Apex AMP with managed_gradient_accumulation off.",
       "The releases that read both (0.19.4-0.19.7) assert in deepspeed.initialize's sanity check, whatever the ZeRO "
       "stage or precision, that amp is off when DeepSpeed does not manage gradient accumulation "
       "(\"managed_gradient_accumulation=False is not supported with Apex AMP\"). The key is read as a Python "
       "truth value: only false, 0 or null turn it off. No automatic fix: giving DeepSpeed back the accumulation "
       "changes how the training loop must call it, and dropping amp changes the numerics.",
       {**B, "amp": {"enabled": True}, "managed_gradient_accumulation": False}, settings={"version": "0.19.7"}),
    # ---- misc parse-time checks
    _c("checkpoint.tag-validation", "error", "parse", False, "checkpoint.tag_validation is not Warn, Ignore or "
       "Fail.", "DeepSpeed upper-cases the value and accepts only these. The fix sets the closest one (\"failed\" "
       "-> Fail), else the default Warn.",
       {**B, "checkpoint": {"tag_validation": "Sometimes"}}),
    _c("checkpoint.pipeline-stage", "error", "parse", False, "parallel_write.pipeline_stage is not a boolean.",
       "DeepSpeed requires true or false.",
       {**B, "checkpoint": {"parallel_write": {"pipeline_stage": "yes"}}}),
    _c("checkpoint.writer", "error", "parse", False, "checkpoint.writer type or data_parallel unknown.",
       "DeepSpeed upper-cases them and accepts MOCK/PYTHON/FAST and REPLICA/SOCKET/MACHINE. The fix sets the "
       "closest one, else the default (type FAST; data_parallel removed, i.e. rank 0 of each replica writes).",
       {**B, "checkpoint": {"writer": {"type": "slow"}}}),
    _c("data-types.keep-in-fp32", "error", "parse", False, "keep_in_fp32_modules is not \"auto\" or a list.",
       "DeepSpeed requires \"auto\" or a list of name patterns.",
       {**B, "data_types": {"keep_in_fp32_modules": "norm"}}),
    _c("data-types.keep-in-fp32-pattern", "error", "initialize", None,
       "keep_in_fp32_modules patterns that are no regular expression.",
       "Under fp16/bf16, deepspeed.initialize turns each `*` into `.*`, joins the distinct patterns with `|` and "
       "compiles the result (keep_in_fp32.keep_in_fp32_pattern); an unbalanced parenthesis or a leading `+` fails "
       "with re.error. No automatic fix: the pattern is the user's to correct.",
       {**B, "bf16": {"enabled": True}, "data_types": {"keep_in_fp32_modules": ["(bias"]}}),
    _c("data-efficiency.curriculum-metrics", "error", "parse", None, "Curriculum learning without metrics.",
       "DeepSpeed stops when curriculum learning is enabled without curriculum_metrics.",
       {**B, "data_efficiency": {"data_sampling": {"curriculum_learning": {"enabled": True}}}}),
    _c("data-efficiency.random-ltd-keys", "error", "initialize", None, "Random-LTD on without the keys it reads.",
       "With data_routing.random_ltd.enabled truthy, deepspeed.initialize builds RandomLTDScheduler, which reads "
       "total_layer_num, random_ltd_layer_num and random_ltd_schedule (and, when the schedule is an object, its "
       "min_value, max_value, schedule_config and schedule_type) with config[key]: a missing one stops it with a "
       "KeyError, even with data_efficiency.enabled and data_routing.enabled off (they gate nothing here).",
       {**B, "data_efficiency": {"data_routing": {"random_ltd": {"enabled": True}}}}),
    _c("data-efficiency.random-ltd-schedule", "error", "training", None,
       "Random-LTD on with a kept-token schedule its scheduler stops on.",
       "RandomLTDScheduler.update_seq, which engine.forward calls whenever random_ltd.enabled is truthy, reads the "
       "schedule with config[key] and computes with it as written: a null random_ltd_schedule leaves no kept length "
       "(KeyError: 'current_value'); while the kept length is below max_value it knows only schedule_type "
       "\"fixed_linear\" (RuntimeError), indexes schedule_config (TypeError when it is null, KeyError without "
       "require_steps or seq_per_step) and divides by those two (TypeError for text, ZeroDivisionError for 0). No "
       "automatic fix: the schedule is the user's to write.",
       {**B, "data_efficiency": {"data_routing": {"random_ltd": {
           "enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1, "random_ltd_layer_id": [0],
           "random_ltd_schedule": {"min_value": 8, "max_value": 64, "schedule_type": "fixed_root",
                                   "schedule_config": {"require_steps": 100, "seq_per_step": 8}}}}}}),
    _c("data-efficiency.random-ltd-layer-token-lr", "error", "initialize", False,
       "Random-LTD's layer-token learning-rate schedule switched on.",
       "DeepSpeed's RandomLTDScheduler raises NotImplementedError (\"Work In Progress\") when "
       "layer_token_lr_schedule.enabled is truthy (read with config[key]: the string \"false\" is on), so "
       "deepspeed.initialize stops. The fix sets it to false; the learning rate is then the `scheduler` section's.",
       {**B, "data_efficiency": {"data_routing": {"random_ltd": {
           "enabled": True, "total_layer_num": 2, "random_ltd_layer_num": 1,
           "random_ltd_schedule": {"min_value": 8, "max_value": 64, "schedule_type": "fixed_linear",
                                   "schedule_config": {"require_steps": 100, "seq_per_step": 8}},
           "layer_token_lr_schedule": {"enabled": True}}}}}),
    _c("data-efficiency.max-tokens", "error", "parse", None, "Dynamic batching without max_tokens.",
       "DeepSpeed stops when dynamic batching is enabled without max_tokens.",
       {**B, "data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": True}}}}),
    _c("compression.group-modules", "error", "initialize", None,
       "A compression group whose modules are no module-name patterns.",
       "Releases up to 0.19.6 read compression_training; deepspeed.initialize builds the compression scheduler, which "
       "searches the model's module names with each entry of every group's `modules` (re.search), even for a "
       "technique that is off. The parser's default is the string \"*\", read one character at a time, and \"*\" "
       "is no regular expression (re.error \"nothing to repeat\"); an unbalanced parenthesis fails the same way, "
       "and a number or null is not iterable (TypeError). No automatic fix: the patterns are the user's to write.",
       {**B, "compression_training": {"row_pruning": {"shared_parameters": {}, "different_groups": {
           "g": {"params": {"dense_ratio": 0.5}}}}}}, settings={"version": "0.19.6"}),
    _c("compression.weight-quantization", "error", "initialize", True,
       "Weight quantization that deepspeed.initialize cannot set up.",
       "Releases up to 0.19.6: without `shared_parameters` the parser leaves out `quantize_weight_in_forward`, which "
       "engine.quantize_training reads (KeyError; the fix adds an empty `shared_parameters`, which keeps the "
       "technique off as before); switched on (read as a truth value) while quantizing in the optimizer step, it "
       "needs fp16 (AssertionError \"MoQ ... only supported for FP16\").",
       {**B, "compression_training": {"weight_quantization": {"different_groups": {}}}},
       settings={"version": "0.19.6"}),
    _c("compression.sparse-pruning-step", "error", "training", None,
       "Sparse pruning on with l1 or topk, which the compression scheduler cannot step.",
       "Releases up to 0.19.6: the scheduler's step tests `schedule_offset <= step <= schedule_offset_end`, and the "
       "parser writes schedule_offset_end only for snip_momentum, so training fails (KeyError) at step "
       "schedule_offset (1000 by default). No automatic fix: the method is the user's choice.",
       {**B, "compression_training": {"sparse_pruning": {"shared_parameters": {"enabled": True, "method": "l1"},
                                                          "different_groups": {}}}}, settings={"version": "0.19.6"}),
    _c("expert-parallel.choice", "error", "initialize", True, "An AutoEP choice key holds a value its release refuses.",
       "DeepSpeed 0.19.6 on read expert_parallel with dict.get; with `enabled` on (a Python truth value), "
       "deepspeed.initialize runs validate_autoep_config, which tests score_apply, combine_impl, score_func, "
       "preset_model and (0.19.7/0.19.8) row_weighting_impl, gate_up_impl, comm_backend and expert_activation "
       "against its own lists (ValueError). The lists are read from each release (0.19.6 has no "
       "fused_weighted_sum). The fix writes the release's spelling where only the case differs (\"Mixtral\").",
       {**B, "expert_parallel": {"enabled": True, "preset_model": "Mixtral"}}),
    _c("expert-parallel.attribute-name", "error", "initialize", None,
       "An AutoEP name is empty or holds a dot.",
       "expert_w1/w2/w3, num_experts_attr, top_k_attr, router_pattern, expert_pattern and the shared-expert "
       "patterns are attribute names AutoEP looks up with getattr on the model or its MoE block, not paths or "
       "patterns: with AutoEP on, an empty one or one with a dot fails deepspeed.initialize (ValueError).",
       {**B, "expert_parallel": {"enabled": True, "router_pattern": "mlp.gate"}}),
    _c("expert-parallel.combination", "error", "initialize", None,
       "AutoEP settings that validate_autoep_config refuses together.",
       "With AutoEP on: comm_backend deepep without comm_max_tokens_per_rank > 0; gate_up_impl fused with "
       "use_grouped_mm false; row_weighting_impl fused without deepep or with autoep_size 1; combine_impl "
       "fused_weighted_sum with tensor_parallel.autotp_size > 1 or with deepep over several ranks; async_split_plan "
       "with AutoTP folding; num_limited_groups above num_expert_groups; an autoep_size that does not divide the GPU "
       "count; tensor_parallel.preset_model and "
       "expert_parallel.preset_model naming different models. deepspeed.initialize fails on each (ValueError).",
       {**B, "expert_parallel": {"enabled": True, "comm_backend": "deepep"}}, settings={"version": "0.19.8"}),
    _c("progressive-layer-drop.keys", "error", "initialize", None, "Progressive layer drop on without theta or gamma.",
       "Releases up to 0.19.7 read progressive_layer_drop with dict.get; switched on (any truthy enabled), the engine "
       "builds ProgressiveLayerDrop(theta=pld_params['theta'], gamma=pld_params['gamma']) in deepspeed.initialize, "
       "so a missing one stops it with a KeyError: DeepSpeed has no default for either. No automatic fix: the values "
       "are the user's to choose.",
       {**B, "progressive_layer_drop": {"enabled": True, "gamma": 0.001}}, settings={"version": "0.19.7"}),
    _c("curriculum.legacy-schedule", "error", "initialize", None, "Legacy curriculum learning on without its schedule.",
       "Releases up to 0.19.7 read the top-level curriculum_learning with dict.get; switched on, deepspeed.initialize "
       "builds CurriculumScheduler, which asserts min_difficulty, max_difficulty and schedule_type, refuses any type "
       "but fixed_linear, fixed_root, fixed_discrete or custom (RuntimeError), and reads schedule_config with the "
       "keys of its type (KeyError, AssertionError); the first forward pass then reads curriculum_type (KeyError).",
       {**B, "curriculum_learning": {"enabled": True}}, settings={"version": "0.19.7"}),
    _c("activation-checkpointing.contiguous", "warning", "initialize", None,
       "Contiguous activation checkpointing without partitioned activations or number_checkpoints.",
       "deepspeed.checkpointing.configure(mpu, deepspeed_config=...), how Megatron-style models set up DeepSpeed's "
       "activation checkpointing, asserts that contiguous_memory_optimization comes with partition_activations and "
       "number_checkpoints. A warning: deepspeed.initialize does not read these keys, and configure's own "
       "arguments may supply them.",
       {**B, "activation_checkpointing": {"contiguous_memory_optimization": True}}),
    _c("autotuning.empty-dir", "error", "parse", False, "An empty autotuning directory.",
       "DeepSpeed stops (\"results_dir cannot be empty\"). The fix sets a directory name.",
       {**B, "autotuning": {"enabled": True, "results_dir": ""}}),
    _c("compile.pass-not-in-version", "error", "parse", False, "A compile pass this release does not have.",
       "\"autotp\" exists from DeepSpeed 0.19.8 on. The fix removes it from compile.passes.",
       {**B, "compile": {"passes": ["autotp"]}}, settings={"version": "0.19.5"}),
    _c("misc.vocabulary-size-type", "error", "parse", False, "vocabulary_size is not a number.",
       "DeepSpeed computes vocabulary_size % 8 while reading the config. The fix removes it.",
       {**B, "vocabulary_size": "50k"}),
    _c("misc.vocabulary-alignment", "warning", "n/a", None, "vocabulary_size is not a multiple of 8.",
       "Tensor cores are used less efficiently; pad the vocabulary.",
       {**B, "vocabulary_size": 50257}),
    _c("misc.wall-clock-breakdown", "error", "parse", False, "wall_clock_breakdown or flops_profiler.enabled is "
       "not a boolean.", "DeepSpeed combines them with `|` while reading the config.",
       {**B, "wall_clock_breakdown": "sometimes"}),
    _c("misc.steps-per-print", "error", "training", False, "steps_per_print is 0 or not a number.",
       "Training computes step % steps_per_print: 0 divides by zero at the first step. The fix sets 10.",
       {**B, "steps_per_print": 0}),
    _c("misc.step-number", "error", "training", False, "gradient_clipping or gradient_predivide_factor is not a "
       "number (or the factor is 0 where DeepSpeed divides by it).", "DeepSpeed keeps them as written and computes "
       "with them at the first optimizer step: a string or null stops training (TypeError), a factor of 0 divides "
       "by zero where the factor is used: without ZeRO, under BF16_Optimizer, and with ZeRO-1/2 and reduce_scatter "
       "false (ZeRO-1 with reduce_scatter on never reads it, whatever it holds; ZeRO-2/3 with it on refuse any value "
       "but 1, a string too, engine.predivide-reduce-scatter). The fix writes the number a numeric string holds, "
       "else the default.",
       {**B, "gradient_clipping": "1.0"}),
    _c("misc.steps-per-print-odd", "warning", "n/a", False, "steps_per_print is negative or fractional.",
       "It is meant to be a positive whole number of steps. The fix sets 10.",
       {**B, "steps_per_print": -1}),
    _c("misc.datastates-on", "warning", "n/a", False, "datastates_ckpt written to mean off turns DataStates on.",
       "DeepSpeed (0.18.1 on) enables DataStates checkpointing when `datastates_ckpt` is anything but `false` "
       "(`enabled = value is not False`): null, {} and {\"enabled\": false} all switch it on, and checkpoints are "
       "saved through DataStates (or, without its package, DeepSpeed logs an error and falls back to torch.save). "
       "The fix writes false (unsafe: it turns DataStates off, which is what the config seems to mean). A value "
       "that is neither a switch nor an object (2, \"x\") turns it on too and is handed to DataStates as its "
       "settings: warned, with no fix (what it meant is unknown).",
       {**B, "datastates_ckpt": {"enabled": False}}),
    _c("misc.comms-logger-on", "warning", "n/a", False, "comms_logger written to mean off turns the logger on.",
       "DeepSpeed switches the communication logger on whenever the `comms_logger` key is present "
       "(`comms_logger_enabled = 'comms_logger' in ds_config`) and never reads the section's own `enabled`, in "
       "every release: {} and {\"enabled\": false} both log every collective, each synchronising the device, which "
       "slows training. The fix removes the section (unsafe: it turns the logger off, which is what the config seems "
       "to mean).",
       {**B, "comms_logger": {"enabled": False}}),
    _c("misc.load-balance-coeff", "error", "parse", False, "expert_parallel.load_balance_coeff is set.",
       "DeepSpeed's AutoEP build does not support it and stops. The fix removes it.",
       {**B, "expert_parallel": {"load_balance_coeff": 0.01}}),
    _c("misc.gds", "info", "n/a", None, "aio.use_gds needs GPUDirect Storage.",
       "DeepSpeed refuses it on machines without NVIDIA GPUDirect Storage.",
       {**B, "aio": {"use_gds": True}}),
    _c("misc.negative-clipping", "warning", "n/a", False, "gradient_clipping is negative.",
       "A negative norm makes no sense (0 disables clipping). The fix sets 1.0.",
       {**B, "gradient_clipping": -1.0}),
)

