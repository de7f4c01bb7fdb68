# Unit tests of the elementwise and shape-op hooks, constant folding and
# canonicalization (passes/infer_elementwise.c, passes/infer_shape_ops.c,
# passes/fold.c, passes/canonicalize.c, codegen/emit_elementwise.c), and --shape
# (passes/shapes_static.c).
foreach(t infer_elementwise infer_shape_ops fold pin_shapes)
  add_executable(test_${t} ${CMAKE_CURRENT_LIST_DIR}/test_${t}.c)
  target_link_libraries(test_${t} PRIVATE onnxc_passes onnxc_ir cmocka)
  add_test(NAME unit.${t} COMMAND test_${t})
  set_tests_properties(unit.${t} PROPERTIES LABELS unit)
endforeach()
add_executable(test_emit_elementwise ${CMAKE_CURRENT_LIST_DIR}/test_emit_elementwise.c)
target_link_libraries(test_emit_elementwise PRIVATE onnxc_codegen onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.emit_elementwise COMMAND test_emit_elementwise)
set_tests_properties(unit.emit_elementwise PROPERTIES LABELS unit)
