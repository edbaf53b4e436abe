"""The reference docstrings of the public names whose code is generated (the fs.* op families are
made by factories in frontend/api.py) or lives in modules whose owners keep them short.

`document(name, obj)` gives `obj` its entry here unless its own docstring is already complete
(has an Example section): code that documents itself wins.  fusedsl/__init__.py applies it to
every public name (lazy ones when they load), so `help(fs.exp)`, the API reference site
(mkdocstrings) and tests/test_docs_api.py (which runs every example as a doctest) see the same
text.  Google style: Args / Returns / Raises / Example.
"""
from __future__ import annotations

_EAGER = ("Inside a `@fs.fused_kernel` function it traces into the kernel; called on numpy arrays "
          "outside one, it runs eagerly on the numpy reference interpreter.")

# ---- elementwise unary ---------------------------------------------------------------------
# name -> (what it computes, float_only, doctest input, doctest output)
_UNARY = {
    "abs": ("The absolute value |x|, elementwise (also `abs(x)` and `np.abs(x)` on a traced tensor).", False,
            "np.array([-2, 3], np.int32)", "array([2, 3], dtype=int32)"),
    "negative": ("-x, elementwise (also the unary minus operator).", False,
                 "np.array([1.5, -2.0], np.float32)", "array([-1.5,  2. ], dtype=float32)"),
    "square": ("x * x, elementwise.", False, "np.array([3, -4], np.int32)", "array([ 9, 16], dtype=int32)"),
    "relu": ("max(x, 0), elementwise.", False, "np.array([-1.0, 2.0], np.float32)",
             "array([0., 2.], dtype=float32)"),
    "exp": ("e ** x, elementwise.", True, "np.zeros(2, np.float32)", "array([1., 1.], dtype=float32)"),
    "log": ("The natural logarithm, elementwise (log of a negative number is NaN, of 0 is -inf).", True,
            "np.ones(2, np.float32)", "array([0., 0.], dtype=float32)"),
    "sqrt": ("The square root, elementwise.", True, "np.array([4.0, 9.0], np.float32)",
             "array([2., 3.], dtype=float32)"),
    "rsqrt": ("1 / sqrt(x), elementwise (one op on the NPU).", True, "np.array([4.0, 16.0], np.float32)",
              "array([0.5 , 0.25], dtype=float32)"),
    "reciprocal": ("1 / x, elementwise.", True, "np.array([2.0, 4.0], np.float32)",
                   "array([0.5 , 0.25], dtype=float32)"),
    "sigmoid": ("1 / (1 + exp(-x)), elementwise.", True, "np.zeros(2, np.float32)",
                "array([0.5, 0.5], dtype=float32)"),
    "tanh": ("The hyperbolic tangent, elementwise.", True, "np.zeros(2, np.float32)",
             "array([0., 0.], dtype=float32)"),
    "gelu": ("GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise.", True,
             "np.zeros(2, np.float32)", "array([0., 0.], dtype=float32)"),
    "silu": ("x * sigmoid(x) (swish), elementwise.", True, "np.zeros(2, np.float32)",
             "array([0., 0.], dtype=float32)"),
}
_ALIASES = {"absolute": "abs", "true_divide": "divide", "amax": "max", "amin": "min", "astype": "cast",
            "bool_": "bool"}


def _unary_doc(name: str) -> str:
    what, float_only, arg, out = _UNARY[name]
    dtype = ("Integer and bool inputs compute as float32 (the result is float32)." if float_only else
             "The result has x's dtype; bool tensors are refused.")
    raises = ("        ArgumentError: x is a Python number, not a tensor or array." +
              ("" if float_only else "\n        DTypeError: x is a bool tensor (cast it first)."))
    return f"""{what}

    {_EAGER} {dtype}

    Args:
        x: a traced tensor (inside a kernel) or a numpy array (outside one).

    Returns:
        A tensor (a numpy array outside a kernel) of x's shape.

    Raises:
{raises}

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.{name}({arg})
        {out}
        >>> k = fs.fused_kernel(lambda x: fs.{name}(x) + 1)
        >>> k({arg}).shape
        (2,)
    """


