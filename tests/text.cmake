# Unit tests of the text-processing inference hooks (passes/infer_text.c).
add_executable(test_infer_text ${CMAKE_CURRENT_LIST_DIR}/test_infer_text.c)
target_link_libraries(test_infer_text PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_text COMMAND test_infer_text)
set_tests_properties(unit.infer_text PROPERTIES LABELS unit)

# ai.onnx.ml hooks on numeric tensors (passes/infer_ml.c).
add_executable(test_infer_ml ${CMAKE_CURRENT_LIST_DIR}/test_infer_ml.c)
target_link_libraries(test_infer_ml PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_ml COMMAND test_infer_ml)
set_tests_properties(unit.infer_ml PROPERTIES LABELS unit)

# ImageDecoder inference (passes/infer_image.c); the decoders themselves are
# checked bit for bit by the conformance cases (BMP, PNM, TIFF, PNG, JPEG).
add_executable(test_infer_image ${CMAKE_CURRENT_LIST_DIR}/test_infer_image.c)
target_link_libraries(test_infer_image PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_image COMMAND test_infer_image)
set_tests_properties(unit.infer_image PROPERTIES LABELS unit)
