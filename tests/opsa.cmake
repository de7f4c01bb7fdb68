# Unit tests of the conv/pool, matmul and norm/softmax inference hooks
# (passes/infer_conv.c, passes/infer_matmul.c, passes/infer_norm.c).
foreach(t infer_conv infer_matmul infer_norm)
  add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE onnxc_passes onnxc_ir cmocka)
  add_test(NAME unit.${t} COMMAND test_${t})
  set_tests_properties(unit.${t} PROPERTIES LABELS unit)
endforeach()
