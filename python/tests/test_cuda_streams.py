"""torch CUDA specifics: work runs on the caller's current stream (plan()'s copies on the one
current at plan(), run() on the one current at run()), and a planned run can be captured in
a CUDA graph and replayed (run() neither allocates nor synchronises), with
use_cuda_graph=True also after later plans that keep its launch. Skipped without torch and
a GPU."""

import numpy as np
import pytest

import flashband
from _cases import Paged, Ragged
from _checks import assert_out
from _envs import DLPackOnly
from _reference import attention_np

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

BACKENDS = ["auto", "sm80", "sm90", "cudnn"]
DTYPE = "bfloat16"


def decode_problem(seed=0, page_size=16):
    rng = np.random.default_rng(seed)
    batch = Ragged(rng, [1] * 5, [33, 1, 200, 64, 17], 8, 2, 128)
    return batch, Paged(rng, batch, page_size)


def to_gpu(x):
    return torch.from_numpy(np.ascontiguousarray(x)).to("cuda", torch.bfloat16)


def reference(batch, kv_lens=None, window_left=-1, causal=False):
    """The batch's output, or with each request's first kv_lens[b] keys only."""
    from _reference import attention_torch

    as64 = lambda x: to_gpu(x).double()
    outs = []
    for b in range(batch.batch):
        qs = slice(batch.qo_indptr[b], batch.qo_indptr[b + 1])
        end = batch.kv_indptr[b + 1] if kv_lens is None else batch.kv_indptr[b] + kv_lens[b]
        ks = slice(batch.kv_indptr[b], end)
        outs.append(attention_torch(as64(batch.q)[qs], as64(batch.k)[ks], as64(batch.v)[ks],
                                    window_left=window_left, causal=causal)[0])
    return torch.cat(outs).cpu().numpy()


