# Decides which backends this build contains (FB_SM80, FB_SM90, FB_CUDNN: 0 or 1, for
# flashband/config.h) and why each missing one is missing (FB_<BACKEND>_WHY). A backend the
# machine could build but whose headers are missing is a configure error, never a quiet
# omission: the error names the package that adds it and the option that leaves it out.
# Needs cmake/flashband_cuda.cmake and cmake/flashband_deps.cmake first.
set(FB_CUDA 0)  # the CUDA runtime and backends/cuda; sm80 comes with it
set(FB_SM80 0)
set(FB_SM90 0)
set(FB_CUDNN 0)
set(FLASHBAND_CUDNN_VERSION "")
set(_fb_fetch_hint "scripts/bootstrap.sh puts it in deps/; `pip install .` installs it when it sees nvcc")

if(NOT FLASHBAND_HAVE_CUDA)
  if(FLASHBAND_WITH_CUDA STREQUAL "OFF")
    set(_fb_no_cuda "FLASHBAND_WITH_CUDA=OFF")
  else()
    set(_fb_no_cuda "no CUDA compiler found (install the CUDA toolkit, or point CUDACXX at nvcc)")
  endif()
  set(FB_SM80_WHY "${_fb_no_cuda}")
  set(FB_SM90_WHY "${_fb_no_cuda}")
  set(FB_CUDNN_WHY "${_fb_no_cuda}")
  if(FLASHBAND_WITH_SM90 STREQUAL "ON" OR FLASHBAND_WITH_CUDNN STREQUAL "ON")
    message(FATAL_ERROR "FLASHBAND_WITH_SM90=${FLASHBAND_WITH_SM90} / FLASHBAND_WITH_CUDNN=${FLASHBAND_WITH_CUDNN} "
                        "need the CUDA build, but: ${_fb_no_cuda}")
  endif()
