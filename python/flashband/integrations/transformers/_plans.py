"""flashband batch wrappers kept across model steps: one per kind (paged decode, ragged
prefill), device, backend and settings, with its float workspace (grown when a batch needs
more), re-planned only when its plan arguments change, so the layers of one step that share
settings share one plan."""

from __future__ import annotations

import atexit
from typing import Any, Callable

from ... import batch_workspace_bytes
from ...decode import BatchDecodeWithPagedKVCacheWrapper
from ...prefill import BatchPrefillWithRaggedKVCacheWrapper

_KINDS = {"decode": BatchDecodeWithPagedKVCacheWrapper,
          "ragged": BatchPrefillWithRaggedKVCacheWrapper}


class Plans:
    def __init__(self) -> None:
        self._entries: dict = {}  # key -> [wrapper, float workspace, plan key]
        # dropped before interpreter shutdown, while the native module can still free them
        atexit.register(self._entries.clear)

    def planned(self, kind: str, q: Any, backend: str, settings: dict, rows: int,
                plan_key: tuple, plan: Callable[[Any], None]) -> Any:
        """The wrapper of (kind, q's device, backend, settings), planned by plan(wrapper)
        unless its last plan had plan_key. rows: query rows (for the workspace size)."""
        import torch

        batch, heads, dim = plan_key[0], q.shape[1], q.shape[2]
        nbytes = max(batch_workspace_bytes(batch, rows, heads, dim, q.device.type), 1)
        key = (kind, str(q.device), backend, tuple(sorted(settings.items())))
        entry = self._entries.get(key)
        if entry is None:
            workspace = torch.empty(nbytes, dtype=torch.uint8, device=q.device)
            entry = [_KINDS[kind](workspace, kv_layout="HND", backend=backend), workspace, None]
            self._entries[key] = entry
        elif entry[1].numel() < nbytes:
            entry[1] = torch.empty(nbytes, dtype=torch.uint8, device=q.device)
            entry[0].reset_workspace_buffer(entry[1])
            entry[2] = None
        if entry[2] != plan_key:
            entry[2] = None  # a plan that raises leaves no plan key behind
            plan(entry[0])
            entry[2] = plan_key
        return entry[0]


plans = Plans()
