# Unit tests of frontend/. They build models from the generated protobuf-c
# structs, so they link onnxc_onnx_proto (the bindings library) as well.
add_library(onnxc_test_frontend_util STATIC ${CMAKE_CURRENT_LIST_DIR}/frontend_util.c)
target_link_libraries(onnxc_test_frontend_util
                      PUBLIC onnxc_frontend onnxc_onnx_proto onnxc_ir cmocka)

foreach(t frontend frontend_tensor)
  add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE onnxc_test_frontend_util)
  add_test(NAME unit.${t} COMMAND test_${t})
  set_tests_properties(unit.${t} PROPERTIES LABELS unit)
endforeach()
