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

# The product edge cases of bench/kernel_cases.py (odd M/N/K around the
# panels and depth blocks, pads, strides 1-3, dilations, partial panels,
# small maps split by rows over threads) through the bfloat16 kernels:
# native (vdpbf16ps or AMX where the machine has them) in guard mode, the
# portable loop, and --threads 2 on the par_* cases.
add_test(NAME e2e.kernel_cases_bf16
  COMMAND ${ONNXC_PYTHON} ${CMAKE_SOURCE_DIR}/bench/kernel_cases.py --onnxc $<TARGET_FILE:onnxc>
          --precision bf16 --cpu native,generic --guard-cpu native --threads 2
          --out ${CMAKE_BINARY_DIR}/kernel_cases_bf16)
set_tests_properties(e2e.kernel_cases_bf16 PROPERTIES LABELS e2e TIMEOUT 900)

# Random whole models (tests/diff/gen_model.py) compiled with --precision bf16
# in guard mode, judged at check's bf16 tolerance; about 40% of the seeds
# have a product large enough for the packed kernel. Here (and for fp16) the
# generator leaves out run-time quantization (--avoid DynamicQuantizeLinear):
# a value rounded to bf16 upstream lands on the other side of a quantization
# step, and the step, not the reduced precision, decides the error (the
# float32 configurations check those models).
add_test(NAME diff.random_bf16
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:40 --configs O2:bf16 --avoid DynamicQuantizeLinear -j 2 --timeout 300)
set_tests_properties(diff.random_bf16 PROPERTIES LABELS e2e TIMEOUT 600)

# --precision fp16: corpus models against ONNX Runtime at check's fp16
# tolerance, the AVX-512, F16C and portable kernels bit for bit, guard mode,
# threads, the sources under three -march settings; random whole models in
# guard mode; float16 models (corpus models converted) against ONNX
# Runtime's float16 execution.
add_test(NAME e2e.precision_fp16
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_precision_fp16.py
          --onnxc $<TARGET_FILE:onnxc> --corpus ${CMAKE_BINARY_DIR}/corpus)
set_tests_properties(e2e.precision_fp16 PROPERTIES LABELS e2e TIMEOUT 900)
add_test(NAME diff.random_fp16
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:40 --configs O2:fp16 --avoid DynamicQuantizeLinear -j 2 --timeout 300)
set_tests_properties(diff.random_fp16 PROPERTIES LABELS e2e TIMEOUT 600)
add_test(NAME e2e.float16_models
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_float16_models.py
          --onnxc $<TARGET_FILE:onnxc> --corpus ${CMAKE_BINARY_DIR}/corpus)
set_tests_properties(e2e.float16_models PROPERTIES LABELS e2e TIMEOUT 900)
# Random whole models converted to float16 (run_diff.py --float16: the float16
# model's own ONNX Runtime run as the reference, float16's scaled tolerance),
# guard mode: the float16-model rewrite (passes/precision.c) on random graphs.
add_test(NAME diff.random_float16
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:40 --configs O0,O2 --float16 -j 2 --timeout 300)
set_tests_properties(diff.random_float16 PROPERTIES LABELS e2e TIMEOUT 900)
