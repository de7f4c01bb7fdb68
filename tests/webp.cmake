# WebP decoding of runtime/onnxc_image.h (engineer "webp"): bit-exact hashes
# against Pillow/libwebp and the error paths.
add_executable(test_image_webp ${CMAKE_CURRENT_LIST_DIR}/test_image_webp.c)
target_include_directories(test_image_webp PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
target_link_libraries(test_image_webp PRIVATE cmocka)
add_test(NAME unit.image_webp COMMAND test_image_webp)
set_tests_properties(unit.image_webp PROPERTIES LABELS unit)
