// Binary file helpers of a fusedsl-generated kernel project: inputs are read from and outputs
// written to raw .bin files (scripts/gen_data.py writes them, scripts/verify_result.py reads them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

// Reads exactly `size` bytes of `path` into `buffer` (at most `bufferSize`); false on any mismatch.
inline bool ReadFile(const char* path, size_t size, void* buffer, size_t bufferSize)
{
    if (size > bufferSize) {
        std::fprintf(stderr, "[ERROR] %s: %zu bytes do not fit a buffer of %zu\n", path, size, bufferSize);
        return false;
    }
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "[ERROR] cannot open %s (run scripts/gen_data.py first)\n", path);
        return false;
    }
    std::fseek(f, 0, SEEK_END);
    long length = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    if (length < 0 || static_cast<size_t>(length) != size) {
        std::fprintf(stderr, "[ERROR] %s holds %ld bytes, expected %zu\n", path, length, size);
        std::fclose(f);
        return false;
    }
    size_t got = size == 0 ? 0 : std::fread(buffer, 1, size, f);
    std::fclose(f);
    return got == size;
}

// Writes `size` bytes to `path` (replacing it); false when the file cannot be written.
inline bool WriteFile(const char* path, const void* buffer, size_t size)
{
    std::FILE* f = std::fopen(path, "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "[ERROR] cannot write %s\n", path);
        return false;
    }
    size_t put = size == 0 ? 0 : std::fwrite(buffer, 1, size, f);
    bool ok = std::fclose(f) == 0 && put == size;
    return ok;
}