# ---- elementwise binary --------------------------------------------------------------------
# name -> (operator or formula, result note, doctest output of f([1, 4], [2, 2]) in float32)
_BINARY = {
    "add": ("a + b", None, "array([3., 6.], dtype=float32)"),
    "subtract": ("a - b", None, "array([-1.,  2.], dtype=float32)"),
    "multiply": ("a * b", None, "array([2., 8.], dtype=float32)"),
    "divide": ("a / b (true division; integer inputs compute as float32)", None, "array([0.5, 2. ], dtype=float32)"),
    "maximum": ("the larger of a and b", None, "array([2., 4.], dtype=float32)"),
    "minimum": ("the smaller of a and b", None, "array([1., 2.], dtype=float32)"),
    "less": ("a < b", "bool", "array([ True, False])"),
    "less_equal": ("a <= b", "bool", "array([ True, False])"),
    "greater": ("a > b", "bool", "array([False,  True])"),
    "greater_equal": ("a >= b", "bool", "array([False,  True])"),
    "equal": ("a == b", "bool", "array([False, False])"),
    "not_equal": ("a != b", "bool", "array([ True,  True])"),
}


def _binary_doc(name: str) -> str:
    what, kind, out = _BINARY[name]
    result = ("A bool tensor of the broadcast shape." if kind == "bool" else
              "A tensor of the broadcast shape and the promoted dtype (see the dtypes page).")
    return f"""Elementwise {what}, with numpy broadcasting and fusedsl's promotion rules.

    {_EAGER} Python numbers are weak scalars (`x * 2` keeps x's dtype) and are baked into the
    kernel as constants.

    Args:
        a: a tensor, numpy array or Python number.
        b: a tensor, numpy array or Python number.

    Returns:
        {result}

    Raises:
        ShapeError: the shapes do not broadcast.
        DTypeError: a Python number does not fit the tensor's dtype (`uint8_tensor - 300`), or bool
            operands to arithmetic.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.{name}(np.array([1, 4], np.float32), np.array([2, 2], np.float32))
        {out}
    """


# ---- reductions ------------------------------------------------------------------------------
_REDUCE = {"sum": ("The sum", "integers sum as int32; 16-bit floats accumulate in float32", "array([3., 7.], dtype=float32)"),
           "mean": ("The mean", "integer inputs compute as float32", "array([1.5, 3.5], dtype=float32)"),
           "max": ("The maximum", "the result keeps x's dtype", "array([2., 4.], dtype=float32)"),
           "min": ("The minimum", "the result keeps x's dtype", "array([1., 3.], dtype=float32)")}


def _reduce_doc(name: str) -> str:
    what, dtype, out = _REDUCE[name]
    return f"""{what} over `axis` (numpy's signature; also the method `x.{name}(axis)`).

    {_EAGER} Reductions accumulate in float32; {dtype}. A reduction over the last axis fuses with
    the ops around it into one row kernel (reason FS112); other axes print as a column kernel.

    Args:
        x: a tensor or numpy array.
        axis: None (every axis), an int or a tuple of ints; negative counts from the end.
        keepdims: keep the reduced axes with size 1.

    Returns:
        A tensor of x's shape without the reduced axes (with them as 1 if keepdims).

    Raises:
        ShapeError: an axis out of range or given twice.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.{name}(np.array([[1, 2], [3, 4]], np.float32), axis=1)
        {out}
    """


