"""Inputs for the tests: random normal tensors (scaled so that softmax is neither flat nor
one-hot), ragged batches and their paged copies."""

import numpy as np


def rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def indptr(lengths):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


class Ragged:
    """A batch: q [sum qo, Hq, D], k and v [sum kv, Hk, D] (NHD, float32) and CSR indptrs."""

    def __init__(self, rng, qo_lens, kv_lens, hq, hk, d, q_scale=1.0):
        self.qo_lens, self.kv_lens = list(qo_lens), list(kv_lens)
        self.hq, self.hk, self.d = hq, hk, d
        self.q = rand(rng, sum(qo_lens), hq, d, scale=q_scale)
        self.k = rand(rng, sum(kv_lens), hk, d)
        self.v = rand(rng, sum(kv_lens), hk, d)
        self.qo_indptr = indptr(qo_lens)
        self.kv_indptr = indptr(kv_lens)

    @property
    def batch(self):
        return len(self.qo_lens)

    @property
    def has_empty_rows_causal(self):
        return any(q > 0 and (kv == 0 or q > kv) for q, kv in zip(self.qo_lens, self.kv_lens))

    @property
    def has_empty_rows(self):
        return any(q > 0 and kv == 0 for q, kv in zip(self.qo_lens, self.kv_lens))

    def reference(self, reference_fn, q64, k64, v64, masks=None, **kw):
        """Per-request reference over float64 NHD arrays; concatenated (o, lse). masks: one
        unpacked bool [qo_len, kv_len] custom mask per request, or None."""
        outs, lses = [], []
        for b in range(self.batch):
            qs = slice(self.qo_indptr[b], self.qo_indptr[b + 1])
            ks = slice(self.kv_indptr[b], self.kv_indptr[b + 1])
            if masks is not None:
                kw["mask"] = masks[b]
            o, lse = reference_fn(q64[qs], k64[ks], v64[ks], **kw)
            outs.append(o)
            lses.append(lse)
        return np.concatenate(outs), np.concatenate(lses)


# Unused slots of the last page hold a large finite value, so a kernel that reads past
# last_page_len gets a visibly wrong answer (NaN would also poison 0 * v in a correct tile).
GARBAGE = 50.0


class Paged:
    """The KV of a Ragged batch spread over pages in a shuffled pool with spare pages.
    k_pages/v_pages are [num_pages, page_size, Hk, D] (NHD) float32."""

    def __init__(self, rng, batch: Ragged, page_size, spare_pages=3):
        self.page_size = page_size
        n_pages = [(kv + page_size - 1) // page_size for kv in batch.kv_lens]
        self.num_pages = sum(n_pages) + spare_pages
        pool = rng.permutation(self.num_pages).astype(np.int32)
        shape = (self.num_pages, page_size, batch.hk, batch.d)
        self.k_pages = np.full(shape, GARBAGE, dtype=np.float32)
        self.v_pages = np.full(shape, GARBAGE, dtype=np.float32)
        self.indptr = indptr(n_pages)
        self.indices = pool[: sum(n_pages)].copy()
        self.last_page_len = np.array(
            [kv - (n - 1) * page_size if n else 0 for kv, n in zip(batch.kv_lens, n_pages)],
            dtype=np.int32)
        for b, kv in enumerate(batch.kv_lens):
            start = batch.kv_indptr[b]
            for t in range(kv):
                page = self.indices[self.indptr[b] + t // page_size]
                self.k_pages[page, t % page_size] = batch.k[start + t]
                self.v_pages[page, t % page_size] = batch.v[start + t]

    @staticmethod
    def layout(pages, kv_layout):
        """NHD [P, page, Hk, D] -> HND [P, Hk, page, D] when asked."""
        return pages if kv_layout == "NHD" else np.ascontiguousarray(pages.transpose(0, 2, 1, 3))


def kv_layout(x, layout):
    """NHD [tokens, Hk, D] -> HND [Hk, tokens, D] when asked (contiguous)."""
    return x if layout == "NHD" else np.ascontiguousarray(x.transpose(1, 0, 2))
