# onnxcAddModel.cmake - onnxc_add_model(): an ONNX model as a CMake library.
#
#   onnxc_add_model(<target> MODEL <file.onnx> [NAME <name>] [THREADS <n>]
#                   [TARGET c|cuda] [STATIC|SHARED|OBJECT] [OPTIONS <onnxc args>...])
#   onnxc_add_model(TARGET <target> MODEL <file.onnx> ...)      (the same)
#
# A custom command runs `onnxc -S` at build time, whenever the model, onnxc or
# the arguments change, and the sources it writes are compiled as an ordinary
# library with the project's compiler, flags and build type (so toolchain
# files and cross-compilers apply). The library's include directory holds
# <name>.h. See docs/cmake.md.
#
# Uses the imported executable onnxc::onnxc (onnxcConfig.cmake defines it).
include_guard(GLOBAL)

# The C target's `onnxc -S` files (docs/abi.md), the CUDA target's
# (docs/cuda.md). Sources come first, headers after.
function(_onnxc_outputs name target dir out_sources out_headers)
  set(src ${dir}/${name}.c ${dir}/${name}_weights.c)
  set(hdr ${dir}/${name}.h ${dir}/${name}_weights.h ${dir}/onnxc_rt.h)
  if(target STREQUAL "cuda")
    list(APPEND src ${dir}/${name}_cuda_image.c)
    list(APPEND hdr ${dir}/${name}.cu ${dir}/onnxc_cuda_rt.h)
  endif()
  set(${out_sources} ${src} PARENT_SCOPE)
  set(${out_headers} ${hdr} PARENT_SCOPE)
endfunction()

# Writes `text` to `file` only when it differs, so the file's time changes
# exactly when the generation arguments do (Makefiles do not re-run a custom
# command whose command line alone changed; the file makes them).
function(_onnxc_write_if_changed file text)
  if(EXISTS "${file}")
    file(READ "${file}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${text}")
endfunction()

