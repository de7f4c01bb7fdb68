# Unit tests of the opsj family's inference hooks: quantization
# (passes/infer_quant.c) and the recurrent ops (passes/infer_rnn.c).
add_executable(test_infer_quant ${CMAKE_CURRENT_LIST_DIR}/test_infer_quant.c)
target_link_libraries(test_infer_quant PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_quant COMMAND test_infer_quant)
set_tests_properties(unit.infer_quant PROPERTIES LABELS unit)

add_executable(test_infer_rnn ${CMAKE_CURRENT_LIST_DIR}/test_infer_rnn.c)
target_link_libraries(test_infer_rnn PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_rnn COMMAND test_infer_rnn)
set_tests_properties(unit.infer_rnn PROPERTIES LABELS unit)
