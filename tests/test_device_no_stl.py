"""Printed device code uses no STL: the AI Core toolchain has none (issue 7 item 6)."""
import re

import numpy as np

import fusedsl as fs


def _device_part(src: str) -> str:
    # drop host-only regions (#ifndef __CCE_AICORE__ ... #endif) and CPU-debug hooks
    out, skip = [], 0
    for line in src.splitlines():
        if line.startswith("#ifndef __CCE_AICORE__") or line.startswith("#ifdef ASCENDC_CPU_DEBUG"):
            skip += 1
            continue
        if skip and line.startswith("#endif"):
            skip -= 1
            continue
        if not skip:
            out.append(line)
    return "\n".join(out)


def test_printed_device_code_has_no_stl():
    @fs.fused_kernel
    def f(x, y):
        return fs.relu(x * y + 1.0)

    a = np.ones((37, 70), np.float32)
    k = f.compile(a, a, target="ascend910b")
    src = k.source
    dev = _device_part(src)
    assert "MinU32" in dev
    assert not re.search(r"std::|#include <algorithm>", dev), dev
    assert "#include <algorithm>" in src  # the host tiling keeps it, guarded
