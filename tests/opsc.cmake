# Unit tests of the narrow-type conversions (runtime/onnxc_rt.h, ir/tensor.c)
# and of Cast/CastLike, Dropout and training-mode BatchNormalization inference
# (passes/infer_shape_ops.c, passes/infer_norm.c).
add_executable(test_casts ${CMAKE_CURRENT_LIST_DIR}/test_casts.c)
target_link_libraries(test_casts PRIVATE onnxc_passes onnxc_ir onnxc_runtime_headers cmocka m)
add_test(NAME unit.casts COMMAND test_casts)
set_tests_properties(unit.casts PROPERTIES LABELS unit)

# The runtime's vectorizable exp / erf / tanh against the C library (tests/test_rt_math.c).
add_executable(test_rt_math ${CMAKE_CURRENT_LIST_DIR}/test_rt_math.c)
target_link_libraries(test_rt_math PRIVATE onnxc_runtime_headers cmocka m)
add_test(NAME unit.rt_math COMMAND test_rt_math)
set_tests_properties(unit.rt_math PROPERTIES LABELS unit)
