"""flashband.distributed: decode and chunked prefill over a KV cache sharded across ranks
equal the single-process run and the float64 oracle (SPEC.md's bounds), for causal,
sliding window, GQA, empty shards and shards of unequal size. Ranks are gloo processes on the CPU
(2 and 4 of them), NCCL processes one per GPU (2, 4 and 8, where the machine has that many),
or simulated in one process (the per-shard kernels and the merge on the cpu backend, and on
sm80 where a GPU is present)."""

import math
import os
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="flashband.distributed needs torch (torch.distributed)")

import flashband  # noqa: E402
from flashband.distributed import (ContextParallelDecodeWrapper,  # noqa: E402
                                   ContextParallelPrefillWrapper, ShardDecode, ShardPrefill)
from _checks import assert_empty_rows_exact, assert_lse, assert_out  # noqa: E402
from _reference import attention_np  # noqa: E402

# name -> (seq_lens, window_left, Hq, Hk, how the keys are split, query rows per request
# (None: decode, one each)). "random": contiguous ranges of random (unequal, sometimes
# empty) sizes, dealt to the ranks in a shuffled order; "one_rank": each request wholly on
# one rank, the others' shards empty for it. Prefill queries are each request's last rows.
CASES = {
    "causal": ([1, 37, 130, 64], -1, 4, 4, "random", None),
    "window": ([50, 130, 9, 200, 77], 40, 4, 4, "random", None),
    "gqa_window": ([130, 3, 200, 61], 17, 8, 2, "random", None),
    "empty_shards": ([0, 45, 130, 8], 20, 8, 2, "one_rank", None),
    "window_hides_none": ([5, 33], 1000, 8, 2, "random", None),
    "prefill_causal": ([40, 130, 17, 64], -1, 8, 2, "random", [40, 25, 1, 9]),
    "prefill_window": ([100, 130, 33, 70], 20, 4, 4, "random", [30, 70, 33, 2]),
    "prefill_empty_shards": ([60, 9], 7, 8, 2, "one_rank", [20, 9]),
}
HEAD_DIM, PAGE_SIZE = 64, 8
DTYPES = ("float32", "bfloat16")  # what the cpu backend serves under torch


def split(rng, seq_len, world, how):
    """[(rank, first key, number of keys)] covering [0, seq_len) in contiguous ranges."""
    ranks = rng.permutation(world)
    if how == "one_rank":
        sizes = [0] * world
        sizes[rng.integers(world)] = seq_len
    else:
        cuts = np.sort(rng.integers(0, seq_len + 1, size=world - 1))
        sizes = np.diff(np.concatenate([[0], cuts, [seq_len]])).tolist()
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    return [(int(r), int(s), int(n)) for r, s, n in zip(ranks, starts, sizes)]


def paginate(chunks, rng):
    """Page pool of one rank: chunks [n_b, Hk, D] -> (k pages, indptr, indices, last_page_len),
    the pages stored in a shuffled order so the page table matters."""
    counts = [math.ceil(len(c) / PAGE_SIZE) for c in chunks]
    order = rng.permutation(sum(counts)) if sum(counts) else np.zeros(0, dtype=np.int64)
    hk, d = chunks[0].shape[1:]
    pool = np.zeros((max(sum(counts), 1), PAGE_SIZE, hk, d), dtype=np.float32)
    indptr, indices, last = [0], [], []
    for c, count in zip(chunks, counts):
        ids = order[indptr[-1]:indptr[-1] + count]
        for i, page in enumerate(ids):
            rows = c[i * PAGE_SIZE:(i + 1) * PAGE_SIZE]
            pool[page, :len(rows)] = rows
        indptr.append(indptr[-1] + count)
        indices.extend(int(p) for p in ids)
        last.append(len(c) - (count - 1) * PAGE_SIZE if count else 0)
    return pool, np.array(indptr), np.array(indices, dtype=np.int64), np.array(last)


