// fusedsl CPU implementation of the Ascend C API: running a kernel once per block, and the
// C ABI the Python runner (fusedsl.backend_ascendc.cpu_runner) calls through ctypes.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>

#include <functional>

#include "vector.h"

namespace fusedsl_cpu {

inline void ResetStats() {
    RT().stats = Stats{};
}

inline void ResetGmOwners() {
    for (auto& kv : RT().gm) {
        for (std::vector<uint16_t>* v : {&kv.second.owner, &kv.second.line_scalar, &kv.second.line_any}) {
            std::fill(v->begin(), v->end(), 0);
        }
        std::fill(kv.second.owner_epoch.begin(), kv.second.owner_epoch.end(), 0);
        kv.second.line_site.clear();
    }
}

// A fresh core: UB full of NaN bytes, nothing written, no pipe, queues or flags.
inline void BeginBlock(int64_t idx, int64_t num, int64_t sub, int64_t ratio) {
    Runtime& rt = RT();
    Core& c = rt.core;
    const TargetInfo& t = Target();
    c.ub_bytes = t.ub_physical_bytes;
    c.ub.assign(c.ub_bytes, 0xFF);
    c.written.assign(c.ub_bytes, 0);
    c.generation = ++rt.next_generation;
    c.cube = CubeBlockState{};
    c.gm_reads_idle = 0;
    c.gm_seen_progress = 0;
    c.pipe = nullptr;
    c.fixpipe_quant_pre = 0;
    c.fixpipe_quant_table = -1;
    c.nz2nd_num = 1;
    c.nz2nd_src_stride = 0;
    c.nz2nd_dst_stride = 0;
    std::memset(c.outstanding, 0, sizeof c.outstanding);
    std::memset(c.flags, 0, sizeof c.flags);
    c.atomic_add = false;
    c.atomic_type = "";
    c.pad_value_set = false;
    c.pad_value = 0;
    c.vector_mask[0] = c.vector_mask[1] = ~0ull;
    c.counter_mode = false;
    c.pending_error.clear();
    c.ub_high_water = 0;
    c.slot_state.assign(c.ub_bytes, kSlotPlain);
    c.cur_pipe = PIPE_V;
    c.cur_api = "";
    c.clock = 0;
    c.w_pipe.assign(c.ub_bytes, kNoPipe);
    c.r_pipe.assign(c.ub_bytes, kNoPipe);
    c.w_seq.assign(c.ub_bytes, 0);
    c.r_seq.assign(c.ub_bytes, 0);
    c.w_api.assign(c.ub_bytes, 0);
    std::memset(c.synced, 0, sizeof c.synced);
    std::memset(c.flag_vc, 0, sizeof c.flag_vc);
    c.dirty_lines.clear();
    c.wait_note.clear();
    std::fill(std::begin(c.poll_ring), std::end(c.poll_ring), nullptr);
    c.poll_repeats = 0;
    c.poll_site = Site{nullptr, 0};
    c.fmatrix[0] = c.fmatrix[1] = Core::Fmatrix{};
    c.load3d_pad_set = false;
    c.l1_boundary = 0;
    c.load3d_repeat = 1;
    c.spr_sum = c.spr_value = 0;
    c.spr_index = 0;
    std::memset(c.cmp_mask, 0, sizeof c.cmp_mask);
    // BT and FB sizes: 1 KB bias table, 2 KB fixpipe buffer (A2/A3; ASCENDC.md §1.3)
    const uint32_t sizes[kNumLocalMems] = {t.l1_bytes, t.l0a_bytes, t.l0b_bytes, t.l0c_bytes, 1024, 2048};
    uint32_t at = 0;
    for (int m = 0; m < kNumLocalMems; ++m) {
        c.local_at[m] = at;
        at += sizes[m];
    }
    c.local_at[kNumLocalMems] = at;
    c.local.assign(at, 0xFF);
    c.local_written.assign(at, 0);
    c.sparse_index.assign(t.l0b_bytes / 4, 0xFF);
    c.sparse_index_written.assign(t.l0b_bytes / 4, 0);
    rt.block_idx = idx;
    rt.block_num = num;
    rt.sub_block_idx = sub;
    rt.mix_ratio = ratio;
    rt.in_block = true;
}

// Checks that need the whole kernel to have run: leaks found by queue destructors, flags set
// and never waited.
inline std::string EndOfBlockError() {
    Core& c = RT().core;
    if (!c.pending_error.empty()) {
        return c.pending_error;
    }
    for (int e = 0; e < kNumEvents; ++e) {
        for (int id = 0; id < kMaxEventIds; ++id) {
            if (c.flags[e][id]) {
                const char* file = c.flag_file[e][id];
                std::string where = file != nullptr ? Format("%s:%d: ", file, c.flag_line[e][id]) : "";
                return where + Format("SetFlag<HardEvent::%s>(%d) was never waited (WaitFlag) before the kernel "
                                      "ended", EventName(static_cast<HardEvent>(e)), id);
            }
        }
    }
    return "";
}

inline int RecordFailure(const std::string& message) {
    Runtime& rt = RT();
    rt.last_error = Format("fusedsl CPU check (%s, block %lld): ", Target().name,
                           static_cast<long long>(rt.block_idx)) + message;
    return 1;
}

// One block's kernel body with its errors turned into a message ("" = fine).
template <typename R>
inline std::string RunBlockBody(R& run) {
    try {
        run();
        return EndOfBlockError();
    } catch (const KernelReturn&) {   // the cube core of a mixed kernel leaves at REGIST_MATMUL_OBJ
        return EndOfBlockError();
    } catch (const CheckError& e) {
        return e.message;
    } catch (const std::exception& e) {
        return std::string("the kernel threw an exception: ") + e.what();
    } catch (...) {
        return "the kernel threw an exception";
    }
}

// How many re-reads of the same few GM addresses, with no GM write and no vector instruction between,
// make a lone block's loop a spin on a value nothing can change.  A loop that re-reads a GM parameter
// does other work (a vector instruction, a GM write) long before this; a poll never does.
constexpr uint64_t kLonePollLimit = 1u << 20;

// The kernel line a polling core reads GM at, with the API's name ("k.cpp:9: GlobalTensor::GetValue").
inline std::string PollNote(const Core& c) {
    if (c.poll_site.file == nullptr) {
        return Format("%s (polling a GM value)", c.poll_api);
    }
    return Format("%s:%d: %s (polling a GM value)", c.poll_site.file, c.poll_site.line, c.poll_api);
}

// A launch of one block has nobody to wait for.
inline void YieldSingle(int why) {
    if (why == 3) {
        // polling GM alone: the value cannot change, but a loop may still end by itself
        const Core& c = CurCore();
        if (c.poll_repeats < kLonePollLimit) {
            return;
        }
        FailAt(c.poll_site, "%s re-read the same GM bytes %llu times with no GM write and no vector instruction "
               "between: the launch has only 1 block and no other core writes GM, so the value it waits for never "
               "changes — on the device this kernel would hang (set the flag before polling it, or launch the "
               "blocks that write it)", c.poll_api, static_cast<unsigned long long>(c.poll_repeats));
    }
    Fail("%s waits for another block, but the launch has only 1; the device would hang",
         why == 1 ? "SyncAll" : why == 4 ? "CrossCoreWaitFlag" : "IBWait");
}

// ---- blocks as fibers: SyncAll, IBSet/IBWait and GM flags need every block to make progress ----
//
// The device runs blocks in parallel; the CPU runs them one at a time, each on its own stack
// (ucontext), switching only where a block waits for others (SyncAll's barrier, IBWait, a GM word
// polled with GetValue).  A block that never waits runs to its end before the next one starts, as
// before.  The running block's core is in RT().core; a parked block's is in its fiber.
struct Fiber {
    ucontext_t ctx;
    void* stack = nullptr;
    Core core;
    int64_t idx = 0;
    bool started = false;
    bool done = false;
    int waiting = 0;        // 0 running, 1 SyncAll, 2 IBWait, 3 polling GM, 4 CrossCoreWaitFlag
    bool aic = false;       // the cube core of a mixed block (idx is then the block)
    uint64_t polls = 0;     // fruitless polling yields in a row
    std::string error;
};

struct FiberSet {
    std::vector<Fiber> fibers;
    ucontext_t main_ctx;
    size_t current = 0;
    std::function<void()> body;
    int64_t block_num = 1;
    bool mix = false;
    int64_t ratio = 1;   // vector cores per block (2, or 1 in MIX_AIC_1_1; 1 when not mixed)
};

inline FiberSet*& CurrentFibers() {
    static FiberSet* f = nullptr;
    return f;
}

inline void FiberMain() {
    FiberSet& fs = *CurrentFibers();
    Fiber& f = fs.fibers[fs.current];
    BeginBlock(f.idx, fs.block_num, fs.mix && !f.aic ? f.idx % fs.ratio : 0, fs.ratio);
    RT().on_aic = f.aic;
    f.error = RunBlockBody(fs.body);
    f.done = true;
    // returning resumes uc_link: the scheduler
}

constexpr size_t kFiberStack = 8u << 20;   // like a thread's default stack

// getcontext/swapcontext return twice; kept out of line so the scheduler's locals are not
// clobbered (g++ -Wclobbered).
[[gnu::noinline]] inline void MakeFiber(Fiber& f, ucontext_t* link) {
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kFiberStack;
    f.ctx.uc_link = link;
    makecontext(&f.ctx, &FiberMain, 0);
}

[[gnu::noinline]] inline void SwitchContext(ucontext_t* from, ucontext_t* to) {
    swapcontext(from, to);
}

inline void YieldFiber(int why) {
    FiberSet& fs = *CurrentFibers();
    Fiber& f = fs.fibers[fs.current];
    f.waiting = why;
    // the API call a block is parked in keeps its kernel line; the blocks that run meanwhile report their own
    const Site parked_at = CurrentSite();
    CurrentSite() = Site{nullptr, 0};
    SwitchContext(&f.ctx, &fs.main_ctx);
    CurrentSite() = parked_at;
    f.waiting = 0;
}

// Why a launch whose unfinished cores all wait cannot go on: each waiting line (the kernel's file:line,
// the call and its flag id) with the cores parked there, the cores that finished, and the
// CrossCore flags that were set and are still unclaimed (a mismatched flag id or mode shows there).
inline std::string DeadlockReport(const FiberSet& fs) {
    Runtime& rt = RT();
    std::vector<std::pair<std::string, std::string>> groups;   // wait note -> cores waiting there
    int64_t finished = 0;
    for (const Fiber& g : fs.fibers) {
        if (g.done) {
            finished += 1;
            continue;
        }
        if (!g.started) {
            continue;
        }
        std::string note = g.core.wait_note;
        if (note.empty()) {
            note = g.waiting == 1 ? "SyncAll" : g.waiting == 2 ? "IBWait" : g.waiting == 4 ? "CrossCoreWaitFlag"
                                                                                          : PollNote(g.core);
        }
        std::string who = Format("%s %lld", g.aic ? "cube core" : "block", static_cast<long long>(g.idx));
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == note; });
        if (it == groups.end()) {
            groups.emplace_back(note, who);
        } else {
            it->second += ", " + who;
        }
    }
    std::string text;
    for (const auto& [note, who] : groups) {
        text += Format("%s%s never returns on %s", text.empty() ? "" : "; ", note.c_str(), who.c_str());
    }
    text += Format(" — the cores wait for each other forever (%lld of %zu cores finished, every other one waits)",
                   static_cast<long long>(finished), fs.fibers.size());
    std::string pending;
    for (const auto& [key, arrivals] : rt.xcore_ready) {
        if (arrivals.empty()) {
            continue;
        }
        const bool aic = (key >> 56) == kXcAic;
        pending += Format("%sflag id %u for %s %lld (x%zu)", pending.empty() ? "" : ", ",
                          static_cast<unsigned>(key & 0xFF), aic ? "cube core" : "block",
                          static_cast<long long>((key >> 8) & 0xFFFFFFFFFFFFull), arrivals.size());
    }
    if (!pending.empty()) {
        text += "; CrossCoreSetFlag'd and not yet waited: " + pending;
    }
    text += "; a CrossCoreWaitFlag needs a CrossCoreSetFlag with the same flag id in a mode that reaches this "
            "core, an IBWait its IBSet, a SyncAll every core — on the device this kernel would hang";
    return text;
}

