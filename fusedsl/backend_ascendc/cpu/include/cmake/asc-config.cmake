# fusedsl stands in for the CANN toolkit's ASC package: `find_package(ASC)` followed by
# `project(... LANGUAGES ASC CXX)` builds Ascend C sources (.asc, or any file marked
# LANGUAGE ASC) with g++ against fusedsl's CPU implementation of the Ascend C API.
#
# The one environment variable to set:
#     export CMAKE_PREFIX_PATH=$(fusedsl include-dir)
#
# Every ASC source goes through `python -m fusedsl.backend_ascendc.asc cc`, which rewrites the
# kernel<<<...>>> launches for g++ and maps --npu-arch=dav-XXXX to the chip whose rules are
# checked; the program then runs its blocks on the CPU with fusedsl's checks (a broken rule
# prints "[ERROR] fusedsl CPU check ..." and exits 1), whatever CMAKE_ASC_RUN_MODE says.
# The Python is $ENV{FUSEDSL_PYTHON} if set, else the first python3/python on PATH that can
# import this copy of fusedsl.
if(_FUSEDSL_ASC_LOADED)
    return()
endif()
set(_FUSEDSL_ASC_LOADED TRUE)

get_filename_component(FUSEDSL_ASC_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
# include/ lives at fusedsl/backend_ascendc/cpu/include: four levels below the import root
get_filename_component(_FUSEDSL_ROOT "${FUSEDSL_ASC_INCLUDE_DIR}/../../../.." ABSOLUTE)
get_filename_component(_FUSEDSL_TOOLKIT "${FUSEDSL_ASC_INCLUDE_DIR}/.." ABSOLUTE)

# Samples that read $ENV{ASCEND_HOME_PATH}/include find the same headers.
if(NOT DEFINED ENV{ASCEND_HOME_PATH})
    set(ENV{ASCEND_HOME_PATH} "${_FUSEDSL_TOOLKIT}")
endif()

if(NOT FUSEDSL_PYTHON)
    set(_fusedsl_candidates "")
    if(DEFINED ENV{FUSEDSL_PYTHON})
        list(APPEND _fusedsl_candidates "$ENV{FUSEDSL_PYTHON}")
    endif()
    find_program(_FUSEDSL_PY3 NAMES python3 NO_CACHE)
    find_program(_FUSEDSL_PY NAMES python NO_CACHE)
    foreach(_py IN ITEMS ${_FUSEDSL_PY3} ${_FUSEDSL_PY})
        list(APPEND _fusedsl_candidates "${_py}")
    endforeach()
    foreach(_py IN LISTS _fusedsl_candidates)
        execute_process(
            COMMAND ${CMAKE_COMMAND} -E env "PYTHONPATH=${_FUSEDSL_ROOT}" "${_py}" -c "import fusedsl.backend_ascendc.asc"
            RESULT_VARIABLE _fusedsl_rc OUTPUT_QUIET ERROR_QUIET)
        if(_fusedsl_rc EQUAL 0)
            set(FUSEDSL_PYTHON "${_py}" CACHE FILEPATH "Python that runs fusedsl's ASC compiler driver")
            break()
        endif()
    endforeach()
    if(NOT FUSEDSL_PYTHON)
        message(FATAL_ERROR "fusedsl ASC: no Python on PATH can import fusedsl from ${_FUSEDSL_ROOT} "
                            "(tried: ${_fusedsl_candidates}); activate the environment fusedsl is installed "
                            "in, or set FUSEDSL_PYTHON to its python")
    endif()
endif()
set(FUSEDSL_ASC_DRIVER ${CMAKE_COMMAND} -E env "PYTHONPATH=${_FUSEDSL_ROOT}" "${FUSEDSL_PYTHON}"
    -m fusedsl.backend_ascendc.asc cc)

list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}/asc_modules")

# Headers of the toolkit (acl/acl.h, tiling/..., register/...) for host and kernel sources alike.
include_directories(SYSTEM "${FUSEDSL_ASC_INCLUDE_DIR}")

# CANN's host libraries are headers here: the names samples link become empty targets.
include("${CMAKE_CURRENT_LIST_DIR}/fusedsl-host-libs.cmake")
set(ASC_FOUND TRUE)

# CANN's helper: compile definitions for a target's ASC sources, written -DNAME=VALUE.
function(ascendc_compile_definitions target)
    set(_defs "")
    foreach(_d IN LISTS ARGN)
        if(_d MATCHES "^(PRIVATE|PUBLIC|INTERFACE)$")
            list(APPEND _defs "${_d}")
        else()
            string(REGEX REPLACE "^-D" "" _d "${_d}")
            list(APPEND _defs "${_d}")
        endif()
    endforeach()
    target_compile_definitions(${target} ${_defs})
endfunction()
