// CPU-mode launch helpers in the style of CANN's tikicpulib, on top of fusedsl's CPU
// implementation of the Ascend C API.
//
//   uint8_t* x = (uint8_t*)AscendC::GmAlloc(bytes);   // zero-filled, registered GM buffer
//   AscendC::SetKernelMode(KernelMode::AIV_MODE);
//   ICPU_RUN_KF(add_custom, blockDim, x, y, z, tiling); // every block in turn, in-process
//   AscendC::GmFree(x);
//
// A broken hardware rule prints "[ERROR] fusedsl CPU check (<target>, block <n>): ..." and
// exits with status 1.
#pragma once

#include "kernel_operator.h"

namespace fusedsl_cpu {

inline void* AllocGm(size_t bytes, const char* kind);

// ICPU_RUN_KF: every block of the launch in turn.  Like CANN's (asc-tools cpudebug kern_fwk.h,
// RunKernelFunctionOnCpu: a GmAlloc'd RESERVED_WORKSPACE becomes g_sysWorkspaceReserved), a launch
// whose host named no workspace gets a zeroed system workspace of GetLibApiWorkSpaceSize() bytes
// for the time of the launch, so GetSysWorkSpacePtr() works without SetSysWorkspace.
template <typename F, typename... Args>
inline void RunKernelOrExit(F kernel, uint64_t blockDim, Args... args) {
    Runtime& rt = RT();
    void* reserved = nullptr;
    if (rt.launch_workspace == nullptr && !rt.library_mode) {
        reserved = AllocGm(LibApiWorkspaceBytes(), "system workspace");
        rt.launch_workspace = static_cast<uint8_t*>(reserved);
    }
    int status = Launch(kernel, blockDim, args...);
    if (reserved != nullptr) {
        rt.launch_workspace = nullptr;
        UnregisterGm(reserved);
        std::free(reserved);
    }
    if (status == 0 || rt.library_mode) {
        return;
    }
    std::fflush(stdout);
    std::fprintf(stderr, "[ERROR] %s\n", rt.last_error.c_str());
    std::exit(1);
}

inline void* AllocGm(size_t bytes, const char* kind) {
    // Page-aligned like the CANN CPU mode's mmapped buffers.
    size_t size = static_cast<size_t>(RoundUp(bytes == 0 ? 1 : bytes, 4096));
    void* p = std::aligned_alloc(4096, size);
    if (p == nullptr) {
        return nullptr;
    }
    std::memset(p, 0, size);
    RT().gm_alloc_count += 1;
    RegisterGm(p, bytes, Format("%s#%llu", kind, static_cast<unsigned long long>(RT().gm_alloc_count)));
    return p;
}

}  // namespace fusedsl_cpu

namespace AscendC {

inline void* GmAlloc(size_t size) {
    return fusedsl_cpu::AllocGm(size, "GmAlloc");
}

inline void GmFree(void* ptr) {
    if (ptr == nullptr) {
        return;
    }
    fusedsl_cpu::UnregisterGm(ptr);
    std::free(ptr);
}

inline void SetKernelMode(KernelMode mode) {
    fusedsl_cpu::RT().kernel_mode = mode;
}

}  // namespace AscendC

#define ICPU_RUN_KF(func, blockdim, ...) ::fusedsl_cpu::RunKernelOrExit(func, blockdim, ##__VA_ARGS__)
#define ICPU_SET_TILING_KEY(key) (::fusedsl_cpu::RT().tiling_key = static_cast<uint64_t>(key))
#ifndef TILING_KEY_IS
#define TILING_KEY_IS(key) (::fusedsl_cpu::RT().tiling_key == static_cast<uint64_t>(key))
#endif
