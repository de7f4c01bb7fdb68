# The channel-blocked layout (NCHW16c, passes/layout.c, docs/layout.md):
#   e2e.layout          composite models (convs of every window / stride /
#                       channel count, depthwise with its own padding, pools,
#                       Concat / Split, residuals, global pools) with
#                       --layout nchw16c on --cpu native, haswell and generic,
#                       in guard mode and on 2 threads, against ONNX Runtime
#   e2e.kernel_cases_blocked  the conv edge cases of bench/kernel_cases.py
#                       through the blocked kernels (native; generic in guard mode)
#   diff.random_blocked random CNNs with every conv region blocked, guard mode;
#                       the 2-thread configuration built --cpu haswell (the
#                       AVX2 kernels, on an AVX-512 machine too)
#   diff.random_blocked_gmajor  more of them with every blocked conv's items
#                       group-major (--conv-order group), an order the auto
#                       choice takes only for inputs over 1 MB
add_test(NAME e2e.layout
  COMMAND ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/e2e/test_layout.py --onnxc $<TARGET_FILE:onnxc>
          --out ${CMAKE_BINARY_DIR}/layout_cases)
add_test(NAME e2e.kernel_cases_blocked
  COMMAND ${ONNXC_PYTHON} ${CMAKE_SOURCE_DIR}/bench/kernel_cases.py --onnxc $<TARGET_FILE:onnxc>
          --layout nchw16c --cpu native,generic --guard-cpu generic --threads 2
          --only "^(conv|dw|dtr|par_conv|par_dw|par_res|par_small|res_|small_)"
          --out ${CMAKE_BINARY_DIR}/kernel_cases_blocked)
add_test(NAME diff.random_blocked
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 0:30 --profile cnn --configs O2:b16,O3:t2:b16:haswell -j 2 --timeout 300)
add_test(NAME diff.random_blocked_gmajor
  COMMAND ${CMAKE_COMMAND} -E env ONNXC_CHECK_GUARD=1
          ${ONNXC_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/diff/run_diff.py --onnxc $<TARGET_FILE:onnxc>
          --seeds 40:56 --profile cnn --configs O2:b16:gmaj,O3:t2:b16:gmaj -j 2 --timeout 300)
set_tests_properties(e2e.layout e2e.kernel_cases_blocked diff.random_blocked diff.random_blocked_gmajor PROPERTIES LABELS e2e TIMEOUT 1200)
