// fusedsl's own kernels for the sort and transpose instructions (written from the asc-devkit docs).
// sort128: x = 128 float scores, idx = 128 uint32 indices -> out = 128 (score, index) records in
//   descending score order: Sort32 sorts 4 groups of 32, one MrgSort merges the 4 lists.
// transpose16: x = 16 x 16 half -> out = its transpose; nchw2nhwc: x [2, 3, 4, 8] half -> [2, 4, 8, 3].
#include "tikicpulib.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void sort128(GM_ADDR x, GM_ADDR idx, GM_ADDR out)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> score = ub.Alloc<float, 128>();
    LocalTensor<uint32_t> index = ub.Alloc<uint32_t, 128>();
    LocalTensor<float> runs = ub.Alloc<float, 256>();
    LocalTensor<float> merged = ub.Alloc<float, 256>();
    GlobalTensor<float> xg, og;
    GlobalTensor<uint32_t> ig;
    xg.SetGlobalBuffer((__gm__ float*)x, 128);
    ig.SetGlobalBuffer((__gm__ uint32_t*)idx, 128);
    og.SetGlobalBuffer((__gm__ float*)out, 256);
    DataCopy(score, xg, 128);
    DataCopy(index, ig, 128);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Sort32(runs, score, index, 4);
    PipeBarrier<PIPE_V>();
    MrgSort4Info info;
    for (int i = 0; i < 4; ++i) {
        info.elementLengths[i] = 32;
    }
    info.validBit = 0b1111;
    info.repeatTimes = 1;
    MrgSortSrcList<float> lists{runs[0], runs[64], runs[128], runs[192]};
    MrgSort(merged, lists, info);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, merged, 256);
}

extern "C" __global__ __aicore__ void transpose16(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<half> src = ub.Alloc<half, 256>();
    LocalTensor<half> dst = ub.Alloc<half, 256>();
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half*)x, 256);
    og.SetGlobalBuffer((__gm__ half*)out, 256);
    DataCopy(src, xg, 256);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Transpose(dst, src);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, 256);
}

extern "C" __global__ __aicore__ void nchw2nhwc(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    constexpr uint32_t n = 2 * 3 * 4 * 8;
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<half> src = ub.Alloc<half, n>();
    LocalTensor<half> dst = ub.Alloc<half, n>();
    LocalTensor<uint8_t> tmp = ub.Alloc<uint8_t, 4096>();
    GlobalTensor<half> xg, og;
    xg.SetGlobalBuffer((__gm__ half*)x, n);
    og.SetGlobalBuffer((__gm__ half*)out, n);
    DataCopy(src, xg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    TransposeParamsExt p;
    p.nSize = 2;
    p.cSize = 3;
    p.hSize = 4;
    p.wSize = 8;
    p.transposeType = TransposeType::TRANSPOSE_NCHW2NHWC;
    Transpose(dst, src, tmp, p);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, n);
}

// Broken on purpose: MrgSort with validBit 0b0101 (lists must be 2, 3 or 4 from the first).
extern "C" __global__ __aicore__ void mrgsort_bad_validbit(GM_ADDR, GM_ADDR, GM_ADDR)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> runs = ub.Alloc<float, 256>();
    LocalTensor<float> merged = ub.Alloc<float, 256>();
    MrgSort4Info info;
    info.validBit = 0b0101;
    MrgSortSrcList<float> lists{runs[0], runs[64], runs[128], runs[192]};
    MrgSort(merged, lists, info);
}

// cast_int4: x = 256 halves -> out = 128 bytes of int4b_t (CAST_FLOOR, saturated), two repeats of 128.
extern "C" __global__ __aicore__ void cast_int4(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<half> src = ub.Alloc<half, 256>();
    LocalTensor<int8_t> dst = ub.Alloc<int8_t, 128>();
    GlobalTensor<half> xg;
    GlobalTensor<int8_t> og;
    xg.SetGlobalBuffer((__gm__ half*)x, 256);
    og.SetGlobalBuffer((__gm__ int8_t*)out, 128);
    DataCopy(src, xg, 256);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<int4b_t> packed = dst.ReinterpretCast<int4b_t>();
    Cast<int4b_t, half>(packed, src, RoundMode::CAST_FLOOR, 128, 2, {1, 1, 2, 8});
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, 128);
}

// Region proposals (310P, 910A): x = 64 scores and lab = 64 labels (T) -> out = the 64 scores in descending order,
// then their labels: ProposalConcat (score field 4, label field 5) into 64 proposals, RpSort16 sorts each 16,
// MrgSort4 merges the 4 runs, ProposalExtract takes the fields back out.  kOverrun: the extract repeats over
// 512 proposals, past both tensors (CANN's region_proposal_sort sample does this), which is refused.
template <typename T, bool kOverrun>
__aicore__ inline void Proposals(GM_ADDR x, GM_ADDR lab, GM_ADDR out)
{
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<T> score = ub.Alloc<T, 64>();
    LocalTensor<T> label = ub.Alloc<T, 64>();
    LocalTensor<T> work = ub.Alloc<T, 512>();
    LocalTensor<T> merged = ub.Alloc<T, 512>();
    LocalTensor<T> res = ub.Alloc<T, 128>();
    GlobalTensor<T> xg, lg, og;
    xg.SetGlobalBuffer((__gm__ T*)x, 64);
    lg.SetGlobalBuffer((__gm__ T*)lab, 64);
    og.SetGlobalBuffer((__gm__ T*)out, 128);
    DataCopy(score, xg, 64);
    DataCopy(label, lg, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    ProposalConcat(work, score, 4, 4);
    ProposalConcat(work, label, 4, 5);
    PipeBarrier<PIPE_V>();
    RpSort16(work, work, 4);
    PipeBarrier<PIPE_V>();
    const uint16_t lengths[4] = {16, 16, 16, 16};
    MrgSortSrcList<T> lists(work[0], work[128], work[256], work[384]);
    MrgSort4(merged, lists, MrgSort4Info(lengths, false, 15, 1));
    PipeBarrier<PIPE_V>();
    if (kOverrun) {
        ProposalExtract(res, merged, 512 / 16, 4);   // LINE:extract_overrun
    }
    ProposalExtract(res, merged, 4, 4);
    ProposalExtract(res[64], merged, 4, 5);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, res, 128);
}

extern "C" __global__ __aicore__ void proposals_half(GM_ADDR x, GM_ADDR lab, GM_ADDR out)
{
    Proposals<half, false>(x, lab, out);
}
extern "C" __global__ __aicore__ void proposals_float(GM_ADDR x, GM_ADDR lab, GM_ADDR out)
{
    Proposals<float, false>(x, lab, out);
}
extern "C" __global__ __aicore__ void proposals_overrun(GM_ADDR x, GM_ADDR lab, GM_ADDR out)
{
    Proposals<half, true>(x, lab, out);
}

#define SORT_ENTRY(name)                                                        \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::AIV_MODE);                           \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2]);  \
    }
SORT_ENTRY(sort128)
SORT_ENTRY(transpose16)
SORT_ENTRY(nchw2nhwc)
SORT_ENTRY(mrgsort_bad_validbit)
SORT_ENTRY(cast_int4)
SORT_ENTRY(proposals_half)
SORT_ENTRY(proposals_float)
SORT_ENTRY(proposals_overrun)
