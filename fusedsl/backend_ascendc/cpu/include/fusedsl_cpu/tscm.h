// fusedsl CPU implementation of TSCM (user-managed L1): TSCM<TPosition::GM, depth> =
// TQueBind<GM, TSCM, depth>, a queue whose buffers are L1 of the AI core that serves this
// vector instance, filled with DataCopy(GM -> L1, Nd2NzParams) and handed to a Matmul whose
// A_TYPE is MatmulType<TPosition::TSCM, CubeFormat::NZ, T> (matmul.h).
//
// What the hardware does (asc-devkit, read for facts): TPipe::InitBuffer of a TSCM queue takes
// L1 from its top, one slice per vector sub-block of the AI core (the AIC's L1 serves both
// AIVs of a 910B core); a DataCopy GM -> TSCM issued on an AIV is a message the AIC carries out
// as one GM -> L1 copy, so the GM bytes are read once; the Matmul then loads A from L1 with no
// GM read (SetTensorA documents that Iterate does no GM -> L1 copy for a TSCM A).  TSCM A is
// documented for Atlas A2/A3 (910B); 310P's Matmul takes A from GM or VECOUT only.
// Modelled: a GM source (TSCM<TPosition::GM>), the queue protocol, the L1 capacity check
// (this core's TSCM slices of all sub-blocks plus the Matmul objects' own A1/B1 buffers).
#pragma once

#include "cube.h"

namespace AscendC {

template <TPosition src, TPosition dst, int32_t depth, auto mask>
class TQueBind {
    static_assert(dst == TPosition::TSCM, "fusedsl's CPU API models TQueBind<src, TPosition::TSCM> (TSCM) only; "
                                          "use TQue for UB positions");
    static_assert(src == TPosition::GM, "fusedsl's CPU API models TSCM filled from GM (TSCM<TPosition::GM>); a "
                                        "VECOUT source goes through GM on 910B and is not modelled");

public:
    TQueBind() = default;
    TQueBind(const TQueBind&) = delete;
    TQueBind& operator=(const TQueBind&) = delete;

    ~TQueBind() {
        fusedsl_cpu::Runtime& rt = fusedsl_cpu::RT();
        if (!rt.in_block || rt.core.generation != fs_generation || std::uncaught_exceptions() > 0 ||
            !rt.core.pending_error.empty()) {
            return;
        }
        for (uint8_t s : fs_state) {
            if (s != fusedsl_cpu::kFree) {
                rt.core.pending_error = "TSCM queue: leak — a tensor was allocated and not freed at the end of the "
                                        "kernel; every AllocTensor needs EnQue, DeQue and FreeTensor";
                return;
            }
        }
    }

    // TPipe::InitBuffer(tscm, num, len): `num` buffers of `len` bytes for this sub-block, below
    // the slices of the other sub-blocks of the AI core, from the top of L1 down.
    bool fs_Init(fusedsl_cpu::TPipeState& pipe, uint8_t num, uint32_t len) {
        using namespace fusedsl_cpu;
        const char* api = "InitBuffer(TSCM)";
        CheckHasCube(api);
        if (!Target().separated) {
            Fail("%s: %s's Matmul API takes A and B from GM or VECOUT; TSCM (user-managed L1) is documented for "
                 "Atlas A2/A3 (ascend910b)", api, Target().name);
        }
        if (!fs_state.empty() && fs_generation == CurCore().generation) {
            Fail("%s: this TSCM queue is already initialised", api);
        }
        if (num == 0 || len == 0) {
            Fail("%s: num = %u and len = %u; both must be at least 1", api, num, len);
        }
        const uint64_t each = RoundUp(len, 32);
        const uint64_t ratio = static_cast<uint64_t>(std::max<int64_t>(RT().mix_ratio, 1));
        const uint64_t sub = static_cast<uint64_t>(RT().sub_block_idx);
        // a mixed kernel's TSCM starts below the KFC message area at the top of L1 (tensor.h KfcL1Reserve)
        const uint64_t l1 = LocalMemBytes(kMemL1) - KfcL1Reserve(IsMixMode(RT().kernel_mode));
        const uint64_t used = pipe.fs_tscm_bytes + ratio * num * each;
        const uint64_t matmul = CurCore().cube.l1_matmul_bytes;
        if (used + ratio * matmul > l1) {
            Fail("%s: %u x %llu bytes for each of the %llu vector sub-block(s) of the AI core, on top of %llu TSCM "
                 "bytes already planned and %llu bytes of the Matmul objects' own L1 buffers per sub-block, need "
                 "%llu bytes; %s has %llu bytes of L1", api, num, static_cast<unsigned long long>(each),
                 static_cast<unsigned long long>(ratio), static_cast<unsigned long long>(pipe.fs_tscm_bytes),
                 static_cast<unsigned long long>(matmul), static_cast<unsigned long long>(used + ratio * matmul),
                 Target().name, static_cast<unsigned long long>(l1));
        }
        fs_base = l1 - pipe.fs_tscm_bytes - (ratio - sub) * num * each;
        pipe.fs_tscm_bytes = used;
        fs_len = static_cast<uint32_t>(each);
        fs_state.assign(num, kFree);
        fs_fifo.clear();
        fs_generation = CurCore().generation;
        return true;
    }

