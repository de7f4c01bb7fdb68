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

# The float16 conversions' portable, F16C and AVX-512 forms give the same bits
# (tests/test_f16_forms.c): each form is tests/f16_form.c built with the flags
# that select it; forms the CPU lacks are reported as skipped. x86 compilers only.
include(CheckCCompilerFlag)
check_c_compiler_flag(-mf16c ONNXC_CC_MF16C)
check_c_compiler_flag(-mavx512f ONNXC_CC_MAVX512F)
if(ONNXC_CC_MF16C AND ONNXC_CC_MAVX512F)
  foreach(_form port f16c avx512)
    add_library(f16_form_${_form} OBJECT ${CMAKE_CURRENT_LIST_DIR}/f16_form.c)
    target_link_libraries(f16_form_${_form} PRIVATE onnxc_runtime_headers)
    target_compile_definitions(f16_form_${_form} PRIVATE F16_FORM=${_form})
  endforeach()
  target_compile_definitions(f16_form_f16c PRIVATE ONNXC_RT_HALF)
  target_compile_options(f16_form_f16c PRIVATE -mf16c)
  target_compile_definitions(f16_form_avx512 PRIVATE ONNXC_RT_HALF)
  target_compile_options(f16_form_avx512 PRIVATE -mavx512f -mf16c)
  add_executable(test_f16_forms ${CMAKE_CURRENT_LIST_DIR}/test_f16_forms.c $<TARGET_OBJECTS:f16_form_port>
                 $<TARGET_OBJECTS:f16_form_f16c> $<TARGET_OBJECTS:f16_form_avx512>)
  target_link_libraries(test_f16_forms PRIVATE cmocka m)
  add_test(NAME unit.f16_forms COMMAND test_f16_forms)
  set_tests_properties(unit.f16_forms PROPERTIES LABELS unit)
endif()
