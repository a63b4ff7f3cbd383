"""plan() keeps the previous plan's native Options where every setting is the same value of
the same type (issue 61: plan()'s host cost). What it keeps must never skip a check or
serve another plan's settings: a changed value computes the new settings, and a value of
another type (causal=1.0 after causal=True) is judged, and refused, anew."""

import math

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged
from _checks import assert_out
from _reference import attention_np

D = 64


def _problem():
    rng = np.random.default_rng(23)
    batch = Ragged(rng, [3, 5], [20, 40], 4, 2, D)
    return batch, Paged(rng, batch, 16)


def test_each_plan_computes_its_own_settings():
    batch, paged = _problem()
    cache = (paged.k_pages, paged.v_pages)
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    for settings in (dict(causal=True, window_left=4), dict(causal=True, window_left=4),
                     dict(causal=False, window_left=4), dict(causal=False, sm_scale=0.3),
                     dict(causal=False, sm_scale=np.float32(0.3)), dict(causal=True, logits_soft_cap=2.0)):
        w.plan(batch.qo_indptr, paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16,
               q_data_type="float32", **settings)
        ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v,
                                 **{k: float(v) if k == "sm_scale" else v for k, v in settings.items()})
        assert_out(w.run(batch.q, cache).astype(np.float64), ref, "float32")


@pytest.mark.parametrize("good,bad,name", [
    (dict(causal=True), dict(causal=1.0), "causal"),
    (dict(sm_scale=0.5), dict(sm_scale=math.nan), "sm_scale"),
    (dict(window_left=3), dict(window_left=3.0), "window_left"),
    (dict(disable_split_kv=False), dict(disable_split_kv=None), "disable_split_kv"),
])
def test_a_kept_options_never_skips_a_check(good, bad, name):
    batch, paged = _problem()
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
    args = (paged.indptr, paged.indices, paged.last_page_len, 4, 2, D, 16)
    if "causal" in good:  # decode's plan has no causal: the paged prefill's
        w = flashband.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8), backend="cpu")
        args = (batch.qo_indptr,) + args[:6] + (16,)
    w.plan(*args, q_data_type="float32", **good)
    w.plan(*args, q_data_type="float32", **good)  # the kept Options serves this one
    with pytest.raises(flashband.InvalidArgumentError, match=f"^{name}"):
        w.plan(*args, q_data_type="float32", **bad)