template <typename R>
inline int RunFibers(R& run, uint64_t instances, int64_t block_num, bool mix, int64_t ratio) {
    Runtime& rt = RT();
    FiberSet fs;
    fs.body = run;
    fs.block_num = block_num;
    fs.mix = mix;
    fs.ratio = ratio;
    fs.fibers.resize(instances);
    FiberSet* saved = CurrentFibers();
    CurrentFibers() = &fs;
    rt.yield_block = &YieldFiber;
    rt.barrier_arrived = 0;
    rt.barrier_round = 0;
    rt.xcore_ready.clear();
    rt.xcore_partial.clear();
    std::string error;
    int64_t failed_block = 0;
    size_t live = instances;
    Core spare = std::move(rt.core);   // the buffers of the core that ran last
    rt.core = Core{};
    size_t idle = 0;   // resumes in a row that ended waiting, with no GM write or barrier arrival
    for (size_t i = 0; live > 0; i = (i + 1) % instances) {
        Fiber& f = fs.fibers[i];
        if (f.done) {
            continue;
        }
        if (idle >= 2 * live) {
            error = DeadlockReport(fs);
            failed_block = f.idx;
            break;
        }
        if (!f.started) {
            f.started = true;
            // a mixed launch's fibers: ratio * block_num vector instances, then block_num cube cores
            f.aic = mix && static_cast<int64_t>(i) >= ratio * block_num;
            f.idx = f.aic ? static_cast<int64_t>(i) - ratio * block_num : static_cast<int64_t>(i);
            f.stack = mmap(nullptr, kFiberStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
            if (f.stack == MAP_FAILED) {
                f.stack = nullptr;
                error = "cannot allocate a stack for the block";
                break;
            }
            MakeFiber(f, &fs.main_ctx);
            f.core = std::move(spare);   // BeginBlock reuses a finished block's buffers
            spare = Core{};
        }
        fs.current = i;
        std::swap(rt.core, f.core);
        rt.block_idx = f.idx;
        rt.block_num = block_num;
        rt.sub_block_idx = mix && !f.aic ? f.idx % ratio : 0;
        rt.mix_ratio = ratio;
        rt.on_aic = f.aic;
        rt.in_block = true;
        uint64_t before = rt.progress;
        SwitchContext(&fs.main_ctx, &f.ctx);
        rt.in_block = false;
        rt.on_aic = false;
        rt.stats.ub_high_water = std::max(rt.stats.ub_high_water, rt.core.ub_high_water);
        std::swap(rt.core, f.core);
        if (f.done) {
            live -= 1;
            idle = 0;
            spare = std::move(f.core);
            f.core = Core{};
            if (!f.error.empty()) {
                error = f.error;
                failed_block = f.idx;
                break;
            }
        } else if (rt.progress == before) {
            // a poller may just be reading a lot: it counts once per 4096 fruitless yields
            f.polls = f.waiting == 3 ? f.polls + 1 : 0;
            idle += f.waiting != 3 || f.polls % 4096 == 0 ? 1 : 0;
        } else {
            f.polls = 0;
            idle = 0;
        }
    }
    // Blocks still parked (after an error) are dropped without unwinding their stacks.
    for (Fiber& f : fs.fibers) {
        if (f.stack != nullptr) {
            munmap(f.stack, kFiberStack);
        }
    }
    rt.core = std::move(spare);
    rt.yield_block = nullptr;
    CurrentFibers() = saved;
    if (!error.empty()) {
        rt.block_idx = failed_block;
        return RecordFailure(error);
    }
    return 0;
}

// Runs `kernel(args...)` once per block, sequentially, each on a fresh core.  Returns 0, or 1
// after recording the first broken rule (fusedsl_cpu_last_error); nothing escapes.
template <typename F, typename... Args>
inline int Launch(F kernel, uint64_t blockDim, Args... args) {
    Runtime& rt = RT();
    rt.last_error.clear();
    rt.warned_once.clear();
    rt.warnings.clear();
    ResetStats();
    ResetGmOwners();
    rt.block_idx = 0;
    if (rt.in_block) {
        return RecordFailure("a kernel launch inside a running kernel is not supported");
    }
    if (blockDim == 0 || blockDim > 65535) {
        return RecordFailure(Format("blockDim = %llu; it must be in [1, 65535]",
                                    static_cast<unsigned long long>(blockDim)));
    }
    // AIC_MODE (a __cube__ kernel): blockDim cube cores, each GetBlockIdx() in [0, blockDim); on
    // separated chips they have no UB, which TPipe::InitBuffer and the UB allocators check.
    const TargetInfo& t = Target();
    // ASCENDC.md §1.2: a mixed kernel on a separated chip runs 2 AIVs per block (__mix__(1, 2)) or 1
    // (__mix__(1, 1), MIX_AIC_1_1); GetBlockNum() stays numBlocks while GetBlockIdx() covers
    // [0, ratio * numBlocks).
    const bool mix = IsMixMode(rt.kernel_mode) && t.separated;
    const int64_t ratio = mix ? MixVectorCores(rt.kernel_mode) : 1;
    // A mixed block is one physical (1 AIC + 2 AIV) group, of which 1:1 uses one AIV; there are aic_cores.
    if (mix && blockDim > static_cast<uint64_t>(t.aic_cores)) {
        return RecordFailure(Format("blockDim = %llu in a mixed launch (__mix__(1, %lld)); a mixed kernel's blockDim "
                                    "counts cube cores (1 AIC + %lld AIV each) and %s has %d",
                                    static_cast<unsigned long long>(blockDim), static_cast<long long>(ratio),
                                    static_cast<long long>(ratio), t.name, t.aic_cores));
    }
    // a mixed block is its vector instances and (when the program runs them) its cube core
    uint64_t instances = mix ? static_cast<uint64_t>(ratio + (rt.mix_cube_cores ? 1 : 0)) * blockDim : blockDim;
    rt.xcore_ready.clear();
    rt.xcore_partial.clear();
    rt.xcore_partial_vc.clear();
    rt.seq_turn.clear();
    rt.seq_rounds.clear();
    HbInit(instances);
    auto run = [&]() { kernel(args...); };
    if (instances > 1) {
        return RunFibers(run, instances, static_cast<int64_t>(blockDim), mix, ratio);
    }
    BeginBlock(0, static_cast<int64_t>(blockDim), 0, 1);
    rt.yield_block = &YieldSingle;
    std::string error = RunBlockBody(run);
    rt.yield_block = nullptr;
    rt.in_block = false;
    rt.stats.ub_high_water = std::max(rt.stats.ub_high_water, rt.core.ub_high_water);
    return error.empty() ? 0 : RecordFailure(error);
}

inline const uint64_t* StatField(const char* key) {
    const Stats& s = RT().stats;
    struct Entry {
        const char* key;
        const uint64_t* field;
    };
    const Entry table[] = {
        {"gm_bytes_read", &s.gm_bytes_read},
        {"gm_bytes_written", &s.gm_bytes_written},
        {"vector_instructions", &s.vector_instructions},
        {"vector_repeats", &s.vector_repeats},
        {"scalar_gm_accesses", &s.scalar_gm_accesses},
        {"ub_high_water", &s.ub_high_water},
    };
    for (const Entry& e : table) {
        if (std::strcmp(e.key, key) == 0) {
            return e.field;
        }
    }
    return nullptr;
}

}  // namespace fusedsl_cpu

