# Firmware: generated C linked into bare-metal Cortex-M4F firmware
# (examples/cortex-m), run under QEMU's mps2-an386 and compared with the host
# build and ONNX Runtime; `onnxc footprint` checked against arm-none-eabi-size.
# Needs gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm
# (scripts/setup.sh --test). See docs/firmware.md.
if(NOT DEFINED ONNXC_PYTHON)
  set(ONNXC_PYTHON python3 CACHE STRING "Python with the packages of requirements-test.txt")
endif()

add_test(NAME e2e.qemu
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/e2e/test_qemu.sh $<TARGET_FILE:onnxc> ${CMAKE_SOURCE_DIR}
          ${CMAKE_BINARY_DIR}/e2e-models ${ONNXC_PYTHON})
# e2e.models_vs_ort writes the models into e2e-models; the test makes its own
# copy when they are missing.
set_tests_properties(e2e.qemu PROPERTIES LABELS e2e TIMEOUT 300 DEPENDS e2e.models_vs_ort)
