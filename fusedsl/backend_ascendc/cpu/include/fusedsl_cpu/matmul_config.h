// The Matmul API's template configuration (asc-devkit docs: Matmul模板参数 / MatmulConfig,
// GetNormalConfig, GetMDLConfig, GetSpecialMDLConfig, GetBasicConfig, GetIBShareNormConfig,
// GetMMConfig and its parameter structs).  The field names and the Get*Config parameters are
// CANN's, so kernels that build a config (auto cfg = CFG_NORM; cfg.isA2B2Shared = true;) compile.
//
// Most fields pick how the cube schedules its loads (preload, unit flag, L1 caching, K reorder,
// double buffering, A2/B2 sharing): they change no result, so the CPU implementation carries
// them.  The ones that change what C holds are either modelled (enableRelu: ReLU on C) or
// refused at Matmul::Init with a located message (isPartialOutput, isEnableChannelSplit,
// intraBlockPartSum, a decompression mode).
#pragma once

#include <cstdint>

// Global, as in CANN: samples write CubeFormat::ND without a namespace.
enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };
enum class LayoutMode { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };
enum class BatchMode { NONE = 0, BATCH_LESS_THAN_L1, BATCH_LARGE_THAN_L1, SINGLE_LARGE_THAN_L1 };
enum BatchOutMode { SINGLE_BATCH = 0, MULTI_BATCH, DYNAMIC };
enum class IterateOrder { ORDER_M = 0, ORDER_N, UNDEF };
enum class ScheduleType { INNER_PRODUCT = 0, OUTER_PRODUCT };
enum IterateMode : uint8_t {
    ITERATE_MODE_NORMAL = 0b00000001,
    ITERATE_MODE_ALL = 0b00000010,
    ITERATE_MODE_BATCH = 0b00000100,
    ITERATE_MODE_N_BATCH = 0b00001000,
    ITERATE_MODE_DEFAULT = 0b11111111,
};
enum class DecompressionMode {
    DECOMP_NONE = 0,
    DECOMP_2bitTo8bit,
    DECOMP_3bitTo8bit,
    DECOMP_4bitTo8bit,
    DECOMP_16bitTo64bit,
    DECOMP_1bitTo8bit,
    DECOMP_1bitTo4bit,
    DECOMP_2bitTo4bit,
    DECOMP_3bitTo4bit,
};
enum class MatmulConfigMode { CONFIG_NORM, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };

constexpr uint32_t SHARED_CO1_BUFFER_SIZE = 64 * 1024;

struct MatmulConfig {
    bool doNorm = false;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    uint32_t basicM = 0;
    uint32_t basicN = 0;
    uint32_t basicK = 0;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
    bool doSpecialBasicBlock = false;
    uint32_t doMTE2Preload = 0;
    uint32_t singleCoreM = 0;
    uint32_t singleCoreN = 0;
    uint32_t singleCoreK = 0;
    uint32_t stepM = 0;
    uint32_t stepN = 0;
    uint32_t baseMN = 0;
    uint32_t singleCoreMN = 0;
    bool enUnitFlag = true;
    bool isPerTensor = false;
    bool hasAntiQuantOffset = false;
    bool doIBShareNorm = false;
    bool doSpecialMDL = false;
    bool enableInit = true;
    BatchMode batchMode = BatchMode::NONE;
    bool enableEnd = true;
    bool enableGetTensorC = true;
    bool enableSetOrgShape = true;
    bool enableSetBias = true;
    bool enableSetTail = true;
    bool enableQuantVector = true;
    bool enableSetDefineData = true;
    uint8_t iterateMode = ITERATE_MODE_DEFAULT;
    bool enableReuse = true;
    bool enableUBReuse = false;
    bool enableL1CacheUB = false;
    bool intraBlockPartSum = false;
    IterateOrder iterateOrder = IterateOrder::UNDEF;
    ScheduleType scheduleType = ScheduleType::INNER_PRODUCT;
    bool enableDoubleCache = false;
    bool isBiasBatch = true;
    bool enableStaticPadZeros = false;
    bool isPartialOutput = false;
    bool enableMixDualMaster = false;
    bool isA2B2Shared = false;
    bool isEnableChannelSplit = false;
    bool enableKdimReorderLoad = false;
    bool isCO1Shared = false;
    uint32_t sharedCO1BufferSize = SHARED_CO1_BUFFER_SIZE;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
    bool enableL1BankConflictOptimise = false;
    bool enableRelu = false;
    DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};