def capture(plan_it, run_it):
    """Plans and runs once on a side stream, then captures run_it there: (graph, stream)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        plan_it()
        run_it()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        run_it()
    return graph, stream


def prefix_pages(full, lens):
    """Page arrays of each request's first lens[b] keys in `full` (a Paged): its leading
    pages, which stay where they are as the request grows."""
    size = full.page_size
    pages = [(n + size - 1) // size for n in lens]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.concatenate([full.indices[full.indptr[b]:full.indptr[b] + pages[b]]
                              for b in range(len(lens))]).astype(np.int32)
    last = np.array([n - (p - 1) * size for n, p in zip(lens, pages)], np.int32)
    return indptr, indices, last


def replay_steps(graph, stream, plan_step, steps, out, expected):
    """For each step: plan it on the capture stream, replay the graph into a NaN-filled
    out, and compare with expected(lens), lens being what plan_step returned."""
    for step in range(steps + 1):
        with torch.cuda.stream(stream):
            lens = plan_step(step)
            out.fill_(float("nan"))
            graph.replay()
        torch.cuda.synchronize()
        assert_out(out.double().cpu().numpy(), expected(lens), DTYPE)


def require(backend, op, page_size=16):
    answer = flashband.supports(op, backend=backend, dtype=DTYPE, device="cuda", head_dim=128,
                                num_qo_heads=8, num_kv_heads=2, page_size=page_size)
    if not answer:
        pytest.skip(f"{backend}: {answer.reason}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_runs_on_the_current_stream(backend):
    require(backend, "paged_decode")
    batch, paged = decode_problem(1)
    q = to_gpu(batch.q)
    cache = (to_gpu(paged.k_pages), to_gpu(paged.v_pages))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        ws = torch.empty(flashband.batch_workspace_bytes(5, 5, 8, 128, "cuda") + 256,
                         dtype=torch.uint8, device="cuda")
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, backend=backend)
        w.plan(torch.from_numpy(paged.indptr).cuda(), torch.from_numpy(paged.indices).cuda(),
               torch.from_numpy(paged.last_page_len).cuda(), 8, 2, 128, 16, q_data_type=DTYPE)
        out = w.run(q, cache)
    side.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_graph_capture_and_replay(backend):
    require(backend, "paged_decode")
    batch, paged = decode_problem(2)
    q = to_gpu(batch.q)
    cache = (to_gpu(paged.k_pages), to_gpu(paged.v_pages))
    out = torch.empty_like(q)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ws = torch.empty(flashband.batch_workspace_bytes(5, 5, 8, 128, "cuda") + 256,
                         dtype=torch.uint8, device="cuda")
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend=backend)
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16,
               q_data_type=DTYPE)
        w.run(q, cache, out=out)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        w.run(q, cache, out=out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_graph_follows_plans_that_keep_the_launch(backend):
    """use_cuda_graph=True, FlashInfer's contract: a graph captured under one plan, replayed
    after plan() with other pages, then with other lengths on as many pages (launch arguments
    unchanged), computes each new plan's problem; a plan() that would launch differently
    (more pages, longer requests) raises instead, and its plan is then the wrapper's for an
    eager run."""
    require(backend, "paged_decode")
    rng = np.random.default_rng(11)
    batch = Ragged(rng, [1] * 5, [33, 1, 200, 64, 17], 8, 2, 128)
    # Other lengths, each on as many pages of 16 as before: the same arrays in the workspace.
    other = Ragged(rng, [1] * 5, [40, 1, 205, 60, 20], 8, 2, 128)
    first, second, third = Paged(rng, batch, 16), Paged(rng, batch, 16), Paged(rng, other, 16)
    assert not np.array_equal(first.indices, second.indices)
    assert first.num_pages == third.num_pages
    q = to_gpu(batch.q)
    cache = (to_gpu(first.k_pages), to_gpu(first.v_pages))
    out = torch.empty_like(q)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")  # room for every plan

    def plan(w, paged):
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16,
               q_data_type=DTYPE, num_pages=paged.num_pages)

    with torch.cuda.stream(stream):
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend=backend)
        plan(w, first)
        w.run(q, cache, out=out)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        w.run(q, cache, out=out)
    for problem, paged in ((batch, second), (other, third)):
        with torch.cuda.stream(stream):
            q.copy_(to_gpu(problem.q))
            cache[0].copy_(to_gpu(paged.k_pages))
            cache[1].copy_(to_gpu(paged.v_pages))
            plan(w, paged)
            out.fill_(float("nan"))
            graph.replay()
        torch.cuda.synchronize()
        assert_out(out.double().cpu().numpy(), reference(problem), DTYPE)

    # Another batch size launches differently on every backend.
    longer = Ragged(rng, [1] * 6, [300, 1, 200, 64, 700, 5], 8, 2, 128)
    fourth = Paged(rng, longer, 16)
    with torch.cuda.stream(stream):
        with pytest.raises(flashband.UnsupportedError, match="cuda_graph"):
            plan(w, fourth)
        eager = w.run(to_gpu(longer.q), (to_gpu(fourth.k_pages), to_gpu(fourth.v_pages)))
    torch.cuda.synchronize()
    assert_out(eager.double().cpu().numpy(), reference(longer), DTYPE)


@pytest.mark.parametrize("page_size,window_left,mode", [(1, -1, "int workspace"),
                                                        (16, -1, "index buffers"),
                                                        (16, 300, "int workspace"),
                                                        (16, -1, "one buffer")])
def test_sm80_cuda_graph_replays_as_the_cache_grows(page_size, window_left, mode):
    """FlashInfer's decode loop: one graph captured per batch size, then every step appends a
    token to each request, plan()s and replays. sm80's cuda_graph plans keep their launch
    as the cache grows (arrays at fixed addresses with the page indices last, a split count
    that fills one wave whatever the lengths, a window kept while the requests are shorter
    than it), so every replay computes that step's problem, also past many 64-entry steps
    of the page-index array, with split-KV (batch 1) and as requests outgrow the window.
    "index buffers": vLLM's pattern, FlashInfer's index buffers given to the constructor;
    plan() writes them, and the runs read the page indices from the caller's buffer, so the
    int workspace holds no copy of them (it stays far below the buffer's 12 MB) and is never
    replaced as the cache grows. "one buffer":
    arrays and split-KV partials share the float workspace (the partials at its end)."""
    buffers = mode == "index buffers"
    require("sm80", "paged_decode", page_size=page_size)
    rng = np.random.default_rng(21)
    steps, grow = 12, 40  # keys appended to every request between checked steps
    for lengths in ([33, 1, 200, 64, 17], [900]):
        final = Ragged(rng, [1] * len(lengths), [n + steps * grow for n in lengths], 8, 2, 128)
        # Every step's cache is a prefix of the final one's, in pages that do not move.
        full = Paged(rng, final, page_size)
        k_pages, v_pages = to_gpu(full.k_pages), to_gpu(full.v_pages)
        q = to_gpu(final.q)
        out = torch.empty_like(q)
        ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        n = len(lengths)
        bufs = [torch.full((size,), -1, dtype=torch.int32, device="cuda")
                for size in (n + 1, 3 << 20, n)] if buffers else [None] * 3
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(
            DLPackOnly(ws) if mode == "one buffer" else ws, "NHD", True, False, *bufs,
            backend="sm80")

        def plan_step(step):
            lens = [n + step * grow for n in lengths]
            indptr, indices, last = prefix_pages(full, lens)
            w.plan(indptr, indices, last, 8, 2, 128, page_size, q_data_type=DTYPE,
                   num_pages=full.num_pages, window_left=window_left)
            if mode == "one buffer":
                torch.cuda.synchronize()  # plan()'s copies ran on the legacy stream
                assert w._plan_buffer is None
            if buffers:
                assert torch.equal(bufs[0].cpu(), torch.from_numpy(indptr))
                assert torch.equal(bufs[1][:len(indices)].cpu(), torch.from_numpy(indices))
                assert torch.equal(bufs[2].cpu(), torch.from_numpy(last))
            return lens

        graph, stream = capture(lambda: plan_step(0), lambda: w.run(q, (k_pages, v_pages), out=out))
        splits = w.last_run_info.num_kv_splits
        arrays = w._plan_buffer
        if buffers:
            assert arrays.numel() < flashband.batch_plan_bytes(n, n, 8, 128, "cuda", 3 << 20, 0)
        replay_steps(graph, stream, plan_step, steps, out,
                     lambda lens: reference(final, lens, window_left))
        assert w._plan_buffer is arrays
        assert len(lengths) > 1 or splits > 1  # batch 1 exercises split-KV under replay


def test_sm80_cuda_graph_replays_chunked_prefill_as_the_cache_grows():
    """Chunked prefill under one graph: every step a 64-query causal chunk per request over
    a cache that grew by the previous chunk. The chunks keep the work list's length, and
    sm80's use_cuda_graph plans keep the rest of the launch, so each replay computes that
    step's problem (bottom-right causal over the grown cache)."""
    require("sm80", "paged_prefill")
    rng = np.random.default_rng(31)
    chunk, steps, start = 64, 8, [100, 640]
    final = Ragged(rng, [chunk] * 2, [n + steps * chunk for n in start], 8, 2, 128)
    full = Paged(rng, final, 16)
    k_pages, v_pages = to_gpu(full.k_pages), to_gpu(full.v_pages)
    q = to_gpu(final.q)
    out = torch.empty_like(q)
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", True, backend="sm80")

    def plan_step(step):
        lens = [n + step * chunk for n in start]
        indptr, indices, last = prefix_pages(full, lens)
        w.plan(final.qo_indptr, indptr, indices, last, 8, 2, 128, 16, causal=True,
               q_data_type=DTYPE, num_pages=full.num_pages)
        return lens

    graph, stream = capture(lambda: plan_step(0), lambda: w.run(q, (k_pages, v_pages), out=out))
    replay_steps(graph, stream, plan_step, steps, out,
                 lambda lens: reference(final, lens, causal=True))


@pytest.mark.parametrize("backend", BACKENDS)
def test_wrappers_sharing_a_workspace(backend):
    """FlashInfer's wrappers share one float workspace: it holds only scratch, so runs of
    wrappers planned in any order compute their own problems, also with split-KV scratch
    and a CUDA graph that captured one of them replayed after the others ran."""
    require(backend, "paged_decode")
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    # Long requests among short ones: the GPU backends split their KV (scratch in ws).
    problems = []
    for seed in (4, 5, 6):
        rng = np.random.default_rng(seed)
        batch = Ragged(rng, [1] * 3, [3000 + 500 * seed, 17, 900], 8, 2, 128)
        problems.append((batch, Paged(rng, batch, 16)))
    wrappers = [flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend=backend)
                for _ in problems]

    def plan(w, paged):
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16,
               q_data_type=DTYPE, num_pages=paged.num_pages)

    def inputs(batch, paged):
        return to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages))

    def check(out, batch):
        torch.cuda.synchronize()
        assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)

    for w, (batch, paged) in zip(wrappers, problems):
        plan(w, paged)
    for i in (0, 2, 1, 0):
        check(wrappers[i].run(*inputs(*problems[i])), problems[i][0])

    # A graph captures wrapper 0's run; the others plan and run between its replays.
    batch, paged = problems[0]
    q, cache = inputs(batch, paged)
    out = torch.empty_like(q)
    graph, stream = capture(lambda: plan(wrappers[0], paged), lambda: wrappers[0].run(q, cache, out=out))
    with torch.cuda.stream(stream):
        for i in (1, 2):
            plan(wrappers[i], problems[i][1])
            check(wrappers[i].run(*inputs(*problems[i])), problems[i][0])
        out.fill_(float("nan"))
        graph.replay()
    check(out, batch)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wrappers_sharing_an_int_workspace(backend):
    """A plan's arrays live in the int workspace: a run whose arrays another wrapper's plan
    wrote over raises instead of reading them, and a wrapper may not plan over arrays that a
    CUDA graph captured for another."""
    require(backend, "paged_decode")
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    shared = torch.empty(8 << 20, dtype=torch.uint8, device="cuda")
    problems = [decode_problem(4), decode_problem(5)]
    wrappers = [flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend=backend)
                for _ in problems]
    for w in wrappers:
        w.reset_workspace_buffer(ws, shared)

    def plan(w, paged):
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16,
               q_data_type=DTYPE, num_pages=paged.num_pages)

    def run(w, batch, paged, out=None):
        return w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)), out=out)

    for w, (batch, paged) in zip(wrappers, problems):
        plan(w, paged)
    with pytest.raises(flashband.InvalidArgumentError, match="workspace"):
        run(wrappers[0], *problems[0])
    out = run(wrappers[1], *problems[1])
    torch.cuda.synchronize()
    assert_out(out.double().cpu().numpy(), reference(problems[1][0]), DTYPE)

    # A graph captures wrapper 0's run; wrapper 1 may no longer plan over its arrays.
    batch, paged = problems[0]
    q, cache = to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages))
    out = torch.empty_like(q)
    graph, stream = capture(lambda: plan(wrappers[0], paged), lambda: wrappers[0].run(q, cache, out=out))
    with pytest.raises(flashband.InvalidArgumentError, match="CUDA graph"):
        plan(wrappers[1], problems[1][1])
    with torch.cuda.stream(stream):
        out.fill_(float("nan"))
        graph.replay()
    torch.cuda.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_takes_the_current_stream(backend):
    """FlashInfer's pattern: plan() outside the capture, run() inside torch.cuda.graph (its
    capture stream waits on the current one), and an eager run on a side stream that waits
    on the plan's. run() launches on the stream current at run(), so the graph holds it."""
    require(backend, "paged_decode")
    batch, paged = decode_problem(6)
    q, cache = to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages))
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True, backend=backend)
    w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16, q_data_type=DTYPE,
           num_pages=paged.num_pages)
    out = torch.full_like(q, float("nan"))
    w.run(q, cache, out=out)  # warm-up, as engines do before capturing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        w.run(q, cache, out=out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        eager = w.run(q, cache)
    side.synchronize()
    assert_out(eager.double().cpu().numpy(), reference(batch), DTYPE)


