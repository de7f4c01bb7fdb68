# Unit tests of frontend/ (included from tests/CMakeLists.txt). The test builds
# models from the generated protobuf-c structs, so it links onnxc_onnx_proto.
add_executable(test_frontend "${CMAKE_CURRENT_LIST_DIR}/test_frontend.c")
target_link_libraries(test_frontend PRIVATE onnxc_frontend onnxc_onnx_proto onnxc_ir cmocka)
add_test(NAME test_frontend COMMAND test_frontend)
