// CANN 9 single-source (.asc) programs on the CPU: `kernel<<<numBlocks, dynUbBytes, stream>>>(args)`.
//
// g++ cannot parse the triple-chevron launch, so `fusedsl cpu-run FILE.asc` rewrites each
//     name<<<cfg...>>>(args)   into   ::fusedsl_cpu::AscLaunch(KernelMode::M, W, name, cfg...)(args)
// (M from the kernel's __vector__ / __cube__ / __mix__ qualifier, W the index of its `workspace`
// parameter, whose argument GetSysWorkSpacePtr() returns)
// before compiling (a #line directive keeps g++'s messages on the user's lines) and
// force-includes this header.  Every block of the launch runs in turn, in-process, with the
// checks of fusedsl's CPU implementation of the Ascend C API; a broken rule prints
// "[ERROR] fusedsl CPU check ..." and exits with status 1, like ICPU_RUN_KF.
//
// Supported configurations: <<<numBlocks, dynUbBytes>>> and <<<numBlocks, dynUbBytes, stream>>>
// (AI Core kernels).  SIMT launches (grid, block, dynamic UB, stream) are not modelled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>  // CANN's headers bring it in; samples print with std::cout
#include <type_traits>

#include "acl/acl.h"
#include "tikicpulib.h"

#ifndef __vector__
#define __vector__
#endif
#ifndef __cube__
#define __cube__
#endif
#ifndef __kfc_workspace__
#define __kfc_workspace__
#endif
#ifndef __mix__
#define __mix__(cube, vec)
#endif

namespace fusedsl_cpu {

// The kernel built-ins `block_idx` and `block_num`: read the running block's values each time.
struct BlockIdxBuiltin {
    operator int64_t() const { return AscendC::GetBlockIdx(); }
};
struct BlockNumBuiltin {
    operator int64_t() const { return AscendC::GetBlockNum(); }
};

template <typename F>
class AscLauncher {
public:
    AscLauncher(KernelMode mode, int workspaceArg, F kernel, uint64_t numBlocks, uint64_t dynUbBytes)
        : mode_(mode), workspace_arg_(workspaceArg), kernel_(kernel), num_blocks_(numBlocks), dyn_ub_(dynUbBytes) {}

    template <typename... Args>
    void operator()(Args&&... args) const {
        if (dyn_ub_ != 0) {
            std::fflush(stdout);
            std::fprintf(stderr, "[ERROR] fusedsl CPU: a dynamic UB size in <<<numBlocks, %llu, ...>>> is not "
                                 "modelled; pass 0 and size buffers with TPipe::InitBuffer\n",
                         static_cast<unsigned long long>(dyn_ub_));
            std::exit(1);
        }
        AscendC::SetKernelMode(mode_);
        RT().launch_workspace = WorkspaceArg(args...);
        RunKernelOrExit(kernel_, num_blocks_, args...);
        RT().launch_workspace = nullptr;
    }

private:
    template <typename T>
    static uint8_t* AsGmPointer(const T& v) {
        if constexpr (std::is_pointer_v<T>) {
            return reinterpret_cast<uint8_t*>(const_cast<std::remove_const_t<std::remove_pointer_t<T>>*>(v));
        } else {
            return nullptr;
        }
    }

    // The argument bound to the kernel's `workspace` parameter (asc.py finds its index).
    template <typename... Args>
    uint8_t* WorkspaceArg(const Args&... args) const {
        uint8_t* found = nullptr;
        int i = 0;
        ((found = (i++ == workspace_arg_ ? AsGmPointer(args) : found)), ...);
        return found;
    }

    KernelMode mode_;
    int workspace_arg_;
    F kernel_;
    uint64_t num_blocks_;
    uint64_t dyn_ub_;
};

// The second launch parameter is the dynamic UB size: 0 or nullptr in AI Core launches.
inline uint64_t DynUbBytes(std::nullptr_t) { return 0; }
template <typename T, typename = std::enable_if_t<std::is_integral<T>::value>>
inline uint64_t DynUbBytes(T bytes) { return static_cast<uint64_t>(bytes); }

// `mode` comes from the kernel's qualifier: __vector__ AIV_MODE, __cube__ AIC_MODE, __mix__ MIX_MODE;
// `workspaceArg` is the index of its parameter named `workspace` (-1: none).
template <typename F, typename D>
inline AscLauncher<F> AscLaunch(KernelMode mode, int workspaceArg, F kernel, uint64_t numBlocks, D dynUbBytes) {
    return AscLauncher<F>(mode, workspaceArg, kernel, numBlocks, DynUbBytes(dynUbBytes));
}

// The stream is a host token on the CPU: the launch runs to completion before returning.
template <typename F, typename D>
inline AscLauncher<F> AscLaunch(KernelMode mode, int workspaceArg, F kernel, uint64_t numBlocks, D dynUbBytes,
                                aclrtStream /*stream*/) {
    return AscLauncher<F>(mode, workspaceArg, kernel, numBlocks, DynUbBytes(dynUbBytes));
}

template <typename F, typename A, typename B, typename C, typename D>
inline AscLauncher<F> AscLaunch(KernelMode, int, F, A, B, C, D) {
    static_assert(sizeof(F) == 0, "SIMT launches <<<grid, block, dynUbBytes, stream>>> are not modelled by "
                                  "fusedsl's CPU implementation");
    return AscLauncher<F>(KernelMode::AIV_MODE, -1, nullptr, 0, 0);
}

}  // namespace fusedsl_cpu

// The device compiler's scalar min/max builtins, which .asc kernels call unqualified (CANN's
// softmaxflashv3 sample: min(baseM, rowNum)); both operands of one arithmetic type.
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
inline T min(T a, T b) {
    return b < a ? b : a;
}
template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
inline T max(T a, T b) {
    return a < b ? b : a;
}

// Global like the device's; a kernel's own variable of the same name shadows them.
[[maybe_unused]] inline const ::fusedsl_cpu::BlockIdxBuiltin block_idx{};
[[maybe_unused]] inline const ::fusedsl_cpu::BlockNumBuiltin block_num{};
