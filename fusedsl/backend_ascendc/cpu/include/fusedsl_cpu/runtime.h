// fusedsl CPU implementation of the Ascend C API: targets, per-launch and per-core state,
// the GM buffer registry, and the checks shared by every API.
#pragma once

#include <algorithm>
#include <exception>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "base.h"

namespace fusedsl_cpu {

struct ApiTypes {
    const char* api;
    const char* types;  // " half float " (space-delimited, padded)
};

struct CastModes {
    const char* src;
    const char* dst;
    const char* modes;  // " CAST_NONE CAST_RINT "
};

// One (A, B, Bias, C) element-type combination of the Matmul high-level API.
struct MatmulTypes {
    const char* a;
    const char* b;
    const char* bias;
    const char* c;
};

struct TargetInfo {
    const char* name;
    const char* chip;
    int arch;
    uint32_t ub_bytes;            // the platform API's UB (GetCoreMemSize): 256 B short of the whole on 910B
    uint32_t ub_physical_bytes;   // the UB a kernel's TPipe may plan (fusedsl/targets.py ub_physical_bytes)
    int aic_cores;
    int aiv_cores;
    bool separated;
    int vector_cores;
    int max_queue_buffers_per_position;
    int max_buffers;
    bool has_datacopypad;
    uint32_t select_scratch_bytes;
    int max_event_ids;
    const ApiTypes* apis;
    size_t num_apis;
    const CastModes* casts;
    size_t num_casts;
    uint32_t l1_bytes;
    uint32_t l0a_bytes;
    uint32_t l0b_bytes;
    uint32_t l0c_bytes;
    const MatmulTypes* matmul;
    size_t num_matmul;
};

#include "targets.inc"

inline bool HasWord(const char* words, const char* word) {
    size_t n = std::strlen(word);
    for (const char* p = std::strstr(words, word); p != nullptr; p = std::strstr(p + 1, word)) {
        if (p[-1] == ' ' && p[n] == ' ') {
            return true;
        }
    }
    return false;
}

inline int FindTarget(const char* name) {
    for (int i = 0; i < kNumTargets; ++i) {
        if (std::strcmp(kTargets[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

inline std::string KnownTargets() {
    std::string s;
    for (int i = 0; i < kNumTargets; ++i) {
        s += (i ? ", " : "") + std::string(kTargets[i].name);
    }
    return s;
}

struct Stats {
    uint64_t gm_bytes_read = 0;
    uint64_t gm_bytes_written = 0;
    uint64_t vector_instructions = 0;
    uint64_t vector_repeats = 0;
    uint64_t scalar_gm_accesses = 0;
    uint64_t ub_high_water = 0;
};

struct GmBuffer {
    uint8_t* base = nullptr;
    uint64_t bytes = 0;
    std::string name;
    // Which block (index + 1) wrote each byte during the current launch; 0 = nobody.
    // Allocated on the first write so read-only inputs cost nothing.
    std::vector<uint16_t> owner;
    std::vector<uint32_t> owner_epoch;   // the writer's synchronisation epoch at the write
    // Per 64-byte GM line: the block (index + 1) that wrote it through the scalar data cache,
    // and the block that wrote it at all (kManyBlocks when several did).
    std::vector<uint16_t> line_scalar;
    std::vector<uint16_t> line_any;
    std::map<uint64_t, Site> line_site;   // per line, the kernel line of its last SetValue (when known)
};

constexpr uint16_t kManyBlocks = 0xFFFF;

constexpr int kNumPositions = static_cast<int>(TPosition::MAX);
constexpr int kNumEvents = static_cast<int>(HardEvent::MAX);
constexpr int kMaxEventIds = 8;

class TPipeState;

// The cube side's per-block state (matmul.h): the system workspace and the registered objects.
struct CubeBlockState {
    uint64_t generation = 0;
    uint8_t* sys_workspace = nullptr;
    int matmul_objects = 0;
    uint64_t l1_matmul_bytes = 0;   // the registered Matmul objects' own A1/B1/bias L1 buffers
};

// One AI core's private state, rebuilt for every block of a launch.
struct Core {
    std::vector<uint8_t> ub;
    std::vector<uint8_t> written;   // shadow: 1 = the UB byte was written since allocation
    uint32_t ub_bytes = 0;
    uint64_t generation = 0;        // tells queues of an earlier block apart
    TPipeState* pipe = nullptr;     // the most recently constructed TPipe
    int outstanding[kNumPositions] = {};
    uint8_t flags[kNumEvents][kMaxEventIds] = {};
    const char* flag_file[kNumEvents][kMaxEventIds] = {};   // the kernel line of each pending SetFlag
    int flag_line[kNumEvents][kMaxEventIds] = {};
    bool atomic_add = false;         // an atomic GM write mode is on (add, or atomic_op's max/min)
    const char* atomic_type = "";
    uint8_t atomic_op = 0;           // 0 add, 1 max, 2 min
    bool pad_value_set = false;
    uint64_t pad_value = 0;
    uint64_t vector_mask[2] = {~0ull, ~0ull};
    bool counter_mode = false;      // SetMaskCount: vector_mask[0] is an element count
    std::string pending_error;      // found in a destructor, reported when the block ends
    uint64_t ub_high_water = 0;
    // Queue buffers: per UB byte, kSlotPlain (TBuf or unplanned), kSlotLive (allocated),
    // kSlotIdle (freed or never allocated) or kSlotQueued (EnQue'd, not yet DeQue'd).
    std::vector<uint8_t> slot_state;
    // Pipe hazards: per UB byte, the pipe and clock of the last write and the last read;
    // synced[q][p] is the clock up to which pipe p has waited for pipe q.
    uint8_t cur_pipe = PIPE_V;
    const char* cur_api = "";
    uint32_t clock = 0;
    std::vector<uint8_t> w_pipe, r_pipe;
    std::vector<uint32_t> w_seq, r_seq;
    std::vector<uint16_t> w_api;
    uint32_t synced[8][8] = {};
    // What the setting pipe knew at SetFlag (its own clock, and what it had waited for), so a
    // wait orders transitively: MTE2 -> V -> MTE3 orders MTE2 before MTE3.
    uint32_t flag_vc[kNumEvents][kMaxEventIds][8] = {};
    // GM lines (64-byte aligned addresses) this core wrote through its scalar data cache and
    // has not cleaned with DataCacheCleanAndInvalid.
    std::vector<uintptr_t> dirty_lines;
    // The reduction special registers (GetReduceRepeatSumSpr / GetReduceRepeatMaxMinSpr).
    double spr_sum = 0;
    double spr_value = 0;
    uint32_t spr_index = 0;
    uint8_t cmp_mask[16] = {};      // the CMPMASK register (Compare into it, GetCmpMask/SetCmpMask)
    // The fixpipe registers DataCopy(L0C -> GM) reads: the scalar quant parameter
    // (SetFixpipePreQuantFlag) and the NZ2ND matrix count and strides (SetFixpipeNz2ndFlag).
    uint64_t fixpipe_quant_pre = 0;
    int64_t fixpipe_quant_table = -1;   // SetFixPipeConfig's quantPre: a local-memory offset in the Fixpipe Buffer
    uint16_t nz2nd_num = 1;
    uint16_t nz2nd_src_stride = 0;
    uint16_t nz2nd_dst_stride = 0;
    // The cube unit's buffers, one allocation: L1 | L0A | L0B | L0C | BT (bias table) |
    // FB (fixpipe buffer); local_at[m] is where memory m starts, local_written shadows it.
    std::vector<uint8_t> local;
    std::vector<uint8_t> local_written;
    // The cube's index buffer for 4:2 sparse B (LoadDataWithSparse fills it, MmadWithSparse reads it):
    // a quarter of L0B, byte x of L0B's index at byte x / 4.
    std::vector<uint8_t> sparse_index;
    std::vector<uint8_t> sparse_index_written;
    uint32_t local_at[7] = {};
    CubeBlockState cube;
    // Polling detection (GlobalTensor::GetValue, ReadGmByPassDCache): scalar GM reads since GM last
    // changed; the last few addresses read, how many reads in a row re-read one of them with no GM write
    // and no vector instruction between (a loop spinning on a value), and the kernel line of the last read.
    uint32_t gm_reads_idle = 0;
    uint64_t gm_seen_progress = 0;
    const void* poll_ring[4] = {nullptr, nullptr, nullptr, nullptr};
    uint32_t poll_ring_next = 0;
    uint64_t poll_repeats = 0;
    uint64_t poll_vector_seen = 0;
    Site poll_site{nullptr, 0};
    const char* poll_api = "";
    // The convolution load's registers (load3d.h): the feature maps SetFmatrix set (left, right: l1H, l1W,
    // padList), the pad value SetLoadDataPaddingValue set (its bytes), the L1 boundary of
    // SetLoadDataBoundary (bytes, 0 = none) and SetLoadDataRepeat's repeat count.
    struct Fmatrix {
        bool set = false;
        uint16_t h = 0, w = 0;
        uint8_t pad[4] = {0, 0, 0, 0};
    } fmatrix[2];
    bool load3d_pad_set = false;
    uint8_t load3d_pad[4] = {0, 0, 0, 0};
    uint32_t l1_boundary = 0;
    uint8_t load3d_repeat = 1;
    // What a parked core waits for, at the kernel's line ("k.cpp:12: CrossCoreWaitFlag(flag 3)"): the
    // launch's deadlock report names it.
    std::string wait_note;
};

// The cube unit's memories (ASCENDC.md §1.3), in the order of Core::local.
enum LocalMem : uint8_t { kMemL1 = 0, kMemL0A, kMemL0B, kMemL0C, kMemBT, kMemFB, kNumLocalMems };

enum SlotByte : uint8_t { kSlotPlain = 0, kSlotLive, kSlotIdle, kSlotQueued };
constexpr uint8_t kNoPipe = 0xFF;
constexpr uint32_t kGmLine = 64;

#ifndef FUSEDSL_CPU_DEFAULT_KERNEL_MODE
#define FUSEDSL_CPU_DEFAULT_KERNEL_MODE AIV_MODE
#endif

struct Runtime {
    int target = -1;                // index into kTargets; -1 until first use
    int compiled_arch = 0;          // __NPU_ARCH__ of a translation unit, if any
    bool library_mode = false;
    // The mode a launch runs in until the host calls SetKernelMode: AIV_MODE for fusedsl's own
    // builds; CANN's tikicpulib starts in MIX_MODE (asc-tools cpudebug stub_base.cpp, g_kernelMode),
    // which its package stand-in selects (cmake/tikicpulib-config.cmake).
    KernelMode kernel_mode = KernelMode::FUSEDSL_CPU_DEFAULT_KERNEL_MODE;
    int kernel_type = -1;
    uint64_t tiling_key = 0;
    Stats stats;
    std::map<uintptr_t, GmBuffer> gm;
    uint64_t gm_alloc_count = 0;
    std::string last_error;
    Core core;
    bool in_block = false;
    int64_t block_idx = 0;
    int64_t block_num = 1;
    int64_t sub_block_idx = 0;
    // Vector cores per block: 2 in a mixed launch on a separated chip (1 in MIX_AIC_1_1), else 1
    // (cpudebug's g_taskRation: GetTaskRatio and GetSubBlockNum on a vector core).
    int64_t mix_ratio = 1;
    // The launch's workspace argument (a kernel parameter named `workspace`, or what the host
    // registered): GetSysWorkSpacePtr() returns it without the kernel calling SetSysWorkspace,
    // as CANN's kernel-launch and op builds arrange.
    uint8_t* launch_workspace = nullptr;
    // Warnings of a library launch (Warn below), "kind\ttext" each, which Python takes after the launch.
    std::vector<std::string> warnings;
    std::set<std::string> warned_once;   // Warn's once-per-launch keys
    uint64_t next_generation = 0;   // every block of every launch gets its own core generation
    // Blocks that wait for each other (SyncAll, IBWait, a GM flag polled with GetValue) run as
    // fibers of one thread: `yield_block` (launch.h) parks the running block and resumes the next.
    void (*yield_block)(int why) = nullptr;
    uint64_t progress = 0;          // bumped by GM writes: a waiting block may see something new
    // SyncAll's barrier: how many blocks arrived at the current one, and its number.
    int64_t barrier_arrived = 0;
    uint64_t barrier_round = 0;
    // A mixed launch on a separated chip also runs each block's cube core (AIC) as a fiber: this is
    // set while one of those runs (ASCEND_IS_AIC).
    bool on_aic = false;
    // Whether mixed launches run their cube cores at all: only programs that synchronise with them
    // (CrossCoreSetFlag/WaitFlag) need it; the others have their cube work (the Matmul API) modelled
    // on the vector side, and CANN's vector APIs do nothing on a cube core, which fusedsl's do not
    // model — so their cube cores are not run.
    bool mix_cube_cores = false;
    // CrossCoreSetFlag/WaitFlag (sync.h): per core and flag id, the flags that have arrived and not
    // been waited; per (mode, side, group, flag id), the sets still missing for a group to complete.
    std::map<uint64_t, std::vector<std::vector<uint32_t>>> xcore_ready;
    std::map<uint64_t, int64_t> xcore_partial;
    std::map<uint64_t, std::vector<uint32_t>> xcore_partial_vc;
    // Happens-before between the cores of a launch (vector clocks): a core's epoch grows at each
    // release (CrossCoreSetFlag, IBSet, arriving at SyncAll); a core that waits (CrossCoreWaitFlag,
    // IBWait, leaving SyncAll) learns the epochs the releasers had.  Rule 8 accepts a GM write over
    // another core's byte when that write is ordered before it.
    std::vector<uint32_t> hb_epoch;
    std::vector<std::vector<uint32_t>> hb_vc;
    std::vector<uint32_t> hb_barrier, hb_barrier_done;
    std::map<const void*, std::vector<uint32_t>> hb_ib;
    // WaitPreBlock/NotifyNextBlock: per gmWorkspace, how many turns have passed; per (workspace,
    // core), how many waits that core has done.
    std::map<const void*, int64_t> seq_turn;
    std::map<std::pair<const void*, int64_t>, int64_t> seq_rounds;
};

// CrossCore flags: a core is (side, index): vector cores by GetBlockIdx(), cube cores by block.
enum : uint64_t { kXcAiv = 0, kXcAic = 1 };
inline uint64_t XcKey(uint64_t side, int64_t idx, uint16_t flag) {
    return (side << 56) | (static_cast<uint64_t>(idx) << 8) | flag;
}

inline Runtime& RT() {
    static Runtime rt;
    return rt;
}

inline bool EnableCubeCores() {
    RT().mix_cube_cores = true;
    return true;
}

inline bool NoteCompiledArch(int arch) {
    RT().compiled_arch = arch;
    return true;
}

inline int ArchTarget(int arch) {
    switch (arch) {
        case 2201: return FindTarget("ascend910b");
        case 2002: return FindTarget("ascend310p");
        case 1001: return FindTarget("ascend910");
        default: return -1;
    }
}

inline void Warn(const char* kind, const std::string& text, const std::string& once = "");
inline void WarnTargetChoice(const char* env);

// Target choice: fusedsl_cpu_set_target() > __NPU_ARCH__ of the build > $FUSEDSL_TARGET >
// ascend910b.  Resolved once, at first use.
inline const TargetInfo& Target() {
    Runtime& rt = RT();
    if (rt.target < 0) {
        int t = ArchTarget(rt.compiled_arch);
        const char* env = std::getenv("FUSEDSL_TARGET");
        bool unknown = false;
        if (t < 0 && env != nullptr && *env != '\0') {
            t = FindTarget(env);
            unknown = t < 0;
        }
        rt.target = t >= 0 ? t : FindTarget("ascend910b");
        if (unknown) {   // a warning like the others (Warn, below: it names the target, so after the choice)
            WarnTargetChoice(env);
        }
    }
    return kTargets[rt.target];
}

// A warning: something CANN's CPU debug mode accepts and the device may not do as the CPU did.  A
// program prints it on stderr; a library launch (fusedsl's Python runner, fusedsl_cpu_warnings)
// hands it to Python, which issues it as the fusedsl.errors warning class `kind` names
// (errors.ASCENDC_WARNINGS).  The text starts with the kernel's file:line when an API call is
// running; `once` (non-empty) reports a key once per launch.
inline void Warn(const char* kind, const std::string& text, const std::string& once) {
    Runtime& rt = RT();
    if (!once.empty() && !rt.warned_once.insert(once).second) {
        return;
    }
    const Site& at = CurrentSite();
    std::string located = at.file != nullptr ? Format("%s:%d: ", at.file, at.line) + text : text;
    if (rt.library_mode) {
        rt.warnings.push_back(std::string(kind) + "\t" + located);
        return;
    }
    std::fflush(stdout);
    std::fprintf(stderr, "[WARNING] fusedsl CPU (%s, block %lld): %s\n", Target().name,
                 static_cast<long long>(rt.block_idx), located.c_str());
}

// An unknown FUSEDSL_TARGET (read only by a program built without __NPU_ARCH__): a warning like the
// others, once per process.
inline void WarnTargetChoice(const char* env) {
    Warn("AscendCWarning", Format("FUSEDSL_TARGET=%s is not a known target (%s); using ascend910b", env,
                                  KnownTargets().c_str()), "FUSEDSL_TARGET");
}

// The system workspace the high-level APIs need (GetLibApiWorkSpaceSize; the Matmul API's KFC
// messages on separated chips): 16 MB on Ascend910B, 2 MB elsewhere.
inline uint32_t LibApiWorkspaceBytes() {
    return Target().arch == 2201 ? 16u * 1024 * 1024 : 2u * 1024 * 1024;
}

inline const char* FindApiTypes(const char* api) {
    const TargetInfo& t = Target();
    for (size_t i = 0; i < t.num_apis; ++i) {
        if (std::strcmp(t.apis[i].api, api) == 0) {
            return t.apis[i].types;
        }
    }
    return nullptr;
}

// Rule 5: the API exists on the target and takes this element type.
inline void CheckApi(const char* api, const char* type) {
    const char* types = FindApiTypes(api);
    if (types == nullptr) {
        Fail("%s is not available on %s", api, Target().name);
    }
    if (!HasWord(types, type)) {
        std::string list(types + 1);
        list.pop_back();
        std::string pretty;
        for (char c : list) {
            pretty += c == ' ' ? std::string(", ") : std::string(1, c);
        }
        Fail("%s<%s> is not supported on %s (supported: %s)", api, type, Target().name, pretty.c_str());
    }
}

// A mixed kernel runs a cube core with its vector cores; __mix__(1, 1) gives each block one vector core
// instead of two (GetBlockIdx.md / GetBlockNum.md / GetTaskRatio.md of asc-devkit, cpudebug's SetKernelMode).
inline bool IsMixMode(KernelMode m) {
    return m == KernelMode::MIX_MODE || m == KernelMode::MIX_AIC_1_1;
}

inline int64_t MixVectorCores(KernelMode m) {
    return m == KernelMode::MIX_AIC_1_1 ? 1 : 2;
}

inline Core& CurCore() {
    Runtime& rt = RT();
    if (!rt.in_block) {
        std::fprintf(stderr, "[ERROR] fusedsl CPU check: an AscendC kernel API was called outside a kernel "
                     "launch; run kernels with ICPU_RUN_KF (or fusedsl_cpu::Launch)\n");
        std::exit(1);
    }
    return rt.core;
}

// Names of the APIs that last wrote each UB byte, for hazard messages (id 0 = none).
inline std::vector<const char*>& ApiNames() {
    static std::vector<const char*> names{"an earlier instruction"};
    return names;
}

inline uint16_t ApiId(const char* api) {
    std::vector<const char*>& names = ApiNames();
    for (size_t i = 1; i < names.size(); ++i) {
        if (names[i] == api || std::strcmp(names[i], api) == 0) {
            return static_cast<uint16_t>(i);
        }
    }
    if (names.size() >= 0xFFFF) {
        return 0;
    }
    names.push_back(api);
    return static_cast<uint16_t>(names.size() - 1);
}

inline Stats& St() {
    return RT().stats;
}

inline void CountVector(uint64_t bytes) {
    Stats& s = St();
    s.vector_instructions += 1;
    s.vector_repeats += (bytes + 255) / 256;
}

// A scalar GM read (GlobalTensor::GetValue, ReadGmByPassDCache) may be a poll of a flag another core
// sets.  Many reads while no GM byte changes let the other blocks run (a legal interleaving of the
// device's parallel cores; launch.h's yield_block), with the read's kernel line kept for the deadlock
// report.  Re-reads of the last few addresses with no GM write and no vector instruction between are
// counted: a launch of one block (launch.h's YieldSingle) has nobody to change the value, and a loop
// that keeps re-reading it spins forever on the device.
inline void NoteGmPoll(const char* api, const void* addr, const Site& site) {
    Core& core = CurCore();
    Runtime& rt = RT();
    if (core.gm_seen_progress != rt.progress) {
        core.gm_seen_progress = rt.progress;
        core.gm_reads_idle = 0;
        core.poll_repeats = 0;
        return;
    }
    const void** ring_end = core.poll_ring + 4;
    if (core.poll_vector_seen != St().vector_instructions) {
        core.poll_vector_seen = St().vector_instructions;
        core.poll_repeats = 0;
    } else if (std::find(core.poll_ring, ring_end, addr) != ring_end) {
        core.poll_repeats += 1;
    } else {
        core.poll_ring[core.poll_ring_next] = addr;
        core.poll_ring_next = (core.poll_ring_next + 1) % 4;
        core.poll_repeats = 0;
    }
    if (++core.gm_reads_idle >= 16 && rt.yield_block != nullptr) {
        core.gm_reads_idle = 0;
        core.poll_site = site;
        core.poll_api = api;
        rt.yield_block(3);
    }
}

// ---- UB operands -------------------------------------------------------------------------

inline uint32_t UbOffset(const void* addr) {
    Core& c = CurCore();
    auto p = static_cast<const uint8_t*>(addr);
    if (p < c.ub.data() || p >= c.ub.data() + c.ub_bytes) {
        Fail("internal: address is not in this core's UB");
    }
    return static_cast<uint32_t>(p - c.ub.data());
}

// A queue buffer may be used only between AllocTensor and FreeTensor, and not while it sits
// in the queue (between EnQue and DeQue): the pipe on the other side owns it then.
inline void CheckSlot(const char* api, const char* role, uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    uint64_t end = std::min<uint64_t>(off + bytes, c.ub_bytes);
    for (uint64_t i = off; i < end; ++i) {
        uint8_t st = c.slot_state[i];
        if (st == kSlotIdle) {
            Fail("%s: %s uses UB offset %llu of a TQue buffer that is not allocated — the tensor was released "
                 "with FreeTensor (use after free) or never handed out by AllocTensor/DeQue", api, role,
                 static_cast<unsigned long long>(i));
        }
        if (st == kSlotQueued) {
            Fail("%s: %s uses UB offset %llu of a tensor that is in a TQue (after EnQue, before DeQue); the pipe "
                 "on the other side of the queue owns it until DeQue returns it — do not read or write it in "
                 "between", api, role, static_cast<unsigned long long>(i));
        }
    }
}

inline const char* PipeName(uint8_t p) {
    switch (p) {
        case PIPE_S: return "S";
        case PIPE_V: return "V";
        case PIPE_MTE2: return "MTE2";
        case PIPE_MTE3: return "MTE3";
        default: return "?";
    }
}

// Makes `pipe` the pipe of the API calls in this scope (default: V).
struct OnPipe {
    uint8_t saved;
    explicit OnPipe(uint8_t pipe) : saved(CurCore().cur_pipe) { CurCore().cur_pipe = pipe; }
    ~OnPipe() { RT().core.cur_pipe = saved; }
    OnPipe(const OnPipe&) = delete;
    OnPipe& operator=(const OnPipe&) = delete;
};

[[noreturn]] inline void PipeHazard(const char* what, uint64_t byte, uint8_t from, uint8_t to, uint16_t writer) {
    Core& c = CurCore();
    const char* before = writer != 0 && writer < ApiNames().size() ? ApiNames()[writer] : "an earlier instruction";
    Fail("%s: %s UB byte %llu that %s (pipe %s) %s, with no synchronisation from %s to %s in between — the pipes "
         "run in parallel on the device; add SetFlag/WaitFlag<HardEvent::%s_%s> (or PipeBarrier<PIPE_ALL>, or pass "
         "the tensor through a TQue with EnQue/DeQue)", c.cur_api, what, static_cast<unsigned long long>(byte),
         before, PipeName(from), std::strcmp(what, "reads") == 0 ? "wrote" : "accessed", PipeName(from),
         PipeName(to), PipeName(from), PipeName(to));
}

// bisheng's --cce-auto-sync (on by default for <<<>>> programs, kernel-launch projects and op
// projects: asc-devkit docs 同步控制/核内同步/关键特性说明, "开启cce-auto-sync编译选项自动同步")
// inserts the flags between PIPE_S (LocalTensor/GlobalTensor GetValue, SetValue, operator())
// and PIPE_V, PIPE_MTE2, PIPE_MTE3 of a vector core, both ways.  fusedsl's ASC driver defines
// FUSEDSL_CCE_AUTO_SYNC=1 for those builds unless --cce-auto-sync=off is given, and so does the
// tikicpulib package CANN's kernel-launch samples find (cmake/tikicpulib-config.cmake); fusedsl's
// own printed kernels and projects keep every flag explicit (0).
#ifndef FUSEDSL_CCE_AUTO_SYNC
#define FUSEDSL_CCE_AUTO_SYNC 0
#endif

// The wait the compiler puts before an access on pipe p: S waits for V/MTE2/MTE3, and they
// wait for S.
inline void AutoSync(Core& c, uint8_t p) {
    if (!FUSEDSL_CCE_AUTO_SYNC) {
        return;
    }
    if (p == PIPE_S) {
        for (uint8_t q : {static_cast<uint8_t>(PIPE_V), static_cast<uint8_t>(PIPE_MTE2),
                          static_cast<uint8_t>(PIPE_MTE3)}) {
            c.synced[q][PIPE_S] = std::max(c.synced[q][PIPE_S], c.clock);
        }
    } else if (p == PIPE_V || p == PIPE_MTE2 || p == PIPE_MTE3) {
        c.synced[PIPE_S][p] = std::max(c.synced[PIPE_S][p], c.clock);
    }
}

// Pipe ordering of UB accesses: an access on pipe p after one on pipe q needs p to have
// waited for q (a flag, a barrier, or the queue protocol).
inline void PipeRead(uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    uint8_t p = c.cur_pipe;
    AutoSync(c, p);
    uint32_t now = ++c.clock;
    for (uint64_t i = off; i < off + bytes; ++i) {
        uint8_t q = c.w_pipe[i];
        if (q != kNoPipe && q != p && c.synced[q][p] < c.w_seq[i]) {
            PipeHazard("reads", i, q, p, c.w_api[i]);
        }
        c.r_pipe[i] = p;
        c.r_seq[i] = now;
    }
}

inline void PipeWrite(uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    uint8_t p = c.cur_pipe;
    AutoSync(c, p);
    uint32_t now = ++c.clock;
    uint16_t api = ApiId(c.cur_api);
    for (uint64_t i = off; i < off + bytes; ++i) {
        uint8_t q = c.w_pipe[i];
        if (q != kNoPipe && q != p && c.synced[q][p] < c.w_seq[i]) {
            PipeHazard("overwrites", i, q, p, c.w_api[i]);
        }
        uint8_t r = c.r_pipe[i];
        if (r != kNoPipe && r != p && c.synced[r][p] < c.r_seq[i]) {
            PipeHazard("overwrites", i, r, p, 0);
        }
        c.w_pipe[i] = p;
        c.w_seq[i] = now;
        c.w_api[i] = api;
    }
}

// The queue protocol (EnQue/DeQue, FreeTensor/AllocTensor) orders everything before it.
inline void ForgetAccesses(uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    std::memset(c.w_pipe.data() + off, kNoPipe, bytes);
    std::memset(c.r_pipe.data() + off, kNoPipe, bytes);
}

inline void SetSlotState(uint32_t off, uint64_t bytes, uint8_t state) {
    std::memset(CurCore().slot_state.data() + off, state, bytes);
}

// Rule 3 and the tensor-size rule: a UB operand exists, starts 32-byte aligned, and has room
// for the bytes the instruction touches.  Returns its UB byte offset.
inline uint32_t CheckUb(const char* api, const char* role, const void* addr, uint64_t tensor_bytes,
                        uint64_t need_bytes, uint32_t elem_size, bool aligned = true) {
    if (addr == nullptr) {
        Fail("%s: %s is an empty LocalTensor; get it from TQue::AllocTensor/DeQue or TBuf::Get first",
             api, role);
    }
    Core& c = CurCore();
    auto p = static_cast<const uint8_t*>(addr);
    if (p < c.ub.data() || p >= c.ub.data() + c.ub_bytes) {
        Fail("%s: %s does not point into this core's UB (a tensor kept from another block, or a "
             "sub-tensor offset past the end of UB)", api, role);
    }
    auto off = static_cast<uint32_t>(p - c.ub.data());
    if (aligned && off % 32 != 0) {
        Fail("%s: %s starts at UB offset %u, which is not 32-byte aligned; sub-tensor offsets must be "
             "multiples of %u elements of this type", api, role, off, 32 / elem_size);
    }
    if (need_bytes > tensor_bytes) {
        Fail("%s: %s needs %llu bytes but the LocalTensor has only %llu (UB offset %u); the count or "
             "repeat parameters run past the end of the tensor", api, role,
             static_cast<unsigned long long>(need_bytes), static_cast<unsigned long long>(tensor_bytes), off);
    }
    CheckSlot(api, role, off, need_bytes == 0 ? elem_size : need_bytes);
    c.cur_api = api;
    return off;
}

// Rule 6: every UB byte an instruction reads was written since its buffer was allocated.
inline void CheckWritten(const char* api, const char* role, uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    const uint8_t* w = c.written.data();
    auto first = static_cast<const uint8_t*>(std::memchr(w + off, 0, bytes));
    if (first == nullptr) {
        c.cur_api = api;
        PipeRead(off, bytes);
        return;
    }
    uint64_t start = static_cast<uint64_t>(first - w);
    uint64_t end = start;
    while (end < off + bytes && w[end] == 0) {
        ++end;
    }
    Fail("%s: reads %llu bytes of UB at offset %llu that were never written (%s covers UB [%u, %llu)); "
         "AllocTensor/TBuf memory is uninitialised — fill it (DataCopy, Duplicate) before reading",
         api, static_cast<unsigned long long>(end - start), static_cast<unsigned long long>(start), role,
         off, static_cast<unsigned long long>(off + bytes));
}

inline bool IsWrittenByte(uint32_t off) {
    return CurCore().written[off] != 0;
}

inline void MarkWritten(uint32_t off, uint64_t bytes) {
    std::memset(CurCore().written.data() + off, 1, bytes);
    PipeWrite(off, bytes);
}

// dst may share memory with a source only when they coincide (ASCENDC.md §2.8).
inline void CheckOverlap(const char* api, const char* role, uint32_t dst, uint64_t dst_bytes, uint32_t src,
                         uint64_t src_bytes) {
    bool overlap = dst < src + src_bytes && src < dst + dst_bytes;
    if (overlap && (dst != src || dst_bytes != src_bytes)) {
        Fail("%s: dst UB [%u, %llu) partially overlaps %s UB [%u, %llu); dst may share memory with a "
             "source only when both cover exactly the same bytes", api, dst,
             static_cast<unsigned long long>(dst + dst_bytes), role, src,
             static_cast<unsigned long long>(src + src_bytes));
    }
}

// ---- GM -----------------------------------------------------------------------------------

inline GmBuffer* FindGm(const uint8_t* p) {
    auto& gm = RT().gm;
    auto it = gm.upper_bound(reinterpret_cast<uintptr_t>(p));
    if (it == gm.begin()) {
        return nullptr;
    }
    --it;
    GmBuffer& b = it->second;
    return p < b.base + b.bytes ? &b : nullptr;
}

inline std::string RegisteredList() {
    std::string s;
    for (auto& kv : RT().gm) {
        if (!s.empty()) {
            s += ", ";
        }
        s += "'" + kv.second.name + "' (" + std::to_string(kv.second.bytes) + " bytes)";
    }
    return s;
}

// Rule 7: a GM access lies inside one registered buffer (when any are registered).
// Returns the buffer, or nullptr when nothing is registered.
inline GmBuffer* CheckGmRange(const char* api, const uint8_t* p, uint64_t bytes) {
    if (RT().gm.empty()) {
        return nullptr;
    }
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        auto& gm = RT().gm;
        auto it = gm.upper_bound(reinterpret_cast<uintptr_t>(p));
        if (it != gm.begin()) {
            const GmBuffer& prev = std::prev(it)->second;
            Fail("%s: accesses %llu bytes starting %llu bytes past the end of GM buffer '%s' (%llu bytes), outside "
                 "every registered buffer", api, static_cast<unsigned long long>(bytes),
                 static_cast<unsigned long long>(p - (prev.base + prev.bytes)), prev.name.c_str(),
                 static_cast<unsigned long long>(prev.bytes));
        }
        Fail("%s: GM address %p is outside every registered GM buffer (%s)", api, static_cast<const void*>(p),
             RegisteredList().c_str());
    }
    uint64_t off = static_cast<uint64_t>(p - b->base);
    if (off + bytes > b->bytes) {
        Fail("%s: accesses bytes [%llu, %llu) of GM buffer '%s', which has only %llu bytes", api,
             static_cast<unsigned long long>(off), static_cast<unsigned long long>(off + bytes),
             b->name.c_str(), static_cast<unsigned long long>(b->bytes));
    }
    return b;
}

// GM lines are counted from the start of each registered buffer: device allocations are
// line-aligned, numpy arrays need not be.  A line is named by its first byte's address.
inline uintptr_t LineOf(const GmBuffer* b, const uint8_t* p) {
    return reinterpret_cast<uintptr_t>(b->base) + static_cast<uintptr_t>(p - b->base) / kGmLine * kGmLine;
}

// The core running now, 1-based: vector instances by GetBlockIdx(), then a mixed launch's cube cores.
inline uint16_t CoreTag() {
    Runtime& rt = RT();
    return static_cast<uint16_t>((rt.on_aic ? rt.mix_ratio * rt.block_num + rt.block_idx : rt.block_idx) + 1);
}

inline std::string CoreName(uint16_t tag) {
    Runtime& rt = RT();
    int64_t i = static_cast<int64_t>(tag) - 1;
    if (IsMixMode(rt.kernel_mode) && Target().separated && i >= rt.mix_ratio * rt.block_num) {
        return Format("cube core %lld", static_cast<long long>(i - rt.mix_ratio * rt.block_num));
    }
    return Format("block %lld", static_cast<long long>(i));
}

inline void HbInit(size_t cores) {
    Runtime& rt = RT();
    if (cores > 256) {   // the clocks take cores^2 words: larger launches keep rule 8 without ordering
        cores = 0;
    }
    rt.hb_epoch.assign(cores, 1);
    rt.hb_vc.assign(cores, std::vector<uint32_t>(cores, 0));
    rt.hb_barrier.assign(cores, 0);
    rt.hb_barrier_done.assign(cores, 0);
    rt.hb_ib.clear();
}

inline bool HbTracked(size_t me) {
    return me < RT().hb_epoch.size();
}

// What this core publishes at a release: what it knows, and its own epoch, which then moves on.
inline std::vector<uint32_t> HbRelease() {
    Runtime& rt = RT();
    size_t me = CoreTag() - 1u;
    if (!HbTracked(me)) {
        return {};
    }
    std::vector<uint32_t> snap = rt.hb_vc[me];
    snap[me] = rt.hb_epoch[me];
    rt.hb_epoch[me] += 1;
    return snap;
}

inline void HbJoin(std::vector<uint32_t>& into, const std::vector<uint32_t>& from) {
    if (into.size() < from.size()) {
        into.resize(from.size(), 0);
    }
    for (size_t k = 0; k < from.size(); ++k) {
        into[k] = std::max(into[k], from[k]);
    }
}

inline void HbAcquire(const std::vector<uint32_t>& snap) {
    Runtime& rt = RT();
    size_t me = CoreTag() - 1u;
    if (HbTracked(me)) {
        HbJoin(rt.hb_vc[me], snap);
    }
}

// Whether the write core `tag` made at `epoch` is ordered before what this core does now.
inline bool HbOrdered(uint16_t tag, uint32_t epoch) {
    Runtime& rt = RT();
    size_t me = CoreTag() - 1u;
    size_t w = tag - 1u;
    return HbTracked(me) && HbTracked(w) && rt.hb_vc[me][w] >= epoch;
}

// Scalar GM writes go through the core's 64-byte data cache, which writes whole lines back (the
// GlobalTensor::SetValue page: written out per 64-byte cache line; cores' addresses must be a cache line
// apart, "否则会出现多核数据随机覆盖" — otherwise the cores' data randomly overwrite each other).  When a
// line one core wrote that way is written by another core (or a core writes through its cache into a
// line another core wrote), on the device a write-back may undo the other core's bytes:
//   - the same bytes with another value: whichever write-back comes last wins, whatever the cores'
//     synchronisation — refused;
//   - different bytes (or the value already there): CANN's CPU debug mode keeps them all, as the CPU does, and the device keeps them
//     too unless a stale copy of the line is written back over them — a GmCacheLineWarning naming the
//     lines, once per buffer and launch.
inline void NoteGmLines(const char* api, GmBuffer* b, const uint8_t* p, uint64_t bytes, bool scalar,
                        const uint8_t* incoming) {
    if (b->line_any.empty()) {
        size_t n = static_cast<size_t>((b->bytes + kGmLine - 1) / kGmLine);
        b->line_any.assign(n, 0);
        b->line_scalar.assign(n, 0);
    }
    uint16_t me = CoreTag();
    const uint64_t off = static_cast<uint64_t>(p - b->base);
    uint64_t first = off / kGmLine;
    uint64_t last = (off + bytes - 1) / kGmLine;
    for (uint64_t i = first; i <= last; ++i) {
        uint16_t other_scalar = b->line_scalar[i];
        uint16_t any = b->line_any[i];
        const bool shared = (other_scalar != 0 && other_scalar != me) || (scalar && any != 0 && any != me);
        if (shared) {
            // this write's bytes inside line i, and whether another core wrote any of them already
            const uint64_t lo = std::max(off, i * kGmLine), hi = std::min(off + bytes, (i + 1) * kGmLine);
            uint16_t same = 0;
            uint64_t same_at = 0;
            for (uint64_t k = lo; k < hi && !b->owner.empty(); ++k) {
                if (b->owner[k] != 0 && b->owner[k] != me && (incoming == nullptr || incoming[k - off] != b->base[k])) {
                    same = b->owner[k];
                    same_at = k;
                    break;
                }
            }
            const uint16_t other = other_scalar != 0 && other_scalar != me ? other_scalar : any;
            std::string who = other == kManyBlocks ? std::string("other cores") : CoreName(other);
            auto site = b->line_site.find(i);
            std::string set_at = site != b->line_site.end()
                                     ? Format(" at %s:%d", site->second.file, site->second.line)
                                     : std::string();
            // who went through a data cache: the other core (its SetValue), or this one
            std::string cached = other_scalar != 0 && other_scalar != me
                                     ? Format("%s wrote it through its data cache (GlobalTensor::SetValue%s)",
                                              CoreName(other_scalar).c_str(), set_at.c_str())
                                     : std::string("this core writes it through its data cache (GlobalTensor::SetValue)");
            auto at = static_cast<unsigned long long>(i * kGmLine);
            if (same != 0) {
                Fail("%s: %s writes byte %llu of GM buffer '%s' with another value than %s wrote there, in the 64-byte "
                     "line at byte %llu, and %s; each core's data cache writes whole lines back, so on the device the "
                     "last write-back wins whatever the cores' synchronisation — give each core its own 64-byte "
                     "aligned GM range, or write with DataCopyPad / WriteGmByPassDCache (no data cache)", api,
                     CoreName(me).c_str(), static_cast<unsigned long long>(same_at), b->name.c_str(),
                     CoreName(same).c_str(), at, cached.c_str());
            }
            const Site& here = CurrentSite();
            const Site& loc = here.file != nullptr || site == b->line_site.end() ? here : site->second;
            AtSite locate(loc);
            Warn("GmCacheLineWarning",
                 Format("%s: %s writes bytes [%llu, %llu) of GM buffer '%s' in the 64-byte line at byte %llu, of which "
                        "%s wrote other bytes, and %s; on the device each core's data cache writes the whole line "
                        "back, so a stale copy may undo the other core's bytes (the SetValue page: cores' addresses a "
                        "cache line apart, or their data randomly overwrite each other) — give each core its own "
                        "64-byte aligned GM range, or write with DataCopyPad / WriteGmByPassDCache (reported once per "
                        "buffer)", api, CoreName(me).c_str(), static_cast<unsigned long long>(lo),
                        static_cast<unsigned long long>(hi), b->name.c_str(), at, who.c_str(), cached.c_str()),
                 "gm-line:" + b->name);
        }
        b->line_any[i] = any == 0 || any == me ? me : kManyBlocks;
        if (scalar) {
            b->line_scalar[i] = me;
            if (CurrentSite().file != nullptr) {
                b->line_site[i] = CurrentSite();
            }
            uintptr_t line = reinterpret_cast<uintptr_t>(b->base) + i * kGmLine;
            std::vector<uintptr_t>& dirty = CurCore().dirty_lines;
            if (std::find(dirty.begin(), dirty.end(), line) == dirty.end()) {
                dirty.push_back(line);
            }
        }
    }
}

// A DMA (DataCopy) from GM bypasses the data cache: it must not read lines this core wrote
// with SetValue and has not cleaned yet (it would read the stale GM copy).
inline void CheckDmaRead(const char* api, const uint8_t* p, uint64_t bytes) {
    std::vector<uintptr_t>& dirty = CurCore().dirty_lines;
    if (dirty.empty() || bytes == 0) {
        return;
    }
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        return;
    }
    uintptr_t first = LineOf(b, p);
    uintptr_t last = LineOf(b, p + bytes - 1);
    for (uintptr_t line : dirty) {
        if (line >= first && line <= last) {
            Fail("%s: reads bytes of GM buffer '%s' that this core wrote with GlobalTensor::SetValue (the 64-byte "
                 "line at byte %llu is still dirty in the data cache); call DataCacheCleanAndInvalid on it first so "
                 "the DMA sees the new values", api, b->name.c_str(),
                 static_cast<unsigned long long>(line - reinterpret_cast<uintptr_t>(b->base)));
        }
    }
}

// Rule 8: within one launch, no two blocks write the same GM byte unless atomic add is on, or
// the earlier write is ordered before the later one by the cores' synchronisation.
// `incoming` (when the caller knows them) are the bytes about to be written: a block that
// writes exactly the value another block already wrote there is a benign race — the result is
// the same whatever order the cores run in (CANN's create_vec_index sample has every core write
// the same index table), so only differing values are reported.
inline void NoteGmWrite(const char* api, GmBuffer* b, const uint8_t* p, uint64_t bytes, bool scalar = false,
                        const uint8_t* incoming = nullptr) {
    if (b == nullptr) {
        return;
    }
    RT().progress += 1;
    NoteGmLines(api, b, p, bytes, scalar, incoming);
    if (CurCore().atomic_add) {
        return;
    }
    if (b->owner.empty()) {
        b->owner.assign(b->bytes, 0);
        b->owner_epoch.assign(b->bytes, 0);
    }
    uint16_t me = CoreTag();
    uint32_t my_epoch = HbTracked(me - 1u) ? RT().hb_epoch[me - 1u] : 0;
    uint64_t off = static_cast<uint64_t>(p - b->base);
    uint16_t* o = b->owner.data() + off;
    uint32_t* oe = b->owner_epoch.data() + off;
    for (uint64_t i = 0; i < bytes; ++i) {
        if (o[i] != 0 && o[i] != me && (incoming == nullptr || incoming[i] != p[i]) && !HbOrdered(o[i], oe[i])) {
            Fail("%s: %s and %s both write byte %llu of GM buffer '%s'; cores must write disjoint GM ranges (or "
                 "enable SetAtomicAdd, or order the writes: CrossCoreSetFlag/WaitFlag, IBSet/IBWait, SyncAll); "
                 "writing the value already there is accepted, a different one is a race whose result depends on "
                 "the order the cores run in", api, CoreName(o[i]).c_str(), CoreName(me).c_str(),
                 static_cast<unsigned long long>(off + i), b->name.c_str());
        }
        o[i] = me;
        oe[i] = my_epoch;
    }
}

inline void RegisterGm(void* p, uint64_t bytes, const std::string& name) {
    GmBuffer b;
    b.base = static_cast<uint8_t*>(p);
    b.bytes = bytes;
    b.name = name;
    RT().gm[reinterpret_cast<uintptr_t>(p)] = std::move(b);
}

inline void UnregisterGm(void* p) {
    RT().gm.erase(reinterpret_cast<uintptr_t>(p));
}

}  // namespace fusedsl_cpu