    template <typename T>
    LocalTensor<T> AllocTensor() {
        using namespace fusedsl_cpu;
        Require("AllocTensor");
        for (size_t i = 0; i < fs_state.size(); ++i) {
            if (fs_state[i] == kFree) {
                fs_state[i] = kAllocated;
                std::memset(CurCore().local_written.data() + CurCore().local_at[kMemL1] + Offset(i), 0, fs_len);
                return Tensor<T>(i);
            }
        }
        Fail("AllocTensor: all %zu buffers of the TSCM queue are in use; FreeTensor one first", fs_state.size());
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& t) {
        size_t i = Slot("EnQue", t.fs_addr, fusedsl_cpu::kAllocated);
        fs_state[i] = fusedsl_cpu::kEnqueued;
        fs_fifo.push_back(i);
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue() {
        Require("DeQue");
        if (fs_fifo.empty()) {
            fusedsl_cpu::Fail("DeQue: the TSCM queue is empty; every DeQue needs an earlier EnQue");
        }
        size_t i = fs_fifo.front();
        fs_fifo.pop_front();
        fs_state[i] = fusedsl_cpu::kDequeued;
        return Tensor<T>(i);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& t) {   // an allocated (never queued) or dequeued tensor, as TQue
        size_t i = Slot("FreeTensor", t.fs_addr, fusedsl_cpu::kDequeued, fusedsl_cpu::kAllocated);
        fs_state[i] = fusedsl_cpu::kFree;
    }

private:
    void Require(const char* api) const {
        if (fs_state.empty() || fs_generation != fusedsl_cpu::CurCore().generation) {
            fusedsl_cpu::Fail("%s: the TSCM queue was not initialised; call TPipe::InitBuffer(queue, num, len) "
                              "first", api);
        }
    }
    uint64_t Offset(size_t i) const { return fs_base + i * fs_len; }
    template <typename T>
    LocalTensor<T> Tensor(size_t i) const {
        return LocalTensor<T>(reinterpret_cast<T*>(fusedsl_cpu::LocalMemBase(fusedsl_cpu::kMemL1) + Offset(i)),
                              fusedsl_cpu::ElemsIn<T>(fs_len), TPosition::TSCM);
    }
    size_t Slot(const char* api, const void* addr, uint8_t want, uint8_t also = 0xFF) const {
        Require(api);
        for (size_t i = 0; i < fs_state.size(); ++i) {
            if (addr == fusedsl_cpu::LocalMemBase(fusedsl_cpu::kMemL1) + Offset(i)) {
                if (fs_state[i] != want && fs_state[i] != also) {
                    fusedsl_cpu::Fail("%s: the TSCM tensor is in the wrong state for this call (the queue order is "
                                      "AllocTensor, EnQue, DeQue, FreeTensor)", api);
                }
                return i;
            }
        }
        fusedsl_cpu::Fail("%s: the tensor was not allocated from this TSCM queue", api);
    }

    uint64_t fs_base = 0;
    uint32_t fs_len = 0;
    uint64_t fs_generation = 0;
    std::vector<uint8_t> fs_state;
    std::deque<size_t> fs_fifo;
};

template <TPosition pos, int32_t depth = 1, auto mask = 0>
using TSCM = TQueBind<pos, TPosition::TSCM, depth, mask>;

}  // namespace AscendC