else()
  set(FB_CUDA 1)
  set(FB_SM80 1)

  # sm90: wgmma kernels over CUTLASS's cute headers, built when 90a is asked for.
  list(FIND FLASHBAND_CUDA_ARCHS "90a" _fb_has_90a)
  if(FLASHBAND_WITH_SM90 STREQUAL "OFF")
    set(FB_SM90_WHY "FLASHBAND_WITH_SM90=OFF")
  elseif(_fb_has_90a EQUAL -1)
    set(FB_SM90_WHY "90a is not in FLASHBAND_CUDA_ARCHS=${FLASHBAND_CUDA_ARCHS}")
    if(FLASHBAND_WITH_SM90 STREQUAL "ON")
      message(FATAL_ERROR "FLASHBAND_WITH_SM90=ON needs 90a in FLASHBAND_CUDA_ARCHS (now ${FLASHBAND_CUDA_ARCHS})")
    endif()
  elseif(NOT FLASHBAND_CUTLASS_DIR)
    message(FATAL_ERROR "The sm90 backend (90a is in FLASHBAND_CUDA_ARCHS) needs the CUTLASS headers "
      "from ${FLASHBAND_CUTLASS_WHEEL}: ${FLASHBAND_CUTLASS_FROM}. Get them (${_fb_fetch_hint}; "
      "or -DFLASHBAND_CUTLASS_INCLUDE_DIR=<dir with cute/>), or build without sm90: "
      "-DFLASHBAND_WITH_SM90=OFF (pip: FLASHBAND_WITH_SM90=OFF).")
  else()
    set(FB_SM90 1)
  endif()

  # cudnn: needs libcudnn (with its headers, for the version) and the cudnn-frontend headers.
  if(FLASHBAND_WITH_CUDNN STREQUAL "OFF")
    set(FB_CUDNN_WHY "FLASHBAND_WITH_CUDNN=OFF")
  else()
    find_library(FLASHBAND_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
    if(NOT FLASHBAND_CUDNN_LIB)
      set(FB_CUDNN_WHY "libcudnn not found (install cuDNN 9 or pass -DFLASHBAND_CUDNN_LIB=<path>; FLASHBAND_WITH_CUDNN=ON makes this an error)")
      if(FLASHBAND_WITH_CUDNN STREQUAL "ON")
        message(FATAL_ERROR "FLASHBAND_WITH_CUDNN=ON but ${FB_CUDNN_WHY}")
      endif()
    elseif(NOT FLASHBAND_CUDNN_FRONTEND_DIR)
      message(FATAL_ERROR "The cudnn backend (libcudnn found: ${FLASHBAND_CUDNN_LIB}) needs the "
        "cudnn-frontend headers from ${FLASHBAND_CUDNN_FRONTEND_WHEEL}: ${FLASHBAND_CUDNN_FRONTEND_FROM}. "
        "Get them (${_fb_fetch_hint}; or -DFLASHBAND_CUDNN_FRONTEND_INCLUDE_DIR=<dir with cudnn_frontend.h>), "
        "or build without cudnn: -DFLASHBAND_WITH_CUDNN=OFF (pip: FLASHBAND_WITH_CUDNN=OFF).")
    else()
      set(FB_CUDNN 1)
      # The version for build_info(), from the headers beside the library or the toolkit's.
      get_filename_component(_fb_cudnn_root "${FLASHBAND_CUDNN_LIB}" DIRECTORY)
      find_path(FLASHBAND_CUDNN_INCLUDE cudnn_version.h
        HINTS "${_fb_cudnn_root}/../include" ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      set(FLASHBAND_CUDNN_VERSION "unknown")
      if(FLASHBAND_CUDNN_INCLUDE)
        file(STRINGS "${FLASHBAND_CUDNN_INCLUDE}/cudnn_version.h" _fb_cudnn_defs
             REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
        string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*CUDNN_MINOR ([0-9]+).*CUDNN_PATCHLEVEL ([0-9]+).*"
               "\\1.\\2.\\3" FLASHBAND_CUDNN_VERSION "${_fb_cudnn_defs}")
      endif()
    endif()
  endif()
endif()
if(FLASHBAND_HAVE_CUDA)
  set(FLASHBAND_CUDA_VERSION "${CUDAToolkit_VERSION}")
else()
  set(FLASHBAND_CUDA_VERSION "")
endif()

# flashband_configure_summary(): what is built and, for each backend that is not, why and
# what adds it. Printed last, so it is the part of the configure output a reader sees.
function(flashband_configure_summary)
  message(STATUS "flashband ${PROJECT_VERSION} configure summary:")
  message(STATUS "  cpu    built")
  foreach(b SM80 SM90 CUDNN)
    string(TOLOWER "${b}" name)
    string(SUBSTRING "${name}      " 0 6 padded)
    if(FB_${b})
      message(STATUS "  ${padded} built")
    else()
      message(STATUS "  ${padded} NOT built: ${FB_${b}_WHY}")
    endif()
  endforeach()
  if(FB_CUDA)
    message(STATUS "  CUDA ${FLASHBAND_CUDA_VERSION}, archs ${FLASHBAND_CUDA_ARCHS}")
  endif()
  if(FB_SM90)
    message(STATUS "  CUTLASS from ${FLASHBAND_CUTLASS_FROM}")
  endif()
  if(FB_CUDNN)
    message(STATUS "  cuDNN ${FLASHBAND_CUDNN_VERSION} (${FLASHBAND_CUDNN_LIB}); cudnn-frontend from ${FLASHBAND_CUDNN_FRONTEND_FROM}")
  endif()
  if(FLASHBAND_DLPACK_DIR)
    message(STATUS "  DLPack from ${FLASHBAND_DLPACK_FROM}")
  else()
    message(STATUS "  DLPack ${FLASHBAND_DLPACK_FROM}: flashband/dlpack.h unusable")
  endif()
endfunction()
