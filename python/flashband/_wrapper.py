"""What the three batch wrappers share: the workspaces, plan bookkeeping and run().

plan() does all host work and, for GPU backends, copies the plan's arrays into the wrapper's
int workspace (as FlashInfer does) on the current stream; run() only launches, on the
caller's current stream at run() (as FlashInfer's), with scratch in the float workspace,
which wrappers may share. A run on another stream than its plan's must be ordered after the
plan's copies (torch.cuda.graph's capture stream waits on the current one, so FlashInfer's
pattern, plan outside the capture and run inside it, is).
The native library plans for LSE or not (Options.return_lse); when run() asks otherwise
than the plan, the wrapper re-plans once with the saved host arrays.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Optional, Tuple

import numpy as np

from . import _C
from . import _args
from . import _frameworks as fw
from . import _fp8_attention
from ._common import (backend_name, deliver_lse, fp8_scales, lse_form, make_options, outputs, record,
                      refuse_unsupported, transposed_lse)
from .errors import FlashbandError, InvalidArgumentError, UnsupportedError
from .packbits import host_copy


# FlashInfer's int workspace size: a plan's arrays up to it keep one buffer (and so the
# pointers a CUDA graph captured) from the first plan on.
_PLAN_BUFFER_MIN = 8 << 20
_HOST = contextlib.nullcontext()  # a host workspace's device guard (reusable: it holds nothing)


def plan_sizes(qo_indptr: Optional[np.ndarray], head_dim: int,
               page_indptr: Optional[np.ndarray] = None, longest: bool = True) -> Tuple[int, ...]:
    """What batch_plan_bytes needs to know of one plan (qo_indptr None: decode, one query
    per request). Arrays the native plan() will refuse give sizes of 0 here. longest=False:
    the longest request's pages are left 0 (only cuDNN's page table on a GPU needs them)."""
    indptr = page_indptr if qo_indptr is None else qo_indptr
    batch = max(len(indptr) - 1, 0) if indptr is not None else 0
    qo_tokens = batch if qo_indptr is None else max(int(qo_indptr[-1]), 0) if batch else 0
    pages = request_pages = 0
    if page_indptr is not None and batch and len(page_indptr) > batch:
        pages = max(int(page_indptr[batch]), 0)
        if longest:  # (np.diff's own overhead was most of this at serving batch sizes)
            request_pages = max(int((page_indptr[1:batch + 1] - page_indptr[:batch]).max()), 0)
    return (batch, qo_tokens, head_dim, pages, request_pages)


def _has_host_indices(args: tuple) -> bool:
    """Whether a paged plan's native arguments hold host page indices (fast_decode_plan's
    give None)."""
    return all(a is not None for a in args)


def _installed_anyway(e: Exception) -> bool:
    """The cuda_graph guard refuses a plan after installing it (the workspace holds it), so
    the wrapper follows that plan; any other error leaves the previous one."""
    return isinstance(e, UnsupportedError) and str(e).startswith("cuda_graph:")


def _settings_key(semantics: dict, head_dim: int) -> tuple:
    """What a plan's settings compute: a soft cap of None is 0 (off), sm_scale None is the
    default 1/sqrt(head_dim), both as the float32 the kernels take."""
    cap = _args.real(semantics.get("logits_soft_cap"), "logits_soft_cap")
    scale = _args.real(semantics.get("sm_scale"), "sm_scale")
    scale = (np.float32(1.0) / np.sqrt(np.float32(head_dim)) if scale is None else np.float32(scale))
    return (_args.flag(semantics.get("causal", False), "causal"),
            _args.window_left(semantics.get("window_left", -1)),
            _args.window_right(semantics.get("window_right", -1)),
            np.float32(0.0 if cap is None else cap), scale,
            _args.flag(semantics.get("disable_split_kv", False), "disable_split_kv"))


class BatchWrapperBase:
    _native_class: Any = None

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, *, backend: str = "auto") -> None:
        make_options(kv_layout=kv_layout, backend=backend)  # raises naming a bad value now
        _args.array(float_workspace_buffer, "float_workspace_buffer", writable=True)
        self._kv_layout = kv_layout
        self._backend = backend_name(backend)  # FlashInfer's fa2 / fa3 as sm80 / sm90
        # FlashInfer's meaning: a run() captured in a CUDA graph stays valid across plan()
        # calls. The native plan keeps that promise or raises (Options.cuda_graph).
        self._use_cuda_graph = bool(use_cuda_graph)
        self._workspace = float_workspace_buffer
        self._host_workspace = fw.device_of(float_workspace_buffer)[0] == "cpu"
        self._int_workspace: Any = None   # given to reset_workspace_buffer: used as it is
        self._plan_buffer: Any = None     # else this wrapper's own, grown as plans need
        self._retired: list = []          # outgrown ones a captured graph may still read
        self._native = self._native_class()
        self._plan_args: Optional[tuple] = None
        self._plan_info: Any = None  # the RunInfo of the last successful native plan
        self._options_key: Any = None    # _options(): the inputs of the Options kept
        self._options_kept: Any = None
        self._plan_sizes: Tuple[int, ...] = ()
        self._kv_data_type: Optional[str] = None  # the plan's fp8 K/V format, if any
        self._o_data_type: Optional[str] = None   # fp8 attention's output dtype (set iff q is e4m3)
        self._semantics: dict = {}
        self._planned_lse = False
        self._planned_sinks = False  # the plan expects run()'s sinks (Options::sinks)
        self._num_qo_heads = 0
        self._cache_pages = 0  # pages of the paged cache the last run() was given
        self._given_buffers: dict = {}   # FlashInfer's CUDA-graph index buffers, by name
        self._index_buffers: dict = {}   # those plans write: under use_cuda_graph only
        self._index_room: dict = {}      # their lengths
        self._graph_batch: Optional[int] = None  # the batch size they fix under use_cuda_graph
        self._page_index_room = 0        # the page-index buffer's length: the arrays' capacity
        self._page_index_buffer: Any = None  # FlashInfer's, under use_cuda_graph: the runs read it
        self._device_indices: Any = None  # what the runs read page indices from (None: a copy)
        self._mask_bits: Any = None      # the plan's packed custom mask, which its runs read
        self._mask_buffers: dict = {}    # FlashInfer's custom_mask_buf / mask_indptr_buf
        self.last_run_info = None

    def _take_index_buffers(self, given: dict, batch_from: Tuple[Tuple[str, int], ...],
                            page_indices: Optional[str] = None) -> None:
        """FlashInfer's CUDA-graph index buffers (qo_indptr_buf, paged_kv_indices_buffer, ...),
        with FlashInfer's meaning: under use_cuda_graph each plan() writes its arrays into
        them (their first entries) and a plan whose arrays do not fit raises naming the
        buffer; the first of batch_from that is given fixes the batch size (its length less
        the offset); the page-index buffer's length sizes the wrapper's own int workspace
        from the first plan on, so plans up to it keep the arrays' addresses (and a captured
        graph). Without use_cuda_graph they are only kept as attributes, as FlashInfer's
        eager plan() rebinds them without writing: engines hand in buffers they share with
        other wrappers, which an eager plan must not overwrite."""
        given = {name: b for name, b in given.items() if b is not None}
        self._given_buffers = given
        if not self._use_cuda_graph:
            return
        self._index_buffers = given
        self._index_room = {name: fw.index_buffer_length(b, name, self._workspace)
                            for name, b in self._index_buffers.items()}
        batches = {name: self._index_room[name] - offset for name, offset in batch_from
                   if name in self._index_room}
        if any(b < 0 for b in batches.values()) or len(set(batches.values())) > 1:
            raise InvalidArgumentError(
                "index buffers: their lengths give different batch sizes: " +
                ", ".join(f"{name} {b}" for name, b in batches.items()))
        if batches:
            self._graph_batch = next(iter(batches.values()))
        self._page_index_room = self._index_room.get(page_indices, 0) if page_indices else 0
        if (page_indices and page_indices in given and self._backend in ("auto", "sm80")
                and fw.device_of(self._workspace)[0] == "cuda"):
            # FlashInfer's kernels read this buffer at every replay, so an engine may rewrite
            # the page table in place between replays; sm80's do too (PagedIndex::
            # device_indices), which also keeps the page indices out of the int workspace.
            # cudnn and sm90 refuse device indices: their wrappers copy the host ones at plan
            # time, and so do auto's where no backend reading them serves (_do_plan).
            self._page_index_buffer = given[page_indices]

    def _take_mask_buffers(self, custom_mask_buf: Any, mask_indptr_buf: Any) -> None:
        """FlashInfer's CUDA-graph mask buffers, with its meaning: under use_cuda_graph a masked
        plan() copies its packed bits into custom_mask_buf (a 1-D uint8 array, their first
        bytes) and each request's byte offset into mask_indptr_buf (int32, batch_size + 1),
        and the runs read the bits from custom_mask_buf, so a captured graph replays over bits
        rewritten there in place. Without use_cuda_graph they are only kept, as FlashInfer's
        eager plan() rebinds them without writing."""
        given = {name: b for name, b in (("custom_mask_buf", custom_mask_buf),
                                         ("mask_indptr_buf", mask_indptr_buf)) if b is not None}
        self._mask_buffers = given
        if not self._use_cuda_graph:
            return
        if "mask_indptr_buf" in given:
            fw.index_buffer_length(given["mask_indptr_buf"], "mask_indptr_buf", self._workspace)
        if "custom_mask_buf" in given:
            buf = given["custom_mask_buf"]
            _args.array(buf, "custom_mask_buf", 1, "[bytes]", ("uint8",), writable=True)
            if fw.device_of(buf) != fw.device_of(self._workspace):
                raise InvalidArgumentError(f"custom_mask_buf: on {fw.device_of(buf)}, the workspace on "
                                           f"{fw.device_of(self._workspace)}")

    def _mask_target(self, packed: Any, byte_indptr: np.ndarray) -> Any:
        """What the runs of a plan with these packed bits read (None: no mask): under
        use_cuda_graph the first bytes of custom_mask_buf, after checking that the bits and
        offsets fit (nothing is written yet: _store_mask does that once the plan succeeded)."""
        if packed is None or not self._use_cuda_graph:
            return packed
        for name in ("custom_mask_buf", "mask_indptr_buf"):
            if name not in self._mask_buffers:
                raise InvalidArgumentError(f"{name}: must be given to the constructor in use_cuda_graph mode for a "
                                           "plan with a custom mask (FlashInfer's rule: the runs read the mask there)")
        n, buf = int(byte_indptr[-1]), self._mask_buffers["custom_mask_buf"]
        if n > int(buf.shape[0]):
            raise InvalidArgumentError(f"custom_mask_buf: holds {int(buf.shape[0])} bytes, this plan's mask has {n}")
        if len(byte_indptr) > int(self._mask_buffers["mask_indptr_buf"].shape[0]):
            raise InvalidArgumentError(f"mask_indptr_buf: holds {int(self._mask_buffers['mask_indptr_buf'].shape[0])} "
                                       f"entries, this plan's mask_indptr has {len(byte_indptr)}")
        return buf[:n]

    def _store_mask(self, packed: Any, target: Any, byte_indptr: np.ndarray) -> None:
        """Keeps the plan's mask for its runs; under use_cuda_graph writes it into the buffers."""
        if packed is not None and target is not packed:
            fw.copy_into(target, host_copy(packed, "custom_mask"))
            fw.copy_into(self._mask_buffers["mask_indptr_buf"], byte_indptr.astype(np.int32))
        self._mask_bits = target

    def _check_index_buffers(self, arrays: dict, batch: int) -> None:
        if self._graph_batch is not None and batch != self._graph_batch:
            raise InvalidArgumentError(
                f"batch size: {batch}, but with use_cuda_graph the index buffers given to the "
                f"constructor fix it at {self._graph_batch}; use a wrapper per batch size")
        for name, values in arrays.items():
            room = self._index_room.get(name)
            if room is not None and len(values) > room:
                raise InvalidArgumentError(f"{name}: holds {room} entries, this plan's array has {len(values)}")

    def _fill_index_buffers(self, arrays: dict) -> None:
        for name, values in arrays.items():
            if name in self._index_buffers:
                fw.copy_into(self._index_buffers[name], values)

    @property
    def is_cuda_graph_enabled(self) -> bool:
        return self._use_cuda_graph

    def check(self) -> None:
        """Raises (once) the first page index outside the cache that a run read from the
        caller's page-index buffer (use_cuda_graph with paged_kv_indices_buffer: the runs read
        it as it is then, and never dereference an index outside the cache); plan() and run()
        raise it too. Never waits for the GPU: a run still in flight reports later."""
        native_check = getattr(self._native, "check", None)
        if native_check is not None:
            native_check()

    def begin_forward(self, *args: Any, **kwargs: Any) -> None:
        """FlashInfer's older name of plan()."""
        self.plan(*args, **kwargs)

    def run_return_lse(self, *args: Any, **kwargs: Any) -> Any:
        """run(..., return_lse=True), as FlashInfer's."""
        return self.run(*args, return_lse=True, **kwargs)

    def end_forward(self) -> None:
        """FlashInfer's deprecated end of begin_forward(): a plan holds nothing to release."""

    def forward_return_lse(self, *args: Any, **kwargs: Any) -> Any:
        """forward(..., return_lse=True), as FlashInfer's."""
        return self.forward(*args, return_lse=True, **kwargs)

    def _forward_settings(self, settings: dict, **refused: Any) -> None:
        """FlashInfer's deprecated forward() gives the attention's settings with each run,
        and FlashInfer's run() reads them then (SGLang plans without them and passes them
        here). flashband plans them: a forward() whose settings differ from the plan's
        re-plans with them (as a run() asking LSE otherwise does), and one whose settings
        compute the same as the plan's (a soft cap of 0 or None, sm_scale equal to the
        default in float32) keeps the plan, so a forward() under a CUDA-graph capture
        launches the plan as it is."""
        refuse_unsupported(**refused)
        if self._plan_args is None:
            raise InvalidArgumentError("forward: plan() (begin_forward) has not been called")
        wanted = dict(self._semantics, **settings)
        if _settings_key(wanted, self._plan_sizes[2]) == _settings_key(self._semantics, self._plan_sizes[2]):
            return
        previous = self._semantics
        self._semantics = wanted
        try:
            self._plan_now(self._planned_lse)
        except Exception as e:
            if not _installed_anyway(e):
                self._semantics = previous
            raise

    # FlashInfer's wrappers keep the planned settings and the CUDA-graph buffers in
    # attributes that engines read: vLLM asserts _causal, _window_left, _logits_soft_cap
    # and _sm_scale against its layer, SGLang writes page indices into
    # _paged_kv_indices_buf under CUDA graphs. Read-only here: the plan holds them.
    @property
    def _causal(self) -> bool:
        return bool(self._semantics.get("causal", False))

    @property
    def _window_left(self) -> int:
        return int(self._semantics.get("window_left", -1))

    @property
    def _logits_soft_cap(self) -> float:
        cap = self._semantics.get("logits_soft_cap")
        return 0.0 if cap is None else float(cap)

    @property
    def _sm_scale(self) -> Optional[float]:
        return self._semantics.get("sm_scale")

    @property
    def _fixed_batch_size(self) -> int:
        return self._graph_batch or 0

    def _given_buffer(self, stem: str) -> Any:
        if not self._use_cuda_graph:  # FlashInfer's eager plan points them at its own copies
            raise AttributeError(
                f"_{stem}_buf: without use_cuda_graph FlashInfer points it at the last plan's "
                "device arrays, of which flashband keeps no device copy; use the arrays given to plan()")
        return self._given_buffers.get(stem + "_buf", self._given_buffers.get(stem + "_buffer"))

    _qo_indptr_buf = property(lambda self: self._given_buffer("qo_indptr"))
    _kv_indptr_buf = property(lambda self: self._given_buffer("kv_indptr"))
    _paged_kv_indptr_buf = property(lambda self: self._given_buffer("paged_kv_indptr"))
    _paged_kv_indices_buf = property(lambda self: self._given_buffer("paged_kv_indices"))
    _paged_kv_last_page_len_buf = property(lambda self: self._given_buffer("paged_kv_last_page_len"))

    @property
    def kv_layout(self) -> str:
        return self._kv_layout

    @property
    def backend(self) -> str:
        return self._backend

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        """Use new workspaces; the next run needs a new plan(). int_workspace_buffer, where
        given, holds the plans' arrays (size it with batch_plan_bytes); else the wrapper
        keeps its own."""
        _args.array(float_workspace_buffer, "float_workspace_buffer", writable=True)
        _args.optional_array(int_workspace_buffer, "int_workspace_buffer", writable=True)
        self._workspace = float_workspace_buffer
        self._host_workspace = fw.device_of(float_workspace_buffer)[0] == "cpu"
        self._int_workspace = int_workspace_buffer
        self._plan_buffer, self._retired = None, []
        self._native = self._native_class()
        self._plan_args = None
        self._plan_info = None
        self._kv_data_type = None
        self._o_data_type = None

    def _plan_dtype(self, q_data_type: Any, kv_data_type: Any, head_dim_qk: int, head_dim_vo: Optional[int],
                    o_data_type: Any = None) -> Tuple[str, Optional[str], Optional[str]]:
        """q's dtype; the K/V dtype where it is not q's 16-bit one (an fp8 cache, or fp8
        attention's K/V); the output dtype where q is e4m3 (fp8 attention), else None: q's."""
        if head_dim_vo is not None and head_dim_vo != head_dim_qk:
            raise UnsupportedError(
                f"head_dim_vo: {head_dim_vo} differs from head_dim_qk {head_dim_qk}; "
                "flashband needs equal head dims")
        dtype = fw.canonical_dtype(q_data_type, "q_data_type", fp8=fw.FP8_Q_DTYPES)
        kv = None if kv_data_type is None else fw.canonical_dtype(kv_data_type, "kv_data_type", fp8=fw.FP8_DTYPES)
        if dtype in fw.FP8_Q_DTYPES:
            # FlashInfer's kv_data_type defaults to q_data_type; any other goes to the library,
            # which takes e4m3 K/V only and says so by name (FlashInfer asserts q's == k's).
            return dtype, dtype if kv is None else kv, _fp8_attention.output_dtype(o_data_type, "o_data_type")
        if kv is not None and kv != dtype and kv not in fw.FP8_DTYPES:
            raise UnsupportedError(
                f"kv_data_type: {kv_data_type} differs from q_data_type {dtype}; "
                "flashband reads K/V in q's dtype or as an fp8 cache (float8_e4m3fn, float8_e5m2)")
        if o_data_type is not None and fw.canonical_dtype(o_data_type, "o_data_type") != dtype:
            raise UnsupportedError(
                f"o_data_type: {o_data_type} differs from q_data_type {dtype}; "
                "flashband writes outputs in q's dtype (another is fp8 attention's, with float8_e4m3fn q)")
        return dtype, (kv if kv in fw.FP8_DTYPES else None), None

    def _run_scales(self, q_scale: Any, k_scale: Any, v_scale: Any) -> dict:
        """run()'s descales for the native run: q_scale where the plan's q is e4m3 (fp8
        attention; FlashInfer 0.7.2's wrappers fold it into sm_scale, prefill.py `sm_scale *=
        q_scale`), k_scale / v_scale where its K/V are fp8; elsewhere None or 1.0 only."""
        return dict(fp8_scales(self._o_data_type is not None, q_scale=q_scale),
                    **fp8_scales(self._kv_data_type is not None, k_scale=k_scale, v_scale=v_scale))

    def _check_run_window(self, window_left: Optional[int]) -> None:
        """run(window_left=) (FlashInfer's): None or the plan's value; the window is planned."""
        planned = self._semantics.get("window_left", -1)
        if window_left is not None and _args.window_left(window_left) != _args.window_left(planned):
            raise UnsupportedError(
                f"window_left: run() got {window_left}, the plan's is {planned}; "
                "plan() again to change the window")

    def _do_plan(self, args: tuple, semantics: dict, return_lse: bool, num_qo_heads: int,
                 sizes: Tuple[int, ...], arrays: Optional[dict] = None,
                 device_indices: Any = None, dtypes: Tuple[Optional[str], Optional[str]] = (None, None)) -> None:
        """arrays: the plan's host index arrays by the name of the buffer they go to;
        device_indices: the device array the runs read page indices from (None: the plan
        copies them); dtypes: _plan_dtype's K/V and output dtypes (None: q's)."""
        arrays = {name: a for name, a in (arrays or {}).items() if a is not None}
        self._check_index_buffers(arrays, sizes[0])
        previous = (self._plan_args, self._semantics, self._num_qo_heads, self._plan_sizes,
                    self._device_indices, self._kv_data_type, self._o_data_type)
        self._plan_args, self._semantics, self._num_qo_heads = args, semantics, num_qo_heads
        self._plan_sizes, self._device_indices = sizes, device_indices
        self._kv_data_type, self._o_data_type = dtypes
        try:
            try:
                self._plan_now(return_lse)
            except UnsupportedError as e:
                # auto with the graph buffer: where no backend reads device page indices (sm80
                # cannot serve the problem), the host ones given to plan() are copied instead.
                if not (device_indices is self._page_index_buffer is not None and self._backend == "auto"
                        and _has_host_indices(args) and "from a device array" in str(e)):
                    raise
                self._device_indices = None
                self._plan_now(return_lse)
        except Exception as e:  # also an allocation that failed before the native plan
            if not _installed_anyway(e):  # the native object kept its previous plan
                (self._plan_args, self._semantics, self._num_qo_heads, self._plan_sizes,
                 self._device_indices, self._kv_data_type, self._o_data_type) = previous
            else:
                self._fill_index_buffers(arrays)
            raise
        self._fill_index_buffers(arrays)

    def _plan_workspace(self) -> Any:
        """Where the plan's arrays go: the int_workspace_buffer given, else a buffer of this
        wrapper's own, replaced by a larger one when a plan needs more (so a plan that grows
        it cannot keep a CUDA graph's capture; pass int_workspace_buffer to fix the size).
        A float workspace of another framework than torch or CuPy gets no buffer of its own:
        the arrays go into it, as in the C++ API without plan_data, and it cannot be shared."""
        if self._int_workspace is not None:
            return self._int_workspace
        if self._host_workspace or fw.kind(self._workspace) not in ("torch", "cupy"):
            return None  # the cpu backend keeps a plan's arrays on the host
        need = self._plan_bytes(self._plan_sizes, self._num_qo_heads, self._device_indices)
        have = 0 if self._plan_buffer is None else int(self._plan_buffer.shape[0])
        if need <= have:
            return self._plan_buffer
        return fw.empty(self._workspace, (max(need, 2 * have, _PLAN_BUFFER_MIN),), "uint8")

    def _longest(self) -> bool:
        """Whether a plan's sizes need its longest request (plan_sizes): cuDNN's page table
        in a GPU workspace, where the backend may be cudnn."""
        return not self._host_workspace and self._backend not in ("sm80", "sm90")

    def _plan_bytes(self, sizes: Tuple[int, ...], num_qo_heads: int, device_indices: Any) -> int:
        """Bytes of the int workspace a plan of these sizes takes on this wrapper."""
        kind, _ = fw.device_of(self._workspace)
        batch, qo_tokens, head_dim, page_indices, request_pages = sizes
        batch = max(batch, self._graph_batch or 0)
        if device_indices is not None:
            page_indices = 0  # sm80's runs read the caller's array: no copy in the workspace
        else:
            page_indices = max(page_indices, self._page_index_room)  # the buffer's capacity
        if self._backend in ("sm80", "sm90"):
            request_pages = 0  # cuDNN's page table (its term grows with the longest request)
        return int(_C.batch_plan_bytes(batch, qo_tokens, num_qo_heads, head_dim, kind,
                                       page_indices, request_pages))

    def _workspace_sizes(self, sizes: Tuple[int, ...], num_qo_heads: int,
                         device_indices: Any) -> Tuple[int, int]:
        """FlashInfer 0.7's workspace_size(): (float_workspace_buffer bytes, int workspace
        bytes) that a plan of these sizes needs on this wrapper (0, 0 on the host)."""
        kind, _ = fw.device_of(self._workspace)
        batch, qo_tokens, head_dim = sizes[:3]
        float_bytes = int(_C.batch_workspace_bytes(batch, qo_tokens, num_qo_heads, head_dim, kind, 0))
        return float_bytes, self._plan_bytes(sizes, num_qo_heads, device_indices)

    @property
    def resolved_backend(self) -> Optional[str]:
        """FlashInfer 0.7's: the backend the last successful plan() resolved to (auto's
        choice), by flashband's name (sm80 is FlashInfer's fa2 kind, sm90 its fa3); before
        one, the backend asked for ("auto" included)."""
        info = getattr(self, "_plan_info", None)
        return self._backend if info is None or self._plan_args is None else info.backend

    def prewarm_paged_kv_stride_variant(self, variant: str = "independent") -> None:
        """FlashInfer 0.7's (it loads a kernel for K and V of different strides before a
        graph capture): flashband's kernels take K's and V's strides apart at every run, so
        there is nothing to load; as in FlashInfer, a plan() must come first and
        "independent" is the only variant."""
        if variant != "independent":
            raise InvalidArgumentError(f"variant: got {variant!r}, allowed: 'independent'")
        if self._plan_args is None:
            raise InvalidArgumentError("prewarm_paged_kv_stride_variant: plan() has not been called")

    def _keep(self, plan_workspace: Any) -> None:
        """The native plan now reads plan_workspace: a new buffer of the wrapper's own replaces
        the old one only now, so a refused plan leaves the previous plan's arrays alive.
        With use_cuda_graph the old one stays alive too: a graph captured over it may still
        be replayed (wrongly, after the refusal that growing it brings) but never reads
        freed memory."""
        if plan_workspace is None or plan_workspace is self._plan_buffer:
            return
        if plan_workspace is self._int_workspace:
            return
        if self._use_cuda_graph and self._plan_buffer is not None:
            self._retired.append(self._plan_buffer)
        self._plan_buffer = plan_workspace

    def _options(self, return_lse: bool, sinks: bool) -> "_C.Options":
        """make_options for this plan, the previous plan's Options where every input is the
        same value of the same type (an engine's plans differ only in their arrays): a
        different value or type is judged anew, and an unhashable one is never kept."""
        stream = 0 if self._host_workspace else fw.current_stream(self._workspace)
        try:
            # Every plan input goes in the key, the K/V dtype and sinks too: a plan never gets
            # Options judged for another plan's inputs.
            key = (return_lse, sinks, stream, self._kv_data_type,
                   tuple((k, type(v), v) for k, v in self._semantics.items()))
            hash(key)
            if key == self._options_key:
                return self._options_kept
        except (TypeError, ValueError):  # unhashable, or no plain truth value: judged every time
            key = None
        opts = make_options(return_lse=return_lse, kv_layout=self._kv_layout,
                            backend=self._backend, stream=stream,
                            cuda_graph=self._use_cuda_graph, sinks=sinks, **self._semantics)
        if key is not None:
            self._options_key, self._options_kept = key, opts
        return opts

    def _plan_now(self, return_lse: bool, sinks: Optional[bool] = None) -> None:
        """sinks: whether runs pass attention sinks (None: as the current plan)."""
        sinks = self._planned_sinks if sinks is None else sinks
        opts = self._options(return_lse, sinks)
        plan_workspace = self._plan_workspace()
        # Keywords only where they say something: device page indices, an fp8 K/V format,
        # fp8 attention's output dtype.
        device = {} if self._device_indices is None else {"device_indices": fw.native(self._device_indices)}
        if self._kv_data_type is not None:
            device["kv_dtype"] = self._kv_data_type
        if self._o_data_type is not None:
            device["o_dtype"] = self._o_data_type
        with _HOST if self._host_workspace else fw.device_guard(self._workspace):
            try:
                self._plan_info = self._native.plan(*self._plan_args, opts, fw.native(self._workspace),
                                  None if plan_workspace is None else fw.native(plan_workspace),
                                  **device)
            except FlashbandError as e:
                if _installed_anyway(e):
                    self._keep(plan_workspace)
                    self._planned_lse, self._planned_sinks = return_lse, sinks
                raise
        self._keep(plan_workspace)
        self._planned_lse, self._planned_sinks = return_lse, sinks

    def _run(self, q: Any, out: Any, lse: Any, return_lse: bool,
             call: Callable[[Any, Any, Any], Any], sinks: Any = None, lse_base: str = "log2",
             lse_layout: str = "NH") -> Any:
        """call(out, lse, sinks) runs the native object. sinks (FlashInfer's run() argument,
        float32 [num_qo_heads]): a plan made without them (or with them, for a run without)
        is re-planned once, as for return_lse, so that the backend honours them.
        lse_base, lse_layout (FlashInfer 0.7's): the form of every LSE the run writes, a
        given lse included (FlashInfer 0.7 converts only the one it returns); a given lse
        for "HN" is [heads, tokens] and is written once the run has succeeded."""
        if self._plan_args is None:
            raise InvalidArgumentError("run: plan() has not been called")
        lse_base, lse_layout = lse_form(lse_base, lse_layout)
        _args.fp8_array(q, "q", 3, "[tokens, num_qo_heads, head_dim]", _args.Q_DTYPES)
        # A given lse is written, as FlashInfer's kernels write it, but the result is a tuple
        # only with return_lse, as FlashInfer's is.
        write_lse = bool(return_lse or lse is not None)
        dest = None
        if lse_layout == "HN":  # the kernels write [tokens, heads]: into an array of their own
            dest, lse = transposed_lse(q, out, lse, self._num_qo_heads), None
        if write_lse != self._planned_lse or (sinks is not None) != self._planned_sinks:
            self._plan_now(write_lse, sinks is not None)
        out, lse = outputs(q, out, lse, write_lse, self._num_qo_heads, self._o_data_type)
        with fw.device_guard(q):
            info = call(out, lse, sinks)
            if write_lse:
                lse = deliver_lse(lse, lse_base, lse_layout, dest)
        record(info)
        self.last_run_info = info
        return (out, lse) if return_lse else out
