"""Direct convolution of few channels per output: `direct_list`.

A depthwise (or narrowly grouped) convolution as gathered windows and one product per group is
a 1 x taps by taps x pixels sgemm per channel: BLAS's packing costs more than the few
multiply-adds, and the windows are R*S copies of the input (KernelBench 82_conv_depthwise:
~200 us where torch takes ~150).  Here every output row is computed in place from the input
rows it reads: per job (an output plane of one channel and image) and per output row, vectors
of 16 output columns accumulate w[t] * input[offset[t] + column * step] over the job's terms t
(its input channels times taps), four (row, column-block) pairs at a time so that four
independent fused multiply-adds are in flight.  Input and output columns may be strided (the
classes of a transposed convolution's lattice, conv_sparse.py): gathers and scatters then, unit
strides load and store.

A job is 11 int64 words: output address, output row stride, rows, output column stride,
columns, input address, input row stride, input column stride (all in elements), the address
of its term weights (float32), of its term offsets (int64, elements from the input address),
and the term count.  One foreign call runs a list of jobs.
"""
from __future__ import annotations

import numpy as np

from .launch import compiled_once, table_call

SYMBOL = "fusedsl_direct_conv"
WORDS = 14
KB = (4, 1)     # output channels per job: 4 sharing every input load, or 1
_U = 4          # (row, column-block) pairs in flight
_L = 16         # lanes


def _vec(t: str) -> str:
    return f"<{_L} x {t}>"