def test_a_refused_plan_keeps_the_int_workspace():
    """A plan that would outgrow the wrapper's own int workspace but is refused leaves the
    previous plan's buffer, and so its arrays, alive: the next run computes the previous
    problem. reset_workspace_buffer drops the buffer."""
    require("auto", "paged_decode")
    batch, paged = decode_problem(2)
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws)
    w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16, q_data_type=DTYPE,
           num_pages=paged.num_pages)
    kept = w._plan_buffer
    assert kept is not None and kept.numel() >= 8 << 20
    many = np.zeros(3 << 20, np.int32)  # 12 MB of page indices: past the buffer
    with pytest.raises(flashband.InvalidArgumentError, match="last_page_len"):
        w.plan(np.array([0, len(many)], np.int32), many, np.array([0], np.int32), 8, 2, 128, 16,
               q_data_type=DTYPE, num_pages=paged.num_pages)
    assert w._plan_buffer is kept
    out = w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)))
    torch.cuda.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)
    w.reset_workspace_buffer(ws)
    assert w._plan_buffer is None


def test_auto_decode_takes_sm80():
    """auto's paged decode: sm80, with or without use_cuda_graph (no cuDNN graph to build per
    batch size; under graphs sm80's plans replay as the caches grow, where cuDNN's raise at
    each power of two). select_backend says the same as the wrappers do."""
    require("sm80", "paged_decode")
    require("cudnn", "paged_decode")
    batch, paged = decode_problem(3)
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    for graph, expected in ((False, "sm80"), (True, "sm80")):
        assert flashband.select_backend("paged_decode", dtype=DTYPE, head_dim=128, num_qo_heads=8,
                                        num_kv_heads=2, page_size=16, use_cuda_graph=graph) == expected
        w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=graph)
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16, q_data_type=DTYPE,
               num_pages=paged.num_pages)
        out = w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)))
        torch.cuda.synchronize()
        assert w.last_run_info.backend == expected
        assert "chose sm80" in w.last_run_info.selection, w.last_run_info.selection
        assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)
        # A use_cuda_graph wrapper keeps auto's first choice; an eager one selects again.
        w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16, q_data_type=DTYPE,
               num_pages=paged.num_pages)
        w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)))
        kept = w.last_run_info.selection.startswith("auto: kept sm80")
        assert kept == graph, w.last_run_info.selection


