# --precision bf16 (docs/precision.md): the conversion and the bfloat16
# packed product's plan (unit), and corpus models compiled in bf16 against
# ONNX Runtime at `onnxc check`'s bf16 tolerance, on the host's kernels
# (AMX when the machine has it) and on the portable ones (--cpu generic),
# also in guard mode.
add_executable(test_lowp ${CMAKE_CURRENT_LIST_DIR}/test_lowp.c)
target_include_directories(test_lowp PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(test_lowp PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka m)
add_test(NAME unit.lowp COMMAND test_lowp)
set_tests_properties(unit.lowp PROPERTIES LABELS unit)

add_test(NAME e2e.precision_bf16
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_precision.py
          --onnxc $<TARGET_FILE:onnxc> --corpus ${CMAKE_BINARY_DIR}/corpus)
set_tests_properties(e2e.precision_bf16 PROPERTIES LABELS e2e TIMEOUT 900)
