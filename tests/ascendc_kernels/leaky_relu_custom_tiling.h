#pragma once
#include <cstdint>

struct LeakyReluCustomTilingData {
    uint32_t totalLength;
    uint32_t tileLength;
    float alpha;
};
