// One driver kernel per element type that runs one reduction API with parameters read from
// GM, so the Python tests sweep many cases (and many broken calls) through one g++ build.
//
// p[0] op        p[1] count/mask  p[2] repeatTime  p[3] dstRepStride  p[4] srcBlkStride
// p[5] srcRepStride  p[6] order/calIndex  p[7] dst offset (elements)  p[8] tmp elements
// p[9] tmp placement (0 own buffer, 1 = src, 2 = dst)  p[10..13] bitwise mask (lo32, hi32, lo32, hi32)
// p[14] 1 = use the bitwise mask overload
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t SRC_BYTES = 65536;
constexpr uint32_t DST_BYTES = 4096;
constexpr uint32_t TMP_BYTES = 16384;

enum Op {
    REDUCE_SUM, REDUCE_MAX, REDUCE_MIN,                 // count form
    REDUCE_SUM_L0, REDUCE_MAX_L0, REDUCE_MIN_L0,        // mask/repeat form
    WHOLE_SUM, WHOLE_MAX, WHOLE_MIN,
    BLOCK_SUM, BLOCK_MAX, BLOCK_MIN,
    REPEAT_SUM, REPEAT_MAX, REPEAT_MIN,                 // CANN 9.1 ReduceRepeat
    DATABLOCK_SUM, DATABLOCK_MAX, DATABLOCK_MIN,        // CANN 9.1 ReduceDataBlock
    BRCB,
    PAIR_SUM,             // ReducePairElem<SUM>
    PAIR_SUM_OLD,         // PairReduceSum (repeatTime before mask)
    WHOLE_SUM_COUNTER,    // counter mode: SetMaskCount + SetVectorMask(count) + WholeReduceSum<T, false>
    REDUCE_SUM_SPR,       // ReduceSum count form, then GetReduceRepeatSumSpr into dst[8]
};

template <typename T>
__aicore__ inline void RunOp(const int32_t* p, const LocalTensor<T>& s, const LocalTensor<T>& d,
                             const LocalTensor<T>& t) {
    const int32_t op = p[0], cnt = p[1], rep = p[2], dRep = p[3], sBlk = p[4], sRep = p[5], opt = p[6];
    uint64_t bits[2] = {static_cast<uint32_t>(p[10]) | (static_cast<uint64_t>(static_cast<uint32_t>(p[11])) << 32),
                        static_cast<uint32_t>(p[12]) | (static_cast<uint64_t>(static_cast<uint32_t>(p[13])) << 32)};
    const bool bitwise = p[14] != 0;
    const ReduceOrder order = static_cast<ReduceOrder>(opt);
#define MASKED(CALL_INT, CALL_BITS) \
    if (bitwise) {                  \
        CALL_BITS;                  \
    } else {                        \
        CALL_INT;                   \
    }
    switch (op) {
        case REDUCE_SUM: ReduceSum(d, s, t, cnt); break;
        case REDUCE_MAX: ReduceMax(d, s, t, cnt, opt != 0); break;
        case REDUCE_MIN: ReduceMin(d, s, t, cnt, opt != 0); break;
        case REDUCE_SUM_L0: MASKED(ReduceSum(d, s, t, cnt, rep, sRep), ReduceSum(d, s, t, bits, rep, sRep)) break;
        case REDUCE_MAX_L0:
            MASKED(ReduceMax(d, s, t, cnt, rep, sRep, opt != 0), ReduceMax(d, s, t, bits, rep, sRep, opt != 0)) break;
        case REDUCE_MIN_L0:
            MASKED(ReduceMin(d, s, t, cnt, rep, sRep, opt != 0), ReduceMin(d, s, t, bits, rep, sRep, opt != 0)) break;
        case WHOLE_SUM:
            MASKED(WholeReduceSum(d, s, cnt, rep, dRep, sBlk, sRep), WholeReduceSum(d, s, bits, rep, dRep, sBlk, sRep))
            break;
        case WHOLE_MAX:
            MASKED(WholeReduceMax(d, s, cnt, rep, dRep, sBlk, sRep, order),
                   WholeReduceMax(d, s, bits, rep, dRep, sBlk, sRep, order)) break;
        case WHOLE_MIN:
            MASKED(WholeReduceMin(d, s, cnt, rep, dRep, sBlk, sRep, order),
                   WholeReduceMin(d, s, bits, rep, dRep, sBlk, sRep, order)) break;
        case BLOCK_SUM:
            MASKED(BlockReduceSum(d, s, rep, cnt, dRep, sBlk, sRep), BlockReduceSum(d, s, rep, bits, dRep, sBlk, sRep))
            break;
        case BLOCK_MAX:
            MASKED(BlockReduceMax(d, s, rep, cnt, dRep, sBlk, sRep), BlockReduceMax(d, s, rep, bits, dRep, sBlk, sRep))
            break;
        case BLOCK_MIN:
            MASKED(BlockReduceMin(d, s, rep, cnt, dRep, sBlk, sRep), BlockReduceMin(d, s, rep, bits, dRep, sBlk, sRep))
            break;
        case REPEAT_SUM: ReduceRepeat<ReduceType::SUM, T, T>(d, s, cnt, rep, dRep, sBlk, sRep); break;
        case REPEAT_MAX:
            MASKED((ReduceRepeat<ReduceType::MAX, T, T>(d, s, cnt, rep, dRep, sBlk, sRep, order)),
                   (ReduceRepeat<ReduceType::MAX, T, T>(d, s, bits, rep, dRep, sBlk, sRep, order))) break;
        case REPEAT_MIN: ReduceRepeat<ReduceType::MIN, T, T>(d, s, cnt, rep, dRep, sBlk, sRep, order); break;
        case DATABLOCK_SUM: ReduceDataBlock<ReduceType::SUM, T, T>(d, s, cnt, rep, dRep, sBlk, sRep); break;
        case DATABLOCK_MAX: ReduceDataBlock<ReduceType::MAX, T, T>(d, s, cnt, rep, dRep, sBlk, sRep); break;
        case DATABLOCK_MIN: ReduceDataBlock<ReduceType::MIN, T, T>(d, s, cnt, rep, dRep, sBlk, sRep); break;
        case BRCB: Brcb(d, s, static_cast<uint8_t>(rep), BrcbRepeatParams{static_cast<uint16_t>(sBlk),
                                                                          static_cast<uint16_t>(dRep)}); break;
        case PAIR_SUM: ReducePairElem<ReduceType::SUM, T, T>(d, s, cnt, rep, dRep, sBlk, sRep); break;
        case PAIR_SUM_OLD: PairReduceSum(d, s, rep, cnt, dRep, sBlk, sRep); break;
        case WHOLE_SUM_COUNTER:
            SetMaskCount();
            SetVectorMask<T>(0, cnt);
            WholeReduceSum<T, false>(d, s, MASK_PLACEHOLDER, 1, dRep, sBlk, sRep);
            SetMaskNorm();
            ResetMask();
            break;
        case REDUCE_SUM_SPR: {
            ReduceSum(d, s, t, cnt);
            SetFlag<HardEvent::V_S>(EVENT_ID0);
            WaitFlag<HardEvent::V_S>(EVENT_ID0);
            d.SetValue(8, GetReduceRepeatSumSpr<T>());
            break;
        }
        default: break;
    }
#undef MASKED
}

