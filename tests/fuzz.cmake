# The compiler under fuzzing (docs/fuzzing.md): tests/fuzz/fuzz_compile.c runs
# bytes through the frontend, the -O2 middle-end and the C emitter.
#   fuzz.replay  (label unit) replays tests/fuzz/regressions/ and every 8th
#                model of the ONNX backend test data through the same entry
#                point, linked with an ordinary main (tests/fuzz/replay.c): it
#                runs in every build, the ASan+UBSan one included.
#   fuzz.short   (label fuzz; ONNXC_FUZZ=ON only) 60 s of libFuzzer from the
#                seeds tests/fuzz/make_seeds.py collects (without the heavy
#                model-zoo networks of data/light, which fuzz.replay samples).
add_executable(fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/fuzz/replay.c
               ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_compile.c)
target_link_libraries(fuzz_replay PRIVATE onnxc_codegen onnxc_passes onnxc_frontend onnxc_ir)

execute_process(
  COMMAND "${ONNXC_PYTHON}" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data'))"
  OUTPUT_VARIABLE ONNXC_BACKEND_DATA OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _fuzz_rc ERROR_QUIET)
if(NOT _fuzz_rc EQUAL 0 OR NOT IS_DIRECTORY "${ONNXC_BACKEND_DATA}")
  message(FATAL_ERROR "tests: the onnx package is needed (ONNXC_PYTHON=${ONNXC_PYTHON} cannot import it)")
endif()
set(_fuzz_sample)
foreach(c node simple pytorch-converted pytorch-operator light)
  list(APPEND _fuzz_sample ${ONNXC_BACKEND_DATA}/${c})
endforeach()
# The regressions run with a wall-clock bound under the fuzzer's 10 s
# timeout and its 2 GiB memory limit.
add_test(NAME fuzz.replay
  COMMAND bash -c "$0 --max-seconds 8 --max-rss-mb 2048 ${CMAKE_CURRENT_LIST_DIR}/fuzz/regressions && $0 --every 8 $*"
          $<TARGET_FILE:fuzz_replay> ${_fuzz_sample})
set_tests_properties(fuzz.replay PROPERTIES LABELS unit TIMEOUT 900)

if(ONNXC_FUZZ)
  add_executable(fuzz_compile ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_compile.c)
  target_link_libraries(fuzz_compile PRIVATE onnxc_codegen onnxc_passes onnxc_frontend onnxc_ir)
  target_link_options(fuzz_compile PRIVATE -fsanitize=fuzzer)
  add_test(NAME fuzz.short
    COMMAND ${CMAKE_COMMAND} -E env ONNXC_FUZZ_SEED_OPTS=--no-light
            bash ${CMAKE_CURRENT_LIST_DIR}/fuzz/run_fuzz.sh $<TARGET_FILE:fuzz_compile>
            ${ONNXC_PYTHON} ${CMAKE_BINARY_DIR}/fuzz 60)
  set_tests_properties(fuzz.short PROPERTIES LABELS fuzz TIMEOUT 600)
endif()
