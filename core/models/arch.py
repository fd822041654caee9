"""What an architecture is (``ModelSpec``, its ``ModuleParams``) and how a Hugging Face ``config.json`` dict is
read (``ConfigReader``); ``core.models.families`` builds one per ``model_type`` (``describe``).

Counting mirrors the module tree ``transformers`` builds for the training head of each family
(``AutoModelForCausalLM``; ``BertForMaskedLM`` for bert; ``T5ForConditionalGeneration`` for t5): every
module's own parameters are listed once per instance, tied tensors are counted once in the total, and the
largest layer is the largest sum of one module's own parameters, as DeepSpeed's ``*_all_live`` computes it.
Missing keys take the defaults of the family's ``transformers`` config class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


class ModelConfigError(ValueError):
    """A config.json that cannot be described; the message is meant for the user."""


class UnsupportedModelError(ModelConfigError):
    """The config's ``model_type`` is not one of the supported families (enter counts by hand instead)."""


@dataclass(frozen=True)
class ModuleParams:
    """One kind of module: its own parameter count, how many instances exist, whether it is tied."""

    name: str
    params: int
    count: int = 1
    tied: bool = False  # the tensor is shared with an earlier entry: counted for the largest layer only
    #: The sizes of the module's own parameter tensors (a Linear's weight and bias, a LayerNorm's scale and shift,
    #: a fused MoE experts module's two stacked weights) when there is more than one; empty: one tensor of
    #: ``params``. ZeRO-3 decides persistence per tensor and per-parameter hooks visit each one.
    tensors: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.tensors and sum(self.tensors) != self.params:
            raise ValueError(f"{self.name}: tensors {self.tensors} do not add up to its {self.params} parameters")

    @property
    def tensor_sizes(self) -> tuple[int, ...]:
        """Sizes of one instance's parameter tensors (none for a module without parameters)."""
        return self.tensors or ((self.params,) if self.params else ())


