"""A recorded corpus of kernel configurations, for before/after equivalence of compiler changes.

Every configuration (a small fused program, argument shapes, dtypes and a target) is compiled;
the record keeps, per configuration: the kernel kinds and names, a hash of the printed Ascend C
(or the error class and message when it does not print), the GM figures of the report, and a
hash of the LLVM call's results on deterministic inputs (bit-exact). `--simulate N` also runs
the printed Ascend C on the CPU API for every N-th configuration (a g++ build each) and keeps a
hash of its results and the GM bytes it measured.

    python tools/kernel_corpus.py record corpus.json [--simulate 40] [--only KIND] [--match TEXT] [--save DIR]
    python tools/kernel_corpus.py compare before.json after.json
    python tools/kernel_corpus.py closeness before.json after.json BEFORE_DIR AFTER_DIR

`compare` lists every configuration whose record differs, field by field, and exits 1 when any
result hash differs or GM bytes grew; printed-source differences are listed for review (a
refactor documents each one). The corpus is generated, deterministic and not checked in.

A change that alters results on purpose (another summation order, a fix) is judged by how far
each result lies from numpy's: `record --save DIR` also writes each configuration's results (the
LLVM call's, the simulated ones, and the numpy reference interpreter's: `fs.config.executor =
"reference"`) to DIR/<key hash>.npz, and `closeness` takes every configuration whose LLVM or
simulate hash differs and measures both records' results against the AFTER checkout's reference
(its numpy semantics, which a fix may have changed too): per kind, how many came closer, stayed
as far or went farther, and the largest distance before and after, in units in the last place of
the result dtype at the reference's largest magnitude (integer and bool results: elements that
differ).  numpy's reference rounds too (float32 sums in its own order): a unit or two either way
is another rounding, not an error.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from itertools import product

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402

TARGETS = ["ascend910b", "ascend310p", "ascend910"]


# ---- the programs, by kernel kind ---------------------------------------------------------
def _unary(name):
    return lambda x: getattr(fs, name)(x)


UNARY = ["abs", "negative", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "relu",
         "leaky_relu", "sigmoid", "tanh", "gelu", "silu"]
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "maximum": fs.maximum, "minimum": fs.minimum,
          "less": lambda a, b: fs.where(a < b, a, b), "eq": lambda a, b: fs.where(a == b, a, b * 2)}


def _vector_configs():
    shapes = [((7,), (7,)), ((33, 17), (17,)), ((4, 1, 40), (4, 5, 40)), ((192, 128), (192, 128)),
              ((1,), (3, 1))]
    for name, (sa, _), dtype, target in product(UNARY, shapes, ["float32", "float16"], TARGETS):
        yield (f"vector/{name}", _unary(name), [(sa, dtype)], target)
    for name, (sa, sb), dtype, target in product(BINARY, shapes, ["float32", "float16", "int32"], TARGETS):
        if dtype == "int32" and name == "div":
            continue
        yield (f"vector/{name}", BINARY[name], [(sa, dtype), (sb, dtype)], target)
    chains = {
        "abs_add_relu": lambda a, b: fs.relu(fs.abs(a) + b),
        "leaky_chain": lambda a, b: fs.leaky_relu((a * 2 + b) * fs.sigmoid(a) - a, 0.1),
        "cast_chain": lambda a, b: (a.astype("float32") + b.astype("float32")).astype("float16"),
        "where_mask": lambda a, b: fs.where(a > 0.5, a, b),
    }
    for (name, f), (sa, sb), dtype, target in product(chains.items(), shapes, ["float32", "float16"], TARGETS):
        yield (f"vector/{name}", f, [(sa, dtype), (sb, dtype)], target)


def _view_configs():
    progs = {
        "slice": (lambda x: fs.relu(x[1:-1, 8:40]), [((20, 64),)]),
        "slice_step": (lambda x: fs.exp(x[::2, 3:]), [((21, 50),)]),
        "concat": (lambda a, b: fs.relu(fs.concatenate([a, b], 1))[:, 8:40], [((9, 32), (9, 24))]),
        "concat0": (lambda a, b: fs.concatenate([a, b], 0) * 2, [((5, 16), (3, 16))]),
    }
    for (name, (f, shapes)), dtype, target in product(progs.items(), ["float32", "float16"], TARGETS):
        for sh in shapes:
            yield (f"view/{name}", f, [(s, dtype) for s in sh], target)
    for dtype, target in product(["float32", "float16"], TARGETS):
        yield ("view/take", lambda t, i, b: fs.relu(fs.take(t, i) + b),
               [((50, 32), dtype), ((7,), "int32", 50), ((32,), dtype)], target)


def _row_configs():
    progs = {
        "softmax": lambda x, y: fs.softmax(x + y),
        "layer_norm": lambda x, y: fs.layer_norm(x, y[0], y[0]),
        "rms_norm": lambda x, y: fs.rms_norm(x, y[0]) + x,
        "sum": lambda x, y: fs.sum(x * y, axis=-1),
        "max_back": lambda x, y: x - fs.max(x, axis=-1, keepdims=True) + y,
        "mean": lambda x, y: fs.mean(x, axis=-1, keepdims=True) * y,
    }
    shapes = [((5, 17), (1, 17)), ((3, 4, 64), (1, 4, 64)), ((1, 1), (1, 1)), ((40, 300), (40, 300)),
              ((2, 70000), (1, 70000)), ((7, 3, 5), (7, 1, 5)), ((2, 3, 8), (3, 8))]
    for (name, f), (sx, sy), dtype, target in product(progs.items(), shapes, ["float32", "float16"], TARGETS):
        yield (f"row/{name}", f, [(sx, dtype), (sy, dtype)], target)
    # the other parameter forms: one value per row ([*outer, 1]), one value for all ([1]), a row
    # every row shares ([C]), a per-row output beside a row output, min, a reduction's consumer
    # that is itself reduced
    forms = {
        "perrow": (lambda x, r: fs.exp(x - fs.max(x, axis=-1, keepdims=True)) * r, "perrow"),
        "sum_and_softmax": (lambda x, y: (fs.sum(x, axis=-1), fs.softmax(x * y)), "same"),
        "rms_scalar": (lambda x, s: fs.rms_norm(x) * s, "one"),
        "min_back": (lambda x, y: fs.min(x + y, axis=-1, keepdims=True) - y, "same"),
        "log_softmax": (lambda x, y: fs.log(fs.softmax(x)) + y, "same"),
        "ln_gelu_rows": (lambda x, g: fs.gelu(fs.layer_norm(x, g, g)), "last"),
    }
    rows = [(5, 17), (3, 4, 64), (1, 1), (40, 300), (2, 70000), (7, 3, 5), (3, 50000)]
    other = {"perrow": lambda s: s[:-1] + (1,), "same": lambda s: s, "one": lambda s: (1,), "last": lambda s: s[-1:]}
    for (name, (f, form)), sx, dtype, target in product(forms.items(), rows, ["float32", "float16"], TARGETS):
        yield (f"row/{name}", f, [(sx, dtype), (other[form](sx), dtype)], target)


def _column_configs():
    progs = {"sum0": lambda x: fs.sum(x, axis=0), "max0": lambda x: fs.max(x, axis=0),
             "mean1": lambda x: fs.mean(x, axis=1), "sumall": lambda x: fs.sum(x)}
    for (name, f), shape, dtype, target in product(progs.items(), [(7, 33), (64, 5, 9), (300, 3), (1, 1), (5, 1000)],
                                                 ["float32", "float16"], TARGETS):
        yield (f"column/{name}", f, [(shape, dtype)], target)
    # integer and bool reductions (int32 accumulators on the CPU), a producer and a consumer, and
    # columns with no rows of K or no outputs (numpy's identities, nothing to write)
    ints = {"sum0": lambda x: fs.sum(x, axis=0), "max0": lambda x: fs.max(x, axis=0),
            "min1": lambda x: fs.min(x, axis=1), "sumsq1": lambda x: fs.sum(x * x, axis=1) + 3,
            "count0": lambda x: fs.sum(x > 0, axis=0), "all0": lambda x: fs.all(x > 0, axis=0)}
    for (name, f), shape, dtype, target in product(ints.items(), [(7, 33), (64, 5, 9), (300, 3), (1, 1)],
                                                 ["int32", "int8"], TARGETS):
        yield (f"column/int_{name}", f, [(shape, dtype)], target)
    empty = {"sum0": lambda x: fs.sum(x, axis=0) + 1.0, "mean1": lambda x: fs.mean(x, axis=1)}
    for (name, f), shape, target in product(empty.items(), [(0, 5), (3, 0, 4), (2, 3, 0)], TARGETS):
        yield (f"column/empty_{name}", f, [(shape, "float32")], target)


def _cube_configs():
    progs = {
        "mm": lambda x, w, b: x @ w,
        "mm_bias_leaky": lambda x, w, b: fs.leaky_relu(x @ w + b, 0.1),
        "mm_gelu_cast": lambda x, w, b: fs.gelu(x @ w + b).astype("float16"),
        "mm_softmax": lambda x, w, b: fs.softmax(x @ w + b),
        "mm_where": lambda x, w, b: fs.where(x @ w > 0, x @ w, b),
    }
    dims = [(40, 24, 72), (1, 5, 1), (33, 19, 30), (128, 64, 96), (64, 256, 48), (17, 130, 9)]
    for (name, f), (m, k, n), dtype, target in product(progs.items(), dims, ["float32", "float16"], TARGETS):
        yield (f"cube/{name}", f, [((m, k), dtype), ((k, n), dtype), ((n,), dtype)], target)
    # the cube kernel's other forms: transposed operands, batches, a residual [M, N] input, a
    # scalar, values per row of C, int8 operands, several matmuls of one A (the cube_group kind),
    # and shapes big enough for several cores, tiles and A's panel in L1
    more = {
        "mm_ta_tb": (lambda x, w, r: fs.transpose(x) @ fs.transpose(w), lambda m, k, n: [(k, m), (n, k), (1,)]),
        "bmm_relu": (lambda x, w, r: fs.relu(x @ w), lambda m, k, n: [(3, m, k), (k, n), (1,)]),
        "bmm_both": (lambda x, w, r: x @ w * 0.5, lambda m, k, n: [(2, m, k), (2, k, n), (1,)]),
        "mm_residual": (lambda x, w, r: fs.sigmoid(x @ w) * r, lambda m, k, n: [(m, k), (k, n), (m, n)]),
        "mm_scalar": (lambda x, w, r: x @ w - r, lambda m, k, n: [(m, k), (k, n), (1,)]),
        "mm_rowsum": (lambda x, w, r: (fs.exp(x @ w), fs.sum(x @ w, axis=-1)), lambda m, k, n: [(m, k), (k, n), (1,)]),
        "mm_logsumexp": (lambda x, w, r: fs.logsumexp(x @ w, axis=-1), lambda m, k, n: [(m, k), (k, n), (1,)]),
        "mm_layernorm": (lambda x, w, r: fs.layer_norm(x @ w, r), lambda m, k, n: [(m, k), (k, n), (n,)]),
        "group2": (lambda x, w, r: (fs.relu(x @ w), x @ (w * 2.0) + r), lambda m, k, n: [(m, k), (k, n), (n,)]),
    }
    dims2 = [(40, 24, 72), (1, 5, 1), (33, 19, 30), (300, 200, 260)]
    for (name, (f, shapes)), (m, k, n), dtype, target in product(more.items(), dims2, ["float32", "float16"],
                                                                 TARGETS):
        yield (f"cube/{name}", f, [(s, dtype) for s in shapes(m, k, n)], target)
    ints = {"mm_int8": lambda x, w, r: x @ w, "mm_int8_add": lambda x, w, r: x @ w + r}
    for (name, f), (m, k, n), target in product(ints.items(), dims2[:3], TARGETS):
        yield (f"cube/{name}", f, [((m, k), "int8"), ((k, n), "int8"), ((m, n), "int8")], target)


def _conv_configs():
    progs = {
        "conv": lambda x, w, b: fs.conv2d(x, w, padding=1),
        "conv_bias_leaky": lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w, b, stride=2, padding=1), 0.1),
        "conv_relu": lambda x, w, b: fs.relu(fs.conv2d(x, w, b)),
    }
    shapes = [((1, 3, 9, 9), (4, 3, 3, 3)), ((2, 8, 12, 10), (16, 8, 3, 3)), ((1, 16, 7, 7), (8, 16, 1, 1))]
    for (name, f), (sx, sw), dtype, target in product(progs.items(), shapes, ["float32", "float16"], TARGETS):
        yield (f"conv/{name}", f, [(sx, dtype), (sw, dtype), ((sw[0],), dtype)], target)
    # bigger images and taps (several cores, chunks and padding taps), a residual-free chain, int8
    more = {"conv5_s2_gelu": lambda x, w, b: fs.gelu(fs.conv2d(x, w, b, stride=2, padding=2)),
            "conv_sub_scale": lambda x, w, b: (fs.conv2d(x, w, padding=1) - 0.5) * 2.0}
    shapes2 = [((2, 4, 23, 19), (8, 4, 5, 5)), ((1, 32, 20, 20), (32, 32, 3, 3))]
    for (name, f), (sx, sw), dtype, target in product(more.items(), shapes2, ["float32", "float16"], TARGETS):
        yield (f"conv/{name}", f, [(sx, dtype), (sw, dtype), ((sw[0],), dtype)], target)
    for (sx, sw), target in product(shapes[:2], TARGETS):
        yield ("conv/conv_int8", lambda x, w, b: fs.conv2d(x, w, padding=1), [(sx, "int8"), (sw, "int8"), ((sw[0],), "int8")],
               target)


def _attention_configs():
    # q [B, H, L, E], k / v [B, Hkv, S, E]: sizes 1, tails of both blocks, GQA, head sizes whose rows
    # are not 32-byte multiples, causal (L != S), bool / key-padding / additive masks, rope
    shapes = [((1, 2, 17, 40), (1, 2, 33, 40)), ((2, 4, 130, 64), (2, 2, 140, 64)), ((1, 1, 1, 8), (1, 1, 1, 8))]
    progs = {"plain": lambda q, k, v, m: fs.attention(q, k, v),
             "causal": lambda q, k, v, m: fs.attention(q, k, v, causal=True),
             "bool_mask": lambda q, k, v, m: fs.attention(q, k, v, mask=m > 0.5),
             "additive_mask": lambda q, k, v, m: fs.attention(q, k, v, mask=m)}
    for (name, f), (sq, skv), dtype, target in product(progs.items(), shapes, ["float32", "float16"], TARGETS):
        yield (f"attention/{name}", f, [(sq, dtype), (skv, dtype), (skv, dtype), ((sq[2], skv[2]), dtype)], target)
    rope = lambda q, k, v, c, s: fs.attention(fs.rope(q, c, s), fs.rope(k, c, s), v)   # noqa: E731
    for dtype, target in product(["float32", "float16"], TARGETS):
        yield ("attention/rope", rope, [((1, 2, 24, 32), dtype), ((1, 2, 24, 32), dtype), ((1, 2, 24, 32), dtype),
                                        ((24, 32), dtype), ((24, 32), dtype)], target)


def _transposed(perm):
    return lambda x: fs.transpose(x, perm)


def _transpose_configs():
    perms = [((30, 17), (1, 0)), ((4, 6, 5), (0, 2, 1)), ((4, 6, 5), (2, 0, 1)), ((3, 1, 7, 2), (3, 2, 1, 0)),
             ((64, 33), (1, 0)), ((9, 33, 4), (1, 0, 2))]
    for ((shape, perm), dtype, target) in product(perms, ["float32", "float16", "int8"], TARGETS):
        yield (f"transpose/{'x'.join(map(str, shape))}-{''.join(map(str, perm))}",
               _transposed(perm), [(shape, dtype)], target)
    slices = {"5x40[:,1::3]": ((5, 40), lambda x: x[:, 1::3]), "7x9[::2,::2]": ((7, 9), lambda x: x[::2, ::2]),
              "3x4x17[1:,:,::4]": ((3, 4, 17), lambda x: x[1:, :, ::4])}
    for (name, (shape, f)), dtype, target in product(slices.items(), ["float32", "float16"], TARGETS):
        yield (f"transpose/slice-{name}", f, [(shape, dtype)], target)


KINDS = {"vector": _vector_configs, "view": _view_configs, "row": _row_configs,
         "column": _column_configs, "cube": _cube_configs, "conv": _conv_configs,
         "transpose": _transpose_configs, "attention": _attention_configs}


def configs(only=None, match=None):
    for kind, gen in KINDS.items():
        if only and kind != only:
            continue
        yield from (c for c in gen() if match is None or match in c[0])


# ---- recording ---------------------------------------------------------------------------
def _inputs(specs, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        shape, dtype = spec[0], spec[1]
        if dtype == "int32" and len(spec) == 3:   # indices into a table of spec[2] rows
            arrays.append(rng.integers(0, spec[2], shape).astype(np.int32))
        elif dtype == "int8":
            arrays.append(rng.integers(-100, 100, shape).astype(np.int8))
        elif dtype == "int32":
            arrays.append(rng.integers(-50, 50, shape).astype(np.int32))
        else:
            arrays.append(rng.uniform(0.1, 2.0, shape).astype(dtype))
    return arrays


def _hash(results) -> str:
    h = hashlib.sha256()
    for r in results if isinstance(results, tuple) else (results,):
        r = np.ascontiguousarray(r)
        h.update(str((r.shape, r.dtype.str)).encode())
        h.update(r.tobytes())
    return h.hexdigest()[:16]


def _key_file(save: str, key: str) -> str:
    return os.path.join(save, hashlib.sha256(key.encode()).hexdigest()[:24] + ".npz")


def _as_tuple(results) -> tuple:
    return results if isinstance(results, tuple) else (results,)


def _reference(k, arrays) -> tuple:
    """The numpy reference interpreter's results of compiled kernel `k` (fs.config.executor)."""
    previous = fs.config.executor
    fs.config.executor = "reference"
    try:
        return _as_tuple(k(*arrays))
    finally:
        fs.config.executor = previous