def test_single_prefill_on_a_side_stream():
    require("auto", "single_prefill", page_size=0)
    rng = np.random.default_rng(3)
    batch = Ragged(rng, [40], [90], 8, 2, 128)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        q, k, v = to_gpu(batch.q), to_gpu(batch.k), to_gpu(batch.v)
        out = flashband.single_prefill_with_kv_cache(q, k, v)
    side.synchronize()
    assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)


@pytest.mark.parametrize("backend", ["sm80", "sm90", "cudnn"])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "use_cuda_graph"])
def test_plan_does_not_wait_for_the_gpu(backend, graph):
    """A serving loop plans step n+1 while the GPU still runs step n: plan() with host index
    arrays must not wait for the stream's queued work (its copies go through pinned staging,
    and FlashInfer's index buffers are written with non-blocking copies). The stream is held
    busy by a long sleep kernel while two wrappers plan different problems: plan() must
    return while the sleep still runs, and neither copy may overwrite the other's staged
    bytes before it ran, so each run after them computes its own plan's problem."""
    op = "paged_decode" if backend != "sm90" else "paged_prefill"
    require(backend, op)

    def wrapper_for(seed):
        batch, paged = decode_problem(seed)
        n = batch.batch
        ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        bufs = ([torch.zeros(size, dtype=torch.int32, device="cuda")
                 for size in (n + 1, len(paged.indices) + 64, n)] if graph else [None] * 3)
        if op == "paged_decode":
            w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", graph, False, *bufs,
                                                             backend=backend)
            plan = lambda: w.plan(paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16,
                                  q_data_type=DTYPE, num_pages=paged.num_pages)
        else:
            qo_buf = torch.zeros(n + 1, dtype=torch.int32, device="cuda") if graph else None
            w = flashband.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", graph, qo_buf, *bufs,
                                                              backend=backend)
            plan = lambda: w.plan(batch.qo_indptr, paged.indptr, paged.indices,
                                  paged.last_page_len, 8, 2, 128, 16, q_data_type=DTYPE,
                                  num_pages=paged.num_pages)
        run = lambda: w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)))
        return batch, plan, run

    problems = [wrapper_for(seed) for seed in (5, 6)]
    for _, plan, run in problems:  # a first plan may allocate and (cudnn) build its graph
        plan()
        run()
    torch.cuda.synchronize()
    busy = torch.cuda.Event()
    torch.cuda._sleep(1 << 30)  # about half a second
    busy.record()
    for _, plan, _ in problems:
        plan()
    assert not busy.query(), "plan() waited for the GPU's queued work"
    for batch, _, run in problems:
        out = run()
        torch.cuda.synchronize()
        assert_out(out.double().cpu().numpy(), reference(batch), DTYPE)


