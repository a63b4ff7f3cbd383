# Decides whether GPU backends are built and how nvcc targets each architecture.
# Architectures become explicit -gencode flags because wgmma and setmaxnreg need the
# sm_90a target, which `-gencode=arch=compute_90a,code=sm_90a` reaches on every CMake.
set(FLASHBAND_HAVE_CUDA OFF)
if(NOT FLASHBAND_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(FLASHBAND_HAVE_CUDA ON)
  elseif(FLASHBAND_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FLASHBAND_WITH_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "flashband: GPU backends ${FLASHBAND_HAVE_CUDA}")

# flashband_gencode(<out-var> <arch>...): "80;90a" -> -gencode flags.
function(flashband_gencode out)
  set(flags "")
  foreach(arch IN LISTS ARGN)
    list(APPEND flags "-gencode=arch=compute_${arch},code=sm_${arch}")
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# flashband_cuda_object(<target> ARCHS <arch>... SOURCES <file>...): an object library of
# CUDA sources compiled for the given architectures and linked into flashband.
function(flashband_cuda_object target)
  cmake_parse_arguments(A "" "" "ARCHS;SOURCES" ${ARGN})
  add_library(${target} OBJECT ${A_SOURCES})
  flashband_gencode(gencode ${A_ARCHS})
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:${gencode} --expt-relaxed-constexpr -lineinfo>)
  target_include_directories(${target} PRIVATE
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/include)
  target_link_libraries(${target} PRIVATE CUDA::cudart)
  target_sources(flashband PRIVATE $<TARGET_OBJECTS:${target}>)
endfunction()
