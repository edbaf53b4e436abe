// fusedsl CPU implementation of the Ascend C inter-core synchronisation (asc-devkit docs,
// 同步控制 / 核间同步): SyncAll (hard and soft), IBSet / IBWait, CrossCoreSetFlag /
// CrossCoreWaitFlag, GroupBarrier (Cube分组管理); and the inter-task pair WaitPreTaskEnd /
// SetNextTaskStart (任务间同步).
//
// CrossCoreSetFlag<mode, pipe>(flagId) reports to the scheduler; a core's CrossCoreWaitFlag(flagId)
// goes on once a completed set has arrived for it (each arrival is waited once).  Mode 0: every
// vector core (or every cube core) of the launch sets, then each of them gets the flag; mode 1: the
// two vector cores of a block set, then both get it; mode 2: the cube core's set reaches both vector
// cores of its block, and both vector cores' sets reach the cube core.
//
// Blocks run one at a time; a block that waits here is parked and the others run until the
// condition holds (launch.h's fibers).  If every unfinished block waits and nothing changes, the
// launch fails with who waits where: on the device the kernel would hang.
#pragma once

#include "kernel_utils.h"

namespace fusedsl_cpu {

// The AIV instances of the launch (2 per block in a mixed launch on separated chips).
inline int64_t LaunchInstances() {
    return RT().block_num * RT().mix_ratio;
}

// What the running core is about to wait for, at the kernel's line: the deadlock report names it.
inline void NoteWait(const Site& site, const std::string& what) {
    CurCore().wait_note = site.file != nullptr ? Format("%s:%d: %s", site.file, site.line, what.c_str()) : what;
}

inline uint64_t XcPartialKey(uint64_t mode, uint64_t side, int64_t group, uint16_t flag) {
    return (mode << 60) | (side << 56) | (static_cast<uint64_t>(group) << 8) | flag;
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
    HbJoin(rt.hb_barrier, HbRelease());
    if (rt.barrier_arrived >= members) {
        rt.barrier_arrived = 0;
        rt.barrier_round += 1;
        rt.hb_barrier_done = rt.hb_barrier;
        std::fill(rt.hb_barrier.begin(), rt.hb_barrier.end(), 0);
        HbAcquire(rt.hb_barrier_done);
        return;
    }
    while (rt.barrier_round == round) {
        rt.yield_block(1);
    }
    HbAcquire(rt.hb_barrier_done);
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
inline void SyncAll(FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    CurCore();
    SyncAllPipes();
    if (RT().on_aic && isAIVOnly) {
        return;   // the vector cores' barrier: the cube core of a mixed block is not part of it
    }
    bool with_aic = !isAIVOnly && IsMixMode(RT().kernel_mode) && Target().separated;
    NoteWait(fs_site, "SyncAll()");
    BarrierWait(LaunchInstances() + (with_aic ? RT().block_num : 0));
    CurCore().wait_note.clear();
}

// Soft SyncAll: the first usedCores blocks (0: all) meet, each marking its state in gmWorkspace
// (int32, 32 bytes per core) through its 32-byte ubWorkspace.
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
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
                  int32_t eventID, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "IBSet";
    CheckUbWorkspace(api, ubWorkspace.fs_addr, ubWorkspace.GetLength(), 32);
    int32_t* flag = IbFlag(api, gmWorkspace, blockIdx, eventID);
    *flag = 1;
    HbJoin(RT().hb_ib[flag], HbRelease());
    RT().progress += 1;
    St().gm_bytes_written += 32;
}

// Waits until the IBSet with the same gmWorkspace, blockIdx and eventID has happened (the flag stays
// set: the docs pair one IBSet with its IBWait and require the workspace zeroed before the launch).
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    const char* api = "IBWait";
    CheckUbWorkspace(api, ubWorkspace.fs_addr, ubWorkspace.GetLength(), 32);
    int32_t* flag = IbFlag(api, gmWorkspace, blockIdx, eventID);
    if (*flag == 0) {
        NoteWait(fs_site, Format("IBWait(blockIdx %d, eventID %d)", blockIdx, eventID));
        while (*flag == 0) {
            RT().yield_block(2);
        }
        CurCore().wait_note.clear();
    }
    HbAcquire(RT().hb_ib[flag]);
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

template <uint8_t modeId, pipe_t pipe>
inline void CrossCoreSetFlag(uint16_t flagId, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "CrossCoreSetFlag";
    CurCore();
    Runtime& rt = RT();
    if (!Target().separated) {
        Fail("%s is not available on %s (Atlas A2/A3 only, per its API page)", api, Target().name);
    }
    if (modeId > 2) {
        Fail("%s<%u>: modes 0, 1 and 2 exist on %s (mode 4 is Ascend 950's)", api, modeId, Target().name);
    }
    if (pipe == PIPE_S || pipe == PIPE_ALL) {
        Fail("%s: the pipe may not be PIPE_S or PIPE_ALL in modes 0-2 (the API page)", api);
    }
    if (flagId > 15) {
        Fail("%s: flagId = %u; modes 0-2 have flags 0-15", api, flagId);
    }
    bool aic = ASCEND_IS_AIC;
    bool mix = IsMixMode(rt.kernel_mode);
    if (modeId != 0 && !mix) {
        Fail("%s<%u>: modes 1 and 2 synchronise the cores of one AI Core group and need a mixed kernel (__mix__(1, 1) "
             "or __mix__(1, 2)) (the API page's kernel type table)", api, modeId);
    }
    if (modeId == 1 && aic) {
        Fail("%s<1>: mode 1 synchronises the vector cores of a group; a cube core cannot take part", api);
    }
    int64_t idx = rt.block_idx;
    const int64_t ratio = rt.mix_ratio;   // the vector cores of a group: 2, or 1 in __mix__(1, 1)
    std::vector<uint32_t> snap = HbRelease();
    // a group's set completes when its last member sets: the flag carries what all of them knew
    auto complete = [&](uint64_t pkey, int64_t members) -> bool {
        std::vector<uint32_t>& acc = rt.xcore_partial_vc[pkey];
        HbJoin(acc, snap);
        if (++rt.xcore_partial[pkey] < members) {
            return false;
        }
        rt.xcore_partial[pkey] = 0;
        snap = acc;
        acc.clear();
        return true;
    };
    auto arrive = [&](uint64_t side, int64_t core) { rt.xcore_ready[XcKey(side, core, flagId)].push_back(snap); };
    if (modeId == 0) {
        uint64_t side = aic ? kXcAic : kXcAiv;
        int64_t members = aic ? rt.block_num : LaunchInstances();
        if (complete(XcPartialKey(0, side, 0, flagId), members)) {
            for (int64_t c = 0; c < members; ++c) {
                arrive(side, c);
            }
        }
    } else if (modeId == 1) {
        if (complete(XcPartialKey(1, kXcAiv, idx / ratio, flagId), ratio)) {
            for (int64_t k = 0; k < ratio; ++k) {
                arrive(kXcAiv, idx / ratio * ratio + k);
            }
        }
    } else if (aic) {
        for (int64_t k = 0; k < ratio; ++k) {
            arrive(kXcAiv, ratio * idx + k);
        }
    } else if (complete(XcPartialKey(2, kXcAiv, idx / ratio, flagId), ratio)) {
        arrive(kXcAic, idx / ratio);
    }
    rt.progress += 1;
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
inline void CrossCoreWaitFlag(uint16_t flagId, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    CurCore();
    Runtime& rt = RT();
    if (!Target().separated) {
        Fail("CrossCoreWaitFlag is not available on %s (Atlas A2/A3 only, per its API page)", Target().name);
    }
    if (flagId > 15) {
        Fail("CrossCoreWaitFlag: flagId = %u; modes 0-2 have flags 0-15", flagId);
    }
    uint64_t key = XcKey(ASCEND_IS_AIC ? kXcAic : kXcAiv, rt.block_idx, flagId);
    if (rt.xcore_ready[key].empty()) {
        NoteWait(fs_site, Format("CrossCoreWaitFlag(%u) (flag id %u)", flagId, flagId));
        while (rt.xcore_ready[key].empty()) {
            rt.yield_block(4);
        }
        CurCore().wait_note.clear();
    }
    HbAcquire(rt.xcore_ready[key].front());
    rt.xcore_ready[key].erase(rt.xcore_ready[key].begin());
    SyncAllPipes();
}

// GroupBarrier (Cube分组管理/GroupBarrier, Atlas A2 only): arriveSize vector cores Arrive, waitSize
// cores Wait until every one of them has arrived (each Wait call is one round: round r needs
// arriveSize * (r + 1) arrivals).  The counters live in the workspace, as on the device: an int32
// arrival count at byte 0 and a wait count at byte 64 (GetWorkspaceLen() = 128 bytes), which the
// host zeroes before the launch.
enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

template <PipeMode pipeMode>
class GroupBarrier {
public:
    GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn, FUSEDSL_CPU_SITE)
        : ws_(reinterpret_cast<uint8_t*>(groupWorkspace)), arrive_size_(arriveSizeIn), wait_size_(waitSizeIn) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        CurCore();
        if (!Target().separated || Target().arch != 2201) {
            Fail("GroupBarrier is not available on %s (Atlas A2 only among fusedsl's targets, per its API page)",
                 Target().name);
        }
        if (arrive_size_ == 0 || wait_size_ == 0) {
            Fail("GroupBarrier: arriveSize %u and waitSize %u must be non-zero", arrive_size_, wait_size_);
        }
        buf_ = FindGm(ws_);
        if (buf_ == nullptr || static_cast<uint64_t>(ws_ - buf_->base) + 128 > buf_->bytes) {
            Fail("GroupBarrier: the workspace must be %u bytes of a GM buffer of this launch", 128u);
        }
    }
    void Arrive(uint32_t arriveIndex, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        if (arriveIndex >= arrive_size_) {
            Fail("GroupBarrier::Arrive(%u): the index must be below arriveSize = %u", arriveIndex, arrive_size_);
        }
        int32_t n;
        std::memcpy(&n, ws_, 4);
        n += 1;
        std::memcpy(ws_, &n, 4);
        HbJoin(RT().hb_ib[ws_], HbRelease());
        RT().progress += 1;
    }
    void Wait(uint32_t waitIndex, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        if (waitIndex >= wait_size_) {
            Fail("GroupBarrier::Wait(%u): the index must be below waitSize = %u", waitIndex, wait_size_);
        }
        int64_t need = static_cast<int64_t>(arrive_size_) * (round_ + 1);
        for (;;) {
            int32_t n;
            std::memcpy(&n, ws_, 4);
            if (n >= need) {
                break;
            }
            RT().yield_block(2);
        }
        HbAcquire(RT().hb_ib[ws_]);
        int32_t w;
        std::memcpy(&w, ws_ + 64, 4);
        w += 1;
        std::memcpy(ws_ + 64, &w, 4);
        round_ += 1;
        RT().progress += 1;
    }
    uint64_t GetWorkspaceLen() { return 128; }

private:
    uint8_t* ws_;
    fusedsl_cpu::GmBuffer* buf_ = nullptr;
    uint32_t arrive_size_;
    uint32_t wait_size_;
    uint32_t round_ = 0;
};

