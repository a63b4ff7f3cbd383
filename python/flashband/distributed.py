"""Context-parallel paged decode and chunked prefill: a KV cache sharded across the ranks
of a torch.distributed process group (NCCL on GPUs, gloo on CPUs; the same code), as
serving engines shard a long context's cache. Each rank runs flashband's paged kernels
(the decode wrapper for decode, the paged prefill wrapper for chunks) on its own shard
with the base-2 LSE, the ranks all-gather their (out, lse) states, and every rank merges
them with flashband.merge_states, so every rank ends with the whole attention result.

How a shard is described. For each request b of the batch, a rank holds one contiguous
token range of the request's keys, positions [kv_offsets[b], kv_offsets[b] + n_b) of the
request's seq_lens[b] keys, in pages of its own page pool (indptr, indices, last_page_len as
for the paged wrappers, so n_b is what those say). Ranges may have any size, 0 included
(a rank with no keys of a request), and need not be in rank order; the ranges of all ranks
must partition [0, seq_lens[b]), which the caller's cache layout guarantees and this
module cannot see. The queries are the request's last tokens (decode: one, at position
seq_lens[b] - 1; chunked prefill: the chunk's m_b rows, whose own keys are in the cache),
causal, as the kernels align them (bottom-right).

Why offsets. The kernels place a batch entry's last query row on its last key. A rank
whose range ends `after = seq_lens[b] - kv_offsets[b] - n_b` keys before the request's last
row would put the rows `after` keys too early: causal and window masks would cut in the
wrong places, by an amount that differs from request to request, while a plan has one
window. So the plan splits each request's rows on each rank into pieces that the kernels
align exactly (_pieces): rows whose keys reach into the range form a causal piece with the
global window unchanged; rows past the range's end see it without the causal bound, and
of them only those whose window still reaches the range form a non-causal piece with the
window shifted by their distance to it (decode: the one row, window W - after); the other
rows see no key here and get the empty state (out 0, lse -inf, SPEC.md), never a wrong
one. Pages wholly before a piece's window are dropped. Pieces of one (causal, window) form
one batch; a plan with one such batch (no window, or windows that hide nothing on this
rank) runs straight into the rank's state buffers, others cost a gather of their q rows and
a scatter of their states. Giving each rank its window per request, rather than asking the
caller for a shard layout that makes windows uniform, keeps any split exact.

Exchange: one all-gather of the outputs (the q dtype) and one of the LSEs (float32), then
the merge. Every buffer run() touches is made by plan(), so run() allocates nothing and
can be captured in a CUDA graph where the process group's backend allows it (NCCL does).
A graph replays the plan it was captured after: plan() makes new batches and buffers
(their number depends on the windows), so capture again after each plan, and drop graphs
of earlier plans, whose buffers are freed with them.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _args
from ._paged import paged_kv_lens
from .capability import batch_workspace_bytes
from .cascade import merge_states
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .errors import InvalidArgumentError
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["ShardDecode", "ShardPrefill", "ContextParallelDecodeWrapper",
           "ContextParallelPrefillWrapper"]


def _host_ints(x: Any, name: str, length: int) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor, possibly on a GPU: plan reads it on the host
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.ndim != 1 or len(a) != length or (a.size and a.dtype.kind not in "iu"):
        raise InvalidArgumentError(
            f"{name}: must be a 1-D integer array of {length} entries, got shape {a.shape} "
            f"and dtype {a.dtype}")
    return a.astype(np.int64)


def _pieces(m: int, n: int, after: int, window: int) -> List[Tuple[int, int, bool, int]]:
    """How one request's m query rows (its last m tokens) see one rank's range of n of its
    keys, a range that ends `after` keys before the last row's own key: [(first row, rows,
    causal, local window)], each exact under the kernels' bottom-right alignment (a piece
    of k rows puts its row r at local key position n - k + r). Rows [0, c) reach into the
    range: a causal piece of c rows sits where the kernel puts it, so the window W applies
    unchanged. Row c + r sits at n + d + r, past the range's end; of those rows only the
    first k see a key under the window, and a non-causal piece of k rows with window
    W - d - k keeps exactly their keys. Rows in no piece see no key. A
    window that leaves the last row all n keys hides nothing: the piece then has none."""
    if n == 0:
        return []
    c = min(max(m - after, 0), m)
    pieces = []
    if c:
        pieces.append((0, c, True, -1 if window < 0 or window >= n - 1 else window))
    d = max(after - m, 0)
    k = m - c if window < 0 else min(max(window - d, 0), m - c)
    if k:
        local = -1 if window < 0 or window - d - k >= n - 1 else window - d - k
        pieces.append((c, k, False, local))
    return pieces


class _Group:
    """Pieces of one (causal, window), planned as one batch: their rows of q, their pages."""

    def __init__(self, causal: bool, window: int) -> None:
        self.causal, self.window = causal, window
        self.rows: List[int] = []
        self.row_counts: List[int] = []
        self.pages: List[np.ndarray] = []
        self.last_page_len: List[int] = []

    def add(self, first_row: int, rows: int, pages: np.ndarray, last: int) -> None:
        self.rows.extend(range(first_row, first_row + rows))
        self.row_counts.append(rows)
        self.pages.append(pages)
        self.last_page_len.append(last if len(pages) else 0)


class _ShardAttention:
    """One rank's part (see ShardDecode and ShardPrefill): plans every (causal, window)
    group of pieces, and runs them into one state buffer of all query rows."""

    def __init__(self, device: Any, kv_layout: str, backend: str) -> None:
        import torch

        self._torch = torch
        self._device = torch.device(device)
        self._kv_layout, self._backend = kv_layout, backend
        self._groups: List[Tuple[Any, Any]] = []
        self._out = self._lse = None

    @property
    def num_rows(self) -> int:
        return 0 if self._out is None else int(self._out.shape[0])

    def _plan(self, qo_indptr: np.ndarray, indptr: Any, indices: Any, last_page_len: Any,
              kv_offsets: Any, seq_lens: Any, num_qo_heads: int, num_kv_heads: int,
              head_dim: int, page_size: int, window_left: int, logits_soft_cap: Optional[float],
              sm_scale: Optional[float], q_data_type: Any) -> None:
        torch = self._torch
        batch = len(qo_indptr) - 1
        host_indptr = _host_ints(indptr, "indptr", batch + 1)
        host_indices = _host_ints(indices, "indices", len(indices))
        last = _host_ints(last_page_len, "last_page_len", batch)
        offsets = _host_ints(kv_offsets, "kv_offsets", batch)
        totals = _host_ints(seq_lens, "seq_lens", batch)
        page_size = _args.integer(page_size, "page_size")
        window = _args.integer(window_left, "window_left", lo=-1)
        decode = bool(np.all(np.diff(qo_indptr) == 1))
        groups: Dict[Tuple[bool, int], _Group] = {}
        kv_lens = paged_kv_lens(host_indptr, last, page_size)
        for b in range(batch):
            pages = host_indices[host_indptr[b]:host_indptr[b + 1]]
            n = int(kv_lens[b])
            m = int(qo_indptr[b + 1] - qo_indptr[b])
            if offsets[b] < 0 or offsets[b] + n > totals[b]:
                raise InvalidArgumentError(
                    f"kv_offsets: request {b} holds keys [{offsets[b]}, {offsets[b] + n}) on this "
                    f"rank, outside its seq_lens [0, {totals[b]})")
            after = int(totals[b] - offsets[b] - n)  # keys between this range and the last row
            covered = 0
            for first, rows, causal, local in _pieces(m, n, after, window):
                # Pages wholly before the first row's window are dropped (the rest keeps its
                # alignment: positions and the row's place shift alike).
                drop = 0 if local < 0 else max(n - rows - local, 0) // page_size
                key = (causal and not decode, local)  # one row at the end: causal is moot
                groups.setdefault(key, _Group(*key)).add(
                    int(qo_indptr[b]) + first, rows, pages[drop:], int(last[b]))
                covered += rows
            if covered < m:  # rows that see no key here: no pages, the empty state
                groups.setdefault((False, -1), _Group(False, -1)).add(
                    int(qo_indptr[b]) + covered, m - covered, pages[:0], 0)
        dtype = q_data_type if isinstance(q_data_type, torch.dtype) else getattr(torch, str(q_data_type))
        total_rows = int(qo_indptr[-1])
        as_index = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int32), device=self._device)
        planned = []
        for group in groups.values():
            n_rows, n_pieces = len(group.rows), len(group.pages)
            workspace = torch.empty(batch_workspace_bytes(n_pieces, n_rows, num_qo_heads, head_dim,
                                                          self._device.type),
                                    dtype=torch.uint8, device=self._device)
            kv_indptr = as_index(np.concatenate([[0], np.cumsum([len(p) for p in group.pages])]))
            kv_indices = as_index(np.concatenate(group.pages) if group.pages else [])
            kv_last = as_index(group.last_page_len)
            settings = dict(window_left=group.window, logits_soft_cap=logits_soft_cap,
                            sm_scale=sm_scale, q_data_type=dtype, return_lse=True)
            if decode:
                wrapper = BatchDecodeWithPagedKVCacheWrapper(workspace, self._kv_layout,
                                                             backend=self._backend)
                wrapper.plan(kv_indptr, kv_indices, kv_last, num_qo_heads, num_kv_heads,
                             head_dim, page_size, **settings)
            else:
                wrapper = BatchPrefillWithPagedKVCacheWrapper(workspace, self._kv_layout,
                                                              backend=self._backend)
                wrapper.plan(as_index(np.concatenate([[0], np.cumsum(group.row_counts)])),
                             kv_indptr, kv_indices, kv_last, num_qo_heads, num_kv_heads,
                             head_dim, page_size, causal=group.causal, **settings)
            # A group of all rows in order runs straight into the state buffers.
            bufs = None if group.rows == list(range(total_rows)) else (
                torch.tensor(group.rows, dtype=torch.int64, device=self._device),
                torch.empty((n_rows, num_qo_heads, head_dim), dtype=dtype, device=self._device),
                torch.empty((n_rows, num_qo_heads, head_dim), dtype=dtype, device=self._device),
                torch.empty((n_rows, num_qo_heads), dtype=torch.float32, device=self._device))
            planned.append((wrapper, bufs))
        self._groups = planned
        self._out = torch.empty((total_rows, num_qo_heads, head_dim), dtype=dtype, device=self._device)
        self._lse = torch.empty((total_rows, num_qo_heads), dtype=torch.float32, device=self._device)

    def run(self, q: Any, paged_kv_cache: Any) -> Tuple[Any, Any]:
        """q [rows, Hq, D] (every rank's the same); paged_kv_cache: this rank's pages, a
        (k, v) tuple or stacked, as for the paged wrappers. Returns this rank's (out [rows,
        Hq, D], lse [rows, Hq]), buffers of the plan that the next run overwrites."""
        if self._out is None:
            raise InvalidArgumentError("run: plan() has not been called")
        if len(q.shape) != 3 or int(q.shape[0]) != self.num_rows:
            raise InvalidArgumentError(
                f"q: has shape {tuple(q.shape)}, the plan's is [{self.num_rows}, Hq, D]")
        for wrapper, bufs in self._groups:
            if bufs is None:
                wrapper.run(q, paged_kv_cache, out=self._out, lse=self._lse, return_lse=True)
                continue
            rows, q_rows, out_rows, lse_rows = bufs
            self._torch.index_select(q, 0, rows, out=q_rows)
            wrapper.run(q_rows, paged_kv_cache, out=out_rows, lse=lse_rows, return_lse=True)
            self._out.index_copy_(0, rows, out_rows)
            self._lse.index_copy_(0, rows, lse_rows)
        return self._out, self._lse


class ShardDecode(_ShardAttention):
    """One rank's part of decode: batch decode over this rank's shard, windows applied by
    each request's global key offset (see the module's docstring). run() returns this
    rank's states (out, lse), lse in base 2, empty states where the shard holds no visible
    key. Used by ContextParallelDecodeWrapper; usable alone where ranks are simulated."""

    def __init__(self, device: Any = "cpu", kv_layout: str = "NHD", backend: str = "auto") -> None:
        super().__init__(device, kv_layout, backend)

    def plan(self, indptr: Any, indices: Any, last_page_len: Any, kv_offsets: Any,
             seq_lens: Any, num_qo_heads: int, num_kv_heads: int, head_dim: int,
             page_size: int, *, window_left: int = -1, logits_soft_cap: Optional[float] = None,
             sm_scale: Optional[float] = None, q_data_type: Any = "float16") -> None:
        """indptr, indices, last_page_len: this rank's pages of each request, as for
        BatchDecodeWithPagedKVCacheWrapper.plan; kv_offsets [batch]: the global position of
        each request's first key on this rank; seq_lens [batch]: each request's total
        number of keys over all ranks (the query sits at seq_lens - 1)."""
        qo_indptr = np.arange(max(len(indptr), 1), dtype=np.int64)
        self._plan(qo_indptr, indptr, indices, last_page_len, kv_offsets, seq_lens, num_qo_heads,
                   num_kv_heads, head_dim, page_size, window_left, logits_soft_cap, sm_scale,
                   q_data_type)


class ShardPrefill(_ShardAttention):
    """One rank's part of chunked prefill: each request's query chunk is its last
    qo_len tokens (keys already in the sharded cache), causal, with the window; as
    ShardDecode otherwise."""

    def __init__(self, device: Any = "cpu", kv_layout: str = "NHD", backend: str = "auto") -> None:
        super().__init__(device, kv_layout, backend)

    def plan(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
             paged_kv_last_page_len: Any, kv_offsets: Any, seq_lens: Any, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int, *, window_left: int = -1,
             logits_soft_cap: Optional[float] = None, sm_scale: Optional[float] = None,
             q_data_type: Any = "float16") -> None:
        """qo_indptr [batch + 1]: each request's rows of q; the rest as ShardDecode.plan,
        with FlashInfer's paged prefill names for the pages."""
        batch = max(len(qo_indptr) - 1, 0)
        host_qo = _host_ints(qo_indptr, "qo_indptr", batch + 1)
        if batch and (host_qo[0] != 0 or np.any(np.diff(host_qo) < 0)):
            raise InvalidArgumentError(f"qo_indptr: must start at 0 and not decrease, got {host_qo.tolist()}")
        totals = _host_ints(seq_lens, "seq_lens", batch)
        if np.any(np.diff(host_qo) > totals):
            raise InvalidArgumentError(
                "qo_indptr: a request has more query rows than seq_lens keys (its chunk's own "
                "keys are in the cache)")
        with _args.renamed({"indptr": "paged_kv_indptr", "indices": "paged_kv_indices",
                            "last_page_len": "paged_kv_last_page_len"}):
            self._plan(host_qo, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                       kv_offsets, totals, num_qo_heads, num_kv_heads, head_dim, page_size,
                       window_left, logits_soft_cap, sm_scale, q_data_type)