// src: SRC_BYTES; dst: DST_BYTES (its initial content is loaded, so unwritten results show).
template <typename T>
__global__ __aicore__ void reduce_case(GM_ADDR params, GM_ADDR src, GM_ADDR dst) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bd, bt;
    pipe.InitBuffer(bs, SRC_BYTES);
    pipe.InitBuffer(bd, DST_BYTES);
    pipe.InitBuffer(bt, TMP_BYTES);
    GlobalTensor<int32_t> gp;
    gp.SetGlobalBuffer((__gm__ int32_t*)params, 16);
    int32_t p[16];
    for (int i = 0; i < 16; ++i) {
        p[i] = gp.GetValue(i);
    }
    GlobalTensor<T> gs, gd;
    gs.SetGlobalBuffer((__gm__ T*)src, SRC_BYTES / sizeof(T));
    gd.SetGlobalBuffer((__gm__ T*)dst, DST_BYTES / sizeof(T));
    LocalTensor<T> s = bs.Get<T>();
    LocalTensor<T> d = bd.Get<T>();
    DataCopy(s, gs, SRC_BYTES / sizeof(T));
    DataCopy(d, gd, DST_BYTES / sizeof(T));
    PipeBarrier<PIPE_ALL>();
    LocalTensor<T> t = p[9] == 1 ? s : p[9] == 2 ? d : bt.Get<T>(static_cast<uint32_t>(p[8]));
    if (p[9] != 0) {
        t.SetSize(static_cast<uint32_t>(p[8]));
    }
    RunOp<T>(p, s, d[p[7]], t);
    PipeBarrier<PIPE_ALL>();
    DataCopy(gd, d, DST_BYTES / sizeof(T));
}

extern "C" int fusedsl_launch_reduce_half(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(reduce_case<half>, blockDim, a[0], a[1], a[2]);
}
extern "C" int fusedsl_launch_reduce_float(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(reduce_case<float>, blockDim, a[0], a[1], a[2]);
}