def _save(save: str, key: str, saved: dict) -> None:
    arrays = {f"{name}_{i:03d}": np.asarray(r) for name, results in saved.items() for i, r in enumerate(results)}
    tmp = _key_file(save, key) + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, _key_file(save, key))


def record_one(key, fn, specs, target, simulate: bool, save: str | None = None) -> dict:
    arrays = _inputs(specs, seed=len(key))
    rec = {"key": key, "target": target}
    try:
        k = fs.fused_kernel(fn, target=target).compile(*arrays)
    except fs.FusedslError as exc:
        rec["compile_error"] = f"{type(exc).__name__}"
        return rec
    rec["kernels"] = [f"{p.kind}:{','.join(p.ops)}" for p in k.kernels]
    results = _as_tuple(k(*arrays))
    rec["llvm"] = _hash(results)
    saved = {"llvm": results} if save else None
    try:
        rec.update(_printed(k, arrays, simulate, saved))
    finally:
        if save:
            saved["ref"] = _reference(k, arrays)
            _save(save, key, saved)
    return rec


def _without_checkout(text: str) -> str:
    """`text` without the checkout's path, which names the programs' file in the printed source's
    comments and in error messages: before and after are two checkouts (or a copy of this file)."""
    return text.replace(os.path.abspath(__file__), "<kernel_corpus.py>").replace(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "<checkout>")


