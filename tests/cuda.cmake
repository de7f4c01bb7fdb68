# Tests of the CUDA target (docs/cuda.md).
#   unit.emit_cuda   the emitter's text and error paths (no toolkit needed)
#   cuda.build       the conformance cases the C target passes
#                    (tests/conformance/passing.txt, the ratchet): by default a
#                    fixed sample, every ONNXC_CUDA_BUILD_EVERY-th case and one
#                    case of every operator stem (about 680 of 1,900; the whole
#                    list took 25 minutes of CI's 2 cores), set it to 1 for all
#                    of them. NVRTC compiles
#                    every kernel (cubin sm_90 + PTX), the host code builds, the
#                    harness links against the driver stub. No GPU needed;
#                    skipped, with the reason, when CMake found no CUDA toolkit.
#   cuda.emu_ci      a fixed representative subset (tests/cuda/ci_subset.txt)
#                    run on the CPU emulation of tests/cuda/emu and compared
#                    with the expected outputs (label cuda_emu)
#   cuda.emu_dynamic models built once with -D ranges (tests/cuda/emu_dynamic.py),
#                    every data set run on the CPU emulation (label cuda_emu)
#   gpu.conformance  runs every passing case on device 0 and compares (label
#                    gpu); registered only with -DONNXC_CUDA_GPU_TESTS=ON.
add_executable(test_emit_cuda ${CMAKE_CURRENT_LIST_DIR}/cuda/test_emit_cuda.c)
target_link_libraries(test_emit_cuda PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.emit_cuda COMMAND test_emit_cuda)
set_tests_properties(unit.emit_cuda PROPERTIES LABELS unit)

set(ONNXC_CUDA_BUILD_EVERY 5 CACHE STRING "cuda.build checks every K-th ratchet case (and one per operator); 1: all")
option(ONNXC_CUDA_GPU_TESTS "Register the CUDA GPU test suite (label gpu; needs a GPU)" OFF)
# Jobs of the CUDA tests: one per core (the build is CPU-bound: NVRTC and $CC).
include(ProcessorCount)
ProcessorCount(ONNXC_CUDA_JOBS)
if(ONNXC_CUDA_JOBS LESS 1)
  set(ONNXC_CUDA_JOBS 2)
endif()
set(ONNXC_CUDA_CASES ${CMAKE_CURRENT_LIST_DIR}/cuda/cuda_cases.py)
if(DEFINED ONNXC_PYTHON)
  set(ONNXC_CUDA_PY ${ONNXC_PYTHON})
else()
  set(ONNXC_CUDA_PY python3)
endif()
if(ONNXC_CUDA_HOME)
  add_test(NAME cuda.build
    COMMAND ${ONNXC_CUDA_PY} ${ONNXC_CUDA_CASES} --onnxc $<TARGET_FILE:onnxc> --mode build --every ${ONNXC_CUDA_BUILD_EVERY}
            --jobs ${ONNXC_CUDA_JOBS})
  set_tests_properties(cuda.build PROPERTIES LABELS cuda TIMEOUT 3600 PROCESSORS ${ONNXC_CUDA_JOBS}
    ENVIRONMENT "ONNXC_CUDA_HOME=${ONNXC_CUDA_HOME}")
  add_test(NAME cuda.emu_ci
    COMMAND ${ONNXC_CUDA_PY} ${CMAKE_CURRENT_LIST_DIR}/cuda/emu_check.py --onnxc $<TARGET_FILE:onnxc>
            --jobs ${ONNXC_CUDA_JOBS} --cases ${CMAKE_CURRENT_LIST_DIR}/cuda/ci_subset.txt)
  # blocks run last to first (tests/cuda/emu/cuda_emu.h): a batched launch of
  # kernels that depend on each other fails (docs/cuda.md, launch batching)
  set_tests_properties(cuda.emu_ci PROPERTIES LABELS cuda_emu TIMEOUT 3600 PROCESSORS ${ONNXC_CUDA_JOBS}
    ENVIRONMENT "ONNXC_CUDA_HOME=${ONNXC_CUDA_HOME};ONNXC_EMU_REVERSE_BLOCKS=1")
  # -D ranges (docs/dynamic-shapes.md, CUDA): bert_tiny_dynamic, ocr_rec_dynamic,
  # the exporters' mask arithmetic and 4 random gen_dynamic models, each built
  # once, every data set run on the CPU emulation
  add_test(NAME cuda.emu_dynamic
    COMMAND ${ONNXC_CUDA_PY} ${CMAKE_CURRENT_LIST_DIR}/cuda/emu_dynamic.py --onnxc $<TARGET_FILE:onnxc>
            --corpus ${CMAKE_BINARY_DIR}/corpus --seeds 0:4)
  set_tests_properties(cuda.emu_dynamic PROPERTIES LABELS cuda_emu TIMEOUT 900
    ENVIRONMENT "ONNXC_CUDA_HOME=${ONNXC_CUDA_HOME}")
  if(ONNXC_CUDA_GPU_TESTS)
    add_test(NAME gpu.conformance
      COMMAND ${ONNXC_CUDA_PY} ${ONNXC_CUDA_CASES} --onnxc $<TARGET_FILE:onnxc> --mode run --jobs ${ONNXC_CUDA_JOBS})
    set_tests_properties(gpu.conformance PROPERTIES LABELS gpu TIMEOUT 7200
      ENVIRONMENT "ONNXC_CUDA_HOME=${ONNXC_CUDA_HOME}")
  endif()
else()
  # Visible in the CTest summary as skipped, with the reason in its output.
  add_test(NAME cuda.build
    COMMAND ${CMAKE_COMMAND} -E echo "SKIPPED: no CUDA toolkit found by CMake (find_package(CUDAToolkit)); the CUDA target is not tested")
  set_tests_properties(cuda.build PROPERTIES LABELS cuda SKIP_REGULAR_EXPRESSION "SKIPPED:")
endif()
