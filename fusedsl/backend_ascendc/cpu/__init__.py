"""fusedsl's CPU implementation of the Ascend C API (C++ headers under include/).

Kernels written for the NPU, printed by fusedsl or by hand, compile against these headers with
plain g++ and run on the CPU with the hardware rules checked.  `include_dir()` is the `-I` path;
`fusedsl include-dir` prints it for use from a build system.
"""
from __future__ import annotations

import os

_INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def include_dir() -> str:
    """The directory holding kernel_operator.h, tikicpulib.h and acl/acl.h."""
    return _INCLUDE_DIR
