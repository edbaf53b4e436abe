"""Print the Ascend C of a corpus of kernels (every elementwise op per dtype, scalar and tensor
operands, compares/where, row reductions, cube epilogues) on every target into a directory, one
file per kernel and target: run it before and after a refactor of the op tables and `diff -r`
the two directories (the printed sources should be byte-identical).

    PYTHONPATH=$PWD python benchmarks/print_corpus.py OUTDIR
"""
import os
import sys

import numpy as np

import fusedsl as fs

TARGETS = ["ascend910b", "ascend310p", "ascend910"]
UNARY = ["abs", "negative", "square", "relu", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid",
         "tanh", "gelu", "silu"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


def cases():
    for name in UNARY:
        f = getattr(fs, name)
        for dtype in ("float32", "float16", "int32", "int8", "bfloat16"):
            yield f"{name}_{dtype}", (lambda f: lambda x: f(x))(f), [((37, 130), dtype)]
    for name in BINARY:
        f = getattr(fs, name)
        for dtype in ("float32", "float16", "int32", "uint8"):
            yield f"{name}_{dtype}", (lambda f: lambda x, y: f(x, y))(f), [((37, 130), dtype), ((130,), dtype)]
            yield f"{name}_s_{dtype}", (lambda f: lambda x: f(x, 3))(f), [((37, 130), dtype)]
            yield f"{name}_sf_{dtype}", (lambda f: lambda x: f(2, x))(f), [((37, 130), dtype)]
    for dtype in ("float32", "float16"):
        yield f"leaky_{dtype}", lambda x: fs.leaky_relu(x, 0.2), [((37, 130), dtype)]
        yield f"where_{dtype}", lambda x, y: fs.where(x > y, x * 2, y), [((37, 130), dtype), ((37, 130), dtype)]
        yield f"cmp_{dtype}", lambda x: (x >= 0.5), [((37, 130), dtype)]
        yield f"softmax_{dtype}", lambda x: fs.softmax(x), [((37, 130), dtype)]
        yield f"layernorm_{dtype}", lambda x, g, b: fs.gelu(fs.layer_norm(x, g, b)), [((37, 130), dtype), ((130,), dtype), ((130,), dtype)]
        yield f"colsum_{dtype}", lambda x: fs.sum(fs.sigmoid(x), axis=0), [((37, 130), dtype)]
        yield f"mm_{dtype}", lambda a, w, b: fs.tanh(a @ w + b), [((40, 24), dtype), ((24, 72), dtype), ((72,), dtype)]
        yield f"mmsm_{dtype}", lambda a, w, b: fs.softmax(fs.silu(a @ w + b)), [((40, 24), dtype), ((24, 72), dtype), ((72,), dtype)]
        yield f"conv_{dtype}", lambda x, w: fs.gelu(fs.conv2d(x, w, padding=1)), [((2, 8, 9, 9), dtype), ((16, 8, 3, 3), dtype)]
    yield "cast_mix", lambda x: (fs.exp(x.astype(fs.float32)) + 1).astype(fs.int32), [((37, 130), "float16")]
    yield "slice", lambda x: fs.sigmoid(x[:, 1:50]) * 2, [((37, 130), "float32")]


def main(out):
    os.makedirs(out, exist_ok=True)
    n = 0
    for name, f, specs in cases():
        for target in TARGETS:
            k = fs.fused_kernel(f, target=target)
            try:
                src = k.compile(*[fs.spec(s, d) for s, d in specs]).source
            except fs.FusedslError as exc:
                src = f"ERROR {type(exc).__name__}: {exc}"
            with open(os.path.join(out, f"{name}.{target}.cpp"), "w") as fh:
                fh.write(src)
            n += 1
    print(n, "sources written to", out)


if __name__ == "__main__":
    main(sys.argv[1])
