# Inference of the ai.onnx.ml model operators (linear, tree ensembles, SVMs).
add_executable(test_infer_ml_models ${CMAKE_CURRENT_LIST_DIR}/test_infer_ml_models.c)
target_link_libraries(test_infer_ml_models PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_ml_models COMMAND test_infer_ml_models)
set_tests_properties(unit.infer_ml_models PROPERTIES LABELS unit)