# ---- the other ops and entry points, by hand -----------------------------------------------------
_DOCS = {
    "attention": """Scaled dot-product attention with PyTorch's SDPA semantics, as ONE op (one kernel).

    q [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev] -> [..., H, L, Ev]; H a multiple
    of Hkv is grouped-query attention. Softmax statistics are float32 for every dtype; a fully
    masked row is 0, like torch. {eager}

    Args:
        q: the queries [..., H, L, E].
        k: the keys [..., Hkv, S, E].
        v: the values [..., Hkv, S, Ev].
        mask: None, or a bool (True = attend) or additive mask broadcasting to [..., H, L, S].
        scale: the score scale; default 1/sqrt(E).
        causal: keep key j for query i when j <= i (torch's is_causal).
        dropout_p: must be 0.0 (inference).

    Returns:
        A tensor [..., H, L, Ev].

    Raises:
        ArgumentError: a non-tensor operand, dropout, a tensor scale.
        ShapeError: shapes SDPA refuses, or no static head size for the default scale.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> q = np.ones((1, 2, 4, 8), np.float32)
        >>> fs.attention(q, q, q).shape
        (1, 2, 4, 8)
    """,
    "rope": """Rotary position embedding, rotate-half form: x * cos + rotate_half(x) * sin.

    rotate_half(x) = concatenate([-x2, x1]) of x's two halves on the last axis (Llama's, Hugging
    Face's `apply_rotary_pos_emb`). When q and k of `fs.attention` are both rotated with the same
    tables, the rotation is part of the attention kernel (pass `attention-rope`), not a kernel of
    its own. {eager}

    Args:
        x: a tensor [..., S, D] with an even, static D.
        cos: the cosine table, broadcasting to x (e.g. [S, D]).
        sin: the sine table, broadcasting to x.

    Returns:
        A tensor of x's shape.

    Raises:
        ArgumentError: a non-tensor operand.
        ShapeError: an odd or symbolic last axis.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> x = np.array([[1.0, 2.0]], np.float32)
        >>> fs.rope(x, np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32))
        array([[1., 2.]], dtype=float32)
    """,
    "power": """x ** p for the exponents the NPU has a direct op for (also the `**` operator).

    {eager}

    Args:
        x: a tensor or numpy array.
        p: a Python number: 0.5, -0.5, -1, 1, 2 or 3 (sqrt, rsqrt, reciprocal, x, square, x*x*x).

    Returns:
        A tensor of x's shape (a float dtype for the fractional and negative exponents).

    Raises:
        ArgumentError: another exponent, or a tensor exponent.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.power(np.array([4.0, 9.0], np.float32), 0.5)
        array([2., 3.], dtype=float32)
    """,
    "where": """numpy.where: elements of `a` where `cond` is true, else of `b`.

    {eager} All three broadcast together; a non-bool cond means `cond != 0`.

    Args:
        cond: a bool tensor (or any tensor, compared with 0).
        a: a tensor or Python number, chosen where cond is true.
        b: a tensor or Python number, chosen elsewhere.

    Returns:
        A tensor of the broadcast shape and the promoted dtype of a and b.

    Raises:
        ShapeError: the shapes do not broadcast.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> x = np.array([-1.0, 2.0], np.float32)
        >>> fs.where(x > 0, x, 0.0)
        array([0., 2.], dtype=float32)
    """,
    "leaky_relu": """max(x, 0) + alpha * min(x, 0), elementwise.

    {eager} A Python alpha is baked into the kernel; a traced one (`fs.scalar("alpha")`) is a
    runtime argument.

    Args:
        x: a tensor or numpy array (integers compute as float32).
        alpha: the slope for negative x: a Python number or a 0-d traced tensor.

    Returns:
        A tensor of x's shape.

    Raises:
        ShapeError: a tensor alpha that is not 0-d.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.leaky_relu(np.array([-2.0, 3.0], np.float32), 0.5)
        array([-1.,  3.], dtype=float32)
    """,
    "cast": """x converted to `dtype` (also `x.astype(dtype)`).

    {eager} float -> int truncates toward zero; anything -> bool is `x != 0`.

    Args:
        x: a tensor or numpy array.
        dtype: fs.float16, fs.bfloat16, fs.float32, fs.int32, fs.int8, fs.uint8, fs.bool, or their
            names or numpy dtypes.

    Returns:
        A tensor of x's shape and `dtype`.

    Raises:
        DTypeError: a dtype fusedsl does not have (float64, int64: use float32, int32).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.cast(np.array([1.7, -1.7], np.float32), "int32")
        array([ 1, -1], dtype=int32)
    """,
    "reshape": """x with a new shape of the same size (numpy's reshape; one -1 is inferred).

    {eager}

    Args:
        x: a tensor or numpy array.
        shape: a tuple of ints (one may be -1) or symbolic names.

    Returns:
        A tensor viewing x's elements in row-major order.

    Raises:
        ShapeError: the sizes differ.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.reshape(np.arange(6, dtype=np.float32), (2, 3)).shape
        (2, 3)
    """,
    "broadcast_to": """x broadcast to `shape` (numpy's rules).

    {eager}

    Args:
        x: a tensor or numpy array.
        shape: the target shape.

    Returns:
        A tensor of `shape`.

    Raises:
        ShapeError: x does not broadcast to shape.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.broadcast_to(np.ones(3, np.float32), (2, 3)).shape
        (2, 3)
    """,
    "transpose": """x with its axes permuted (numpy's transpose; also `x.T`).

    {eager} Transposing a matmul operand's last two axes is free (`x @ w.T` reads w transposed);
    other transposes are kernels of their own.

    Args:
        x: a tensor or numpy array.
        axes: a permutation of the axes; None reverses them.

    Returns:
        A tensor of the permuted shape.

    Raises:
        ShapeError: axes is not a permutation of x's axes.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.transpose(np.zeros((2, 3), np.float32)).shape
        (3, 2)
    """,
    "permute_dims": """The array-API name of `fs.transpose(x, axes)`.

    {eager}

    Args:
        x: a tensor or numpy array.
        axes: a permutation of the axes; None reverses them.

    Returns:
        A tensor of the permuted shape.

    Raises:
        ShapeError: axes is not a permutation of x's axes.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.permute_dims(np.zeros((2, 3, 4), np.float32), (2, 0, 1)).shape
        (4, 2, 3)
    """,
    "concatenate": """The tensors joined along `axis` (numpy's concatenate).

    {eager} A concatenate that feeds elementwise ops is the kernel's CopyIn addressing, not a
    kernel of its own.

    Args:
        xs: a list or tuple of tensors with equal shapes except along axis.
        axis: the axis to join on (negative counts from the end).

    Returns:
        A tensor whose `axis` is the sum of the inputs'.

    Raises:
        ShapeError: the other axes differ, or axis is out of range.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.concatenate([np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)], axis=1).shape
        (2, 4)
    """,
    "matmul": """Matrix product `a @ b` (numpy's matmul: batch axes broadcast).

    {eager} A matmul and its elementwise epilogue (bias, activation, residual, cast) fuse into
    one cube kernel (reason FS113).  Integer operands give numpy's (and torch's) dtype: int8 @
    int8 is int8, wrapping like numpy; the CPU computes the exact sum and wraps it once.  For a
    wider result, cast the operands first (`a.astype(np.int32) @ b.astype(np.int32)`).

    Args:
        a: a tensor [..., M, K].
        b: a tensor [..., K, N].

    Returns:
        A tensor [..., M, N].

    Raises:
        ShapeError: K differs, or the batch axes do not broadcast.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.matmul(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))[0]
        array([3., 3., 3., 3.], dtype=float32)
    """,
    "conv2d": """2-D convolution, NCHW input and KCRS weights; `bias` of shape (K,) is added per channel.

    {eager} conv2d with its epilogue (bias, activation) prints as one cube kernel with im2col
    inside it.  Integer operands keep their dtype and wrap, like torch's integer conv2d.

    Args:
        x: the input [N, C, H, W].
        w: the weights [K, C, R, S].
        bias: None or [K].
        stride: an int or a (sh, sw) pair.
        padding: an int or a (ph, pw) pair of zero padding.

    Returns:
        A tensor [N, K, Ho, Wo].

    Raises:
        ShapeError: channel counts differ or the output would be empty.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.conv2d(np.ones((1, 2, 5, 5), np.float32), np.ones((3, 2, 3, 3), np.float32), padding=1).shape
        (1, 3, 5, 5)
    """,
    "softmax": """exp(x - max(x)) / sum(exp(x - max(x))) along `axis`.

    {eager} Over the last axis it is one row kernel (reason FS112) that reads x once per row when
    the row fits UB.

    Args:
        x: a tensor or numpy array (integers compute as float32).
        axis: the axis to normalise (default -1).

    Returns:
        A tensor of x's shape whose slices along axis sum to 1.

    Raises:
        ShapeError: axis out of range.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.softmax(np.zeros((1, 4), np.float32))
        array([[0.25, 0.25, 0.25, 0.25]], dtype=float32)
    """,
    "layer_norm": """(x - mean) / sqrt(var + eps) over the last axis, then `* weight + bias` if given.

    {eager} One row kernel (reason FS112).

    Args:
        x: a tensor [..., D].
        weight: None or [D].
        bias: None or [D].
        eps: added to the variance.

    Returns:
        A tensor of x's shape.

    Raises:
        ShapeError: weight or bias is not [D].

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.layer_norm(np.array([[1.0, 3.0]], np.float32))
        array([[-0.999995,  0.999995]], dtype=float32)
    """,
    "rms_norm": """x / sqrt(mean(x * x) + eps) over the last axis, then `* weight` if given.

    {eager} One row kernel (reason FS112).

    Args:
        x: a tensor [..., D].
        weight: None or [D].
        eps: added to the mean square.

    Returns:
        A tensor of x's shape.

    Raises:
        ShapeError: weight is not [D].

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.rms_norm(np.array([[3.0, 4.0]], np.float32), eps=0.0).round(4)
        array([[0.8485, 1.1314]], dtype=float32)
    """,
    "batch_norm": """Inference batch norm over axis 1: (x - mean) / sqrt(var + eps) * weight + bias.

    {eager} The running statistics are inputs; fusion folds them into one scale and shift.

    Args:
        x: a tensor of rank >= 2 with channels on axis 1.
        mean_: the running mean, shape (C,).
        var: the running variance, shape (C,).
        weight: None or (C,).
        bias: None or (C,).
        eps: added to the variance.

    Returns:
        A tensor of x's shape.

    Raises:
        ShapeError: x has rank < 2, or a statistic is not (C,).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> c = np.ones(2, np.float32)
        >>> fs.batch_norm(np.full((1, 2, 1, 1), 3.0, np.float32), c, c, eps=0.0).ravel()
        array([2., 2.], dtype=float32)
    """,
    "take": """np.take(table, indices, axis): slices of `table` along `axis` at integer `indices`.

    {eager} An embedding lookup (`fs.take(table, ids)` on axis 0 of a 2-D table) feeding
    elementwise ops is the kernel's CopyIn addressing (one DMA per gathered row).

    Args:
        table: a tensor.
        indices: an integer tensor; negative values count from the end.
        axis: the axis of table to gather along.

    Returns:
        A tensor: table's shape with `axis` replaced by indices' shape.

    Raises:
        ArgumentError: an index outside [-n, n) (checked before anything is read).
        DTypeError: non-integer indices.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> fs.take(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([2, 0], np.int32))
        array([[4., 5.],
               [0., 1.]], dtype=float32)
    """,
    "from_onnx": """Import an ONNX model (opset 13+) as a fused kernel over its graph inputs.

    Needs the `onnx` extra (`pip install 'fusedsl[onnx]'`). The result behaves like a
    `@fs.fused_kernel`: call it on arrays, `.compile(...)` it, read its report.

    Args:
        path_or_model: a path to a .onnx file or an `onnx.ModelProto`.
        target: the chip (default ascend910b).
        **options: compile options, as for `fs.fused_kernel`.

    Returns:
        An imported kernel (a FusedKernel whose weights are bound).

    Raises:
        ArgumentError: no such file, or not a model; the onnx extra is missing.
        UnsupportedOpError: an op or an attribute variant fusedsl does not import (names the node).

    Example:
        >>> import fusedsl as fs
        >>> m = fs.from_onnx("model.onnx")            # doctest: +SKIP
        >>> y = m(x)                                  # doctest: +SKIP
    """,
    "from_torch": """Import a torch.nn.Module (or a function of tensors) through torch.export.

    Needs the `torch` extra. Each ATen op is replayed with the fusedsl op of the same meaning,
    located at your model's source line.

    Args:
        module_or_fn: a torch.nn.Module (put it in eval mode) or a function of tensors.
        *example_inputs: example tensors (their shapes and dtypes are exported).
        target: the chip (default ascend910b).
        **options: compile options, as for `fs.fused_kernel`.

    Returns:
        An imported kernel: call it on numpy arrays, `.compile(...)` it.

    Raises:
        ArgumentError: the torch extra is missing.
        UnsupportedOpError: an ATen op without a mapping, located at the model's line.

    Example:
        >>> import torch, fusedsl as fs                        # doctest: +SKIP
        >>> m = fs.from_torch(model.eval(), torch.randn(8, 64))  # doctest: +SKIP
        >>> m.compile(x).report().model_time_us_fused          # doctest: +SKIP
    """,
    "torch_backend": """A `torch.compile` backend running each captured graph as fused kernels on the CPU executors.

    Results have eager PyTorch's shapes and dtypes; tensors that require grad run eagerly
    (fusedsl kernels have no backward).

    Args:
        target: the chip the kernels are compiled for (default ascend910b).
        **options: compile options, as for `fs.fused_kernel`.

    Returns:
        A backend callable for `torch.compile(model, backend=...)`.

    Raises:
        ArgumentError: the torch extra is missing.

    Example:
        >>> fast = torch.compile(model, backend=fs.torch_backend(target="ascend910b"))  # doctest: +SKIP
    """,
    "parse_ir": """Parse text IR (as printed by `k.ir` or `kernel.trace(...)`) into a verified Module.

    Printing the module again gives the same text.

    Args:
        text: the IR text.

    Returns:
        A `Module` (its `str()` is the text again).

    Raises:
        IRParseError: malformed text; the message shows line:column and a caret.
        VerifyError: well-formed text that breaks an invariant (SSA, types).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> text = str(fs.fused_kernel(lambda x: fs.relu(x)).trace(np.ones(4, np.float32)))
        >>> str(fs.parse_ir(text)) == text
        True
    """,
    "benchmark": """Time `kernel(*args)`: median and spread over `repeat` repeats, GB/s, fraction of this machine.

    With `against=fn`, `fn(*args)` is timed and compared too (speedup, max |difference|).

    Args:
        kernel: a fused kernel or any callable.
        *args: its arguments.
        against: None or a callable computing the same thing (e.g. a numpy function).
        repeat: how many timed repeats.
        min_repeat_s: each repeat loops until it lasts at least this long.

    Returns:
        A `Benchmark` (`.median_us`, `.gbps`, `.fraction_of_machine`, `.speedup`, `.plot()`).

    Raises:
        ArgumentError: kernel or against is not callable, repeat < 1, or against returns other shapes.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> k = fs.fused_kernel(lambda x: fs.relu(x))
        >>> r = fs.benchmark(k, np.ones(1024, np.float32), repeat=3)
        >>> r.median_us > 0
        True
    """,
    "Benchmark": """Timing of one kernel call (and of `against`, when given): medians and their spread.

    Returned by `fs.benchmark`. Fields: `median_us`, `min_us`, `max_us`, `iqr_us`, `spread`
    ((max - min) / median), `bytes` moved per call, `gbps`, `machine_gbps` (this machine's
    measured bandwidth for that working set), `fraction_of_machine`, and with `against`:
    `against_median_us`, `against_gbps`, `speedup`, `max_abs_diff`. `plot()` draws them
    (matplotlib).

    Args:
        name: the kernel's label.
        times: the per-call times of each repeat, in seconds.
        nbytes: bytes the call moves.
        against_name: the label of `against`.
        against_times: its per-call times.
        max_abs_diff: max |kernel - against| over the results.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> r = fs.benchmark(fs.fused_kernel(lambda x: x + 1), np.ones(256, np.float32), repeat=3)
        >>> isinstance(r, fs.Benchmark)
        True
    """,
    "CompiledKernel": """A kernel specialised for one set of argument shapes, dtypes and constants.

    Made by `FusedKernel.compile(...)` (and on the first call). Attributes: `ir` (the fused IR
    text), `kernels` (one plan per fused kernel: `.name`, `.ops`, `.kind`, `.reason_code`,
    `.reason`, `.tiling`, `.ub_plan`), `source` (the Ascend C), `target`, `graph` (the traced IR).
    Methods: call it on arrays (`k(a, b, out=...)`), `simulate`, `save`, `report`,
    `check_ascendc`.

    Args:
        graph: the traced module.
        canonical: the module after canonicalisation.
        module: the fused module (kernels and main).
        plans: the kernel plans.
        infos: how each parameter was specialised.
        target: the chip.
        options: the compile options.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> k = fs.fused_kernel(lambda a, b: fs.relu(a + b)).compile(fs.spec((4,)), fs.spec((4,)))
        >>> " / ".join(", ".join(p.ops) for p in k.kernels)
        'add, relu'
        >>> k(np.ones(4, np.float32), -np.ones(4, np.float32))
        array([0., 0., 0., 0.], dtype=float32)
    """,
    "config": """Process-wide settings: `fs.config.executor` is what `kernel(*arrays)` runs on.

    "llvm" (the LLVM CPU backend, the default; kernels it cannot lower run on numpy) or
    "reference" (the numpy interpreter, the test oracle). The environment variable
    FUSEDSL_EXECUTOR sets it at import; an unknown value raises an ArgumentError naming the
    nearest executor.

    Example:
        >>> import fusedsl as fs
        >>> fs.config.executor
        'llvm'
    """,
    "DType": """A fusedsl dtype: fs.float16, fs.bfloat16, fs.float32, fs.int32, fs.int8, fs.uint8, fs.bool.

    numpy accepts them wherever it takes a dtype (`np.zeros(3, fs.bfloat16)`). Fields: `name`
    ("float32"), `ir` ("f32"), `np` (the numpy dtype), `ascendc` (the Ascend C type), `itemsize`,
    `kind` ("float", "int", "uint", "bool").

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> np.zeros(2, fs.float16).dtype, fs.bfloat16.itemsize, str(fs.int8)
        (dtype('float16'), 2, 'int8')
    """,
}

