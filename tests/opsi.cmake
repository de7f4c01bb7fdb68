# Unit tests of the resampling inference hooks of the opsi family
# (passes/infer_sample.c: Resize, Upsample, GridSample, AffineGrid, RoiAlign, DeformConv).
add_executable(test_infer_sample ${CMAKE_CURRENT_LIST_DIR}/test_infer_sample.c)
target_link_libraries(test_infer_sample PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_sample COMMAND test_infer_sample)
set_tests_properties(unit.infer_sample PROPERTIES LABELS unit)
