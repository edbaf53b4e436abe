# g++ was found by CMakeDetermineASCCompiler; the driver is checked by asc-config.cmake.
set(CMAKE_ASC_COMPILER_WORKS 1 CACHE INTERNAL "")
