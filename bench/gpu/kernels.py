#!/usr/bin/env python3
"""Time the kernels of transformer training on one CUDA GPU, for shardlab.

    python3 bench/gpu/kernels.py OUTDIR [SECTIONS]
    shardlab calibrate OUTDIR/calib.csv --topology TOPOLOGY.json

SECTIONS is a comma-separated list (default: triad,gemm,kernels,attention,
power,steps; about 2 minutes on an H100). Files written into OUTDIR:

  calib.csv        `shardlab calibrate`'s table (docs/cost-models.md):
                   triad: STREAM's triad at 48 MB to 6.4 GB (memory rows);
                   gemm: ~500 bf16/fp16 GEMMs (a grid, two sweeps of one
                   dimension, skinny ones, and the linears of published models
                   at their tensor-parallel degrees as forward, data-gradient
                   and weight-gradient GEMMs), each timed alone just after a
                   streaming kernel, as GEMMs run inside a training step.
  kernels.csv      kernels: the memory-bound kernels of a transformer layer
                   (norms, activations, softmax, dropout, loss, embedding),
                   forward and backward, beside the bytes a perfect kernel
                   would move.
  classes.csv      kernels: the same by shardlab's kernel class, with the
                   op's bytes as the estimate counts them:
                   shardlab calibrate OUT/classes.csv --topology FILE
                   gives the device's kernel_efficiency.
  attention.csv    attention: fused causal attention
                   (torch's scaled_dot_product_attention), forward, backward.
  fp8.csv          fp8 (not by default): BF16 against FP8 GEMMs of the same
                   shapes (torch._scaled_mm: fast and split accumulation, E5M2 x
                   E4M3) and the amax and cast kernels FP8 training adds.
  host.csv         host (not by default): pinned and pageable copies between
                   host and device, each way and both at once, and Adam's step
                   on the CPU (optimizer offload's two costs).
  power.csv        power: GEMMs in a burst after idle, back to back for 3 s
                   (with the SM clock and board power read through NVML), and
                   each just after a streaming kernel.
  steps.json       steps: forward + backward and optimizer times of the small
                   LLaMA models whose config.json files lie beside this script
                   (Hugging Face transformers, eager, bf16, SDPA attention),
                   with the first one's kernels profiled by name.
  layers.json      layers (not by default): forward + backward of one GPT
                   layer's tensor-parallel slice (GPT-3 175B and a 162.2B GPT
                   at TP 8, the 162.2B at TP 2, a 4096-wide layer at TP 1),
                   unfused, with Megatron-LM's fusions (torch.compile) and
                   with fused attention, kernels profiled by name;
                   bench/gpu/compare_layers.py puts them beside the estimate.
  calib-graph.csv, calib-eager.csv
                   graph (not by default): copies, triads and the GEMMs timed
                   back to back, replayed from a CUDA graph or launched from
                   Python.
  env.txt          the device, clocks and software versions.

Nothing in shardlab's build or tests runs this; it needs PyTorch and a GPU.
Times are medians over repetitions after warm-up, timed with CUDA events.
Back-to-back timings rotate among copies of the inputs spanning 256 MiB, so
that kernels read their operands from device memory rather than a cache that
repeated runs would warm. Inputs are random (never zeros).
"""
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
SECTIONS = (sys.argv[2] if len(sys.argv) > 2 else
            "triad,gemm,kernels,attention,power,steps").split(",")
HERE = os.path.dirname(os.path.abspath(__file__))
DEV = torch.device("cuda")
ROTATE_BYTES = 256 << 20
TARGET_S = 0.010
CAPTURE = None
ROUNDS = 3
T0 = time.time()


def log(*args):
    print("[%6.1f s]" % (time.time() - T0), *args, flush=True)


def event_pair(fn, before=None):
    """CUDA events around fn(), after before() if given: (start, stop)."""
    if before:
        before()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    fn()
    e1.record()
    return e0, e1


def seconds(pair):
    """An event pair's elapsed time, in seconds (after a synchronisation)."""
    return pair[0].elapsed_time(pair[1]) * 1e-3


def median_s(pairs):
    """The median of event pairs' elapsed times, in seconds."""
    torch.cuda.synchronize()
    return statistics.median(seconds(p) for p in pairs)


def elapsed(fn, reps):
    """Seconds of reps back-to-back calls of fn."""
    pair = event_pair(lambda: [fn() for _ in range(reps)])
    torch.cuda.synchronize()
    return seconds(pair)


def time_eager(calls):
    """Median seconds per call of a list of callables run round-robin."""
    n = len(calls)
    state = [0]

    def one():
        calls[state[0] % n]()
        state[0] += 1

    for _ in range(max(3, n)):
        one()
    torch.cuda.synchronize()
    t = elapsed(one, max(n, 3)) / max(n, 3)
    reps = int(min(5000, max(n, 3, TARGET_S / max(t, 1e-7))))
    return statistics.median(elapsed(one, reps) / reps for _ in range(5))


def time_graph(calls):
    """Median seconds per call, the calls captured in one CUDA graph."""
    n = len(calls)
    t = time_eager(calls[: max(1, min(n, 3))]) if n else 0
    reps = int(min(2000, max(n, 4, TARGET_S / max(t, 1e-7))))
    global CAPTURE
    if CAPTURE is None:
        CAPTURE = torch.cuda.Stream()
    stream = CAPTURE
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for i in range(reps):
            calls[i % n]()
    graph.replay()
    torch.cuda.synchronize()
    return statistics.median(elapsed(graph.replay, 1) / reps for _ in range(5))


