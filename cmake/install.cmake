# install.cmake - `cmake --install build --prefix P` installs P/bin/onnxc and
# the CMake package P/<libdir>/cmake/onnxc (find_package(onnxc) and
# onnxc_add_model(); docs/cmake.md). The package locates onnxc relative to
# its own folder, so the installed tree is relocatable.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ONNXC_INSTALL_BINDIR ${CMAKE_INSTALL_BINDIR})
set(ONNXC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxc)

install(TARGETS onnxc RUNTIME DESTINATION ${ONNXC_INSTALL_BINDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/onnxcConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/onnxcConfig.cmake
  INSTALL_DESTINATION ${ONNXC_INSTALL_CMAKEDIR}
  PATH_VARS ONNXC_INSTALL_BINDIR)
# The generated C is the interface: a newer onnxc of the same major version
# writes the same ABI (docs/abi.md); before 1.0 only the same minor does.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ONNXC_VERSION_COMPAT SameMinorVersion)
else()
  set(ONNXC_VERSION_COMPAT SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/onnxcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${ONNXC_VERSION_COMPAT} ARCH_INDEPENDENT)

install(FILES ${CMAKE_BINARY_DIR}/cmake/onnxcConfig.cmake ${CMAKE_BINARY_DIR}/cmake/onnxcConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/onnxcAddModel.cmake
        DESTINATION ${ONNXC_INSTALL_CMAKEDIR})
