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

Continuous batching (``generate_batch``): see ``paged_support()``; transformers 5 accepts
only "sdpa", "paged|eager" and FlashAttention-classified names there.
"""

from __future__ import annotations

import functools
from typing import Tuple

from ._attention import flashband_attention
from ._mask import BandMask, band_mask

__all__ = ["register", "NAME", "ALIAS", "BandMask", "paged_support", "transformers_version"]

NAME = "flashband"
ALIAS = "fband"  # no "flash" in it: loadable where transformers reads "flash" as FlashAttention


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
    for name in names:
        AttentionInterface.register(name, function)
        # Without a mask function of its own transformers builds no mask at all for a
        # registered name (padding would be lost), so ours always answers.
        AttentionMaskInterface.register(name, band_mask)
    return names[-1]


def paged_support() -> Tuple[bool, str]:
    """(supported, why) for transformers' continuous batching (generate_batch, its paged
    cache) with flashband, in the installed transformers."""
    version = transformers_version()
    return False, (
        f"transformers {version}: continuous batching accepts only attn_implementation 'sdpa', "
        "'paged|eager' or a name containing 'flash' (taken for a FlashAttention kernel, loaded "
        "from the Hub by set_attn_implementation, so a registered function under such a name "
        "cannot be loaded); its 'sdpa' path hands attention a prepared 4-D block mask over "
        "gathered keys, which flashband refuses. A 'flashband_paged' implementation needs a "
        "hook for registered paged implementations.")