def test_graph_replays_read_the_callers_page_index_buffer():
    """FlashInfer's CUDA-graph contract, vLLM's way: the engine rewrites the page table in
    the index buffers it gave the wrapper, in place, and replays; sm80's kernels read the
    caller's page-index buffer at every replay (PagedIndex::device_indices), so the replay
    computes the new page table without a plan(). fast_decode_plan (the function engines
    patch in) plans from host indptr and lengths only. An index outside the cache, written
    in place, is never dereferenced: the replay records it and check() raises it once. The
    wrapper holds no copy of the page indices, so its int workspace does not grow with the
    buffer (SGLang shares one max-batch x max-context buffer across wrappers)."""
    require("sm80", "paged_decode")
    rng = np.random.default_rng(41)
    lengths = [33, 1, 200, 64, 17]
    a = Ragged(rng, [1] * 5, lengths, 8, 2, 128)
    b = Ragged(rng, [1] * 5, lengths, 8, 2, 128)
    b.q = a.q  # one q: the two problems differ in their caches only
    pa, pb = Paged(rng, a, 16), Paged(rng, b, 16)
    pool = pa.num_pages + pb.num_pages
    k = to_gpu(np.concatenate([pa.k_pages, pb.k_pages]))
    v = to_gpu(np.concatenate([pa.v_pages, pb.v_pages]))
    indices_b = (pb.indices + pa.num_pages).astype(np.int32)
    q = to_gpu(a.q)
    out = torch.empty_like(q)
    n = a.batch
    room = 1 << 24  # a shared buffer (64 MB) far larger than any plan needs
    bufs = [torch.zeros(n + 1, dtype=torch.int32, device="cuda"),
            torch.zeros(room, dtype=torch.int32, device="cuda"),
            torch.zeros(n, dtype=torch.int32, device="cuda")]
    ws = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", True, False, *bufs, backend="auto")
    plan_a = lambda: w.plan(pa.indptr, pa.indices, pa.last_page_len, 8, 2, 128, 16,
                            q_data_type=DTYPE, num_pages=pool)
    graph, stream = capture(plan_a, lambda: w.run(q, (k, v), out=out))
    assert w.last_run_info.backend == "sm80"
    assert w._plan_buffer.numel() < room * 4 // 2, "the int workspace is sized for the page-index buffer"

    def replay(expected):
        with torch.cuda.stream(stream):
            out.fill_(float("nan"))
            graph.replay()
        torch.cuda.synchronize()
        assert_out(out.double().cpu().numpy(), reference(expected), DTYPE)

    replay(a)
    bufs[1][:len(indices_b)].copy_(torch.from_numpy(indices_b))  # vLLM: in place, no plan()
    replay(b)
    # fast_decode_plan: host indptr and lengths, the page table already in the buffer.
    bufs[1][:len(pa.indices)].copy_(torch.from_numpy(pa.indices))
    with torch.cuda.stream(stream):
        flashband.fast_decode_plan(w, torch.from_numpy(pa.indptr).cuda(), bufs[1][:len(pa.indices)],
                                   torch.from_numpy(pa.last_page_len).cuda(), 8, 2, 128, 16,
                                   q_data_type=DTYPE, num_pages=pool,
                                   global_override_indptr_cpu=torch.from_numpy(pa.indptr))
    replay(a)
    # A bad index written in place: recorded by the replay, raised once by check().
    bufs[1][3] = pool + 7
    with torch.cuda.stream(stream):
        graph.replay()
    torch.cuda.synchronize()
    with pytest.raises(flashband.InvalidArgumentError, match=r"paged_kv_indices: a run read entry 3 .* = %d" % (pool + 7)):
        w.check()
    w.check()  # reported once
    bufs[1][3] = pa.indices[3]
    replay(a)


