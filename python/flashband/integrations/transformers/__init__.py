"""flashband as a Hugging Face transformers attention implementation.

    from flashband.integrations.transformers import register
    name = register()            # "flashband", or "fband" where transformers rejects that name
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=name)

Every attention layer then runs through flashband (_attention.py says what is copied: nothing
of q, k or v): causal prefill and decode over transformers' KV cache, GQA, the layer's
``scaling``, ``sliding_window`` (Mistral, Qwen2's and Gemma 2/3's sliding layers) and
``softcap`` (Gemma 2), left padding through the attention mask. What flashband cannot
honour (dropout in training, output_attentions, prepared 4-D or custom masks, packed
sequences, attention sinks, gradients) raises flashband.UnsupportedError naming it.

The name: transformers 5 takes every implementation name containing "flash" for a
FlashAttention kernel to load from the Hub (``is_flash_attention_requested`` is a substring
test), so ``attn_implementation="flashband"`` fails in transformers' own checks there before
any attention runs. register() registers "flashband" and, where transformers classifies it
so, also "fband", and returns the name that loads.

Continuous batching (``generate_batch``, transformers' paged cache): transformers 5 accepts
there only "sdpa", "paged|eager" and names it takes for FlashAttention, which is what
"flashband_paged" is (the substring); but such a name cannot be loaded through
set_attn_implementation (the Hub check above). ``enable_continuous_batching(model)`` sets the
model's attention implementation to "flashband_paged" directly (transformers' config
attribute ``_attn_implementation``, bypassing that check). transformers then hands each layer
the FlashAttention-style inputs: the step's requests packed in one row, their K/V gathered
from the paged cache (a copy transformers makes for every implementation without a block
table), ``cu_seq_lens_q``/``cu_seq_lens_k``; flashband runs one ragged causal prefill
(BatchPrefillWithRaggedKVCacheWrapper) over them in place. transformers' block-table path
(attention reading the pages itself) is open only to its FlashAttention 2/3 kernels.
Earlier transformers (5.17 checked) rename the implementation "paged|flashband_paged" and hand
it the paged cache to update: enable_continuous_batching refuses there by name.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Tuple

from ...errors import UnsupportedError

from ._attention import flashband_attention
from ._mask import BandMask, band_mask

__all__ = ["register", "enable_continuous_batching", "NAME", "ALIAS", "PAGED_NAME", "BandMask",
           "transformers_version"]

NAME = "flashband"
ALIAS = "fband"  # no "flash" in it: loadable where transformers reads "flash" as FlashAttention
PAGED_NAME = "flashband_paged"


# The first transformers whose continuous batching this integration was checked with.
CONTINUOUS_BATCHING_SINCE = (5, 25)


def _version_tuple(version: str) -> Tuple[int, ...]:
    """(major, minor) of a version string: "5.26.0.dev0" -> (5, 26)."""
    return tuple(int(m) for m in re.findall(r"\d+", version)[:2])


def transformers_version() -> str:
    import transformers
    return transformers.__version__


def _taken_for_flash_attention(name: str) -> bool:
    try:
        from transformers.utils.generic import is_flash_attention_requested
    except ImportError:  # versions before the substring test: names are taken as registered
        return False
    return bool(is_flash_attention_requested(requested_attention_implementation=name))


def register(backend: str = "auto") -> str:
    """Registers the flashband attention and its mask function with transformers'
    AttentionInterface and AttentionMaskInterface (every model, process-wide) and returns the
    name to pass as attn_implementation. backend: the flashband backend every layer runs on
    ("auto", "cpu", "sm80", "sm90", "cudnn"); a later register() replaces it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    function = functools.partial(flashband_attention, backend=backend)
    functools.update_wrapper(function, flashband_attention)
    names: Tuple[str, ...] = (NAME, ALIAS) if _taken_for_flash_attention(NAME) else (NAME,)
    for name in names + (PAGED_NAME,):
        AttentionInterface.register(name, function)
        # Without a mask function of its own transformers builds no mask at all for a
        # registered name (padding would be lost), so ours always answers.
        AttentionMaskInterface.register(name, band_mask)
    return names[-1]


def enable_continuous_batching(model: Any, backend: str = "auto") -> str:
    """Registers flashband (register(backend)) and sets model's attention implementation to
    "flashband_paged" for transformers' continuous batching (model.generate_batch, its paged
    cache); returns the name. Raises UnsupportedError where the installed transformers would
    not take that name for continuous batching (checked with 5.25.0)."""
    register(backend)
    if _version_tuple(transformers_version()) < CONTINUOUS_BATCHING_SINCE:
        # 5.17 (checked) renames the implementation "paged|flashband_paged" and hands it the
        # paged cache to update and read itself: another contract, not implemented here.
        raise UnsupportedError(
            f"continuous batching: transformers {transformers_version()} hands 'paged|' "
            "implementations its paged cache to update; flashband plugs into the gathered-K/V "
            f"contract of transformers >= {'.'.join(map(str, CONTINUOUS_BATCHING_SINCE))}")
    if not _taken_for_flash_attention(PAGED_NAME):
        raise UnsupportedError(
            f"continuous batching: transformers {transformers_version()} accepts only 'sdpa', "
            "'paged|eager' and FlashAttention names there, and does not take "
            f"{PAGED_NAME!r} for one; flashband cannot be plugged into it in this version")
    config = model.config
    if not hasattr(config, "_attn_implementation"):
        raise UnsupportedError(f"continuous batching: {type(config).__name__} has no "
                               "_attn_implementation (another transformers than 5.x)")
    # Not set_attn_implementation: it would try to load "flashband_paged" from the Hub.
    config._attn_implementation = PAGED_NAME
    return PAGED_NAME
