// The fields of TCubeTiling, in CANN's order and with CANN's names (50 int32 fields), as one
// X-macro list: the kernel-side struct (kernel_tiling/kernel_tiling.h) and the host-side
// optiling::TCubeTiling (tiling/tiling_api.h) are both generated from it, so the bytes the
// host serialises are the bytes the kernel reads.
#pragma once

#define FUSEDSL_CUBE_TILING_FIELDS(X) \
    X(usedCoreNum) X(M) X(N) X(Ka) X(Kb) X(singleCoreM) X(singleCoreN) X(singleCoreK) \
    X(baseM) X(baseN) X(baseK) X(depthA1) X(depthB1) X(stepM) X(stepN) X(isBias) \
    X(transLength) X(iterateOrder) X(shareMode) X(shareL1Size) X(shareL0CSize) X(shareUbSize) \
    X(batchM) X(batchN) X(singleBatchM) X(singleBatchN) X(stepKa) X(stepKb) \
    X(depthAL1CacheUB) X(depthBL1CacheUB) X(dbL0A) X(dbL0B) X(dbL0C) \
    X(ALayoutInfoB) X(ALayoutInfoS) X(ALayoutInfoN) X(ALayoutInfoG) X(ALayoutInfoD) \
    X(BLayoutInfoB) X(BLayoutInfoS) X(BLayoutInfoN) X(BLayoutInfoG) X(BLayoutInfoD) \
    X(CLayoutInfoB) X(CLayoutInfoS1) X(CLayoutInfoN) X(CLayoutInfoG) X(CLayoutInfoS2) \
    X(BatchNum) X(mxTypePara)
