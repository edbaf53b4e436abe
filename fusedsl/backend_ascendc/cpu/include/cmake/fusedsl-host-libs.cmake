# CANN's host libraries are headers in fusedsl (acl/acl.h, tiling/..., register/..., graph/...):
# the names the samples link become empty targets carrying fusedsl's include folder.  Included
# by asc-config.cmake (asc-devkit samples) and tikicpulib-config.cmake (kernel-launch samples).
get_filename_component(_FUSEDSL_HOST_INCLUDE "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
foreach(_lib IN ITEMS tiling_api register platform graph_base graph unified_dlog ascendcl acl_rt
                      acl_op_executor acl_mdl acl_rtc nnopbase runtime ascendalog msprofiler gert
                      ge_runner rt2_registry c_sec exe_graph opapi cust_opapi)
    if(NOT TARGET ${_lib})
        add_library(${_lib} INTERFACE IMPORTED GLOBAL)
        set_target_properties(${_lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_FUSEDSL_HOST_INCLUDE}")
    endif()
endforeach()