// ---- C ABI --------------------------------------------------------------------------------
// `inline` gives one definition however many translation units include this header; `used`
// makes every shared library export them even when nothing in it calls them.
#define FUSEDSL_CPU_EXPORT extern "C" inline __attribute__((visibility("default"), used))

// 0 on success; 1 for an unknown name (the message is in fusedsl_cpu_last_error).
FUSEDSL_CPU_EXPORT int fusedsl_cpu_set_target(const char* name) {
    int t = fusedsl_cpu::FindTarget(name);
    if (t < 0) {
        fusedsl_cpu::RT().last_error = "unknown target '" + std::string(name) + "' (known: " +
                                       fusedsl_cpu::KnownTargets() + ")";
        return 1;
    }
    fusedsl_cpu::RT().target = t;
    return 0;
}

FUSEDSL_CPU_EXPORT const char* fusedsl_cpu_target_name() {
    return fusedsl_cpu::Target().name;
}

FUSEDSL_CPU_EXPORT void fusedsl_cpu_set_library_mode(int on) {
    fusedsl_cpu::RT().library_mode = on != 0;
}

FUSEDSL_CPU_EXPORT void fusedsl_cpu_register_gm(void* base, uint64_t bytes, const char* name) {
    fusedsl_cpu::RegisterGm(base, bytes, name != nullptr ? name : "gm");
}

FUSEDSL_CPU_EXPORT void fusedsl_cpu_clear_gm() {
    fusedsl_cpu::RT().gm.clear();
}

FUSEDSL_CPU_EXPORT void fusedsl_cpu_reset_stats() {
    fusedsl_cpu::ResetStats();
}

// UINT64_MAX for an unknown key.
FUSEDSL_CPU_EXPORT uint64_t fusedsl_cpu_stat(const char* key) {
    const uint64_t* field = fusedsl_cpu::StatField(key);
    return field != nullptr ? *field : UINT64_MAX;
}

FUSEDSL_CPU_EXPORT const char* fusedsl_cpu_last_error() {
    return fusedsl_cpu::RT().last_error.c_str();
}

// The last launch's warnings (library mode), one "kind\ttext" per line; empty when there were none.
FUSEDSL_CPU_EXPORT const char* fusedsl_cpu_warnings() {
    static std::string joined;
    joined.clear();
    for (const std::string& w : fusedsl_cpu::RT().warnings) {
        joined += w + "\n";
    }
    return joined.c_str();
}