def copies(nbytes):
    return int(max(1, min(64, math.ceil(ROTATE_BYTES / max(nbytes, 1)))))


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def gemm_calls(m, n, k, batch, dtype, role, sets=None):
    """Callables computing one GEMM of the role's layout on rotating inputs.

    role "fwd": Y[m,n] = X[m,k] W[n,k]^T (a Linear's forward); "dgrad":
    dX[m,n] = dY[m,k] W[k,n]; "wgrad": dW[m,n] = dY[k,m]^T X[k,n]; "nn":
    plain A[m,k] B[k,n]. batch > 1: torch.bmm of that many.
    """
    dt = DTYPES[dtype]
    el = torch.tensor([], dtype=dt).element_size()
    per = batch * (m * k + k * n + m * n) * el
    calls = []
    for _ in range(sets or copies(per)):
        if batch > 1:
            a = torch.randn(batch, m, k, device=DEV, dtype=dt)
            b = torch.randn(batch, k, n, device=DEV, dtype=dt)
            c = torch.empty(batch, m, n, device=DEV, dtype=dt)
            calls.append(lambda a=a, b=b, c=c: torch.bmm(a, b, out=c))
            continue
        if role == "fwd":
            a = torch.randn(m, k, device=DEV, dtype=dt)
            b = torch.randn(n, k, device=DEV, dtype=dt).t()
        elif role == "wgrad":
            a = torch.randn(k, m, device=DEV, dtype=dt).t()
            b = torch.randn(k, n, device=DEV, dtype=dt)
        else:
            a = torch.randn(m, k, device=DEV, dtype=dt)
            b = torch.randn(k, n, device=DEV, dtype=dt)
        c = torch.empty(m, n, device=DEV, dtype=dt)
        calls.append(lambda a=a, b=b, c=c: torch.mm(a, b, out=c))
    return calls, per


