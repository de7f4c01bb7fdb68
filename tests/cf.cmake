# Unit tests of the control-flow and sequence lowering (cf family:
# passes/lower_control.c, passes/lower_sequence.c).
add_executable(test_lower_control ${CMAKE_CURRENT_LIST_DIR}/test_lower_control.c)
target_link_libraries(test_lower_control PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.lower_control COMMAND test_lower_control)
set_tests_properties(unit.lower_control PROPERTIES LABELS unit)
