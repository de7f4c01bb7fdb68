# JPEG 2000 decoding of runtime/onnxc_j2k.h (engineer "j2k"): bit-exact hashes
# against Pillow/OpenJPEG and the error paths.
add_executable(test_image_j2k ${CMAKE_CURRENT_LIST_DIR}/test_image_j2k.c)
target_include_directories(test_image_j2k PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
target_link_libraries(test_image_j2k PRIVATE cmocka)
add_test(NAME unit.image_j2k COMMAND test_image_j2k)
set_tests_properties(unit.image_j2k PROPERTIES LABELS unit)