def _variant(name: str, contig_in: bool, contig_out: bool, kb: int) -> list[str]:
    """The body of one job for a pair of stride kinds and `kb` output channels (sharing the
    input terms: their outputs `oks` elements apart, their weights `wks`), as a function
    void name(ptr out, i64 ors, i64 rows, i64 ocs, i64 cols, ptr in, i64 irs, i64 ics, ptr w,
    ptr offs, i64 nt, i64 oks, i64 wks)."""
    vf, vi, vb, vp = _vec("float"), _vec("i64"), _vec("i1"), _vec("ptr")
    iota = "<" + ", ".join(f"i64 {i}" for i in range(_L)) + ">"
    L = [f"define internal void @{name}(ptr %out, i64 %ors, i64 %rows, i64 %ocs, i64 %cols, ptr %in, i64 %irs, "
         f"i64 %ics, ptr %w, ptr %offs, i64 %nt, i64 %oks, i64 %wks) alwaysinline nounwind {{",
         "entry:",
         f"  %nch0 = add i64 %cols, {_L - 1}",
         f"  %nch = udiv i64 %nch0, {_L}",
         "  %total = mul i64 %nch, %rows",
         f"  %ics.v0 = insertelement {vi} undef, i64 %ics, i64 0",
         f"  %ics.v = shufflevector {vi} %ics.v0, {vi} undef, <{_L} x i32> zeroinitializer",
         f"  %ocs.v0 = insertelement {vi} undef, i64 %ocs, i64 0",
         f"  %ocs.v = shufflevector {vi} %ocs.v0, {vi} undef, <{_L} x i32> zeroinitializer",
         f"  %in.step = mul {vi} {iota}, %ics.v",
         f"  %out.step = mul {vi} {iota}, %ocs.v",
         "  br label %pair.head",
         "pair.head:",
         "  %q = phi i64 [ 0, %entry ], [ %q.next, %pair.done ]",
         "  %more = icmp ult i64 %q, %total",
         "  br i1 %more, label %pair.body, label %exit",
         "pair.body:"]
    for u in range(_U):
        L += [f"  %p{u} = add i64 %q, {u}",
              f"  %ok{u} = icmp ult i64 %p{u}, %total",
              f"  %row{u} = udiv i64 %p{u}, %nch",
              f"  %blk{u} = urem i64 %p{u}, %nch",
              f"  %j{u} = mul i64 %blk{u}, {_L}",
              f"  %left{u} = sub i64 %cols, %j{u}",
              f"  %left{u}.v0 = insertelement {vi} undef, i64 %left{u}, i64 0",
              f"  %left{u}.v = shufflevector {vi} %left{u}.v0, {vi} undef, <{_L} x i32> zeroinitializer",
              f"  %lanes{u} = icmp ult {vi} {iota}, %left{u}.v",
              f"  %ok{u}.v0 = insertelement {vb} undef, i1 %ok{u}, i64 0",
              f"  %ok{u}.v = shufflevector {vb} %ok{u}.v0, {vb} undef, <{_L} x i32> zeroinitializer",
              f"  %m{u} = and {vb} %lanes{u}, %ok{u}.v",
              f"  %ir{u} = mul i64 %row{u}, %irs",
              f"  %ic{u} = mul i64 %j{u}, %ics",
              f"  %io{u} = add i64 %ir{u}, %ic{u}",
              f"  %ib{u} = getelementptr float, ptr %in, i64 %io{u}",
              f"  %or{u} = mul i64 %row{u}, %ors",
              f"  %oc{u} = mul i64 %j{u}, %ocs",
              f"  %oo{u} = add i64 %or{u}, %oc{u}",
              f"  %ob{u} = getelementptr float, ptr %out, i64 %oo{u}"]
    L += ["  br label %term.head", "term.head:",
          "  %t = phi i64 [ 0, %pair.body ], [ %t.next, %term.body ]"]
    for u in range(_U):
        for c in range(kb):
            L.append(f"  %acc{u}_{c} = phi {vf} [ zeroinitializer, %pair.body ], [ %acc{u}_{c}.next, %term.body ]")
    L += ["  %tmore = icmp ult i64 %t, %nt",
          "  br i1 %tmore, label %term.body, label %pair.store",
          "term.body:",
          "  %offp = getelementptr i64, ptr %offs, i64 %t",
          "  %off = load i64, ptr %offp, align 8",
          "  %wp = getelementptr float, ptr %w, i64 %t"]
    for c in range(kb):
        L += [f"  %wo{c} = mul i64 %wks, {c}",
              f"  %wp{c} = getelementptr float, ptr %wp, i64 %wo{c}",
              f"  %ws{c} = load float, ptr %wp{c}, align 4",
              f"  %wv{c}.0 = insertelement {vf} undef, float %ws{c}, i64 0",
              f"  %wv{c} = shufflevector {vf} %wv{c}.0, {vf} undef, <{_L} x i32> zeroinitializer"]
    for u in range(_U):
        L.append(f"  %xp{u} = getelementptr float, ptr %ib{u}, i64 %off")
        if contig_in:
            L.append(f"  %x{u} = call {vf} @llvm.masked.load.v16f32.p0(ptr %xp{u}, i32 4, {vb} %m{u}, {vf} zeroinitializer)")
        else:
            L += [f"  %xps{u} = getelementptr float, ptr %xp{u}, {vi} %in.step",
                  f"  %x{u} = call {vf} @llvm.masked.gather.v16f32.v16p0({vp} %xps{u}, i32 4, {vb} %m{u}, {vf} zeroinitializer)"]
        for c in range(kb):
            L.append(f"  %acc{u}_{c}.next = call {vf} @llvm.fma.v16f32({vf} %wv{c}, {vf} %x{u}, {vf} %acc{u}_{c})")
    L += ["  %t.next = add i64 %t, 1", "  br label %term.head", "pair.store:"]
    for u in range(_U):
        for c in range(kb):
            L += [f"  %oko{u}_{c} = mul i64 %oks, {c}",
                  f"  %obk{u}_{c} = getelementptr float, ptr %ob{u}, i64 %oko{u}_{c}"]
            if contig_out:
                L.append(f"  call void @llvm.masked.store.v16f32.p0({vf} %acc{u}_{c}, ptr %obk{u}_{c}, i32 4, {vb} %m{u})")
            else:
                L += [f"  %ops{u}_{c} = getelementptr float, ptr %obk{u}_{c}, {vi} %out.step",
                      f"  call void @llvm.masked.scatter.v16f32.v16p0({vf} %acc{u}_{c}, {vp} %ops{u}_{c}, i32 4, {vb} %m{u})"]
    L += ["  br label %pair.done", "pair.done:", f"  %q.next = add i64 %q, {_U}", "  br label %pair.head",
          "exit:", "  ret void", "}"]
    return L