function(onnxc_add_model)
  set(keywords MODEL NAME THREADS TARGET OPTIONS STATIC SHARED OBJECT)
  set(args ${ARGN})
  list(LENGTH args n)
  if(n GREATER 1)
    list(GET args 0 first)
    if(first STREQUAL "TARGET")
      list(REMOVE_AT args 0)
    endif()
  endif()
  list(LENGTH args n)
  if(n EQUAL 0)
    message(FATAL_ERROR "onnxc_add_model: no target name; usage: onnxc_add_model(<target> MODEL <file.onnx> "
                        "[NAME <name>] [THREADS <n>] [TARGET c|cuda] [STATIC|SHARED|OBJECT] [OPTIONS ...])")
  endif()
  list(GET args 0 tgt)
  list(REMOVE_AT args 0)
  if(tgt IN_LIST keywords)
    message(FATAL_ERROR "onnxc_add_model: the first argument is the name of the library target to create, "
                        "got the keyword '${tgt}'")
  endif()

  cmake_parse_arguments(ARG "STATIC;SHARED;OBJECT" "MODEL;NAME;THREADS;TARGET" "OPTIONS" ${args})
  if(ARG_UNPARSED_ARGUMENTS)
    string(REPLACE ";" " " unknown "${ARG_UNPARSED_ARGUMENTS}")
    message(FATAL_ERROR "onnxc_add_model(${tgt}): unknown arguments: ${unknown} "
                        "(keywords: MODEL NAME THREADS TARGET STATIC SHARED OBJECT OPTIONS; "
                        "onnxc's own options go after OPTIONS)")
  endif()
  foreach(kw IN LISTS ARG_KEYWORDS_MISSING_VALUES)
    if(NOT kw STREQUAL "OPTIONS")
      message(FATAL_ERROR "onnxc_add_model(${tgt}): ${kw} needs a value")
    endif()
  endforeach()
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "onnxc_add_model(${tgt}): MODEL <file.onnx> is required")
  endif()

  # The C prefix, and so the header's name: NAME, else the target's name.
  set(name "${ARG_NAME}")
  if(NOT name)
    set(name "${tgt}")
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "onnxc_add_model(${tgt}): '${name}' is not a C identifier; give one with NAME <name>")
  endif()

  set(target c)
  if(DEFINED ARG_TARGET)
    set(target "${ARG_TARGET}")
  endif()
  if(NOT target STREQUAL "c" AND NOT target STREQUAL "cuda")
    message(FATAL_ERROR "onnxc_add_model(${tgt}): TARGET must be c or cuda, got '${target}' "
                        "(the library's name comes first: onnxc_add_model(<target> MODEL ...))")
  endif()

  set(threads 1)
  if(DEFINED ARG_THREADS)
    if(NOT ARG_THREADS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "onnxc_add_model(${tgt}): THREADS must be a positive integer, got '${ARG_THREADS}'")
    endif()
    set(threads ${ARG_THREADS})
  endif()

  set(type "")
  foreach(t STATIC SHARED OBJECT)
    if(ARG_${t})
      if(type)
        message(FATAL_ERROR "onnxc_add_model(${tgt}): give at most one of STATIC, SHARED, OBJECT")
      endif()
      set(type ${t})
    endif()
  endforeach()

  # What the keywords set must not come twice through OPTIONS.
  foreach(opt IN LISTS ARG_OPTIONS)
    if(opt MATCHES "^(-S|-o|--name|--threads|--target)(=.*)?$")
      message(FATAL_ERROR "onnxc_add_model(${tgt}): OPTIONS may not hold '${opt}': "
                          "the function sets it (NAME, THREADS, TARGET keywords)")
    endif()
  endforeach()

  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST languages)
    message(FATAL_ERROR "onnxc_add_model(${tgt}): the generated code is C; enable the language with "
                        "project(... LANGUAGES C ...) or enable_language(C)")
  endif()

  get_filename_component(model "${ARG_MODEL}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_source_file_property(model_generated "${model}" GENERATED)
  if(NOT EXISTS "${model}" AND NOT model_generated)
    message(FATAL_ERROR "onnxc_add_model(${tgt}): MODEL '${ARG_MODEL}' not found (looked for ${model})")
  endif()

  if(NOT TARGET onnxc::onnxc)
    message(FATAL_ERROR "onnxc_add_model(${tgt}): no onnxc::onnxc executable; call find_package(onnxc) first")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/onnxc/${tgt}")
  file(MAKE_DIRECTORY "${dir}")
  _onnxc_outputs(${name} ${target} "${dir}" sources headers)

  set(cmd "$<TARGET_FILE:onnxc::onnxc>" -S --name ${name} --target ${target})
  if(threads GREATER 1)
    list(APPEND cmd --threads ${threads})
  endif()
  list(APPEND cmd ${ARG_OPTIONS} "${model}" -o "${dir}")
  set(env "")
  if(target STREQUAL "cuda")
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      message(FATAL_ERROR "onnxc_add_model(${tgt}): TARGET cuda needs the CUDA toolkit (cuda.h and libcuda, "
                          "through find_package(CUDAToolkit)); none was found: set CUDAToolkit_ROOT, or use TARGET c")
    endif()
    # onnxc compiles the kernels with the NVRTC of the toolkit that the host
    # code is compiled against.
    get_filename_component(cuda_home "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    set(env ${CMAKE_COMMAND} -E env "ONNXC_CUDA_HOME=${cuda_home}")
  endif()
  set(args_file "${dir}/onnxc_args.txt")
  string(REPLACE ";" " " cmd_text "${cmd}")
  _onnxc_write_if_changed("${args_file}" "${cmd_text}\n")

  add_custom_command(OUTPUT ${sources} ${headers}
    COMMAND ${env} ${cmd}
    DEPENDS "${model}" "$<TARGET_FILE:onnxc::onnxc>" "${args_file}"
    COMMENT "onnxc: generating ${name} (${target}) from ${model}"
    VERBATIM)

  add_library(${tgt} ${type} ${sources} ${headers})
  target_include_directories(${tgt} PUBLIC "$<BUILD_INTERFACE:${dir}>")
  # The generated code is C99; a project's newer standard is kept.
  target_compile_features(${tgt} PRIVATE c_std_99)
  # A shared library exports only NAME_run and the other ONNXC_API functions.
  set_target_properties(${tgt} PROPERTIES C_VISIBILITY_PRESET hidden)
  if(NOT MSVC)
    target_link_libraries(${tgt} PUBLIC m)
  endif()
  if(threads GREATER 1)
    # NAME.c holds a pthreads pool on hosted unix-like targets; elsewhere
    # (firmware: CMAKE_SYSTEM_NAME Generic) the same source compiles stubs.
    if(CMAKE_SYSTEM_NAME STREQUAL "Generic")
      target_compile_definitions(${tgt} PRIVATE ONNXC_NO_THREADS)
    else()
      set(THREADS_PREFER_PTHREAD_FLAG ON)
      find_package(Threads REQUIRED)
      target_link_libraries(${tgt} PUBLIC Threads::Threads)
    endif()
  endif()
  if(target STREQUAL "cuda")
    target_link_libraries(${tgt} PUBLIC CUDA::cuda_driver)
  endif()
  set_target_properties(${tgt} PROPERTIES ONNXC_MODEL "${model}" ONNXC_NAME "${name}" ONNXC_SOURCE_DIR "${dir}")
endfunction()