def gemm_shapes():
    """(label, m, n, k, batch, dtype, role) to time."""
    rows = []
    dims = [256, 512, 1024, 2048, 4096, 8192]
    for m in dims:
        for n in dims:
            for k in dims:
                rows.append(("grid", m, n, k, 1, "bf16", "nn"))
    for x in range(1024, 8192 + 1, 128):
        rows.append(("waves m=n, k 4096", x, x, 4096, 1, "bf16", "nn"))
    for x in range(1024, 8192 + 1, 128):
        rows.append(("waves n, m=k 8192", 8192, x, 8192, 1, "bf16", "nn"))
    for m in [1, 2, 4, 8, 16, 32, 64, 128]:
        for nk in [4096, 8192]:
            rows.append(("skinny", m, nk, nk, 1, "bf16", "nn"))
    for d in [1024, 4096, 8192]:
        for e in [1024, 4096, 8192]:
            for f in [1024, 4096, 8192]:
                rows.append(("fp16 grid", d, e, f, 1, "fp16", "nn"))
    # The linears of shipped and published models at their tensor-parallel
    # degrees, as forward, data-gradient and weight-gradient GEMMs.
    models = [
        # name, tokens, hidden, q out, kv out, ffn, vocab, tps
        ("llama2-70b s4096", 4096, 8192, 8192, 1024, 28672, 32000, [4, 8]),
        ("llama2-7b s4096", 4096, 4096, 4096, 4096, 11008, 32000, [1, 8]),
        ("mistral-7b s4096 mb4", 16384, 4096, 4096, 1024, 14336, 32000, [8]),
        ("gpt3-175b s2048", 2048, 12288, 12288, 12288, 49152, 51200, [8]),
        ("gpt 8.3b s1024 mb8", 8192, 3072, 3072, 3072, 12288, 51200, [8]),
    ]
    for name, tok, h, qo, kvo, ffn, vocab, tps in models:
        for tp in tps:
            lin = [("q", h, qo // tp), ("kv", h, max(1, kvo // tp)),
                   ("out", qo // tp, h), ("up", h, ffn // tp),
                   ("down", ffn // tp, h), ("head", h, vocab // tp)]
            for lname, fin, fout in lin:
                label = "%s tp%d %s" % (name, tp, lname)
                rows.append((label, tok, fout, fin, 1, "bf16", "fwd"))
                rows.append((label, tok, fin, fout, 1, "bf16", "dgrad"))
                rows.append((label, fout, fin, tok, 1, "bf16", "wgrad"))
    # Unfused attention's batched GEMMs (Megatron's scores and context).
    for name, b, s, d in [("gpt3 tp8 a12", 12, 2048, 128),
                          ("gpt 8.3b tp8 mb8 a4", 32, 1024, 96),
                          ("llama2-7b tp8 a4", 4, 4096, 128)]:
        rows.append(("%s scores" % name, s, s, d, b, "bf16", "nn"))
        rows.append(("%s context" % name, s, d, s, b, "bf16", "nn"))
    return rows


def write_gemm_rows(f, rows, times):
    """The table's GEMM rows, a comment line before each label's first."""
    last = None
    for (label, m, n, k, batch, dtype, _), t in zip(rows, times):
        if t is None:
            continue
        if label != last:
            f.write("# %s\n" % label)
            last = label
        f.write("gemm,%d,%d,%d,%d,%s,,%.6g\n" % (m, n, k, batch, dtype, t))


def log_gemm(prefix, i, rows, t):
    label, m, n, k, batch = rows[i][:5]
    log("%sgemm %d/%d %s %dx%dx%d b%d: %.2f us, %.0f TFLOP/s"
        % (prefix, i, len(rows), label, m, n, k, batch, t * 1e6, 2.0 * m * n * k * batch / t / 1e12))


def section_gemm(fg, fe):
    rows = gemm_shapes()
    log("gemm: %d shapes" % len(rows))
    tgs, tes = [None] * len(rows), [None] * len(rows)
    for i, (label, m, n, k, batch, dtype, role) in enumerate(rows):
        try:
            calls, _ = gemm_calls(m, n, k, batch, dtype, role)
            tgs[i] = time_graph(calls)
            small = m * n * k * batch <= (1 << 33)
            tes[i] = time_eager(calls) if small else tgs[i]
            del calls
        except Exception as exc:  # keep going: one shape must not lose the rest
            log("gemm %s %dx%dx%d failed: %s" % (label, m, n, k, exc))
            continue
        if i % 40 == 0:
            log_gemm("", i, rows, tgs[i])
    write_gemm_rows(fg, rows, tgs)
    write_gemm_rows(fe, rows, tes)
    torch.cuda.empty_cache()


def section_gemm_interleaved(f):
    """Each GEMM timed alone, just after a streaming kernel, as in a training step.

    A training step alternates GEMMs with memory-bound kernels (norms,
    activations, softmax), which draw less power; GEMMs replayed back to back
    for minutes run into the board's power limit instead. The streaming
    kernel also evicts the L2 cache, so operands come from device memory.
    """
    bf = torch.bfloat16
    fx = torch.randn(1 << 26, device=DEV, dtype=bf)
    fz = torch.randn(1 << 26, device=DEV, dtype=bf)
    fy = torch.empty_like(fx)
    f.write("# GEMM rows: torch.mm into a preallocated output, each GEMM timed alone with\n"
            "# CUDA events just after a streaming kernel that evicts the L2 cache, as in a\n"
            "# training step (back-to-back GEMMs run into the power limit; section power);\n"
            "# the median of 21, the lowest of %d such rounds over the whole table (a\n"
            "# transient slow phase, a clock change, falls on different shapes in each).\n"
            "# Comment lines name the shapes' source.\n" % ROUNDS)
    rows = gemm_shapes()
    best = [None] * len(rows)
    log("gemm after a streaming kernel: %d shapes, %d rounds" % (len(rows), ROUNDS))
    stream = lambda: torch.add(fx, fz, alpha=0.5, out=fy)
    for rnd in range(ROUNDS):
        for i, (label, m, n, k, batch, dtype, role) in enumerate(rows):
            try:
                call = gemm_calls(m, n, k, batch, dtype, role, sets=1)[0][0]
                for _ in range(3):
                    call()
                t = median_s([event_pair(call, stream) for _ in range(21)])
                del call
            except Exception as exc:
                log("gemm %s %dx%dx%d failed: %s" % (label, m, n, k, exc))
                continue
            best[i] = t if best[i] is None else min(best[i], t)
            if i % 100 == 0:
                log_gemm("round %d, " % rnd, i, rows, t)
    write_gemm_rows(f, rows, best)
    del fx, fy, fz
    torch.cuda.empty_cache()


def section_memory(fg, fe):
    fg.write("# streaming copy, y.copy_(x): bytes read plus written\n")
    fe.write("# streaming copy, y.copy_(x): bytes read plus written\n")
    sizes = sorted({int(2 ** (e / 2.0)) // 16 * 16 for e in range(24, 65)})
    for nbytes in sizes:
        try:
            n = nbytes // 2
            calls = []
            for _ in range(copies(2 * nbytes)):
                x = torch.randn(n, device=DEV, dtype=torch.bfloat16)
                y = torch.empty_like(x)
                calls.append(lambda x=x, y=y: y.copy_(x))
            tg = time_graph(calls)
            te = time_eager(calls)
            del calls
        except Exception as exc:
            log("copy %d failed: %s" % (nbytes, exc))
            continue
        for f, t in ((fg, tg), (fe, te)):
            f.write("memory,,,,,,%d,%.6g\n" % (2 * nbytes, t))
        log("copy %d B: %.2f us, %.0f GB/s" % (2 * nbytes, tg * 1e6, 2 * nbytes / tg / 1e9))
    fg.write("# triad, c = a + s * b: three streams\n")
    fe.write("# triad, c = a + s * b: three streams\n")
    for e in [20, 24, 26, 28, 30, 31]:
        t = triad_seconds(1 << e, eager_too=True)
        if t:
            for f, x in ((fg, t[0]), (fe, t[1])):
                f.write("memory,,,,,,%d,%.6g\n" % (3 << e, x))
    torch.cuda.empty_cache()


def triad_seconds(nbytes, eager_too=False):
    """c = a + 0.5 b over bf16 vectors of nbytes each: (graph s, eager s)."""
    try:
        n = nbytes // 2
        calls = []
        for _ in range(copies(3 * nbytes)):
            a = torch.randn(n, device=DEV, dtype=torch.bfloat16)
            b = torch.randn(n, device=DEV, dtype=torch.bfloat16)
            c = torch.empty_like(a)
            calls.append(lambda a=a, b=b, c=c: torch.add(a, b, alpha=0.5, out=c))
        tg = time_graph(calls)
        te = time_eager(calls) if eager_too else None
        del calls
    except Exception as exc:
        log("triad %d failed: %s" % (nbytes, exc))
        return None
    log("triad %d B: %.2f us, %.0f GB/s" % (3 * nbytes, tg * 1e6, 3 * nbytes / tg / 1e9))
    return tg, te


def section_triad(f):
    """The calibration table's memory rows: STREAM's triad, large enough that
    the per-kernel overhead is a few percent at most."""
    f.write("# Memory rows: STREAM's triad c = a + 0.5 b over bf16 vectors (bytes: three\n"
            "# streams), each time the median of 5 batches replayed back to back from a\n"
            "# CUDA graph (streaming kernels stay well under the board's power limit).\n")
    for e in [24, 26, 28, 30, 31]:
        t = triad_seconds(1 << e)
        if t:
            f.write("memory,,,,,,%d,%.6g\n" % (3 << e, t[0]))
    torch.cuda.empty_cache()


def grad_calls(make, nsets):
    """Forward-only and forward+backward callables of make() -> (fn, inputs)."""
    fwd, both = [], []
    for _ in range(nsets):
        fn, inputs, gout = make()
        fwd.append(lambda fn=fn, inputs=inputs: fn(*inputs))
        both.append(lambda fn=fn, inputs=inputs, gout=gout: torch.autograd.grad(
            fn(*inputs), [t for t in inputs if t.requires_grad], gout))
    return fwd, both


def fwd_bwd_seconds(make, nsets):
    """Forward seconds (no autograd) and backward seconds (forward + backward
    less the forward) of make()'s function on nsets copies of its inputs."""
    fwd, both = grad_calls(make, nsets)
    with torch.no_grad():
        tf = time_eager(fwd)
    return tf, time_eager(both) - tf


def section_kernels(f):
    f.write("name,shape,dtype,pass,bytes,seconds,GBps\n")
    bf = torch.bfloat16

    def rnd(*shape, dt=bf, grad=True):
        return torch.randn(*shape, device=DEV, dtype=dt).requires_grad_(grad)

    el = 2
    cases = []
    for m, h in [(8192, 4096), (4096, 8192), (16384, 4096)]:
        sz = m * h * el
        cases.append(("layer_norm", "%dx%d" % (m, h), sz * 2, sz * 3,
                      lambda m=m, h=h: (lambda x, w, b: F.layer_norm(x, (h,), w, b),
                                        [rnd(m, h), rnd(h), rnd(h)], rnd(m, h, grad=False))))
        cases.append(("rms_norm", "%dx%d" % (m, h), sz * 2, sz * 3,
                      lambda m=m, h=h: (lambda x, w: F.rms_norm(x, (h,), w),
                                        [rnd(m, h), rnd(h)], rnd(m, h, grad=False))))
        # a sum's backward hands the gradient on: no kernel, no backward row
        cases.append(("add", "%dx%d" % (m, h), sz * 3, 0,
                      lambda m=m, h=h: (lambda x, y: x + y,
                                        [rnd(m, h), rnd(m, h)], rnd(m, h, grad=False))))
        cases.append(("dropout p0.1", "%dx%d" % (m, h), sz * 2 + m * h, sz * 2 + m * h,
                      lambda m=m, h=h: (lambda x: F.dropout(x, 0.1, True),
                                        [rnd(m, h)], rnd(m, h, grad=False))))
    for m, f4 in [(8192, 16384), (4096, 28672 // 8)]:
        sz = m * f4 * el
        cases.append(("gelu tanh", "%dx%d" % (m, f4), sz * 2, sz * 3,
                      lambda m=m, f4=f4: (lambda x: F.gelu(x, approximate="tanh"),
                                          [rnd(m, f4)], rnd(m, f4, grad=False))))
        cases.append(("silu*mul", "%dx%d" % (m, f4), sz * 3, sz * 5,
                      lambda m=m, f4=f4: (lambda a, b: F.silu(a) * b,
                                          [rnd(m, f4), rnd(m, f4)], rnd(m, f4, grad=False))))
    for b, s in [(32, 1024), (12, 2048)]:
        sz = b * s * s * el
        cases.append(("softmax", "%dx%dx%d" % (b, s, s), sz * 2, sz * 3,
                      lambda b=b, s=s: (lambda x: F.softmax(x, -1),
                                        [rnd(b, s, s)], rnd(b, s, s, grad=False))))
    for m, v in [(8192, 32000), (2048, 51200 // 8)]:
        sz = m * v * el
        cases.append(("cross_entropy", "%dx%d" % (m, v), sz + 8 * m, sz * 2 + 8 * m,
                      lambda m=m, v=v: (lambda x, y: F.cross_entropy(x, y),
                                        [rnd(m, v), torch.randint(0, v, (m,), device=DEV)],
                                        torch.ones((), device=DEV, dtype=bf))))
    for m, v, h in [(8192, 32000, 4096)]:
        cases.append(("embedding", "%d of %dx%d" % (m, v, h), m * h * el + 8 * m,
                      m * h * el + 8 * m + v * h * el * 2,
                      lambda m=m, v=v, h=h: (lambda i, w: F.embedding(i, w),
                                             [torch.randint(0, v, (m,), device=DEV), rnd(v, h)],
                                             rnd(m, h, grad=False))))
    with open(os.path.join(OUT, "classes.csv"), "w") as fc:
        fc.write("# The kernels of section kernels by the class shardlab prices them in\n"
                 "# (docs/cost-models.md, \"Memory-bound kernels by class\"): bytes are the\n"
                 "# op's as the estimate counts them (its input and output; the loss: logits\n"
                 "# and labels), for either pass. For shardlab calibrate with --topology.\n"
                 "kind,dtype,pass,bytes,seconds\n")
        for name, shape, fbytes, bbytes, make in cases:
            try:
                _, inputs, _ = make()
                per = sum(t.numel() * t.element_size() for t in inputs)
                tf, tb = fwd_bwd_seconds(make, int(min(8, copies(per * 3))))
            except Exception as exc:
                log("kernel %s %s failed: %s" % (name, shape, exc))
                continue
            f.write("%s,%s,bf16,forward,%d,%.6g,%.0f\n" % (name, shape, fbytes, tf, fbytes / tf / 1e9))
            if bbytes:
                f.write("%s,%s,bf16,backward,%d,%.6g,%.0f\n"
                        % (name, shape, bbytes, tb, bbytes / max(tb, 1e-9) / 1e9))
            log("%s %s: forward %.1f us (%.0f GB/s), backward %.1f us"
                % (name, shape, tf * 1e6, fbytes / tf / 1e9, tb * 1e6))
            f.flush()
            cls = KERNEL_CLASS.get(name)
            if cls:
                elems = math.prod(int(x) for x in shape.split("x"))
                op_bytes = fbytes if cls == "loss" else 2 * elems * el
                fc.write("%s,bf16,forward,%d,%.6g\n" % (cls, op_bytes, tf))
                fc.write("%s,bf16,backward,%d,%.6g\n" % (cls, op_bytes, tb))
                fc.flush()
    torch.cuda.empty_cache()


# The classes of shardlab's kernel_efficiency that section kernels measures.
KERNEL_CLASS = {"layer_norm": "norm", "rms_norm": "norm", "softmax": "softmax",
                "dropout p0.1": "dropout", "gelu tanh": "activation", "cross_entropy": "loss"}


def section_attention(f):
    f.write("name,batch,heads,kv_heads,seq,head_dim,causal_flops_fwd,forward_s,backward_s,"
            "forward_TFLOPs,backward_TFLOPs\n")
    bf = torch.bfloat16
    for name, b, a, kv, s, d in [("llama2-7b tp8", 1, 4, 4, 4096, 128),
                                 ("llama2-70b tp8", 1, 8, 1, 4096, 128),
                                 ("mistral-7b tp8 mb4", 4, 4, 1, 4096, 128),
                                 ("gpt3 tp8", 1, 12, 12, 2048, 128),
                                 ("llama 2048 mb4", 4, 16, 16, 2048, 128),
                                 ("long 32k", 1, 4, 4, 32768, 128)]:
        try:
            def make(b=b, a=a, kv=kv, s=s, d=d):
                q = torch.randn(b, a, s, d, device=DEV, dtype=bf, requires_grad=True)
                k = torch.randn(b, kv, s, d, device=DEV, dtype=bf, requires_grad=True)
                v = torch.randn(b, kv, s, d, device=DEV, dtype=bf, requires_grad=True)
                g = torch.randn(b, a, s, d, device=DEV, dtype=bf)
                fn = lambda q, k, v: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=(kv != a))
                return fn, [q, k, v], g
            tf, tb = fwd_bwd_seconds(make, 2)
        except Exception as exc:
            log("attention %s failed: %s" % (name, exc))
            continue
        flops = 4.0 * b * a * s * s * d / 2
        f.write("%s,%d,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.1f,%.1f\n"
                % (name, b, a, kv, s, d, flops, tf, tb, flops / tf / 1e12, 2.5 * flops / tb / 1e12))
        log("attention %s: forward %.1f us (%.0f TFLOP/s), backward %.1f us"
            % (name, tf * 1e6, flops / tf / 1e12, tb * 1e6))
        f.flush()
    torch.cuda.empty_cache()


def profile_step(fb):
    """The CUDA kernels of one forward+backward: count and time by name."""
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fb()
            torch.cuda.synchronize()
        rows = {}
        for ev in prof.events():
            if str(getattr(ev, "device_type", "")).endswith("CUDA"):
                t = ev.time_range.elapsed_us()
                c, s = rows.get(ev.name, (0, 0.0))
                rows[ev.name] = (c + 1, s + t * 1e-6)
        top = sorted(rows.items(), key=lambda kv: -kv[1][1])
        return {"kernels": sum(c for c, _ in rows.values()),
                "seconds": sum(s for _, s in rows.values()),
                "by_name": [[n[:120], c, s] for n, (c, s) in top[:60]]}
    except Exception:
        return {"error": traceback.format_exc()}


def section_steps():
    results = []
    try:
        import transformers
        from transformers import LlamaConfig, LlamaForCausalLM
    except Exception as exc:
        log("transformers not importable: %s" % exc)
        return [{"error": str(exc)}]
    for cfgname, seq, mb in [("llama-h2048-l8.json", 2048, 4), ("llama-h4096-l4.json", 4096, 1)]:
        entry = {"config": cfgname, "seq": seq, "micro_batch": mb,
                 "transformers": transformers.__version__}
        try:
            with open(os.path.join(HERE, cfgname)) as fh:
                raw = json.load(fh)
            keep = {k: v for k, v in raw.items() if k not in ("architectures", "torch_dtype", "model_type")}
            try:
                cfg = LlamaConfig(attn_implementation="sdpa", **keep)
            except TypeError as exc:
                entry["attn_note"] = str(exc)
                cfg = LlamaConfig(**keep)
            torch.manual_seed(0)
            with DEV:
                model = LlamaForCausalLM(cfg)
            model = model.to(device=DEV, dtype=torch.bfloat16)
            model.train()
            entry["attn_implementation"] = str(getattr(model.config, "_attn_implementation", "?"))
            entry["parameters"] = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
            ids = torch.randint(0, cfg.vocab_size, (mb, seq), device=DEV)

            def fb():
                loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
                return loss

            for _ in range(3):
                fb()
                opt.step()
                opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            fbt, optt = [], []
            for _ in range(10):
                fbt.append(event_pair(fb))
                optt.append(event_pair(opt.step))
                opt.zero_grad(set_to_none=True)
            entry["forward_backward_s"] = median_s(fbt)
            entry["optimizer_s"] = median_s(optt)
            entry["forward_backward_all_s"] = [seconds(p) for p in fbt]
            with torch.no_grad():
                entry["forward_nograd_s"] = median_s(
                    [event_pair(lambda: model(input_ids=ids, labels=ids)) for _ in range(5)])
            entry["max_memory_GB"] = torch.cuda.max_memory_allocated() / 1e9
            if not results:
                entry["profile"] = profile_step(fb)
            log("step %s: forward+backward %.2f ms, optimizer %.2f ms"
                % (cfgname, entry["forward_backward_s"] * 1e3, entry["optimizer_s"] * 1e3))
            del model, opt
        except Exception as exc:
            entry["error"] = traceback.format_exc()
            log("step %s failed: %s" % (cfgname, exc))
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        results.append(entry)
    return results


def gpt_layer(h, heads, heads_local, ffn_local, variant, fused):
    """One GPT layer's tensor-parallel slice as Megatron-LM runs it,
    sequence-first ([s, b, h]), without its tensor-parallel all-reduces.

    variant "unfused": every op its own kernel, as shardlab's graph has them
    (bias adds, mask, softmax, dropout, residual adds apart). "fused":
    Megatron-LM's fusions: the QKV bias in the GEMM, scale + mask + softmax
    in one kernel, bias + GeLU, bias + dropout + residual add (fused here by
    torch.compile, as Megatron-Core's jit_fuser does from PyTorch 2.2).
    "flash": "fused" with the attention as one causal kernel."""
    bf = torch.bfloat16
    d = h // heads
    hl = heads_local * d
    w = {n: (torch.randn(*shape, device=DEV, dtype=bf) * 0.02).requires_grad_(True)
         for n, shape in (("ln1_w", (h,)), ("ln1_b", (h,)), ("qkv", (3 * hl, h)), ("qkv_b", (3 * hl,)),
                          ("proj", (h, hl)), ("proj_b", (h,)), ("ln2_w", (h,)), ("ln2_b", (h,)),
                          ("fc1", (ffn_local, h)), ("fc1_b", (ffn_local,)), ("fc2", (h, ffn_local)),
                          ("fc2_b", (h,)))}
    scale = 1.0 / math.sqrt(d)

    def attention(q, k, v):
        s, b = q.shape[0], q.shape[1]
        if variant == "flash":
            q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))  # [b, a, s, d]
            ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
            return ctx.permute(2, 0, 1, 3).reshape(s, b, hl)
        q = q.reshape(s, b * heads_local, d).transpose(0, 1)
        k = k.reshape(s, b * heads_local, d).transpose(0, 1)
        v = v.reshape(s, b * heads_local, d).transpose(0, 1)
        scores = torch.bmm(q, k.transpose(1, 2)).view(b, heads_local, s, s)
        if variant == "fused":
            probs = fused["softmax"](scores, mask)
        else:
            probs = F.softmax((scores * scale).masked_fill(mask, -10000.0), -1)
        probs = F.dropout(probs, 0.1, True).view(b * heads_local, s, s)
        ctx = torch.bmm(probs, v)  # [b a, s, d]
        return ctx.transpose(0, 1).reshape(s, b, hl)

    mask = None

    def layer(x):
        y = F.layer_norm(x, (h,), w["ln1_w"], w["ln1_b"])
        if variant == "unfused":
            qkv = F.linear(y, w["qkv"]) + w["qkv_b"]
        else:
            qkv = F.linear(y, w["qkv"], w["qkv_b"])
        q, k, v = qkv.view(x.shape[0], x.shape[1], 3, heads_local, d).unbind(2)
        ctx = attention(q, k, v)
        out = F.linear(ctx, w["proj"])
        if variant == "unfused":
            x = x + F.dropout(out + w["proj_b"], 0.1, True)
        else:
            x = fused["bias_dropout_add"](out, w["proj_b"], x)
        y = F.layer_norm(x, (h,), w["ln2_w"], w["ln2_b"])
        y = F.linear(y, w["fc1"])
        if variant == "unfused":
            y = F.gelu(y + w["fc1_b"], approximate="tanh")
        else:
            y = fused["bias_gelu"](y, w["fc1_b"])
        y = F.linear(y, w["fc2"])
        if variant == "unfused":
            return x + F.dropout(y + w["fc2_b"], 0.1, True)
        return fused["bias_dropout_add"](y, w["fc2_b"], x)

    def set_mask(s):
        nonlocal mask
        mask = torch.ones(s, s, device=DEV, dtype=torch.bool).triu(1)

    return layer, w, set_mask


def fused_functions():
    """Megatron-LM's fused element-wise functions, compiled by torch.compile."""
    def bias_gelu(y, b):
        return F.gelu(y + b, approximate="tanh")

    def bias_dropout_add(y, b, r):
        return r + F.dropout(y + b, 0.1, True)

    def softmax(scores, mask):
        return F.softmax((scores * SOFTMAX_SCALE[0]).masked_fill(mask, -10000.0), -1)

    c = lambda fn: torch.compile(fn, dynamic=False)
    return {"bias_gelu": c(bias_gelu), "bias_dropout_add": c(bias_dropout_add),
            "softmax": c(softmax)}


SOFTMAX_SCALE = [1.0]


def section_layers():
    """Forward + backward of one GPT layer's tensor-parallel slice, three
    ways (gpt_layer), with its kernels profiled by name."""
    results = []
    for name, h, heads, tp, s, b in [("gpt3-175b tp8", 12288, 96, 8, 2048, 1),
                                     ("gpt-162.2b tp8", 20480, 128, 8, 2048, 1),
                                     ("gpt-162.2b tp2", 20480, 128, 2, 2048, 1),
                                     ("gpt h4096 tp1 mb2", 4096, 32, 1, 2048, 2)]:
        try:
            importlib.import_module("torch._dynamo").reset()  # each configuration compiled afresh
            fused = fused_functions()
        except Exception as exc:
            log("torch.compile unavailable: %s" % exc)
            fused = None
        for variant in ("unfused", "fused", "flash"):
            entry = {"config": name, "hidden": h, "heads": heads, "tensor_parallel": tp,
                     "seq": s, "micro_batch": b, "variant": variant}
            try:
                if variant != "unfused" and fused is None:
                    raise RuntimeError("no torch.compile")
                SOFTMAX_SCALE[0] = 1.0 / math.sqrt(h // heads)
                layer, w, set_mask = gpt_layer(h, heads, heads // tp, 4 * h // tp, variant, fused)
                set_mask(s)
                x = torch.randn(s, b, h, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                gout = torch.randn(s, b, h, device=DEV, dtype=torch.bfloat16)
                params = list(w.values())

                def fb():
                    torch.autograd.grad(layer(x), [x] + params, gout)

                t0 = time.time()
                fb()
                torch.cuda.synchronize()
                entry["first_call_s"] = time.time() - t0
                for _ in range(3):
                    fb()
                pairs = [event_pair(fb) for _ in range(15)]
                entry["forward_backward_s"] = median_s(pairs)
                with torch.no_grad():
                    entry["forward_s"] = median_s([event_pair(lambda: layer(x)) for _ in range(15)])
                entry["profile"] = profile_step(fb)
                log("layer %s %s: forward %.3f ms, forward+backward %.3f ms (first call %.1f s)"
                    % (name, variant, entry["forward_s"] * 1e3, entry["forward_backward_s"] * 1e3,
                       entry["first_call_s"]))
                del w, x, gout, params
            except Exception as exc:
                entry["error"] = traceback.format_exc()
                log("layer %s %s failed: %s" % (name, variant, exc))
            torch.cuda.empty_cache()
            results.append(entry)
    return results


def nvml_sampler():
    """A function returning (SM clock MHz, power W) now, or None."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return lambda: (pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                        pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
    except Exception as exc:
        log("nvml unavailable: %s" % exc)
        return None


def sample_until(event, sample):
    """Median (SM MHz, W) read every 50 ms until the event completes."""
    samples = []
    while not event.query():
        if sample:
            samples.append(sample())
        start = time.time()
        while time.time() - start < 0.05:
            pass
    torch.cuda.synchronize()
    if not samples:
        return float("nan"), float("nan")
    return (statistics.median(x[0] for x in samples), statistics.median(x[1] for x in samples))


def section_power(f):
    """GEMM rate in a short burst, sustained, and between memory-bound kernels.

    Shows whether back-to-back GEMMs slow down under the board's power limit
    (a training step interleaves them with memory-bound kernels).
    """
    sample = nvml_sampler()
    f.write("m,n,k,mode,seconds,TFLOPs,sm_MHz,power_W\n")
    bf = torch.bfloat16
    filler_x = torch.randn(1 << 29, device=DEV, dtype=bf)
    filler_y = torch.empty_like(filler_x)
    filler_z = torch.randn(1 << 29, device=DEV, dtype=bf)

    def filler():
        torch.add(filler_x, filler_z, alpha=0.5, out=filler_y)

    for m, n, k in [(8192, 8192, 8192), (8192, 2048, 2048), (4096, 4096, 4096), (8192, 5632, 2048)]:
        a = torch.randn(m, k, device=DEV, dtype=bf)
        b = torch.randn(n, k, device=DEV, dtype=bf).t()
        c = torch.empty(m, n, device=DEV, dtype=bf)
        mm = lambda: torch.mm(a, b, out=c)
        flops = 2.0 * m * n * k
        for _ in range(5):
            mm()
        torch.cuda.synchronize()
        # burst: after 300 ms idle, 5 GEMMs timed one by one
        time.sleep(0.3)
        ts = [event_pair(mm) for _ in range(5)]
        torch.cuda.synchronize()
        tb = median_s(ts)
        f.write("%d,%d,%d,burst after idle,%.6g,%.1f,,\n" % (m, n, k, tb, flops / tb / 1e12))
        # sustained: 3 s back to back, windows of 250 ms, clock sampled while busy
        t1 = elapsed(mm, 3) / 3
        per = max(1, int(0.25 / t1))
        evs = [event_pair(lambda: [mm() for _ in range(per)]) for _ in range(12)]
        clk, pw = sample_until(evs[-1][1], sample)
        for w, (x, y) in enumerate(evs):
            t = x.elapsed_time(y) * 1e-3 / per
            f.write("%d,%d,%d,sustained window %d,%.6g,%.1f,%.0f,%.0f\n"
                    % (m, n, k, w, t, flops / t / 1e12, clk, pw))
        # interleaved: each GEMM after a streaming kernel, for 3 s
        reps = max(1, int(3.0 / (t1 + 0.0005)))
        evs = [event_pair(mm, filler) for _ in range(min(reps, 3000))]
        clk, pw = sample_until(evs[-1][1], sample)
        ti = median_s(evs[len(evs) // 2:])
        f.write("%d,%d,%d,after a streaming kernel,%.6g,%.1f,%.0f,%.0f\n"
                % (m, n, k, ti, flops / ti / 1e12, clk, pw))
        log("power %dx%dx%d: burst %.0f, sustained (last window) %.0f, after a streaming kernel %.0f"
            " TFLOP/s; SM %s MHz, %s W" % (m, n, k, flops / tb / 1e12, flops / t / 1e12,
                                          flops / ti / 1e12, clk, pw))
        f.flush()
        del a, b, c
    del filler_x, filler_y, filler_z
    torch.cuda.empty_cache()


def fp8_shapes():
    """(label, m, n, k) of the FP8 comparison: a square grid and the forward
    linears of the published models at their tensor-parallel degrees."""
    rows = [("square", d, d, d) for d in (1024, 2048, 4096, 8192, 16384)]
    for label, m, n, k, _, _, role in gemm_shapes():
        if role == "fwd" and m % 16 == 0 and n % 16 == 0 and k % 16 == 0:
            rows.append((label, m, n, k))
    return rows


def section_fp8(f):
    """BF16 against FP8 (E4M3) GEMMs of the same shapes, and FP8's casts.

    FP8 GEMMs run through torch._scaled_mm (cuBLASLt), per-tensor scales,
    BF16 output, as Transformer Engine's per-tensor recipe does: "fast" is
    the fast-accumulation mode TE uses for the forward GEMM, "split" the
    mode it uses for the two gradient GEMMs; "e5m2" an E5M2 x E4M3 product
    (the hybrid format's data gradient). Each timed alone after a streaming
    kernel, the median of 21, like the gemm section. The cast rows time
    the memory-bound kernels FP8 adds: a BF16 tensor's amax and its cast
    to E4M3, against the bytes they move.
    """
    bf = torch.bfloat16
    e4, e5 = torch.float8_e4m3fn, torch.float8_e5m2
    fx = torch.randn(1 << 26, device=DEV, dtype=bf)
    fz = torch.randn(1 << 26, device=DEV, dtype=bf)
    fy = torch.empty_like(fx)
    stream = lambda: torch.add(fx, fz, alpha=0.5, out=fy)
    one = torch.ones((), device=DEV, dtype=torch.float32)
    f.write("# kind,label,m,n,k,mode,seconds,tflops (GEMMs) | kind,label,elements,,,mode,seconds,GB/s (casts)\n")

    def timed(call):
        for _ in range(3):
            call()
        return median_s([event_pair(call, stream) for _ in range(21)])

    rows = fp8_shapes()
    log("fp8: %d shapes" % len(rows))
    for i, (label, m, n, k) in enumerate(rows):
        try:
            a = torch.randn(m, k, device=DEV, dtype=bf)
            b = torch.randn(n, k, device=DEV, dtype=bf)
            c = torch.empty(m, n, device=DEV, dtype=bf)
            a8, b8 = a.to(e4), b.to(e4)
            modes = [("bf16", lambda: torch.mm(a, b.t(), out=c)),
                     ("fp8 fast", lambda: torch._scaled_mm(a8, b8.t(), one, one, out_dtype=bf,
                                                           use_fast_accum=True)),
                     ("fp8 split", lambda: torch._scaled_mm(a8, b8.t(), one, one, out_dtype=bf,
                                                            use_fast_accum=False))]
            a5 = a.to(e5)
            modes.append(("fp8 e5m2", lambda: torch._scaled_mm(a5, b8.t(), one, one, out_dtype=bf)))
            for mode, call in modes:
                try:
                    t = timed(call)
                except Exception as exc:
                    if i == 0:
                        log("fp8 %s unavailable: %s" % (mode, exc))
                    continue
                f.write("gemm,%s,%d,%d,%d,%s,%.6g,%.1f\n"
                        % (label, m, n, k, mode, t, 2.0 * m * n * k / t / 1e12))
            del a, b, c, a8, b8, a5
        except Exception as exc:
            log("fp8 %s %dx%dx%d failed: %s" % (label, m, n, k, exc))
        if i % 20 == 0:
            log("fp8 %d/%d %s" % (i, len(rows), label))
    for e in (1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28):
        x = torch.randn(e, device=DEV, dtype=bf)
        for mode, call, nbytes in (
                ("amax", lambda: torch.amax(torch.abs(x)), 2 * e + 2 * e + 2 * e),
                ("cast e4m3", lambda: x.to(e4), 2 * e + e)):
            t = timed(call)
            f.write("cast,%s,%d,,,%s,%.6g,%.1f\n" % ("bf16 tensor", e, mode, t, nbytes / t / 1e9))
        del x
    f.flush()
    del fx, fy, fz
    torch.cuda.empty_cache()


def section_host(f):
    """The host link and the host's optimizer step, for optimizer offload.

    Copies between pinned (page-locked) host memory and the device, each
    direction alone and both at once on two streams, and from pageable
    memory; then Adam's step over fp32 parameters on the CPU (torch.optim's
    fused CPU kernel where it exists, else its foreach one), with the
    threads it used.
    """
    f.write("kind,what,bytes,seconds,GB/s\n")
    for nbytes in (1 << 20, 16 << 20, 256 << 20, 1 << 30):
        h = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        h2 = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        hp = torch.empty(nbytes, dtype=torch.uint8)
        d = torch.empty(nbytes, dtype=torch.uint8, device=DEV)
        d2 = torch.empty(nbytes, dtype=torch.uint8, device=DEV)
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

        def both():
            with torch.cuda.stream(s1):
                d.copy_(h, non_blocking=True)
            with torch.cuda.stream(s2):
                h2.copy_(d2, non_blocking=True)
            torch.cuda.current_stream().wait_stream(s1)
            torch.cuda.current_stream().wait_stream(s2)

        reps = max(3, min(50, (1 << 32) // nbytes))
        for what, call, moved in (
                ("h2d pinned", lambda: d.copy_(h, non_blocking=True), nbytes),
                ("d2h pinned", lambda: h.copy_(d, non_blocking=True), nbytes),
                ("both pinned", both, 2 * nbytes),
                ("h2d pageable", lambda: d.copy_(hp), nbytes),
                ("d2h pageable", lambda: hp.copy_(d), nbytes)):
            call()
            torch.cuda.synchronize()
            t = statistics.median(elapsed(call, 1) for _ in range(reps))
            f.write("copy,%s,%d,%.6g,%.2f\n" % (what, moved, t, moved / t / 1e9))
        del h, h2, hp, d, d2
    f.flush()
    n = 1 << 26
    p = torch.nn.Parameter(torch.randn(n))
    p.grad = torch.randn(n)
    for kw, label in (({"fused": True}, "fused"), ({"foreach": True}, "foreach")):
        try:
            opt = torch.optim.Adam([p], lr=1e-4, **kw)
            opt.step()
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                opt.step()
                ts.append(time.perf_counter() - t0)
            t = statistics.median(ts)
            f.write("adam,cpu %s fp32 %d threads,%d,%.6g,%.4f\n"
                    % (label, torch.get_num_threads(), n, t, n / t / 1e9))
            del opt
        except Exception as exc:
            log("cpu adam %s failed: %s" % (label, exc))
    try:
        cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo; nproc"],
                             capture_output=True, text=True, timeout=10).stdout
        f.write("# host: %s\n" % " ".join(cpu.split()))
    except Exception:
        pass
    f.flush()


def env_text():
    lines = ["python " + sys.version.split()[0], "torch " + torch.__version__,
             "cuda " + str(torch.version.cuda),
             "device " + torch.cuda.get_device_name(0)]
    p = torch.cuda.get_device_properties(0)
    lines.append("multiprocessors %d, memory %.1f GiB, L2 %s"
                 % (p.multi_processor_count, p.total_memory / 2 ** 30,
                    getattr(p, "L2_cache_size", "?")))
    try:
        lines.append("cublas %s" % torch._C._cuda_getCompiledVersion())
    except Exception:
        pass
    for q in (["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
               "power.limit,temperature.gpu", "--format=csv"], ["nvidia-smi", "-q", "-d", "CLOCK"]):
        try:
            lines.append(subprocess.run(q, capture_output=True, text=True, timeout=20).stdout)
        except Exception as exc:
            lines.append("%s: %s" % (q[0], exc))
    return "\n".join(lines) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    with open(os.path.join(OUT, "env.txt"), "w") as fh:
        fh.write(env_text())
    log(torch.cuda.get_device_name(0))
    head = ("# Measured with bench/gpu/kernels.py on %s (torch %s, CUDA %s).\n"
            % (torch.cuda.get_device_name(0), torch.__version__, torch.version.cuda))
    with open(os.path.join(OUT, "calib.csv"), "w") as f:
        f.write(head + "kind,m,n,k,batch,dtype,bytes,seconds\n")
        for name, fn in (("triad", section_triad), ("gemm", section_gemm_interleaved)):
            if name in SECTIONS:
                try:
                    fn(f)
                except Exception:
                    log("%s section failed:\n%s" % (name, traceback.format_exc()))
                f.flush()
    if "graph" in SECTIONS:
        with open(os.path.join(OUT, "calib-graph.csv"), "w") as fg, \
                open(os.path.join(OUT, "calib-eager.csv"), "w") as fe:
            fg.write(head + "# Times: kernels replayed back to back from a CUDA graph.\n")
            fe.write(head + "# Times: kernels launched one by one from Python (eager).\n")
            for f in (fg, fe):
                f.write("kind,m,n,k,batch,dtype,bytes,seconds\n")
            for name, fn in (("stream", section_memory), ("gemm", section_gemm)):
                try:
                    fn(fg, fe)
                except Exception:
                    log("%s section failed:\n%s" % (name, traceback.format_exc()))
    for name, fn, path in (("fp8", section_fp8, "fp8.csv"),
                           ("host", section_host, "host.csv"),
                           ("kernels", section_kernels, "kernels.csv"),
                           ("attention", section_attention, "attention.csv"),
                           ("power", section_power, "power.csv")):
        if name not in SECTIONS:
            continue
        try:
            with open(os.path.join(OUT, path), "w") as f:
                fn(f)
        except Exception:
            log("%s section failed:\n%s" % (name, traceback.format_exc()))
    if "steps" in SECTIONS:
        steps = section_steps()
        with open(os.path.join(OUT, "steps.json"), "w") as fh:
            json.dump(steps, fh, indent=1)
    if "layers" in SECTIONS:
        layers = section_layers()
        with open(os.path.join(OUT, "layers.json"), "w") as fh:
            json.dump(layers, fh, indent=1)
    with open(os.path.join(OUT, "env.txt"), "a") as fh:
        fh.write(env_text())
    log("done")


if __name__ == "__main__":
    main()
