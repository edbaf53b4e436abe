"""The LLVM CPU backend: every kernel's TileKernel lowered to LLVM IR, JIT-compiled, run on arrays.

    cpu = ScheduleCpu(sched)                    # kernel_cpu.py: kinds.host_kernel_ir -> llvm_kernel
    cpu.run(inputs, outputs, tiling)            # on the CPU's tiling words (cpu_tiling.py)
    call = cpu.bind(inputs, outputs, tiling)    # the lean path: everything prepared once

llvm_kernel.py is the one lowering of the tile IR (irgen.py / stmts.py / mathlib.py emit its
loops and stmts), jit.py compiles and caches it, launch.py runs the blocks on the host threads;
the few executors beside it (the conv modules) are listed in
docs/ARCHITECTURE.md.  The TileKernel interpreter (kernel_interp.py) is the executable spec the
compiled code is tested against.
"""