struct MatmulShapeParams {
    uint32_t singleCoreM;
    uint32_t singleCoreN;
    uint32_t singleCoreK;
    uint32_t basicM;
    uint32_t basicN;
    uint32_t basicK;
};

struct MatmulQuantParams {
    bool isPerTensor;
    bool hasAntiQuantOffset;
};

struct MatmulBatchParams {
    bool isNBatch;
    BatchMode batchMode;
    bool isBiasBatch = true;
    BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH;
};

struct MatmulFuncParams {
    bool intrinsicsCheck;
    bool enVecND2NZ;
    bool enableDoubleCache;
    bool enableL1CacheUB;
    uint32_t doMTE2Preload;
    IterateOrder iterateOrder;
    ScheduleType scheduleType;
    bool enableReuse = true;
    bool enableUBReuse;
    bool isPartialOutput = false;
    bool isA2B2Shared = false;
    bool isEnableChannelSplit = false;
    bool enableKdimReorderLoad = false;
    bool enableL1BankConflictOptimise = false;
    bool enableRelu = false;
    DecompressionMode decompMode = DecompressionMode::DECOMP_NONE;
};

struct MatmulBiasParams {
    bool enableSetBias = true;
};

constexpr MatmulConfig GetNormalConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                       const bool isVecND2NZ = false,
                                       const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                       const bool isMsgReuse = true, const IterateOrder iterateOrder = IterateOrder::UNDEF,
                                       const ScheduleType scheduleType = ScheduleType::INNER_PRODUCT,
                                       const bool enUnitFlag = true, const bool enableMixDualMaster = false,
                                       const BatchOutMode bmmOutMode = BatchOutMode::SINGLE_BATCH) {
    MatmulConfig c{};
    c.doNorm = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    c.batchMode = bmmMode;
    c.enableReuse = isMsgReuse;
    c.iterateOrder = iterateOrder;
    c.scheduleType = scheduleType;
    c.enUnitFlag = enUnitFlag;
    c.enableMixDualMaster = enableMixDualMaster;
    c.bmmOutMode = bmmOutMode;
    return c;
}

constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                    const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                    bool isPerTensor = false, bool hasAntiQuantOffset = false,
                                    const bool enUnitFlag = false, const bool isMsgReuse = true,
                                    const bool enableUBReuse = true, const bool enableL1CacheUB = false,
                                    const bool enableMixDualMaster = false, const bool enableKdimReorderLoad = false,
                                    const bool enableL1BankConflictOptimise = false) {
    MatmulConfig c{};
    c.doMultiDataLoad = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    c.isPerTensor = isPerTensor;
    c.hasAntiQuantOffset = hasAntiQuantOffset;
    c.enUnitFlag = enUnitFlag;
    c.enableReuse = isMsgReuse;
    c.enableUBReuse = enableUBReuse;
    c.enableL1CacheUB = enableL1CacheUB;
    c.enableMixDualMaster = enableMixDualMaster;
    c.enableKdimReorderLoad = enableKdimReorderLoad;
    c.enableL1BankConflictOptimise = enableL1BankConflictOptimise;
    return c;
}

constexpr MatmulConfig GetSpecialMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                           const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                           bool isPerTensor = false, bool hasAntiQuantOffset = false) {
    MatmulConfig c{};
    c.doSpecialMDL = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.doMTE2Preload = doMTE2Preload;
    c.enVecND2NZ = isVecND2NZ;
    c.isPerTensor = isPerTensor;
    c.hasAntiQuantOffset = hasAntiQuantOffset;
    c.enUnitFlag = false;
    return c;
}