def _printed(k, arrays, simulate: bool, saved: dict | None) -> dict:
    """A record's fields of the printed Ascend C: its hash (or why it does not print), the
    report's GM figures and, when `simulate`, the hash of its results under the CPU API."""
    rec = {}
    try:
        rec["source"] = hashlib.sha256(_without_checkout(k.source).encode()).hexdigest()[:16]
    except fs.FusedslError as exc:
        rec["source_error"] = f"{type(exc).__name__}: {_without_checkout(str(exc).splitlines()[0])[:160]}"
        return rec
    rep = k.report()
    rec["gm_min"], rec["gm_fused"] = rep.gm_bytes_min, getattr(rep, "gm_bytes_fused", None)
    if simulate:
        results = _as_tuple(k.simulate(*arrays))
        rec["simulate"] = _hash(results)
        rec["gm_measured"] = k.report().gm_bytes_measured
        if saved is not None:
            saved["sim"] = results
    return rec


def record(path, every, only, match=None, save=None):
    out, t0 = [], time.time()
    if save:
        os.makedirs(save, exist_ok=True)
    for i, (kind, fn, specs, target) in enumerate(configs(only, match)):
        key = f"{kind}|{target}|" + ";".join(f"{s[0]}:{s[1]}" for s in specs)
        out.append(record_one(key, fn, specs, target, bool(every) and i % every == 0, save))
        if i % 100 == 0:
            print(f"{i} configurations, {time.time() - t0:.0f} s", file=sys.stderr)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    os.replace(tmp, path)
    kinds = {}
    for r in out:
        kinds[r["key"].split("/")[0]] = kinds.get(r["key"].split("/")[0], 0) + 1
    printed = sum("source" in r for r in out)
    print(f"{len(out)} configurations ({kinds}), {printed} print, "
          f"{sum('simulate' in r for r in out)} simulated, {time.time() - t0:.0f} s")


