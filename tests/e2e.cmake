# End-to-end tests: the CLI, the ONNX conformance ratchet, multi-op models
# against ONNX Runtime, the digits demo, and the Cortex-M cross-compile.
set(ONNXC_BIN $<TARGET_FILE:onnxc>)
set(ONNXC_SRC ${CMAKE_SOURCE_DIR})

add_test(NAME e2e.cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli/test_cli.sh ${ONNXC_BIN} ${ONNXC_PYTHON})
# The progress line of long compiles: on a terminal only (docs/cli.md).
add_test(NAME e2e.progress COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli/test_progress.sh ${ONNXC_BIN} ${ONNXC_PYTHON})
# An If whose one branch cannot run with the static shapes: a warning, and
# ONNXC_ERR_BRANCH at run time (docs/control-flow.md).
# onnxc profile and --profile on a small CNN (docs/profile.md).
add_test(NAME e2e.profile COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/cli/test_profile.py ${ONNXC_BIN}
         ${CMAKE_C_COMPILER})
add_test(NAME e2e.if_branch COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli/test_if_branch.sh ${ONNXC_BIN}
         ${ONNXC_PYTHON} ${CMAKE_C_COMPILER})

add_test(NAME e2e.conformance
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/conformance/run_conformance.py
          --onnxc ${ONNXC_BIN} --ratchet ${CMAKE_CURRENT_LIST_DIR}/conformance/passing.txt --only-listed
          --timeout 600)

# The same cases with the generated code built under ASan and UBSan and in
# guard mode (red zones around every arena buffer, checked after each node;
# docs/guard.md): any report fails the case. scripts/test.sh runs it in the
# sanitizer build (-DONNXC_SANITIZE=ON), so the compiler itself runs under
# ASan and UBSan too. By default a fixed sample (ONNXC_SANITIZE_EVERY: every
# K-th case, one case of every operator stem and every whole model, the count
# printed): the whole ratchet sanitized took 10.5 minutes of CI's 2 cores on a
# Zen 3. e2e.conformance_rest runs the cases that sample leaves out, plainly,
# so CI checks every ratchet case's outputs; 1 sanitizes them all.
set(ONNXC_SANITIZE_EVERY 2 CACHE STRING "e2e.conformance_sanitize checks every K-th ratchet case (and one per operator, and the whole models); 1: all")
add_test(NAME e2e.conformance_sanitize
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_SANITIZE=1 ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/conformance/run_conformance.py
          --onnxc ${ONNXC_BIN} --ratchet ${CMAKE_CURRENT_LIST_DIR}/conformance/passing.txt --only-listed
          --every ${ONNXC_SANITIZE_EVERY} --timeout 900)
set_tests_properties(e2e.conformance_sanitize PROPERTIES TIMEOUT 3600)
if(ONNXC_SANITIZE_EVERY GREATER 1)
  add_test(NAME e2e.conformance_rest
    COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/conformance/run_conformance.py
            --onnxc ${ONNXC_BIN} --ratchet ${CMAKE_CURRENT_LIST_DIR}/conformance/passing.txt --only-listed
            --every ${ONNXC_SANITIZE_EVERY} --rest --timeout 600)
  set_tests_properties(e2e.conformance_rest PROPERTIES LABELS e2e TIMEOUT 1800)
endif()

add_test(NAME e2e.models_vs_ort
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/compare_ort.py
          --onnxc ${ONNXC_BIN} --models ${CMAKE_BINARY_DIR}/e2e-models)

# The same models in guard mode (docs/guard.md), and guard mode's own test:
# a violation is caught and named, guarded output equals normal output.
add_test(NAME e2e.models_vs_ort_guard
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/models/compare_ort.py
          --onnxc ${ONNXC_BIN} --models ${CMAKE_BINARY_DIR}/e2e-models)
set_tests_properties(e2e.models_vs_ort_guard PROPERTIES DEPENDS e2e.models_vs_ort)
add_test(NAME e2e.guard COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_guard.py ${ONNXC_BIN})
# --check-numerics: the status names the node of the first NaN/Inf, and
# onnxc check traces a NaN the reference lacks to its node (docs/numerics.md).
add_test(NAME e2e.numerics COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_numerics.py ${ONNXC_BIN})
# onnxc compare: value by value against ONNX Runtime (docs/compare.md).
add_test(NAME e2e.compare COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_compare.py ${ONNXC_BIN}
         ${ONNXC_PYTHON})

# -D NAME=LO..HI: one build for a range of shapes (docs/dynamic-shapes.md).
add_test(NAME e2e.dynamic COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_dynamic.py
         --onnxc ${ONNXC_BIN} --corpus ${CMAKE_BINARY_DIR}/corpus)

# The Python package (python/onnxc, docs/python.md) against ONNX Runtime.
add_test(NAME e2e.python COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_python.py ${ONNXC_BIN}
         --models ${CMAKE_BINARY_DIR}/e2e-models)
set_tests_properties(e2e.python PROPERTIES DEPENDS e2e.models_vs_ort)

add_test(NAME e2e.digits COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/e2e/test_digits.sh ${ONNXC_BIN} ${ONNXC_SRC})

add_test(NAME e2e.cortex_m COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/e2e/test_cortex_m.sh ${ONNXC_BIN} ${ONNXC_SRC}
  ${CMAKE_BINARY_DIR}/e2e-models)
set_tests_properties(e2e.cortex_m PROPERTIES DEPENDS e2e.models_vs_ort)

# The CMake package: installed, moved, used by examples/cmake-app (docs/cmake.md).
if(ONNXC_CUDA_HOME)
  set(ONNXC_CMAKE_TEST_CUDA ${ONNXC_CUDA_HOME})
else()
  set(ONNXC_CMAKE_TEST_CUDA none)
endif()
add_test(NAME e2e.cmake_package COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/e2e/test_cmake_package.sh ${CMAKE_COMMAND}
  ${CMAKE_BINARY_DIR} ${ONNXC_SRC} ${ONNXC_PYTHON} ${CMAKE_C_COMPILER} ${ONNXC_CMAKE_TEST_CUDA})

set_tests_properties(e2e.cli e2e.if_branch e2e.conformance e2e.conformance_sanitize e2e.models_vs_ort
                     e2e.models_vs_ort_guard e2e.guard e2e.python e2e.digits e2e.cortex_m e2e.cmake_package e2e.numerics e2e.compare e2e.progress e2e.dynamic PROPERTIES LABELS e2e)

# The in-process compiler (docs/clang.md): host .so/.a/.o, Cortex-M4 objects
# under QEMU and the JIT, with no C compiler on PATH.
if(ONNXC_CLANG_FOUND)
  add_test(NAME e2e.inproc COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/e2e/test_inproc.sh ${ONNXC_BIN} ${ONNXC_SRC}
    ${CMAKE_BINARY_DIR}/e2e-models ${ONNXC_PYTHON})
  set_tests_properties(e2e.inproc PROPERTIES DEPENDS e2e.models_vs_ort LABELS e2e TIMEOUT 300)
endif()