constexpr MatmulConfig GetBasicConfig(const uint32_t basicM, const uint32_t basicN, const uint32_t basicK,
                                      const bool intrinsicsLimit = false, const bool batchLoop = false,
                                      const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1) {
    MatmulConfig c{};
    c.doBasicBlock = true;
    c.basicM = basicM;
    c.basicN = basicN;
    c.basicK = basicK;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.batchMode = bmmMode;
    return c;
}

constexpr MatmulConfig GetSpecialBasicConfig(const uint32_t basicM, const uint32_t basicN, const uint32_t basicK,
                                             const uint32_t singleCoreM, const uint32_t singleCoreN,
                                             const uint32_t singleCoreK, const uint32_t stepM, const uint32_t stepN,
                                             const bool intrinsicsLimit = false, const bool batchLoop = false,
                                             const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1) {
    MatmulConfig c = GetBasicConfig(basicM, basicN, basicK, intrinsicsLimit, batchLoop, bmmMode);
    c.doBasicBlock = false;
    c.doSpecialBasicBlock = true;
    c.singleCoreM = singleCoreM;
    c.singleCoreN = singleCoreN;
    c.singleCoreK = singleCoreK;
    c.stepM = stepM;
    c.stepN = stepN;
    c.baseMN = basicM * basicN;
    c.singleCoreMN = singleCoreM * singleCoreN;
    return c;
}

constexpr MatmulConfig GetIBShareNormConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                            const bool isVecND2NZ = false,
                                            const BatchMode bmmMode = BatchMode::BATCH_LESS_THAN_L1,
                                            const bool isDoubleCache = false, const bool enUnitFlag = true) {
    MatmulConfig c{};
    c.doIBShareNorm = true;
    c.intrinsicsCheck = intrinsicsLimit;
    c.isNBatch = batchLoop;
    c.enVecND2NZ = isVecND2NZ;
    c.batchMode = bmmMode;
    c.enableDoubleCache = isDoubleCache;
    c.enUnitFlag = enUnitFlag;
    return c;
}

inline constexpr MatmulConfig CFG_NORM = GetNormalConfig();
inline constexpr MatmulConfig CFG_MDL = GetMDLConfig();
inline constexpr MatmulConfig MM_CFG_BB = GetBasicConfig(128, 128, 128);
inline constexpr MatmulConfig CFG_IBSHARE_NORM = GetIBShareNormConfig();
inline constexpr MatmulConfig CFG_IBSHARE_MDL = [] {
    MatmulConfig c = GetMDLConfig();
    c.doIBShareNorm = true;
    return c;
}();

namespace fusedsl_cpu {

// GetMMConfig's parameters, applied in order: each struct sets its own fields.
constexpr void ApplyMMConfig(MatmulConfig& c, const MatmulShapeParams& p) {
    c.singleCoreM = p.singleCoreM;
    c.singleCoreN = p.singleCoreN;
    c.singleCoreK = p.singleCoreK;
    c.basicM = p.basicM;
    c.basicN = p.basicN;
    c.basicK = p.basicK;
}
constexpr void ApplyMMConfig(MatmulConfig& c, const MatmulQuantParams& p) {
    c.isPerTensor = p.isPerTensor;
    c.hasAntiQuantOffset = p.hasAntiQuantOffset;
}
constexpr void ApplyMMConfig(MatmulConfig& c, const MatmulBatchParams& p) {
    c.isNBatch = p.isNBatch;
    c.batchMode = p.batchMode;
    c.isBiasBatch = p.isBiasBatch;
    c.bmmOutMode = p.bmmOutMode;
}
constexpr void ApplyMMConfig(MatmulConfig& c, const MatmulFuncParams& p) {
    c.intrinsicsCheck = p.intrinsicsCheck;
    c.enVecND2NZ = p.enVecND2NZ;
    c.enableDoubleCache = p.enableDoubleCache;
    c.enableL1CacheUB = p.enableL1CacheUB;
    c.doMTE2Preload = p.doMTE2Preload;
    c.iterateOrder = p.iterateOrder;
    c.scheduleType = p.scheduleType;
    c.enableReuse = p.enableReuse;
    c.enableUBReuse = p.enableUBReuse;
    c.isPartialOutput = p.isPartialOutput;
    c.isA2B2Shared = p.isA2B2Shared;
    c.isEnableChannelSplit = p.isEnableChannelSplit;
    c.enableKdimReorderLoad = p.enableKdimReorderLoad;
    c.enableL1BankConflictOptimise = p.enableL1BankConflictOptimise;
    c.enableRelu = p.enableRelu;
    c.decompMode = p.decompMode;
}
constexpr void ApplyMMConfig(MatmulConfig& c, const MatmulBiasParams& p) {
    c.enableSetBias = p.enableSetBias;
}

}  // namespace fusedsl_cpu

