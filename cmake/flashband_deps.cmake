# Where the header-only third-party dependencies come from. Each is looked up, in order:
#   1. FLASHBAND_<NAME>_INCLUDE_DIR given on the command line;
#   2. FLASHBAND_DEPS_DIR (scripts/bootstrap.sh fills it: plain CMake builds, the offline GPU
#      machine, `pip install --no-build-isolation .` from a bootstrapped tree);
#   3. the pinned wheel in the build environment's Python (`pip install .` with build
#      isolation installs them as build requirements, see cmake/pep517/flashband_backend.py).
# Sets FLASHBAND_<NAME>_INCLUDE_DIR (empty when not found) and FLASHBAND_<NAME>_FROM (a phrase
# for the configure summary). Nothing here decides what is built: cmake/flashband_backends.cmake does.

# The pins, which scripts/bootstrap.sh and cmake/pep517/flashband_backend.py repeat
# (scripts/test.sh checks that the three agree).
set(FLASHBAND_CUTLASS_WHEEL "nvidia-cutlass==4.2.0.0")
set(FLASHBAND_CUDNN_FRONTEND_WHEEL "nvidia-cudnn-frontend==1.32.0")
set(FLASHBAND_DLPACK_WHEEL "apache-tvm-ffi==0.1.15.post2")

# The interpreter to ask: pip's (scikit-build-core passes it), else the bootstrap venv.
if(DEFINED Python_EXECUTABLE)
  set(_fb_deps_python "${Python_EXECUTABLE}")
elseif(EXISTS "${FLASHBAND_DEPS_DIR}/venv/bin/python")
  set(_fb_deps_python "${FLASHBAND_DEPS_DIR}/venv/bin/python")
else()
  set(_fb_deps_python "")
endif()

# flashband_find_headers(<NAME> MARKER <file> DEPS_SUBDIR <dir> WHEEL <dist==ver> WHEEL_SUBDIR <dir>)
function(flashband_find_headers name)
  cmake_parse_arguments(A "" "MARKER;DEPS_SUBDIR;WHEEL;WHEEL_SUBDIR" "" ${ARGN})
  set(var FLASHBAND_${name}_INCLUDE_DIR)
  set(${var} "" CACHE PATH "Include directory holding ${A_MARKER} (empty: look in deps/, then the build environment's ${A_WHEEL})")
  set(dir "")
  if(${var})
    if(NOT EXISTS "${${var}}/${A_MARKER}")
      message(FATAL_ERROR "${var}=${${var}} has no ${A_MARKER}")
    endif()
    set(dir "${${var}}")
    set(from "${var}")
  elseif(EXISTS "${FLASHBAND_DEPS_DIR}/${A_DEPS_SUBDIR}/${A_MARKER}")
    set(dir "${FLASHBAND_DEPS_DIR}/${A_DEPS_SUBDIR}")
    set(from "${dir}")
  elseif(_fb_deps_python)
    string(REGEX REPLACE "==.*" "" dist "${A_WHEEL}")
    execute_process(
      COMMAND "${_fb_deps_python}" -c
        "import importlib.metadata as m, sys; d = m.distribution(sys.argv[1]); print(d.locate_file(sys.argv[2])); print(d.version)"
        "${dist}" "${A_WHEEL_SUBDIR}"
      OUTPUT_VARIABLE out ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0)
      string(REPLACE "\n" ";" out "${out}")
      list(GET out 0 candidate)
      list(GET out 1 version)
      if(EXISTS "${candidate}/${A_MARKER}")
        set(dir "${candidate}")
        set(from "the ${dist} ${version} wheel in ${_fb_deps_python}")
      endif()
    endif()
  endif()
  if(NOT dir)
    if(_fb_deps_python)
      set(wheel_place "the ${A_WHEEL} wheel of ${_fb_deps_python}")
    else()
      set(wheel_place "no Python to ask for the ${A_WHEEL} wheel (pass -DPython_EXECUTABLE)")
    endif()
    set(from "not found (looked in ${var}, ${FLASHBAND_DEPS_DIR}/${A_DEPS_SUBDIR}; ${wheel_place})")
  endif()
  set(FLASHBAND_${name}_DIR "${dir}" PARENT_SCOPE)
  set(FLASHBAND_${name}_FROM "${from}" PARENT_SCOPE)
endfunction()

flashband_find_headers(CUTLASS MARKER cute/tensor.hpp DEPS_SUBDIR cutlass/include
  WHEEL ${FLASHBAND_CUTLASS_WHEEL} WHEEL_SUBDIR cutlass_library/source/include)
flashband_find_headers(CUDNN_FRONTEND MARKER cudnn_frontend.h DEPS_SUBDIR cudnn_frontend/include
  WHEEL ${FLASHBAND_CUDNN_FRONTEND_WHEEL} WHEEL_SUBDIR include)
flashband_find_headers(DLPACK MARKER dlpack/dlpack.h DEPS_SUBDIR dlpack/include
  WHEEL ${FLASHBAND_DLPACK_WHEEL} WHEEL_SUBDIR tvm_ffi/include)