# CompiledKernel's methods and the Report it returns (CompiledKernel.report, Report's fields)
_MEMBERS = {
    ("CompiledKernel", "report"): """The report of this kernel: what was fused, why, tiles, UB plan, GM bytes, modelled time.

        Its `str()` is a table; in Jupyter it displays as HTML. Symbolic sizes show "-" until
        the kernel has run (or `fusedsl explain --size M=N`).

        Returns:
            A `Report` with the fields `name`, `target`, `kernels` (one row per kernel:
            `name`, `ops`, `reason_code`, `reason`, `block_dim`, `tile_rows`, `tile_cols`,
            `loops_per_core`, `ub_plan`, `ub_bytes`, `plan`, `model_time_us`, `gm_bytes`, and
            `walk_choices`: for a row or cube kernel whose tiling the kernel pass `tiling` chose
            by walking its candidates, (label, TilingChoice) pairs -- one per part of a kernel of
            several matmuls -- with the candidates weighed and the kept one's figures),
            `gm_bytes_min` (inputs + outputs once), `gm_bytes_fused` and `gm_bytes_unfused` (by
            the model), `gm_bytes_measured` (counted by the last `simulate`), `ub_budget`,
            `model_time_us_fused`, `model_time_us_unfused` and `model_kernels_unfused` (a MODEL
            of NPU time, not a measurement).

        Raises:
            Nothing: kernels that cannot print show why in their row.

        Example:
            >>> import numpy as np, fusedsl as fs
            >>> k = fs.fused_kernel(lambda x: fs.relu(x) * 2).compile(fs.spec((64, 64)))
            >>> rep = k.report()
            >>> rep.kernels[0].reason_code, rep.gm_bytes_min
            ('FS100', 32768)
        """,
    ("CompiledKernel", "simulate"): """Run the printed Ascend C: g++ builds `source` against fusedsl's CPU Ascend C API.

        The hardware rules are checked as it runs (UB capacity, alignment, queues, GM bounds...).
        Afterwards `report().gm_bytes_measured` holds the GM bytes the kernels moved.

        Args:
            *args: the runtime arguments, as for a call.

        Returns:
            The outputs as numpy arrays (a tuple for several).

        Raises:
            ArgumentError: arguments that do not match the specialisation.
            AscendCCheckError: the printed kernel broke a hardware rule.
            AscendCCompileError: g++ rejected the source, or is missing.
            ScheduleError: a kernel that does not print (the reason names the op).

        Example:
            >>> import numpy as np, fusedsl as fs
            >>> k = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec((64,)))
            >>> k.simulate(np.full(64, -1.0, np.float32)).max()   # doctest: +SKIP
            0.0
        """,
    ("CompiledKernel", "save"): """Write a CANN project for this kernel into directory `path`.

        Args:
            path: a new or empty directory (or a previous save's, with overwrite=True).
            layout: "kernel" (a kernel-launch sample: run.sh -r cpu|sim|npu, main.cpp, data
                scripts) or "op" (an op project: op_host with the tiling data and OpDef, op_kernel).
            overwrite: replace a previous fusedsl project there (only its own, unedited files).
            sizes: the symbolic dimensions' sizes for main.cpp and the data scripts (default:
                the last call's, else 64 each).
            scalars: the runtime scalars' values for main.cpp and the data scripts.

        Returns:
            The project's absolute path.

        Raises:
            ProjectError: the directory holds files fusedsl did not write (or edited ones).
            ScheduleError: a kernel that does not print as Ascend C.

        Example:
            >>> k = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec(("M", 64)))  # doctest: +SKIP
            >>> k.save("out/relu", sizes={"M": 128})                                    # doctest: +SKIP
        """,
}