template <MatmulConfigMode configMode, typename... ArgTypes>
constexpr MatmulConfig GetMMConfig(ArgTypes&&... args) {
    MatmulConfig c = CFG_NORM;
    if constexpr (configMode == MatmulConfigMode::CONFIG_MDL) {
        c = CFG_MDL;
    } else if constexpr (configMode == MatmulConfigMode::CONFIG_SPECIALMDL) {
        c = GetSpecialMDLConfig();
    } else if constexpr (configMode == MatmulConfigMode::CONFIG_IBSHARE) {
        c = CFG_IBSHARE_NORM;
    }
    (fusedsl_cpu::ApplyMMConfig(c, args), ...);
    return c;
}

namespace AscendC {
using ::BatchMode;
using ::BatchOutMode;
using ::CubeFormat;
using ::DecompressionMode;
using ::GetBasicConfig;
using ::GetIBShareNormConfig;
using ::GetMDLConfig;
using ::GetMMConfig;
using ::GetNormalConfig;
using ::GetSpecialBasicConfig;
using ::GetSpecialMDLConfig;
using ::IterateMode;
using ::IterateOrder;
using ::LayoutMode;
using ::MatmulBatchParams;
using ::MatmulBiasParams;
using ::MatmulConfig;
using ::MatmulConfigMode;
using ::MatmulFuncParams;
using ::MatmulQuantParams;
using ::MatmulShapeParams;
using ::ScheduleType;
using ::CFG_IBSHARE_MDL;
using ::CFG_IBSHARE_NORM;
using ::CFG_MDL;
using ::CFG_NORM;
using ::MM_CFG_BB;
}  // namespace AscendC

// ---- constant tiling (asc-devkit docs: GetMatmulApiTiling / MatmulApiStaticTiling) ----
// A tiling fixed at compile time and passed as the Matmul's MM_CFG; -1 = not set.  A kernel
// whose REGIST_MATMUL_OBJ gets a null TCubeTiling uses these values (its SetOrgShape/SetTail
// still apply).  GetMatmulApiTiling is fusedsl's own rule: the config's single-core and base
// shapes, one base block per step in M and N, as many K blocks per L1 load (double-buffered) as
// fit L1.
struct MatmulApiStaticTiling {
    int32_t usedCoreNum = -1;
    int32_t M = -1;
    int32_t N = -1;
    int32_t Ka = -1;
    int32_t Kb = -1;
    int32_t singleCoreM = -1;
    int32_t singleCoreN = -1;
    int32_t singleCoreK = -1;
    int32_t baseM = -1;
    int32_t baseN = -1;
    int32_t baseK = -1;
    int32_t depthA1 = -1;
    int32_t depthB1 = -1;
    int32_t stepM = -1;
    int32_t stepN = -1;
    int32_t isBias = -1;
    int32_t transLength = -1;
    int32_t iterateOrder = -1;
    int32_t shareMode = -1;
    int32_t shareL1Size = -1;
    int32_t shareL0CSize = -1;
    int32_t shareUbSize = -1;
    int32_t stepKa = -1;
    int32_t stepKb = -1;
    int32_t depthAL1CacheUB = -1;
    int32_t depthBL1CacheUB = -1;
    int32_t dbL0A = -1;
    int32_t dbL0B = -1;
    int32_t dbL0C = -1;
    int32_t ALayoutInfoB = -1;
    int32_t ALayoutInfoS = -1;
    int32_t ALayoutInfoN = -1;
    int32_t ALayoutInfoG = -1;
    int32_t ALayoutInfoD = -1;
    int32_t BLayoutInfoB = -1;
    int32_t BLayoutInfoS = -1;
    int32_t BLayoutInfoN = -1;
    int32_t BLayoutInfoG = -1;
    int32_t BLayoutInfoD = -1;
    int32_t CLayoutInfoB = -1;
    int32_t CLayoutInfoS1 = -1;
    int32_t CLayoutInfoN = -1;
    int32_t CLayoutInfoG = -1;
    int32_t CLayoutInfoS2 = -1;
    int32_t BatchNum = -1;
    int32_t mxTypePara = -1;
    MatmulConfig cfg = CFG_NORM;
};