// InitOutput (deprecated in CANN for InitGlobalMemory/Fill): fill `size` elements of GM with value.
template <typename T>
inline void InitOutput(GlobalTensor<T> gmWorkspaceAddr, uint32_t size, T value = 0, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    InitGlobalMemory(gmWorkspaceAddr, size, value);
}

// Deterministic computation in block order (核间同步/InitDetermineComputeWorkspace, WaitPreBlock,
// NotifyNextBlock): between WaitPreBlock and NotifyNextBlock the blocks take turns in ascending
// GetBlockIdx(), round after round.  The page's sizes are checked: gmWorkspace GetBlockNum() * 32
// bytes, ubWorkspace GetBlockNum() * 32 + 32.  Each call is framed by PIPE_ALL barriers, as CANN's
// implementation is (it moves the flags through ubWorkspace with DMA and scalar reads).
inline void FsSeqWorkspace(const char* api, const GlobalTensor<int32_t>& gm, const LocalTensor<int32_t>& ub) {
    using namespace fusedsl_cpu;
    CurCore();
    uint64_t n = static_cast<uint64_t>(LaunchInstances());
    CheckGm(api, gm, n * 32, true);
    CheckUbWorkspace(api, ub.fs_addr, ub.GetLength(), n * 32 + 32);
}

inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                                          FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    FsSeqWorkspace("InitDetermineComputeWorkspace", gmWorkspace, ubWorkspace);
    fusedsl_cpu::SyncAllPipes();
    fusedsl_cpu::RT().seq_turn.emplace(gmWorkspace.fs_addr, 0);
}

inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "WaitPreBlock";
    FsSeqWorkspace(api, gmWorkspace, ubWorkspace);
    Runtime& rt = RT();
    auto turn = rt.seq_turn.find(gmWorkspace.fs_addr);
    if (turn == rt.seq_turn.end()) {
        Fail("%s: call InitDetermineComputeWorkspace with this gmWorkspace first (the API page)", api);
    }
    int64_t& rounds = rt.seq_rounds[{gmWorkspace.fs_addr, rt.block_idx}];
    int64_t mine = rounds * LaunchInstances() + rt.block_idx;
    while (rt.seq_turn[gmWorkspace.fs_addr] != mine) {
        if (rt.seq_turn[gmWorkspace.fs_addr] > mine) {
            Fail("%s: this block's turn %lld has passed (turn %lld): every block must call WaitPreBlock and "
                 "NotifyNextBlock the same number of times", api, static_cast<long long>(mine),
                 static_cast<long long>(rt.seq_turn[gmWorkspace.fs_addr]));
        }
        rt.yield_block(2);
    }
    HbAcquire(rt.hb_ib[gmWorkspace.fs_addr]);
    rounds += 1;
    SyncAllPipes();
}

inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "NotifyNextBlock";
    FsSeqWorkspace(api, gmWorkspace, ubWorkspace);
    Runtime& rt = RT();
    int64_t rounds = rt.seq_rounds[{gmWorkspace.fs_addr, rt.block_idx}];
    if (rounds == 0 || rt.seq_turn[gmWorkspace.fs_addr] != (rounds - 1) * LaunchInstances() + rt.block_idx) {
        Fail("%s: call WaitPreBlock first; the block must hold its turn", api);
    }
    SyncAllPipes();
    HbJoin(rt.hb_ib[gmWorkspace.fs_addr], HbRelease());
    rt.seq_turn[gmWorkspace.fs_addr] += 1;
    rt.progress += 1;
}

}  // namespace AscendC
