"""An engine's CUDA-graph decode loop against FlashInfer's contract (issue 61), on a GPU.

One decode wrapper per captured batch size, all over one shared page-index buffer (SGLang's
max-batch x max-context buffer); each batch size's graph is captured once. Then hundreds of
decode steps: every live request appends a token (crossing page and power-of-two
boundaries), requests finish and free their pages, new ones start on reused pages, and a
batch smaller than the graph's is padded with empty requests. Odd steps follow vLLM
(the page table written in place into the caller's buffers, then fast_decode_plan from
host indptr and lengths), even steps SGLang (a full plan() with the indices). Every replay
must equal an eager run of the same step, and every 50th step the float64 oracle."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import flashband
from _checks import assert_out
from _reference import attention_torch

DTYPE = "bfloat16"
HQ, HK, D, PAGE = 8, 2, 128, 16
POOL_PAGES = 8192
MAX_PAGES_PER_REQUEST = 96  # a cap; in 300 steps requests reach ~600 keys (powers of two 64-512)
GRAPH_BATCHES = (1, 4, 16, 64)
STEPS = 300


class Pool:
    """Page allocator over one K/V pool (NHD, bf16), with requests that grow a token a step."""

    def __init__(self, rng):
        self.rng = rng
        self.k = torch.randn(POOL_PAGES, PAGE, HK, D, device="cuda").to(torch.bfloat16)
        self.v = torch.randn(POOL_PAGES, PAGE, HK, D, device="cuda").to(torch.bfloat16)
        self.free = list(rng.permutation(POOL_PAGES))
        self.requests = []  # [kv_len, [pages]]

    def start(self):
        kv = int(self.rng.integers(1, 300))
        self.requests.append([kv, [self.free.pop() for _ in range((kv + PAGE - 1) // PAGE)]])

    def finish(self, i):
        self.free.extend(self.requests.pop(i)[1])

    def step(self, batch):
        """Grow every request by a token; retire those at their cap; keep `batch` alive at
        most (fewer sometimes: the graph's batch is then padded)."""
        for r in self.requests:
            r[0] += 1
            if (r[0] - 1) % PAGE == 0:
                r[1].append(self.free.pop())
        for i in reversed(range(len(self.requests))):
            if len(self.requests[i][1]) >= MAX_PAGES_PER_REQUEST or self.rng.random() < 0.01:
                self.finish(i)
        while len(self.requests) < batch and self.rng.random() < 0.7:
            self.start()

    def arrays(self, batch):
        """indptr, indices, last_page_len for `batch` entries, the tail padded with empty
        requests (no pages: their rows see no key)."""
        live = self.requests[:batch]
        counts = [len(r[1]) for r in live] + [0] * (batch - len(live))
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        indices = np.array([p for r in live for p in r[1]], np.int32)
        last = np.array([(r[0] - 1) % PAGE + 1 for r in live] + [1] * (batch - len(live)), np.int32)
        return indptr, indices, last

    def reference(self, q, batch):
        """float64 oracle, one row per entry (padded ones: 0)."""
        out = torch.zeros(batch, HQ, D, dtype=torch.float64, device="cuda")
        for b, (kv, pages) in enumerate(self.requests[:batch]):
            k = self.k[pages].reshape(-1, HK, D)[:kv].double()
            v = self.v[pages].reshape(-1, HK, D)[:kv].double()
            out[b] = attention_torch(q[b:b + 1].double(), k, v)[0][0]
        return out.cpu().numpy()


def test_engine_decode_loop_under_cuda_graphs():
    rng = np.random.default_rng(61)
    pool = Pool(rng)
    shared_indices = torch.zeros(max(GRAPH_BATCHES) * MAX_PAGES_PER_REQUEST, dtype=torch.int32, device="cuda")
    float_ws = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")  # shared, as engines do
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the pool and buffers are written first
    graphs = {}
    for batch in GRAPH_BATCHES:
        indptr_buf = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
        last_buf = torch.zeros(batch, dtype=torch.int32, device="cuda")
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(float_ws, "NHD", True, False, indptr_buf,
                                                         shared_indices, last_buf)
        q = torch.zeros(batch, HQ, D, dtype=torch.bfloat16, device="cuda")
        out = torch.zeros_like(q)
        while len(pool.requests) < batch:
            pool.start()
        indptr, indices, last = pool.arrays(batch)
        with torch.cuda.stream(stream):
            w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type=DTYPE, num_pages=POOL_PAGES)
            w.run(q, (pool.k, pool.v), out=out)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            w.run(q, (pool.k, pool.v), out=out)
        graphs[batch] = (w, graph, q, out, indptr_buf, last_buf)
    eager = flashband.BatchDecodeWithPagedKVCacheWrapper(
        torch.empty(128 << 20, dtype=torch.uint8, device="cuda"))

    for step in range(STEPS):
        batch = GRAPH_BATCHES[step % len(GRAPH_BATCHES)]
        w, graph, q, out, indptr_buf, last_buf = graphs[batch]
        pool.step(batch)
        indptr, indices, last = pool.arrays(batch)
        with torch.cuda.stream(stream):  # everything of a step on the capture stream, in order
            q.copy_(torch.randn(batch, HQ, D, device="cuda").to(torch.bfloat16))
            if step % 2:  # vLLM: the page table in place, then a plan from host arrays only
                shared_indices[:len(indices)].copy_(torch.from_numpy(indices))
                indptr_buf.copy_(torch.from_numpy(indptr))
                last_buf.copy_(torch.from_numpy(last))
                flashband.fast_decode_plan(w, indptr_buf, shared_indices[:len(indices)], last_buf, HQ, HK,
                                           D, PAGE, q_data_type=DTYPE, num_pages=POOL_PAGES,
                                           global_override_indptr_cpu=torch.from_numpy(indptr))
            else:  # SGLang: a full plan()
                w.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type=DTYPE, num_pages=POOL_PAGES)
            out.fill_(float("nan"))
            graph.replay()
            eager.plan(indptr, indices, last, HQ, HK, D, PAGE, q_data_type=DTYPE, num_pages=POOL_PAGES)
            expected = eager.run(q, (pool.k, pool.v))
        torch.cuda.synchronize()
        w.check()
        assert w.last_run_info.backend == "sm80"
        assert_out(out.double().cpu().numpy(), expected.double().cpu().numpy(), DTYPE,
                   what=f"step {step} (batch {batch}): replay vs eager")
        if step % 50 == 0:
            assert_out(out.double().cpu().numpy(), pool.reference(q, batch), DTYPE,
                       what=f"step {step} (batch {batch}): replay vs oracle")
