"""What the three batch wrappers share: the workspace, plan bookkeeping and run().

plan() does all host work and, for GPU backends, copies the plan into the workspace on the
current stream; run() only launches. The native run() goes to the stream that plan() saw
(the C++ run takes no stream), so plan and run on the same stream, as FlashInfer expects.
The native library plans for LSE or not (Options.return_lse); when run() asks otherwise
than the plan, the wrapper re-plans once with the saved host arrays.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from . import _frameworks as fw
from ._common import make_options, outputs, record
from .errors import FlashbandError, InvalidArgumentError, UnsupportedError


def _installed_anyway(e: Exception) -> bool:
    """The cuda_graph guard refuses a plan after installing it (the workspace holds it), so
    the wrapper follows that plan; any other error leaves the previous one."""
    return isinstance(e, UnsupportedError) and str(e).startswith("cuda_graph:")


class BatchWrapperBase:
    _native_class: Any = None

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, *, backend: str = "auto") -> None:
        make_options(kv_layout=kv_layout, backend=backend)  # raises naming a bad value now
        self._kv_layout = kv_layout
        self._backend = backend
        # FlashInfer's meaning: a run() captured in a CUDA graph stays valid across plan()
        # calls. The native plan keeps that promise or raises (Options.cuda_graph).
        self._use_cuda_graph = bool(use_cuda_graph)
        self._workspace = float_workspace_buffer
        self._native = self._native_class()
        self._plan_args: Optional[tuple] = None
        self._semantics: dict = {}
        self._planned_lse = False
        self._num_qo_heads = 0
        self._cache_pages = 0  # pages of the paged cache the last run() was given
        self.last_run_info = None

    @property
    def kv_layout(self) -> str:
        return self._kv_layout

    @property
    def backend(self) -> str:
        return self._backend

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        """Use a new workspace; the next run needs a new plan()."""
        del int_workspace_buffer  # flashband keeps everything in one workspace
        self._workspace = float_workspace_buffer
        self._native = self._native_class()
        self._plan_args = None

    def _plan_dtype(self, q_data_type: Any, kv_data_type: Any, head_dim_qk: int,
                    head_dim_vo: Optional[int]) -> str:
        if head_dim_vo is not None and head_dim_vo != head_dim_qk:
            raise UnsupportedError(
                f"head_dim_vo: {head_dim_vo} differs from head_dim_qk {head_dim_qk}; "
                "flashband needs equal head dims")
        dtype = fw.canonical_dtype(q_data_type, "q_data_type")
        if kv_data_type is not None and fw.canonical_dtype(kv_data_type, "kv_data_type") != dtype:
            raise UnsupportedError(
                f"kv_data_type: {kv_data_type} differs from q_data_type {dtype}; "
                "flashband needs one dtype for q, k and v")
        return dtype

    def _do_plan(self, args: tuple, semantics: dict, return_lse: bool, num_qo_heads: int) -> None:
        previous = (self._plan_args, self._semantics, self._num_qo_heads)
        self._plan_args, self._semantics, self._num_qo_heads = args, semantics, num_qo_heads
        try:
            self._plan_now(return_lse)
        except FlashbandError as e:
            if not _installed_anyway(e):  # the native object kept its previous plan
                self._plan_args, self._semantics, self._num_qo_heads = previous
            raise

    def _plan_now(self, return_lse: bool) -> None:
        opts = make_options(return_lse=return_lse, kv_layout=self._kv_layout,
                            backend=self._backend, stream=fw.current_stream(self._workspace),
                            cuda_graph=self._use_cuda_graph, **self._semantics)
        with fw.device_guard(self._workspace):
            try:
                self._native.plan(*self._plan_args, opts, fw.native(self._workspace))
            except FlashbandError as e:
                if _installed_anyway(e):
                    self._planned_lse = return_lse
                raise
        self._planned_lse = return_lse

    def _run(self, q: Any, out: Any, lse: Any, return_lse: bool,
             call: Callable[[Any, Any], Any]) -> Any:
        if self._plan_args is None:
            raise InvalidArgumentError("run: plan() has not been called")
        return_lse = bool(return_lse or lse is not None)
        if return_lse != self._planned_lse:
            self._plan_now(return_lse)
        out, lse = outputs(q, out, lse, return_lse, self._num_qo_heads)
        with fw.device_guard(q):
            info = call(out, lse)
        record(info)
        self.last_run_info = info
        return (out, lse) if return_lse else out