class Case:
    """One batch's q, keys and values, the reference, and each rank's shard."""

    def __init__(self, name, world, seed=0):
        self.seq_lens, self.window, self.hq, self.hk, how, qo_lens = CASES[name]
        self.decode = qo_lens is None
        self.qo_indptr = np.concatenate([[0], np.cumsum(qo_lens or [1] * len(self.seq_lens))])
        rng = np.random.default_rng([seed, world, sorted(CASES).index(name)])
        d = HEAD_DIM
        self.q = rng.standard_normal((self.qo_indptr[-1], self.hq, d)).astype(np.float32)
        self.k = [rng.standard_normal((n, self.hk, d)).astype(np.float32) for n in self.seq_lens]
        self.v = [rng.standard_normal((n, self.hk, d)).astype(np.float32) for n in self.seq_lens]
        self.world = world
        self.shards = [dict(offsets=[], k=[], v=[]) for _ in range(world)]
        for b, n in enumerate(self.seq_lens):
            for rank, start, count in split(rng, n, world, how):
                shard = self.shards[rank]
                shard["offsets"].append(start)
                shard["k"].append(self.k[b][start:start + count])
                shard["v"].append(self.v[b][start:start + count])
        for shard in self.shards:
            page_rng = np.random.default_rng(len(shard["offsets"]) + sum(shard["offsets"]))
            shard["k_pool"], shard["indptr"], shard["indices"], shard["last"] = paginate(
                shard["k"], page_rng)
            page_rng = np.random.default_rng(len(shard["offsets"]) + sum(shard["offsets"]))
            shard["v_pool"] = paginate(shard["v"], page_rng)[0]

    def reference(self, dtype):
        """float64 oracle on the dtype-rounded inputs: (out [rows, Hq, D], lse [rows, Hq])."""
        rounded = lambda x: torch.from_numpy(x).to(getattr(torch, dtype)).double().numpy()
        outs, lses = [], []
        for b in range(len(self.seq_lens)):
            rows = slice(self.qo_indptr[b], self.qo_indptr[b + 1])
            o, lse = attention_np(rounded(self.q[rows]), rounded(self.k[b]), rounded(self.v[b]),
                                  causal=True, window_left=self.window)
            outs.append(o)
            lses.append(lse)
        return np.concatenate(outs), np.concatenate(lses)

    def plan_args(self, rank):
        s = self.shards[rank]
        args = (s["indptr"], s["indices"], s["last"], s["offsets"], self.seq_lens, self.hq,
                self.hk, HEAD_DIM, PAGE_SIZE)
        return args if self.decode else (self.qo_indptr,) + args

    def cache(self, rank, dtype, device):
        s = self.shards[rank]
        to = lambda x: torch.from_numpy(x).to(device=device, dtype=getattr(torch, dtype))
        return to(s["k_pool"]), to(s["v_pool"])

    def single_process(self, dtype, device, backend):
        """The whole cache on one rank, decoded by the plain wrapper."""
        whole = Case.__new__(Case)
        whole.__dict__.update(self.__dict__)
        whole.world = 1
        pool, indptr, indices, last = paginate(self.k, np.random.default_rng(1))
        v_pool = paginate(self.v, np.random.default_rng(1))[0]
        idx = lambda a: torch.from_numpy(np.asarray(a, dtype=np.int32)).to(device)
        nbytes = flashband.batch_workspace_bytes(len(self.seq_lens), len(self.q), self.hq,
                                                 HEAD_DIM, device)
        workspace = torch.empty(nbytes, dtype=torch.uint8, device=device)
        pages = (idx(indptr), idx(indices), idx(last), self.hq, self.hk, HEAD_DIM, PAGE_SIZE)
        settings = dict(window_left=self.window, q_data_type=dtype, return_lse=True)
        if self.decode:
            wrapper = flashband.BatchDecodeWithPagedKVCacheWrapper(workspace, backend=backend)
            wrapper.plan(*pages, **settings)
        else:
            wrapper = flashband.BatchPrefillWithPagedKVCacheWrapper(workspace, backend=backend)
            wrapper.plan(idx(self.qo_indptr), *pages, causal=True, **settings)
        to = lambda x: torch.from_numpy(x).to(device=device, dtype=getattr(torch, dtype))
        return wrapper.run(to(self.q), (to(pool), to(v_pool)), return_lse=True)

    def check(self, out, lse, dtype, device, backend, what):
        """out, lse equal the oracle and the single-process decode within SPEC.md's bounds."""
        as64 = lambda x: x.double().cpu().numpy()
        ref_out, ref_lse = self.reference(dtype)
        assert_out(as64(out), ref_out, dtype, f"{what}: out vs oracle")
        assert_lse(as64(lse), ref_lse, dtype, f"{what}: lse vs oracle")
        assert_empty_rows_exact(as64(out), ref_lse, f"{what}: out")
        one_out, one_lse = self.single_process(dtype, device, backend)
        assert_out(as64(out), as64(one_out), dtype, f"{what}: out vs single process")
        assert_lse(as64(lse), as64(one_lse), dtype, f"{what}: lse vs single process")


