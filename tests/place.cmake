# Unit tests of the offset placement's bounded exact search (passes/memplan_place.c).
add_executable(test_memplan_place ${CMAKE_CURRENT_LIST_DIR}/test_memplan_place.c)
target_link_libraries(test_memplan_place PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.memplan_place COMMAND test_memplan_place)
set_tests_properties(unit.memplan_place PROPERTIES LABELS unit)