def _ir() -> str:
    vf, vb, vp = _vec("float"), _vec("i1"), _vec("ptr")
    L = [f"declare {vf} @llvm.masked.load.v16f32.p0(ptr, i32, {vb}, {vf})",
         f"declare {vf} @llvm.masked.gather.v16f32.v16p0({vp}, i32, {vb}, {vf})",
         f"declare void @llvm.masked.store.v16f32.p0({vf}, ptr, i32, {vb})",
         f"declare void @llvm.masked.scatter.v16f32.v16p0({vf}, {vp}, i32, {vb})",
         f"declare {vf} @llvm.fma.v16f32({vf}, {vf}, {vf})", ""]
    names = {}
    for kb in KB:
        for contig_in in (True, False):
            for contig_out in (True, False):
                name = f"job_{kb}_{int(contig_in)}{int(contig_out)}"
                names[(kb, contig_in, contig_out)] = name
                L += _variant(name, contig_in, contig_out, kb) + [""]
    L += [f"define void @{SYMBOL}(i64 %b0, i64 %b1, ptr noalias %t, ptr %unused) nounwind {{",
          "entry:", "  br label %head", "head:",
          "  %i = phi i64 [ %b0, %entry ], [ %next, %latch ]",
          "  %done = icmp uge i64 %i, %b1",
          "  br i1 %done, label %exit, label %body",
          "body:", f"  %base = mul i64 %i, {WORDS}"]
    for j in range(WORDS):
        L += [f"  %o{j} = add i64 %base, {j}",
              f"  %p{j} = getelementptr i64, ptr %t, i64 %o{j}",
              f"  %w{j} = load i64, ptr %p{j}, align 8"]
    L += ["  %out = inttoptr i64 %w0 to ptr", "  %in = inttoptr i64 %w5 to ptr",
          "  %wt = inttoptr i64 %w8 to ptr", "  %offs = inttoptr i64 %w9 to ptr",
          "  %ci = icmp eq i64 %w7, 1", "  %co = icmp eq i64 %w3, 1",
          f"  %many = icmp eq i64 %w11, {KB[0]}",
          f"  br i1 %many, label %kb{KB[0]}, label %kb{KB[1]}"]
    args = ("ptr %out, i64 %w1, i64 %w2, i64 %w3, i64 %w4, ptr %in, i64 %w6, i64 %w7, ptr %wt, ptr %offs, i64 %w10, "
            "i64 %w12, i64 %w13")
    for kb in KB:
        L += [f"kb{kb}:", f"  br i1 %ci, label %in{kb}_1, label %in{kb}_0"]
        for ci in (1, 0):
            L += [f"in{kb}_{ci}:", f"  br i1 %co, label %run{kb}_{ci}1, label %run{kb}_{ci}0"]
            for co in (1, 0):
                L += [f"run{kb}_{ci}{co}:", f"  call void @{names[(kb, bool(ci), bool(co))]}({args})",
                      "  br label %latch"]
    L += ["latch:", "  %next = add i64 %i, 1", "  br label %head", "exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


_function = compiled_once(lambda: _ir(), SYMBOL)


def direct_list(jobs):
    """A callable running these jobs in one native call: each (out, (base, first, row
    stride, column stride), weights, offsets) with `out` a float32 view [channels, rows, cols]
    (any element strides; 1 or 4 channels), `weights` float32 [channels, terms] (rows
    contiguous), `offsets` int64 [terms]:
    out[k, r, c] = sum_t weights[k, t] * base.flat[first + offsets[t] + r * row stride + c * column stride].
    Addresses are read now (the arrays must stay alive and in place)."""
    rows = []
    for out, (base, first, irs, ics), weights, offsets in jobs:
        if out.ndim == 2:
            out, weights = out[None], weights.reshape(1, -1)
        if out.dtype != np.float32 or base.dtype != np.float32 or weights.dtype != np.float32 \
                or offsets.dtype != np.int64 or weights.shape != (out.shape[0], offsets.size) or out.ndim != 3 \
                or out.shape[0] not in KB or weights.strides[1] != 4 \
                or not (offsets.flags.c_contiguous and base.flags.c_contiguous) or any(s % 4 for s in out.strides):
            raise ValueError("direct_list takes float32 views of 1 or 4 channels, float32 weights and int64 offsets")
        if out.size == 0:
            continue
        rows.append([out.ctypes.data, out.strides[1] // 4, out.shape[1], out.strides[2] // 4, out.shape[2],
                     base.ctypes.data + 4 * first, irs, ics, weights.ctypes.data, offsets.ctypes.data, offsets.size,
                     out.shape[0], out.strides[0] // 4, weights.strides[0] // 4])
    return table_call(_function(), rows)