def simulate(case, dtype, device, backend):
    """Ranks in one process: each rank's ShardDecode, then the merge of their states."""
    q = torch.from_numpy(case.q).to(device=device, dtype=getattr(torch, dtype))
    outs, lses = [], []
    for rank in range(case.world):
        shard = (ShardDecode if case.decode else ShardPrefill)(device, backend=backend)
        shard.plan(*case.plan_args(rank), window_left=case.window, q_data_type=dtype)
        out, lse = shard.run(q, case.cache(rank, dtype, device))
        outs.append(out.clone())
        lses.append(lse.clone())
    return flashband.merge_states(torch.stack(outs, 1), torch.stack(lses, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_simulated_ranks_cpu(name, world, dtype):
    case = Case(name, world)
    out, lse = simulate(case, dtype, "cpu", "cpu")
    case.check(out, lse, dtype, "cpu", "cpu", f"{name}, {world} simulated ranks")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("name", sorted(CASES))
def test_simulated_ranks_sm80(name, world):
    if "sm80" not in flashband.built_backends():
        pytest.skip("this build has no sm80 backend")
    case = Case(name, world)
    out, lse = simulate(case, "float16", "cuda", "sm80")
    torch.cuda.synchronize()
    case.check(out, lse, "float16", "cuda", "sm80", f"{name}, {world} simulated ranks on sm80")


def test_window_straddling_shard_is_masked():
    """The window case puts a window start inside some rank's range and some ranks wholly
    before it; without the per-rank window the merge would see keys outside the window."""
    case = Case("window", 4)
    straddles = before = 0
    for shard in case.shards:
        for b, (start, k) in enumerate(zip(shard["offsets"], shard["k"])):
            first_visible = case.seq_lens[b] - 1 - case.window
            straddles += start < first_visible < start + len(k)
            before += len(k) > 0 and start + len(k) <= first_visible
    assert straddles and before, (straddles, before)
    ref_out, _ = case.reference("float32")
    no_window = Case("window", 4)
    no_window.window = -1
    assert np.abs(no_window.reference("float32")[0] - ref_out).max() > 0.1


def test_bad_offsets_are_refused():
    case = Case("causal", 2)
    args = list(case.plan_args(0))
    args[3] = [n + 1 for n in case.seq_lens]
    with pytest.raises(flashband.InvalidArgumentError, match="kv_offsets"):
        ShardDecode("cpu", backend="cpu").plan(*args, q_data_type="float32")


def _worker(rank, world, store, names, transport="gloo"):
    """One rank of a process group: gloo with the cpu backend, or NCCL with sm80 on GPU
    `rank` (one process per GPU, as serving engines run them)."""
    torch.set_num_threads(1)
    import torch.distributed as dist

    if transport == "nccl":
        torch.cuda.set_device(rank)
        device, backend, dtypes = torch.device("cuda", rank), "sm80", ("float16", "bfloat16")
        dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world,
                                device_id=device)
    else:
        device, backend, dtypes = torch.device("cpu"), "cpu", DTYPES
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        for name in names:
            case = Case(name, world)
            for dtype in dtypes:
                wrapper = (ContextParallelDecodeWrapper if case.decode else
                           ContextParallelPrefillWrapper)(device=device, backend=backend)
                wrapper.plan(*case.plan_args(rank), window_left=case.window, q_data_type=dtype)
                q = torch.from_numpy(case.q).to(device=device, dtype=getattr(torch, dtype))
                first = None
                for step in range(2):  # a second run reuses the plan's buffers
                    out, lse = wrapper.run(q, case.cache(rank, dtype, device), return_lse=True)
                    if device.type == "cuda":
                        torch.cuda.synchronize(device)
                    case.check(out, lse, dtype, device, backend,
                               f"{name}, {dtype}, {transport} rank {rank} of {world}, run {step}")
                    first = first or (out.data_ptr(), lse.data_ptr())
                    assert (out.data_ptr(), lse.data_ptr()) == first, "run() allocated its outputs"
    finally:
        dist.destroy_process_group()


def _spawn(world, transport):
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_worker, args=(world, os.path.join(tmp, "store"), sorted(CASES), transport), nprocs=world)


@pytest.mark.parametrize("world", [2, 4])
def test_gloo_processes(world):
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch has no gloo backend")
    _spawn(world, "gloo")


@pytest.mark.parametrize("world", [2, 4, 8])
def test_nccl_processes(world):
    """One process per GPU over NCCL, as on a multi-GPU serving machine: every rank's result
    equals the oracle and the single-process run on its own GPU."""
    import torch.distributed as dist

    if torch.cuda.device_count() < world:
        pytest.skip(f"needs {world} GPUs, this machine has {torch.cuda.device_count()}")
    if "sm80" not in flashband.built_backends() or not dist.is_nccl_available():
        pytest.skip("needs the sm80 backend and NCCL")
    _spawn(world, "nccl")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_nccl_one_rank_cuda_graph(tmp_path):
    """The NCCL path on one GPU (a group of one rank): plan, then run() captured in a CUDA
    graph and replayed on new q, equal to the oracle. Several GPUs are not tested here."""
    import torch.distributed as dist

    if "sm80" not in flashband.built_backends() or not dist.is_nccl_available():
        pytest.skip("needs the sm80 backend and NCCL")
    dist.init_process_group("nccl", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1, device_id=torch.device("cuda", 0))
    try:
        case = Case("gqa_window", 1)
        wrapper = ContextParallelDecodeWrapper(device="cuda", backend="sm80")
        wrapper.plan(*case.plan_args(0), window_left=case.window, q_data_type="float16")
        cache = case.cache(0, "float16", "cuda")
        q = torch.zeros(case.q.shape, dtype=torch.float16, device="cuda")
        wrapper.run(q, cache)  # warm-up outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out, lse = wrapper.run(q, cache, return_lse=True)
        q.copy_(torch.from_numpy(case.q))
        graph.replay()
        torch.cuda.synchronize()
        case.check(out, lse, "float16", "cuda", "sm80", "gqa_window, NCCL one rank, graph replay")
    finally:
        dist.destroy_process_group()