namespace fusedsl_cpu {
constexpr int32_t kDefaultL1Bytes = 512 * 1024;   // A2/A3 L1 (ASCENDC.md §1.3)
}  // namespace fusedsl_cpu

namespace AscendC {
using ::MatmulApiStaticTiling;

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE>
constexpr MatmulApiStaticTiling GetMatmulApiTiling(const MatmulConfig& mmCFG,
                                                   int32_t l1Size = ::fusedsl_cpu::kDefaultL1Bytes) {
    MatmulApiStaticTiling t;
    t.cfg = mmCFG;
    const int32_t bm = static_cast<int32_t>(mmCFG.basicM);
    const int32_t bn = static_cast<int32_t>(mmCFG.basicN);
    const int32_t bk = static_cast<int32_t>(mmCFG.basicK);
    if (bm != 0 && bn != 0 && bk != 0) {
        t.baseM = bm;
        t.baseN = bn;
        t.baseK = bk;
        t.isBias = mmCFG.enableSetBias ? 1 : 0;
        t.dbL0A = 2;
        t.dbL0B = 2;
    }
    if (mmCFG.singleCoreM == 0 || mmCFG.singleCoreN == 0 || mmCFG.singleCoreK == 0 || bm == 0 || bn == 0 || bk == 0) {
        return t;
    }
    const int32_t sm = static_cast<int32_t>(mmCFG.singleCoreM);
    const int32_t sn = static_cast<int32_t>(mmCFG.singleCoreN);
    const int32_t sk = static_cast<int32_t>(mmCFG.singleCoreK);
    t.M = sm;
    t.N = sn;
    t.Ka = sk;
    t.Kb = sk;
    t.singleCoreM = sm;
    t.singleCoreN = sn;
    t.singleCoreK = sk;
    t.usedCoreNum = 1;
    t.stepM = 1;
    t.stepN = 1;
    const int32_t a_blk = bm * bk * static_cast<int32_t>(sizeof(typename A_TYPE::T));
    const int32_t b_blk = bn * bk * static_cast<int32_t>(sizeof(typename B_TYPE::T));
    int32_t step_k = (sk + bk - 1) / bk;
    while (step_k > 1 && 2 * step_k * (a_blk + b_blk) > l1Size) {
        --step_k;
    }
    t.stepKa = step_k;
    t.stepKb = step_k;
    t.depthA1 = 2 * step_k;
    t.depthB1 = 2 * step_k;
    t.iterateOrder = 0;
    t.dbL0C = 1;
    t.transLength = 0;
    t.shareMode = 0;
    t.shareL1Size = 2 * step_k * (a_blk + b_blk);
    t.shareL0CSize = bm * bn * 4;
    t.shareUbSize = 0;
    return t;
}
}  // namespace AscendC
