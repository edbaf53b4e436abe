// fusedsl CPU implementation of the Ascend C inter-core synchronisation (asc-devkit docs,
// 同步控制 / 核间同步): SyncAll (hard and soft), IBSet / IBWait; and the inter-task pair
// WaitPreTaskEnd / SetNextTaskStart (任务间同步).
//
// Blocks run one at a time; a block that waits here is parked and the others run until the
// condition holds (launch.h's fibers).  If every unfinished block waits and nothing changes, the
// launch fails with who waits where: on the device the kernel would hang.
#pragma once

#include "kernel_utils.h"

namespace fusedsl_cpu {

// The AIV instances of the launch (2 per block in a mixed launch on separated chips).
inline int64_t LaunchInstances() {
    return RT().block_num * RT().task_ratio;
}

// Every one of `members` blocks arrives, then all go on.
inline void BarrierWait(int64_t members) {
    Runtime& rt = RT();
    if (members <= 1) {
        return;
    }
    uint64_t round = rt.barrier_round;
    rt.barrier_arrived += 1;
    rt.progress += 1;
    if (rt.barrier_arrived >= members) {
        rt.barrier_arrived = 0;
        rt.barrier_round += 1;
        return;
    }
    while (rt.barrier_round == round) {
        rt.yield_block(1);
    }
}

// IBSet/IBWait's flag of (blockIdx, eventID): 32 bytes each, cores * 32 B per event id (the
// docs' gmWorkspace size: cores * 32 B * eventID_max + blockIdx_max * 32 B + 32 B).
inline int32_t* IbFlag(const char* api, const AscendC::GlobalTensor<int32_t>& gm, int32_t blockIdx, int32_t eventID) {
    int64_t cores = LaunchInstances();
    if (blockIdx < 0 || blockIdx >= cores) {
        Fail("%s: blockIdx = %d; it must be in [0, %lld) (the blocks of this launch)", api, blockIdx,
             static_cast<long long>(cores));
    }
    if (eventID < 0) {
        Fail("%s: eventID = %d is negative", api, eventID);
    }
    uint64_t off = (static_cast<uint64_t>(cores) * eventID + blockIdx) * 32;
    CheckGm(api, gm, off + 32, true);
    return reinterpret_cast<int32_t*>(reinterpret_cast<uint8_t*>(gm.fs_addr) + off);
}

inline void CheckUbWorkspace(const char* api, const void* addr, uint64_t bytes, uint64_t need) {
    CheckUb(api, "ubWorkspace", addr, bytes, need, 4);
}

}  // namespace fusedsl_cpu

namespace AscendC {

struct SyncAllConfig {
    pipe_t triggerPipe;
    pipe_t waitPipe;
};
constexpr SyncAllConfig DEFAULT_SYNC_ALL_CONFIG = {PIPE_ALL, PIPE_ALL};

// Hard SyncAll: every AIV of the launch (isAIVOnly) — or every core of a mixed kernel — meets here.
template <bool isAIVOnly = true, const SyncAllConfig& config = DEFAULT_SYNC_ALL_CONFIG>
inline void SyncAll() {
    using namespace fusedsl_cpu;
    CurCore();
    SyncAllPipes();
    BarrierWait(LaunchInstances());
}

// Soft SyncAll: the first usedCores blocks (0: all) meet, each marking its state in gmWorkspace
// (int32, 32 bytes per core) through its 32-byte ubWorkspace.
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0) {
    using namespace fusedsl_cpu;
    const char* api = "SyncAll(gmWorkspace, ubWorkspace)";
    int64_t cores = LaunchInstances();
    if (usedCores < 0 || usedCores > cores) {
        Fail("%s: usedCores = %d; it must be in [0, %lld] (the launch's blocks)", api, usedCores,
             static_cast<long long>(cores));
    }
    int64_t members = usedCores == 0 ? cores : usedCores;
    if (RT().block_idx >= members) {
        Fail("%s: block %lld takes part but usedCores = %d covers blocks 0..%lld only", api,
             static_cast<long long>(RT().block_idx), usedCores, static_cast<long long>(members - 1));
    }
    CheckUbWorkspace(api, ubWorkspace.fs_addr, ubWorkspace.GetLength(), 32);
    GmBuffer* buf = CheckGm(api, gmWorkspace, static_cast<uint64_t>(members) * 32, true);
    auto mine = reinterpret_cast<uint8_t*>(gmWorkspace.fs_addr) + RT().block_idx * 32;
    NoteGmWrite(api, buf, mine, 4, false);
    int32_t one = 1;
    std::memcpy(mine, &one, 4);
    SyncAllPipes();
    BarrierWait(members);
}

template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID) {
    using namespace fusedsl_cpu;
    const char* api = "IBSet";
    CheckUbWorkspace(api, ubWorkspace.fs_addr, ubWorkspace.GetLength(), 32);
    int32_t* flag = IbFlag(api, gmWorkspace, blockIdx, eventID);
    *flag = 1;
    RT().progress += 1;
    St().gm_bytes_written += 32;
}

// Waits until the IBSet with the same gmWorkspace, blockIdx and eventID has happened (the flag stays
// set: the docs pair one IBSet with its IBWait and require the workspace zeroed before the launch).
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID) {
    using namespace fusedsl_cpu;
    const char* api = "IBWait";
    CheckUbWorkspace(api, ubWorkspace.fs_addr, ubWorkspace.GetLength(), 32);
    int32_t* flag = IbFlag(api, gmWorkspace, blockIdx, eventID);
    while (*flag == 0) {
        RT().yield_block(2);
    }
    St().gm_bytes_read += 32;
}

// SuperKernel early start (任务间同步): the part of a kernel before WaitPreTaskEnd may overlap the
// previous task, the part after SetNextTaskStart the next one.  fusedsl runs launches one after
// another, which is the order these calls allow (and on Atlas A2/A3 and 310P they only compile,
// per the API pages), so both are ordering points with nothing to do.
template <bool FORCE = false>
inline void WaitPreTaskEnd() {
    fusedsl_cpu::CurCore();
}
#if defined(__NPU_ARCH__) && (__NPU_ARCH__ != 1001) && (__NPU_ARCH__ != 2002)
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
#else
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_MTE3, bool FORCE = false>
#endif
inline void SetNextTaskStart() {
    fusedsl_cpu::CurCore();
}

}  // namespace AscendC
