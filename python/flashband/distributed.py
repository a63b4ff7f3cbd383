"""Context-parallel paged decode: a KV cache sharded across the ranks of a torch.distributed
process group (NCCL on GPUs, gloo on CPUs; the same code), as serving engines shard a long
context's cache. Each rank runs flashband's paged decode on its own shard with the base-2
LSE, the ranks all-gather their (out, lse) states, and every rank merges them with
flashband.merge_states, so every rank ends with the whole attention result.

How a shard is described. For each request b of the batch, a rank holds one contiguous
token range of the request's keys, positions [kv_offsets[b], kv_offsets[b] + n_b) of the
request's seq_lens[b] keys, in pages of its own page pool (indptr, indices, last_page_len as
for BatchDecodeWithPagedKVCacheWrapper, so n_b is what those say). Ranges may have any
size, 0 included (a rank with no keys of a request), and need not be in rank order; the
ranges of all ranks must partition [0, seq_lens[b]), which the caller's cache layout
guarantees and this module cannot see. The query is the request's last token, position
seq_lens[b] - 1.

Why offsets. The kernels place the query just after the last key they are given, and a
sliding window of window_left = W keeps the keys at positions >= query - W. A rank whose
range ends `after = seq_lens[b] - kv_offsets[b] - n_b` keys before the query must keep its
keys at local positions >= n_b - 1 - (W - after): a window of W - after, which differs from
request to request, while a plan has one window. So the plan sorts each request on each
rank into one of three cases, keeping the result exact across shard boundaries:
- the range lies wholly inside the window (or there is none): its pages, no window;
- it lies wholly before the window: no pages, so the rank contributes the empty state
  (out 0, lse -inf, SPEC.md), never a wrong one;
- it straddles the window's start (at most one rank per request, as ranges are
  contiguous): the pages wholly before the window are dropped and the rest is decoded
  with the local window W - after, one sub-batch per distinct local window.
A plan without a window, or whose windows hide nothing on this rank, is one batch, and
run() decodes it straight into its state buffers; straddling requests cost one gather of
their q rows and one scatter of their states per sub-batch.

Exchange: one all-gather of the outputs (the q dtype) and one of the LSEs (float32), then
the merge. Every buffer run() touches is made by plan(), so run() allocates nothing and
can be captured in a CUDA graph where the process group's backend allows it (NCCL does).
A graph replays the plan it was captured after: plan() makes new sub-batches and buffers
(their number depends on the windows), so capture again after each plan, and drop graphs
of earlier plans, whose buffers are freed with them.
Chunked prefill is not here yet.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _args
from .capability import batch_workspace_bytes
from .cascade import merge_states
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .errors import InvalidArgumentError

__all__ = ["ShardDecode", "ContextParallelDecodeWrapper"]


def _host_ints(x: Any, name: str, length: int) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, possibly on a GPU: plan reads it on the host
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.ndim != 1 or len(a) != length or (a.size and a.dtype.kind not in "iu"):
        raise InvalidArgumentError(
            f"{name}: must be a 1-D integer array of {length} entries, got shape {a.shape} "
            f"and dtype {a.dtype}")
    return a.astype(np.int64)


class _SubBatch:
    """Requests of one local window: their rows of q and their pages, planned as one batch."""

    def __init__(self, rows: List[int], window: int, pages: List[np.ndarray],
                 last_page_len: List[int]) -> None:
        self.rows, self.window, self.pages, self.last_page_len = rows, window, pages, last_page_len


class ShardDecode:
    """One rank's part: batch decode over this rank's shard, with windows applied by each
    request's global key offset (see the module's docstring). run() returns this rank's
    states (out, lse), lse in base 2, empty states where the shard holds no visible key.
    Used by ContextParallelDecodeWrapper; usable alone where ranks are simulated."""

    def __init__(self, device: Any = "cpu", kv_layout: str = "NHD", backend: str = "auto") -> None:
        import torch

        self._torch = torch
        self._device = torch.device(device)
        self._kv_layout, self._backend = kv_layout, backend
        self._subs: List[Tuple[_SubBatch, BatchDecodeWithPagedKVCacheWrapper, Any]] = []
        self._out = self._lse = None

    @property
    def batch_size(self) -> int:
        return 0 if self._out is None else int(self._out.shape[0])

    def plan(self, indptr: Any, indices: Any, last_page_len: Any, kv_offsets: Any,
             seq_lens: Any, num_qo_heads: int, num_kv_heads: int, head_dim: int,
             page_size: int, *, window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, q_data_type: Any = "float16") -> None:
        """indptr, indices, last_page_len: this rank's pages of each request, as for
        BatchDecodeWithPagedKVCacheWrapper.plan; kv_offsets [batch]: the global position of
        each request's first key on this rank; seq_lens [batch]: each request's total
        number of keys over all ranks (the query sits at seq_lens - 1)."""
        torch = self._torch
        batch = max(len(indptr) - 1, 0)
        host_indptr = _host_ints(indptr, "indptr", batch + 1)
        host_indices = _host_ints(indices, "indices", len(indices))
        last = _host_ints(last_page_len, "last_page_len", batch)
        offsets = _host_ints(kv_offsets, "kv_offsets", batch)
        totals = _host_ints(seq_lens, "seq_lens", batch)
        page_size = _args.integer(page_size, "page_size")
        window = _args.integer(window_left, "window_left", lo=-1)
        subs: Dict[int, _SubBatch] = {}
        for b in range(batch):
            pages = host_indices[host_indptr[b]:host_indptr[b + 1]]
            n = 0 if len(pages) == 0 else (len(pages) - 1) * page_size + int(last[b])
            if offsets[b] < 0 or offsets[b] + n > totals[b]:
                raise InvalidArgumentError(
                    f"kv_offsets: request {b} holds keys [{offsets[b]}, {offsets[b] + n}) on this "
                    f"rank, outside its seq_lens [0, {totals[b]})")
            after = int(totals[b] - offsets[b] - n)  # keys between this range and the query
            local = n - 1 if window < 0 else window - after
            if n == 0 or local < 0:
                local, pages = -1, pages[:0]  # no key of this rank is visible: empty state
            elif local >= n - 1:
                local = -1  # the whole range is inside the window (or there is none)
            else:
                pages = pages[(n - 1 - local) // page_size:]  # drop pages wholly before it
            sub = subs.setdefault(local, _SubBatch([], local, [], []))
            sub.rows.append(b)
            sub.pages.append(pages)
            sub.last_page_len.append(int(last[b]) if len(pages) else 0)
        dtype = q_data_type if isinstance(q_data_type, torch.dtype) else getattr(torch, str(q_data_type))
        planned = []
        for sub in subs.values():
            n_rows = len(sub.rows)
            wrapper = BatchDecodeWithPagedKVCacheWrapper(
                torch.empty(batch_workspace_bytes(n_rows, n_rows, num_qo_heads, head_dim,
                                                  self._device.type),
                            dtype=torch.uint8, device=self._device),
                self._kv_layout, backend=self._backend)
            sub_indptr = np.concatenate([[0], np.cumsum([len(p) for p in sub.pages])])
            sub_indices = np.concatenate(sub.pages) if sub.pages else np.zeros(0)
            as_index = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int32), device=self._device)
            with _args.renamed({"last_page_len": "last_page_len (of the pages kept)"}):
                wrapper.plan(as_index(sub_indptr), as_index(sub_indices),
                             as_index(sub.last_page_len), num_qo_heads, num_kv_heads, head_dim,
                             page_size, window_left=sub.window, logits_soft_cap=logits_soft_cap,
                             sm_scale=sm_scale, q_data_type=dtype, return_lse=True)
            # A sub-batch of all rows in order decodes straight into the state buffers.
            whole = sub.rows == list(range(batch))
            rows = torch.tensor(sub.rows, dtype=torch.int64, device=self._device)
            bufs = None if whole else (
                rows, torch.empty((n_rows, num_qo_heads, head_dim), dtype=dtype, device=self._device),
                torch.empty((n_rows, num_qo_heads, head_dim), dtype=dtype, device=self._device),
                torch.empty((n_rows, num_qo_heads), dtype=torch.float32, device=self._device))
            planned.append((sub, wrapper, bufs))
        self._subs = planned
        self._out = torch.empty((batch, num_qo_heads, head_dim), dtype=dtype, device=self._device)
        self._lse = torch.empty((batch, num_qo_heads), dtype=torch.float32, device=self._device)

    def run(self, q: Any, paged_kv_cache: Any) -> Tuple[Any, Any]:
        """q [batch, Hq, D] (every rank's the same); paged_kv_cache: this rank's pages. Returns
        this rank's (out [batch, Hq, D], lse [batch, Hq]), buffers of the plan that the next
        run overwrites."""
        if self._out is None:
            raise InvalidArgumentError("run: plan() has not been called")
        if len(q.shape) != 3 or int(q.shape[0]) != self.batch_size:
            raise InvalidArgumentError(
                f"q: has shape {tuple(q.shape)}, the plan's is [{self.batch_size}, Hq, D]")
        for _sub, wrapper, bufs in self._subs:
            if bufs is None:
                wrapper.run(q, paged_kv_cache, out=self._out, lse=self._lse, return_lse=True)
                continue
            rows, q_rows, out_rows, lse_rows = bufs
            self._torch.index_select(q, 0, rows, out=q_rows)
            wrapper.run(q_rows, paged_kv_cache, out=out_rows, lse=lse_rows, return_lse=True)
            self._out.index_copy_(0, rows, out_rows)
            self._lse.index_copy_(0, rows, lse_rows)
        return self._out, self._lse


class ContextParallelDecodeWrapper:
    """Decode over a KV cache sharded across the ranks of `group` (torch.distributed's;
    None: the default group). Every rank calls plan() with its own shard's pages and
    offsets (ShardDecode.plan's arguments) and run() with the same q; each gets the whole
    result. device: where this rank's cache and q live (cpu for gloo, a GPU for NCCL)."""

    def __init__(self, group: Any = None, *, device: Any = "cpu", kv_layout: str = "NHD",
                 backend: str = "auto") -> None:
        import torch.distributed as dist

        self._dist, self._group = dist, group
        self._world = dist.get_world_size(group)
        self._shard = ShardDecode(device, kv_layout, backend)
        self._gathered: Optional[Tuple[Any, Any]] = None

    def plan(self, *args: Any, **kwargs: Any) -> None:
        """ShardDecode.plan's arguments, for this rank's shard."""
        self._shard.plan(*args, **kwargs)
        out, lse = self._shard._out, self._shard._lse
        torch = self._shard._torch
        # Concatenated along rows, the form all_gather_into_tensor takes on every backend.
        self._gathered = tuple(torch.empty((self._world * x.shape[0],) + tuple(x.shape[1:]),
                                           dtype=x.dtype, device=x.device) for x in (out, lse))
        self._merged = (torch.empty_like(out), torch.empty_like(lse))

    def run(self, q: Any, paged_kv_cache: Any, *, return_lse: bool = False) -> Any:
        """q [batch, Hq, D] -> out [batch, Hq, D] over every rank's keys, or (out, lse [batch,
        Hq], base 2) with return_lse; the plan's buffers, overwritten by the next run."""
        if self._gathered is None:
            raise InvalidArgumentError("run: plan() has not been called")
        out, lse = self._shard.run(q, paged_kv_cache)
        all_out, all_lse = self._gathered
        self._dist.all_gather_into_tensor(all_out, out, group=self._group)
        self._dist.all_gather_into_tensor(all_lse, lse, group=self._group)
        rows = self._shard.batch_size
        by_rank = lambda x: x.view((self._world, rows) + tuple(x.shape[1:])).transpose(0, 1)
        merged = merge_states(by_rank(all_out), by_rank(all_lse),
                              v_out=self._merged[0], s_out=self._merged[1])
        return merged if return_lse else merged[0]
