# Unit tests of the memory planner and the scheduler (passes/memplan*.c,
# passes/schedule.c) and the planner's benchmark (built, not run by ctest).
add_executable(test_memplan ${CMAKE_CURRENT_LIST_DIR}/test_memplan.c)
target_link_libraries(test_memplan PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.memplan COMMAND test_memplan)
set_tests_properties(unit.memplan PROPERTIES LABELS unit)

add_executable(bench_memplan ${CMAKE_CURRENT_LIST_DIR}/bench_memplan.c)
target_link_libraries(bench_memplan PRIVATE onnxc_codegen onnxc_passes onnxc_ir)

# Guard mode (docs/guard.md): the guarded plan, the emitted checks and the
# runtime's red-zone helpers.
add_executable(test_guard ${CMAKE_CURRENT_LIST_DIR}/test_guard.c)
target_link_libraries(test_guard PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.guard COMMAND test_guard)
set_tests_properties(unit.guard PROPERTIES LABELS unit)