@dataclass(frozen=True)
class ModelSpec:
    """What the memory model needs to know about an architecture (all sizes in elements)."""

    name: str
    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool
    gated_mlp: bool
    attention_bias: bool
    mlp_bias: bool
    norm: str  # "rmsnorm" | "layernorm"
    norms_per_layer: int
    num_experts: int = 0  # 0: dense MLP
    experts_per_token: int = 0
    encoder_decoder: bool = False
    num_decoder_layers: int = 0  # encoder-decoder only; decoder-only models use num_layers
    causal: bool = True
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    fused_qkv: bool = False
    shared_norm_input: bool = False  # parallel residual: attention and MLP norms read the same tensor
    hidden_act: str = "silu"
    attn_logit_softcapping: float = 0.0  # gemma2: tanh soft-capping of attention scores (eager saves tanh)
    final_logit_softcapping: float = 0.0  # gemma2: tanh soft-capping of the logits
    position: str = "rope"  # "rope" | "learned" | "alibi" | "relative"
    #: The token embedding's and LM head's width when a projection maps it to and from the hidden size (OPT's
    #: word_embed_proj_dim: project_in, project_out); 0: the hidden size.
    embedding_width: int = 0
    modules: tuple[ModuleParams, ...] = field(default=(), repr=False)
    #: The size keys the config.json did not give, taken from the family's ``transformers`` defaults.
    defaulted: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def defaulted_note(self) -> str | None:
        """What the sizes assumed when the config.json left some out (``defaulted``), or None."""
        if not self.defaulted:
            return None
        return (f"The model's config.json does not give {', '.join(self.defaulted)}: taken from the transformers "
                f"{self.model_type} config's defaults.")

    def sequence_reason(self, seq_len: int) -> str | None:
        """Why the model cannot run sequences of ``seq_len`` tokens, worded to follow the length ("is beyond the
        model's 1024 learned positions: ..."; a caller names the length its way), or None."""
        if self.position == "learned" and seq_len > self.max_position_embeddings:
            return (f"is beyond the model's {self.max_position_embeddings} learned positions: the model cannot run "
                    "it (its position table has no row for them); use at most "
                    f"{self.max_position_embeddings} tokens, or a model with rotary positions (RoPE)")
        return None

    def sequence_problem(self, seq_len: int) -> str | None:
        """Why the model cannot run sequences of ``seq_len`` tokens (beyond a learned position table), or None."""
        reason = self.sequence_reason(seq_len)
        return None if reason is None else f"Sequence length {seq_len} {reason}"

    def runnable_sequence(self, preferred: int) -> int:
        """``preferred`` tokens, or the learned position table's length when that is shorter (the longest
        sequence the model runs): the sequence length a plan starts from when the user has not given one."""
        return min(preferred, self.max_position_embeddings) if self.position == "learned" else preferred

    @property
    def total_params(self) -> int:
        """All parameters, tied tensors counted once."""
        return sum(m.params * m.count for m in self.modules if not m.tied)

    @property
    def largest_layer_params(self) -> int:
        """Largest own-parameter count of a single module (DeepSpeed's ``largest_layer_params``)."""
        return max((m.params for m in self.modules), default=0)

    @property
    def head_width(self) -> int:
        """The LM head's input width (``embedding_width``, else the hidden size)."""
        return self.embedding_width or self.hidden_size

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (modules as a list of dicts), plus the computed counts."""
        out = asdict(self)
        out["total_params"] = self.total_params
        out["largest_layer_params"] = self.largest_layer_params
        return out


#: The keys that set a model's size (each family's spelling): one missing from a config.json is taken from the
#: family's ``transformers`` defaults (a 7B Llama for ``{"model_type": "llama"}``), which the estimate says.
#: Keys derived from these (head_dim, num_key_value_heads, n_inner) are not listed: their default is the derivation.
SIZE_KEYS = frozenset({"hidden_size", "n_embd", "d_model", "num_hidden_layers", "n_layer", "num_layers",
                       "num_attention_heads", "n_head", "intermediate_size", "d_ff", "ffn_dim", "vocab_size"})


#: What a message names the model's config as when the caller does not say (the app); the CLI says
#: ``--hf-config PATH``.
DEFAULT_SOURCE = "config.json"
#: What a message offers when the model cannot be described and the caller does not say (the app's way out).
BY_HAND = "enter the total and largest-layer parameter counts by hand"


class ConfigReader:
    """Typed reads from a config dict with family defaults; bad values raise ModelConfigError naming ``source``
    (the file, as the caller calls it) and, for a missing size, ``instead`` (the caller's way out)."""

    def __init__(self, cfg: Mapping[str, Any], model_type: str, source: str = DEFAULT_SOURCE,
                 instead: str = BY_HAND):
        self.cfg = cfg
        self.model_type = model_type
        self.source, self.instead = source, instead
        #: What every message starts with: the file and its model type ("--hf-config m.json (llama)").
        self.where = f"{source} ({model_type})"
        #: the integer keys read from the family's defaults (the file did not give them), in reading order
        self.defaulted: list[str] = []

    def _raw(self, keys: tuple[str, ...]) -> Any:
        for k in keys:
            if self.cfg.get(k) is not None:
                return self.cfg[k]
        return None

    def named(self, *keys: str) -> str:
        """Which of ``keys`` a read of them takes its value from (the first one given; the first when none is), to
        name it in a message."""
        return next((k for k in keys if self.cfg.get(k) is not None), keys[0])

    def int(self, *keys: str, default: int | None = None, minimum: int = 1) -> int:
        value = self._raw(keys)
        if value is None:
            written_null = next((k for k in keys if k in self.cfg and k in SIZE_KEYS), None)
            if written_null is not None:
                # transformers' config classes refuse a null size (it is typed int); a default here would size
                # a model nobody can build
                raise ModelConfigError(
                    f"{self.where}: '{written_null}' is null; transformers refuses it. Give it a positive integer."
                )
            if default is None:
                raise ModelConfigError(
                    f"{self.where}: '{keys[0]}' is missing; add it (a positive integer) or {self.instead}."
                )
            if default < minimum:
                raise ModelConfigError(
                    f"{self.where}: '{keys[0]}' is missing and derives to {default} from the other sizes; set it "
                    f"explicitly (>= {minimum})."
                )
            if keys[0] in SIZE_KEYS and keys[0] not in self.defaulted:
                self.defaulted.append(keys[0])
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
            or int(value) != value
        ):
            raise ModelConfigError(f"{self.where}: '{self.named(*keys)}' must be an integer, got {value!r}.")
        if isinstance(value, float):
            # transformers' config classes are typed int (StrictDataclassFieldValidationError on 4096.0), and where a
            # key is an alias (gpt2's hidden_size) the model it builds refuses the float size
            raise ModelConfigError(f"{self.where}: '{self.named(*keys)}' must be an integer, got {value!r} (a float, "
                                   f"which transformers refuses); write {int(value)}.")
        if value < minimum:
            raise ModelConfigError(f"{self.where}: '{self.named(*keys)}' must be >= {minimum}, got {value}.")
        return int(value)

    def require_multiple(self, whole_key: str, whole: int, part_key: str, part: int, why: str) -> None:
        """ModelConfigError unless ``part`` divides ``whole`` (``why``: what in transformers needs it)."""
        if whole % part:
            raise ModelConfigError(f"{self.where}: '{whole_key}' ({whole}) must be a multiple of '{part_key}' "
                                   f"({part}): {why}.")

    def require_even_rotary(self, head_dim: int, fraction_key: str | None = None, default_fraction: float = 1.0,
                            head_dim_from: str = "head_dim") -> None:
        """ModelConfigError when RoPE would rotate more dimensions than the head has: it rotates pairs, so an odd
        rotary dimension is rounded up to the next pair, and where that is the whole (odd) head transformers refuses
        the config (Llama, Mistral, Gemma, Falcon) or fails at the first forward (Qwen2, Mixtral, Phi-3, GPT-NeoX:
        cos and sin one wider than the query). An odd share of a wider head runs in some families and is refused by
        others' config checks; it is left alone here. ``fraction_key`` names the share of the head that is rotated
        (``partial_rotary_factor``, GPT-NeoX's ``rotary_pct``; also read from ``rope_parameters``)."""
        fraction = default_fraction
        if fraction_key:
            nested = self.cfg.get("rope_parameters")
            if self.cfg.get(fraction_key) is None and isinstance(nested, Mapping) \
                    and nested.get("partial_rotary_factor") is not None:
                nested_reader = ConfigReader(nested, self.model_type, self.source, self.instead)
                fraction = nested_reader.float("partial_rotary_factor", default=fraction)
            else:
                fraction = self.float(fraction_key, default=default_fraction)
        rotary = int(head_dim * fraction)
        if rotary % 2 and rotary + 1 > head_dim:
            share = f" × {fraction_key} {fraction:g}" if fraction != 1 else ""
            raise ModelConfigError(
                f"{self.where}: RoPE rotates pairs of dimensions, but this model's rotary dimension is {rotary}"
                f" ({head_dim_from} {head_dim}{share}); transformers refuses the config or fails at its "
                "first forward. Use an even head dimension."
            )

    def bool(self, *keys: str, default: bool) -> bool:
        value = self._raw(keys)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ModelConfigError(f"{self.where}: '{self.named(*keys)}' must be true or false, got {value!r}.")
        return value

    def float(self, *keys: str, default: float) -> float:
        value = self._raw(keys)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ModelConfigError(f"{self.where}: '{self.named(*keys)}' must be a number, got {value!r}.")
        return float(value)

    def str(self, *keys: str, default: str) -> str:
        value = self._raw(keys)
        return default if value is None else str(value)
