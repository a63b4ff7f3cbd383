# fb_sm90_kernel_sources(<var> <dir>): writes one <dir>/<name>.cu per FLASHBAND_SM90_KERNEL row
# of kernel_list.h (name as compiled_kernels.cpp spells it) and sets <var> to their paths;
# compiled_kernels.cpp and the dispatch test (tests/gpu) include the same list. A file is rewritten
# only when its text changes, and an edit of kernel_list.h configures again.
set(FB_SM90_KERNEL_LIST ${CMAKE_CURRENT_LIST_DIR}/kernel_list.h)
# Wide tiles whose wgmma N (176, 80: tile_shapes.h) is not among CUTLASS's default shapes:
# their files switch the extended shapes on, before any include.
set(FB_SM90_EXTENDED_WGMMA_HEAD_DIMS 128 256)

function(fb_sm90_kernel_sources var dir)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${FB_SM90_KERNEL_LIST})
  file(STRINGS ${FB_SM90_KERNEL_LIST} rows REGEX "^FLASHBAND_SM90_KERNEL\\(")
  set(sources "")
  foreach(row ${rows})
    if(NOT row MATCHES "^FLASHBAND_SM90_KERNEL\\((f16|bf16), ([0-9]+), (contiguous|paged), (narrow|wide), (any|causal|kvlen), (same|fp8)\\)$")
      message(FATAL_ERROR "kernel_list.h: cannot read the row '${row}'")
    endif()
    set(name prefill_${CMAKE_MATCH_1}_d${CMAKE_MATCH_2}_${CMAKE_MATCH_3}_${CMAKE_MATCH_4}_${CMAKE_MATCH_5})
    if(CMAKE_MATCH_6 STREQUAL "fp8")
      string(APPEND name "_fp8kv")
    endif()
    set(extended "")
    if(CMAKE_MATCH_4 STREQUAL "wide" AND CMAKE_MATCH_2 IN_LIST FB_SM90_EXTENDED_WGMMA_HEAD_DIMS)
      set(extended "#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED\n")
    endif()
    file(CONFIGURE OUTPUT ${dir}/${name}.cu @ONLY CONTENT
      "// Generated from src/backends/sm90/kernel_list.h by sm90_kernel_sources.cmake.\n${extended}#include \"backends/sm90/launch_prefill.cuh\"\n${row}\n")
    list(APPEND sources ${dir}/${name}.cu)
  endforeach()
  set(${var} ${sources} PARENT_SCOPE)
endfunction()