def compare(before_path, after_path) -> int:
    before = {r["key"]: r for r in json.load(open(before_path))}
    after = {r["key"]: r for r in json.load(open(after_path))}
    bad, sources = 0, 0
    for key in sorted(before.keys() | after.keys()):
        b, a = before.get(key), after.get(key)
        if b is None or a is None:
            print(f"only in {'after' if b is None else 'before'}: {key}")
            continue
        for field in sorted(b.keys() | a.keys()):
            if b.get(field) == a.get(field):
                continue
            worse = field in ("llvm", "simulate", "compile_error") or (
                field in ("gm_fused", "gm_measured") and (a.get(field) or 0) > (b.get(field) or 0)) or (
                field == "source" and "source" not in a)
            sources += field in ("source", "source_error")
            bad += worse
            print(f"{'DIFF' if worse else 'note'} {key} {field}: {b.get(field)} -> {a.get(field)}")
    print(f"{len(before)} before, {len(after)} after: {bad} result/traffic differences, "
          f"{sources} printed-source differences")
    return 1 if bad else 0


def distance(got: np.ndarray, ref: np.ndarray) -> float:
    """How far `got` lies from `ref`: for floats the largest difference in units in the last
    place of the result dtype at the reference's largest magnitude (a norm-wise measure: an
    element that cancels to near zero does not make a rounding difference look large); NaN where
    the other is not NaN, or a different infinity, counts as infinitely far.  For integers and
    bools, the number of elements that differ.  A shape or dtype mismatch is infinitely far."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return float("inf")
    if not np.issubdtype(ref.dtype, np.floating):
        return float(np.count_nonzero(got != ref))
    g, r = got.astype(np.float64), ref.astype(np.float64)
    same = (g == r) | (np.isnan(g) & np.isnan(r))
    if same.all():
        return 0.0
    if (np.isnan(g) != np.isnan(r)).any() or (np.isinf(g[~same]) | np.isinf(r[~same])).any():
        return float("inf")
    finite = np.abs(r[np.isfinite(r)])
    scale = np.spacing(ref.dtype.type(finite.max() if finite.size else 1.0)).astype(np.float64)
    return float(np.max(np.abs(g - r)[~same]) / scale)


def _loaded(path: str) -> dict:
    """{"llvm" | "sim" | "ref": [results in order]} of a file `_save` wrote."""
    with np.load(path) as z:
        out = {}
        for name in sorted(z.files):   # (`_save`'s keys: <name>_<3-digit index>)
            out.setdefault(name.rsplit("_", 1)[0], []).append(z[name])
        return out


def closeness(before_path, after_path, before_dir, after_dir) -> int:
    """Per kind, the configurations whose LLVM or simulate results differ: closer to the after
    checkout's numpy reference, as close, or farther (`distance`, the largest over the results)."""
    before = {r["key"]: r for r in json.load(open(before_path))}
    after = {r["key"]: r for r in json.load(open(after_path))}
    rows: dict[tuple, list] = {}
    for key in sorted(before.keys() & after.keys()):
        for field, saved in (("llvm", "llvm"), ("simulate", "sim")):
            b, a = before[key].get(field), after[key].get(field)
            if b is None or a is None or a == b:
                continue
            fb, fa = _key_file(before_dir, key), _key_file(after_dir, key)
            if not (os.path.exists(fb) and os.path.exists(fa)):
                print(f"no saved results: {key}")
                continue
            rb, ra = _loaded(fb), _loaded(fa)
            if saved not in rb or saved not in ra:
                continue
            d_before = max(distance(g, r) for g, r in zip(rb[saved], ra["ref"]))
            d_after = max(distance(g, r) for g, r in zip(ra[saved], ra["ref"]))
            verdict = "closer" if d_after < d_before else "farther" if d_after > d_before else "as close"
            rows.setdefault((key.split("/")[0], field), []).append((verdict, d_before, d_after, key))
            if verdict == "farther":
                print(f"farther {field} {key}: {d_before:g} -> {d_after:g} ulp")
    print("| kind | result | differ | closer | as close | farther | max before (ulp) | max after (ulp) |")
    print("|---|---|---|---|---|---|---|---|")
    for (kind, field), items in sorted(rows.items()):
        count = {v: sum(1 for it in items if it[0] == v) for v in ("closer", "as close", "farther")}
        print(f"| {kind} | {field} | {len(items)} | {count['closer']} | {count['as close']} | {count['farther']} | "
              f"{max(it[1] for it in items):g} | {max(it[2] for it in items):g} |")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("path")
    r.add_argument("--simulate", type=int, default=0, metavar="N", help="simulate every N-th configuration")
    r.add_argument("--only", choices=sorted(KINDS))
    r.add_argument("--match", metavar="TEXT", help="only the programs whose name holds TEXT (e.g. cube/mm_softmax)")
    r.add_argument("--save", metavar="DIR", help="also write each configuration's results and numpy reference "
                                                 "results to DIR (for `closeness`)")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    n = sub.add_parser("closeness", help="differing results against numpy's reference (records made with --save)")
    for name in ("before", "after", "before_dir", "after_dir"):
        n.add_argument(name)
    args = ap.parse_args(argv)
    if args.cmd == "record":
        record(args.path, args.simulate, args.only, args.match, args.save)
        return 0
    if args.cmd == "closeness":
        return closeness(args.before, args.after, args.before_dir, args.after_dir)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
