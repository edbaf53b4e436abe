"""Kernels and call sites with one user mistake each.

Tests find the offending line by its `# LINE-MARK <name>` comment, so lines may move.
"""
import numpy as np

import fusedsl as fs

F32 = np.float32


@fs.fused_kernel
def add(a, b):
    return a + b  # LINE-MARK broadcast


@fs.fused_kernel
def matmul(a, b):
    return a @ b  # LINE-MARK matmul


@fs.fused_kernel
def branch_on_value(x):
    if x > 0:  # LINE-MARK if
        return x
    return -x


@fs.fused_kernel
def bool_of_tensor(x):
    y = fs.exp(x)
    return y if bool(y.sum() > 1) else x  # LINE-MARK bool


@fs.fused_kernel
def nested_composite(x, w):
    h = fs.relu(x)
    return fs.layer_norm(h, w)  # LINE-MARK composite


@fs.fused_kernel
def abs_of_bool(x):
    return fs.abs(x > 0)  # LINE-MARK bool-op


@fs.fused_kernel
def uint8_minus_one(x):
    return x - 300  # LINE-MARK scalar-fit


@fs.fused_kernel
def bad_reshape(x):
    return x.reshape(5, 5)  # LINE-MARK reshape


@fs.fused_kernel
def bad_axis(x):
    return fs.sum(x, axis=3)  # LINE-MARK axis


@fs.fused_kernel
def numpy_function(x):
    return np.cbrt(x)  # LINE-MARK numpy


def call_with_float64():
    return add(np.zeros(3), np.zeros(3))  # LINE-MARK float64


def call_with_too_few():
    return add(np.zeros(3, F32))  # LINE-MARK too-few


def call_with_too_many():
    return add(np.zeros(3, F32), np.zeros(3, F32), np.zeros(3, F32))  # LINE-MARK too-many


def call_with_unknown_keyword():
    return add(np.zeros(3, F32), c=np.zeros(3, F32))  # LINE-MARK keyword


def eager_broadcast():
    return fs.maximum(np.zeros(3, F32), np.zeros(4, F32))  # LINE-MARK eager


def spec_with_bad_dtype():
    return add.trace(fs.spec((3,), "float64"), fs.spec((3,), "float32"))  # LINE-MARK spec-dtype


BAD_IR = """func @f(%a: f32[3]) -> (f32[3]) loc("k.py":1) {
  %0 = abs(%a : f32[3] loc("k.py":2)
  return %0
}
"""

UNKNOWN_OP_IR = """func @f(%a: f32[3]) -> (f32[3]) loc("k.py":1) {
  %0 = abs(%a) : f32[3] loc("k.py":2)
  %1 = frobnicate(%0) : f32[3] loc("k.py":3)
  return %1
}
"""


def parse_bad_ir():
    return fs.parse_ir(BAD_IR)  # LINE-MARK parse


def parse_unknown_op():
    return fs.parse_ir(UNKNOWN_OP_IR)  # LINE-MARK parse-unknown
