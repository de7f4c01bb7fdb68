# onnxc graph (docs/graph.md): the layout and the view (unit), and the
# command on small models: SVG, HTML and DOT, checked against the fusion and
# memory reports of the same compile (e2e).
add_executable(test_graph_layout ${CMAKE_CURRENT_LIST_DIR}/test_graph_layout.c)
target_link_libraries(test_graph_layout PRIVATE onnxc_tools cmocka m)
add_test(NAME unit.graph_layout COMMAND test_graph_layout)
set_tests_properties(unit.graph_layout PROPERTIES LABELS unit)

add_test(NAME e2e.graph COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli/test_graph.sh $<TARGET_FILE:onnxc> ${ONNXC_PYTHON})
set_tests_properties(e2e.graph PROPERTIES LABELS e2e TIMEOUT 120)