class _ContextParallel:
    """A rank's shard plus the exchange: all-gather of every rank's states, then the merge."""

    def __init__(self, shard: _ShardAttention, group: Any) -> None:
        import torch.distributed as dist

        self._dist, self._group = dist, group
        self._world = dist.get_world_size(group)
        self._shard = shard
        self._gathered: Optional[Tuple[Any, ...]] = None

    def plan(self, *args: Any, **kwargs: Any) -> None:
        self._shard.plan(*args, **kwargs)
        out, lse = self._shard._out, self._shard._lse
        torch = self._shard._torch
        # Concatenated along rows, the form all_gather_into_tensor takes on every backend.
        self._gathered = tuple(torch.empty((self._world * x.shape[0],) + tuple(x.shape[1:]),
                                           dtype=x.dtype, device=x.device) for x in (out, lse))
        self._merged = (torch.empty_like(out), torch.empty_like(lse))

    def run(self, q: Any, paged_kv_cache: Any, *, return_lse: bool = False) -> Any:
        """q [rows, Hq, D] (the same on every rank) -> out [rows, Hq, D] over every rank's
        keys, or (out, lse [rows, Hq], base 2) with return_lse; the plan's buffers,
        overwritten by the next run."""
        if self._gathered is None:
            raise InvalidArgumentError("run: plan() has not been called")
        out, lse = self._shard.run(q, paged_kv_cache)
        all_out, all_lse = self._gathered
        self._dist.all_gather_into_tensor(all_out, out, group=self._group)
        self._dist.all_gather_into_tensor(all_lse, lse, group=self._group)
        rows = self._shard.num_rows
        by_rank = lambda x: x.view((self._world, rows) + tuple(x.shape[1:])).transpose(0, 1)
        merged = merge_states(by_rank(all_out), by_rank(all_lse),
                              v_out=self._merged[0], s_out=self._merged[1])
        return merged if return_lse else merged[0]


class ContextParallelDecodeWrapper(_ContextParallel):
    """Decode over a KV cache sharded across the ranks of `group` (torch.distributed's;
    None: the default group). Every rank calls plan() with its own shard's pages and
    offsets (ShardDecode.plan's arguments) and run() with the same q; each gets the whole
    result. device: where this rank's cache and q live (cpu for gloo, a GPU for NCCL)."""

    def __init__(self, group: Any = None, *, device: Any = "cpu", kv_layout: str = "NHD",
                 backend: str = "auto") -> None:
        super().__init__(ShardDecode(device, kv_layout, backend), group)


class ContextParallelPrefillWrapper(_ContextParallel):
    """Chunked prefill over a sharded KV cache: as ContextParallelDecodeWrapper, with
    ShardPrefill.plan's arguments."""

    def __init__(self, group: Any = None, *, device: Any = "cpu", kv_layout: str = "NHD",
                 backend: str = "auto") -> None:
        super().__init__(ShardPrefill(device, kv_layout, backend), group)