def _doc_for(name: str) -> str | None:
    name = _ALIASES.get(name, name)
    if name in _UNARY:
        return _unary_doc(name)
    if name in _BINARY:
        return _binary_doc(name)
    if name in _REDUCE:
        return _reduce_doc(name)
    text = _DOCS.get(name)
    return None if text is None else text.replace("{eager}", _EAGER)


def is_complete(doc: str | None) -> bool:
    """A docstring that documents itself fully (it has an example)."""
    return bool(doc) and "Example" in doc


def document(name: str, obj) -> None:
    """Give the public object `name` its reference docstring unless it has a complete one."""
    text = _doc_for(name)
    if text is not None and not isinstance(obj, type) and not callable(obj):
        obj = type(obj)   # an instance (fs.config): its class carries the docstring
    if text is not None and not is_complete(getattr(obj, "__doc__", None)):
        # the decorators' wrappers and the function they wrap (documentation tools unwrap)
        target = obj
        while target is not None:
            try:
                target.__doc__ = text
            except (AttributeError, TypeError):   # an object whose __doc__ is read-only
                break
            target = getattr(target, "__wrapped__", None)
    if isinstance(obj, type):
        for (owner, member), member_text in _MEMBERS.items():
            fn = obj.__dict__.get(member) if owner == obj.__name__ else None
            fn = getattr(fn, "fget", fn)
            if fn is not None and not is_complete(fn.__doc__):
                fn.__doc__ = member_text
