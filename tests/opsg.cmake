# Unit tests of the opsg family: domain-aware op lookup, losses, optimizers
# (passes/infer_loss.c) and CumProd/Det/BitCast/CenterCropPad/Col2Im/
# TensorScatter (passes/infer_misc2.c).
add_executable(test_infer_loss ${CMAKE_CURRENT_LIST_DIR}/test_infer_loss.c)
target_link_libraries(test_infer_loss PRIVATE onnxc_passes onnxc_ir cmocka)
add_test(NAME unit.infer_loss COMMAND test_infer_loss)
set_tests_properties(unit.infer_loss PROPERTIES LABELS unit)