@pytest.mark.parametrize("backend", ["sm80", "auto"])
def test_workspace_size_is_enough_for_the_plan(backend):
    """FlashInfer 0.7's workspace_size(): workspaces of exactly the sizes it gives serve the
    plan it describes (GPU test: written on a host without one)."""
    batch, paged = decode_problem(seed=4)
    if not flashband.supports("paged_decode", backend=backend, dtype=DTYPE, head_dim=128,
                              num_qo_heads=8, num_kv_heads=2, page_size=16):
        pytest.skip(f"{backend} not built or not for this GPU")
    w = flashband.BatchDecodeWithPagedKVCacheWrapper(torch.empty(1 << 20, dtype=torch.uint8, device="cuda"),
                                                     backend=backend)
    args = (paged.indptr, paged.indices, paged.last_page_len, 8, 2, 128, 16)
    float_bytes, int_bytes = w.workspace_size(*args, q_data_type=DTYPE)
    assert int_bytes > 0
    w.reset_workspace_buffer(torch.empty(max(float_bytes, 16), dtype=torch.uint8, device="cuda"),
                             torch.empty(int_bytes, dtype=torch.uint8, device="cuda"))
    w.plan(*args, q_data_type=DTYPE)
    out = w.run(to_gpu(batch.q), (to_gpu(paged.k_pages), to_gpu(paged.v_pages)))
    ref, _ = batch.reference(attention_np, batch.q, batch.k, batch.v)
    assert_out(out.float().cpu().numpy().astype(np.float64), ref, DTYPE)
