"""Attention: GM traffic on the NPU model and time on the CPU backend, one run, one table each.

GM traffic (ascend910b, float16, one head: q, v [S, D], k given as k^T [D, S] so that every
kernel of the unfused chain prints and simulate can measure it):
  flash model      attention_gm_model: Q, O once, K and V once per Q block (cost.attention_blocks'
                   BQ, as large as UB / L1 / L0C allow), the report's figure of the attention kernel;
  attention, measured  the printed attention kernel (printer_attention.py) under simulate: its
                   counts include P through the GM workspace (910B) and the Matmul API's per-tile
                   reads (the Q block is read once into L1, TSCM, on 910B);
  chain, fused     softmax(q @ kT * s) @ v without the attention op (disable_passes=["attention-
                   fusion"]): the scale kernel, q @ kT with its softmax row epilogue, P @ v; GM bytes
                   measured by simulate on the CPU Ascend C API (S and P are written and read back);
  chain, unfused   opt_level=0, every op a kernel, measured by simulate;
  modelled NPU time of the attention kernel vs the chain (cost model, not a measurement).

Attention kernel vs the flash model per chip (float16, one head, 910B and 310P): the measured
bytes, their ratio to the model, and the excess split into P through the GM workspace, Q
re-read per KV block, and K and V read for more Q blocks than the model's (310P at D = 128 takes
BQ 112 so that the Q block fits UB).

CPU time (B=1, H=8, float32, medians of --repeat interleaved runs, both cores): fusedsl's
attention kernel (kernel(*arrays): the attention kind's TileKernel on the CPU's blocks through the one
LLVM lowering, backend_cpu/attention_cpu.py)
vs torch eager scaled_dot_product_attention and torch.compile of it, each repeat running the
three one after another so that the machine's load affects them alike.

Transformer blocks (ascend910b, float32, x [2, 8, 64], 4 heads of 16): the kernels fusedsl makes of
a PyTorch pre-norm block with q, k, v linears, and of the issue's block (one qkv linear, split,
rotate-half rope, SDPA), whether each prints, and simulate of every printed kernel vs torch.

Usage: python benchmarks/attention.py [--repeat N] [--no-simulate] [--no-compile] [--traffic-only]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import fusedsl as fs
from fusedsl import cost


def interleaved_ms(fns, repeat):
    """Median ms of each callable, the callables run in turn within every repeat (None: skipped)."""
    for f in fns:
        if f is not None:
            f()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for f, ts in zip(fns, times):
            if f is not None:
                t = time.perf_counter()
                f()
                ts.append(time.perf_counter() - t)
    return [float(np.median(ts)) * 1e3 if ts else None for ts in times]


def chip_rows():
    """(target, S, D, model, measured, P workspace bytes, Q re-read bytes) of the attention kernel."""
    rows = []
    rng = np.random.default_rng(0)
    for target in ("ascend910b", "ascend310p"):
        for s in (512, 1024):
            for d in (64, 128):
                q, k, v = (rng.standard_normal((s, d)).astype(np.float16) for _ in range(3))
                c = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v), target=target).compile(q, k, v)
                c.simulate(q, k, v)
                sched = c.kernels[0].row
                model = cost.attention_gm_model(c.kernels[0].function.ops[0], c.target)
                p_bytes = 0 if sched.p_in_ub else 2 * s * s * 2
                q_bytes = 0 if (sched.q_l1_bytes or sched.q_ub_bytes) else (-(-s // sched.bk) - 1) * s * d * 2
                # K and V read for more Q blocks than the model's (310P: a smaller BQ that holds Q in UB)
                model_bq, _ = cost.attention_blocks(c.target, s, s, d, d, 2)
                kv_bytes = (-(-s // sched.bq) - -(-s // model_bq)) * 2 * s * d * 2
                rows.append((target, s, d, sched.bq, sched.bk, model, c.report().gm_bytes_measured, p_bytes, q_bytes,
                             kv_bytes))
    return rows


def traffic_rows(simulate: bool):
    rows = []
    rng = np.random.default_rng(0)
    for s in (512, 1024):
        for d in (64, 128):
            q, kt, v = (rng.standard_normal(shape).astype(np.float16) for shape in ((s, d), (d, s), (s, d)))
            k = np.ascontiguousarray(kt.T)
            scale = d ** -0.5
            attention = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, scale=scale)).compile(q, k, v)
            op = attention.kernels[0].function.ops[0]
            flash = cost.attention_gm_model(op, attention.target)
            bq, bk = cost.attention_blocks(attention.target, s, s, d, d, 2)
            measured_att = None
            if simulate:
                attention.simulate(q, k, v)
                measured_att = attention.report().gm_bytes_measured
            rep = attention.report()
            chain = lambda q, kt, v: fs.softmax(q @ kt * scale) @ v   # noqa: E731
            fused = fs.fused_kernel(chain, disable_passes=["attention-fusion"]).compile(q, kt, v)
            unfused = fs.fused_kernel(chain, opt_level=0).compile(q, kt, v)
            measured = []
            for c in (fused, unfused):
                if simulate:
                    c.simulate(q, kt, v)
                    measured.append(c.report().gm_bytes_measured)
                else:
                    measured.append(c.report().gm_bytes_fused)
            rows.append((s, d, bq, bk, rep.gm_bytes_min, flash, measured_att, measured[0], len(fused.kernels), measured[1],
                         len(unfused.kernels), rep.model_time_us_fused, fused.report().model_time_us_fused))
    return rows


def time_rows(repeat: int, compile_: bool):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
    sdpa = torch.compile(F.scaled_dot_product_attention, dynamic=False) if compile_ else None
    rows = []
    rng = np.random.default_rng(1)
    for s, d, causal in ((512, 64, False), (512, 128, False), (2048, 64, False), (2048, 128, False),
                         (2048, 64, True)):
        q, k, v = (rng.standard_normal((1, 8, s, d)).astype(np.float32) for _ in range(3))
        kern = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=causal))
        out = kern(q, k, v)
        tq = [torch.from_numpy(x) for x in (q, k, v)]
        want = F.scaled_dot_product_attention(*tq, is_causal=causal).numpy()
        err = float(np.abs(out - want).max())
        ours, eager, compiled = interleaved_ms(
            [lambda: kern(q, k, v), lambda: F.scaled_dot_product_attention(*tq, is_causal=causal),
             (lambda: sdpa(*tq, is_causal=causal)) if sdpa is not None else None], repeat)
        rows.append((s, d, causal, ours, eager, compiled, err))
    return rows


def block_rows(simulate: bool):
    import torch
    nn, F = torch.nn, torch.nn.functional

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    class Block(nn.Module):
        def __init__(self, d=64, h=4, t=8, fused_qkv=False):
            super().__init__()
            self.h, self.fused = h, fused_qkv
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            if fused_qkv:
                self.qkv = nn.Linear(d, 3 * d)
            else:
                self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))
            self.o, self.f1, self.f2 = nn.Linear(d, d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            pos = torch.arange(t, dtype=torch.float32)[:, None] / (10000 ** (torch.arange(0, d // h, 2) / (d // h)))
            emb = torch.cat([pos, pos], dim=-1)
            self.register_buffer("cos", emb.cos())
            self.register_buffer("sin", emb.sin())

        def forward(self, x):
            b, t, d = x.shape
            y = self.ln1(x)
            qkv = self.qkv(y).split(d, dim=-1) if self.fused else (self.q(y), self.k(y), self.v(y))
            q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in qkv)
            if self.fused:   # the block: rope on q and k, SDPA
                q = q * self.cos + rotate_half(q) * self.sin
                k = k * self.cos + rotate_half(k) * self.sin
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = torch.softmax(q @ k.transpose(-2, -1) * (d // self.h) ** -0.5, dim=-1) @ v
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            return x + self.f2(F.gelu(self.f1(self.ln2(x)), approximate="tanh"))

    rows = []
    torch.manual_seed(0)
    x = torch.randn(2, 8, 64)
    for name, fused in (("q, k, v linears, softmax(q k^T s) v", False), ("qkv linear, split, rope, SDPA (issue 24)", True)):
        block = Block(fused_qkv=fused).eval()
        m = fs.from_torch(block, x)
        c = m.compile(x.numpy(), target="ascend910b")
        printed = sum(p.printable for p in c.kernels)
        err = None
        if simulate:
            err = float(np.abs(c.simulate(x.numpy(), *m.weights) - block(x).detach().numpy()).max())
        rows.append((name, len(c.kernels), printed, " ; ".join("+".join(dict.fromkeys(p.ops)) for p in c.kernels),
                     err, c.report().model_time_us_fused))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-simulate", action="store_true", help="model the chain's bytes instead of simulating")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--traffic-only", action="store_true", help="skip the CPU timings")
    args = ap.parse_args(argv)

    print("GM traffic, ascend910b, float16, one head (bytes; chain figures measured by simulate)\n")
    print("| S | D | BQ x BK (model) | GM min | flash model | attention, measured | chain fused, measured | "
          "chain unfused, measured | measured attention / chain fused | / unfused | NPU model us: attention vs chain |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s, d, bq, bk, mn, flash, att, fused, nf, unf, nu, t_att, t_chain in traffic_rows(not args.no_simulate):
        att_s = "-" if att is None else str(att)
        ratio = flash if att is None else att
        print(f"| {s} | {d} | {bq} x {bk} | {mn} | {flash} | {att_s} | {fused} ({nf} kernels) | {unf} ({nu} kernels) | "
              f"{ratio / fused:.2f} | {ratio / unf:.2f} | {t_att:.1f} vs {t_chain:.1f} |")

    if not args.no_simulate:
        print("\nAttention kernel vs the flash model, float16, one head (bytes measured by simulate)\n")
        print("| target | S | D | BQ x BK | flash model | attention, measured | measured / model | "
              "P through GM | Q re-reads | K, V for extra Q blocks | rest |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for target, s, d, bq, bk, model, got, p_bytes, q_bytes, kv_bytes in chip_rows():
            print(f"| {target} | {s} | {d} | {bq} x {bk} | {model} | {got} | {got / model:.3f} | {p_bytes} | "
                  f"{q_bytes} | {kv_bytes} | {got - model - p_bytes - q_bytes - kv_bytes} |")

    print("\nTransformer blocks, ascend910b, float32, x [2, 8, 64], 4 heads\n")
    print("| block | kernels | printed | kernels (ops) | simulate vs torch, max abs | NPU model us |")
    print("|---|---|---|---|---|---|")
    for name, n, printed, ops, err, t in block_rows(not args.no_simulate):
        print(f"| {name} | {n} | {printed} | {ops} | {'-' if err is None else f'{err:.1e}'} | {t:.1f} |")

    if args.traffic_only:
        return
    print(f"\nCPU time, B=1, H=8, float32, medians of {args.repeat} interleaved runs (ms)\n")
    print("| S | D | causal | fusedsl attention | torch eager SDPA | torch.compile SDPA | fusedsl / eager | "
          "max abs diff vs torch |")
    print("|---|---|---|---|---|---|---|---|")
    for s, d, causal, ours, eager, compiled, err in time_rows(args.repeat, not args.no_compile):
        comp = f"{compiled:.1f}" if compiled is not None else "-"
        print(f"| {s} | {d} | {causal} | {ours:.1f} | {eager:.1f} | {comp} | {ours / eager:.2f} | {err:.1e} |")


if __name__ == "__main__":
    main()
