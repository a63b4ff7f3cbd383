"""Paged KV arithmetic shared by the wrappers that take FlashInfer's page arrays."""

from __future__ import annotations

from typing import Any

import numpy as np


def paged_kv_lens(indptr: Any, last_page_len: Any, page_size: int) -> np.ndarray:
    """kv_len of each request of a paged plan (SPEC.md "Problems"); 0 without pages."""
    pages = np.diff(np.asarray(indptr, dtype=np.int64))
    last = np.asarray(last_page_len, dtype=np.int64)[:len(pages)]
    return np.where(pages > 0, (pages - 1) * page_size + last, 0)
