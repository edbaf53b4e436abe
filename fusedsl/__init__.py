"""fusedsl: a Python-embedded kernel DSL with a tracing compiler for Ascend NPUs.

    @fs.fused_kernel
    def abs_add_relu(a, b):
        return fs.relu(fs.abs(a) + b)
"""
from .dtypes import bfloat16, bool_, float16, float32, int8, int32, uint8
from .errors import (ArgumentError, AscendCCheckError, AscendCCompileError, AscendCWarning, ControlFlowError,
                     DTypeError, FusedslError, FusedslWarning, GmCacheLineWarning, IndexRangeError, IntRangeError, IRParseError, ProjectError, SaturationWarning, ScheduleError, ShapeError,
                     TargetError,
                     TraceError, UnsupportedOpError, VerifyError)
from . import ops  # noqa: F401  (the op definitions register themselves first)
from .frontend.api import (abs, absolute, add, amax, amin, arange, astype, attention, batch_norm, broadcast_to, cast,
                           concatenate, conv2d, divide, equal, exp, gelu, greater, greater_equal,
                           layer_norm, leaky_relu, less, less_equal, linspace, log, matmul, max, maximum, mean,
                           min, minimum, multiply, negative, not_equal, permute_dims, power, reciprocal,
                           relu, reshape, rms_norm, rope, rsqrt, sigmoid, silu, softmax, sqrt, square,
                           subtract, sum, take, tanh, transpose, true_divide,
                           where)
from .frontend import api as _api
from .frontend.kernel import FusedKernel, ScalarSpec, TensorSpec, fused_kernel, scalar, spec
from .importers import from_onnx, from_torch, torch_backend

from .version import __version__
from . import docstrings as _docstrings
globals().update({_n: getattr(_api, _n) for _n in _api.GENERATED})   # composites' fs names
bool = bool_  # noqa: A001 - numpy spells it np.bool_ too; fs.bool reads naturally in user code

# Loaded on first use so that `import fusedsl` stays fast (< 0.3 s): the compiler pulls in the
# pass pipeline and the scheduler, the IR parser pulls in lark, benchmark pulls in nothing big
# but is only needed in a notebook cell.
_LAZY = {"parse_ir": ("ir.parser", "parse_ir"), "CompiledKernel": ("compiler", "CompiledKernel"),
         "config": ("compiler", "config"), "benchmark": ("benchmark", "benchmark"),
         "Benchmark": ("benchmark", "Benchmark")}


# The reference docstrings of the generated op families and of names documented elsewhere
# (fusedsl/docstrings.py; a name with a complete docstring of its own keeps it).
for _name, _value in list(globals().items()):
    if not _name.startswith("_"):
        _docstrings.document(_name, _value)
_docstrings.document("DType", type(float32))


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'fusedsl' has no attribute {name!r}")
    import importlib
    module, attr = _LAZY[name]
    loaded = importlib.import_module(f".{module}", __name__)
    # every lazy name of that module at once: importing fusedsl.benchmark binds the submodule as
    # the package attribute `benchmark`, which would then shadow the function of that name
    for other, (other_module, other_attr) in _LAZY.items():
        if other_module == module:
            globals()[other] = getattr(loaded, other_attr)   # later lookups skip __getattr__
            _docstrings.document(other, globals()[other])
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
