# ctest driver for the install-tree consumer test (tests/CMakeLists.txt passes the variables):
#   1. cmake --install <TESSERA_BUILD_DIR> --prefix <WORK_DIR>/prefix
#   2. configure tests/consumer with Ninja and -DCMAKE_PREFIX_PATH=<prefix>; with INSPECT (the
#      build has tessera::inspect) it requires the inspect component and builds its consumer
#   3. build it and run the consumer executables
#      (NET_ENET likewise for tessera::net_enet)
#   4. with PKG_CONFIG: compile main.cpp (and inspect_main.cpp, net_enet_main.cpp) by hand with
#      the flags of the installed tessera.pc (tessera-inspect.pc, tessera-net-enet.pc) and run
#      them
foreach(var TESSERA_BUILD_DIR WORK_DIR CONSUMER_SOURCE_DIR CXX_COMPILER)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "run.cmake: ${var} is not set")
    endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(build "${WORK_DIR}/build")
file(REMOVE_RECURSE "${prefix}" "${build}")

function(run_step what)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "consumer test: ${what} failed (${rc}): ${ARGN}")
    endif()
endfunction()

run_step("install" "${CMAKE_COMMAND}" --install "${TESSERA_BUILD_DIR}" --prefix "${prefix}")
# The gdb pretty-printers, to `source` by hand (docs/debugging.md).
file(GLOB_RECURSE installed_printers "${prefix}/*/tessera/gdb/tessera_printers.py")
if(NOT installed_printers)
    message(FATAL_ERROR "consumer test: cmake --install put no tessera/gdb/tessera_printers.py under ${prefix}")
endif()
file(GLOB_RECURSE installed_config "${prefix}/*/tesseraConfig.cmake")
if(NOT installed_config)
    message(FATAL_ERROR "consumer test: cmake --install put no tesseraConfig.cmake under ${prefix}")
endif()

set(configure_args
    -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G Ninja
    "-DCMAKE_PREFIX_PATH=${prefix}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(BUILD_TYPE)
    list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
if(EXTRA_FLAGS)
    # Sanitizer builds: the installed static library needs the same runtime at link time.
    list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}"
                               "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
endif()
if(INSPECT)
    list(APPEND configure_args "-DTESSERA_CONSUMER_INSPECT=ON")
endif()
if(NET_ENET)
    list(APPEND configure_args "-DTESSERA_CONSUMER_NET_ENET=ON")
endif()
run_step("configure" "${CMAKE_COMMAND}" ${configure_args})
run_step("build" "${CMAKE_COMMAND}" --build "${build}")
run_step("run" "${build}/tessera_consumer")
run_step("run" "${build}/tessera_gpu_consumer")
set(programs tessera)
if(INSPECT)
    run_step("run" "${build}/tessera_inspect_consumer")
    list(APPEND programs tessera-inspect)
endif()
if(NET_ENET)
    run_step("run" "${build}/tessera_net_enet_consumer")
    list(APPEND programs tessera-net-enet)
endif()
message(STATUS "consumer test: find_package(tessera) + tessera::tessera works")
if(INSPECT)
    message(STATUS "consumer test: find_package(tessera COMPONENTS inspect) + tessera::inspect works")
endif()
if(NET_ENET)
    message(STATUS "consumer test: find_package(tessera COMPONENTS net_enet) + tessera::net_enet works")
endif()

# pkg-config: the installed .pc files alone are enough to compile and link.
if(NOT PKG_CONFIG)
    return()
endif()
file(GLOB_RECURSE pc_file "${prefix}/*/pkgconfig/tessera.pc")
if(NOT pc_file)
    message(FATAL_ERROR "consumer test: cmake --install put no pkgconfig/tessera.pc under ${prefix}")
endif()
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
foreach(package IN LISTS programs)
    execute_process(
        COMMAND "${CMAKE_COMMAND}" -E env "PKG_CONFIG_PATH=${pc_dir}"
                "${PKG_CONFIG}" --cflags --libs ${package}
        OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "consumer test: pkg-config --cflags --libs ${package} failed (${rc})")
    endif()
    separate_arguments(flags UNIX_COMMAND "${flags}")
    if(package STREQUAL "tessera")
        set(source "${CONSUMER_SOURCE_DIR}/main.cpp")
    elseif(package STREQUAL "tessera-net-enet")
        set(source "${CONSUMER_SOURCE_DIR}/net_enet_main.cpp")
    else()
        set(source "${CONSUMER_SOURCE_DIR}/inspect_main.cpp")
    endif()
    set(program "${build}/${package}_pkgconfig")
    run_step("pkg-config build of ${package}" "${CXX_COMPILER}" -std=c++20 ${extra} "${source}"
             -o "${program}" ${flags})
    run_step("run" "${program}")
    message(STATUS "consumer test: pkg-config ${package} works")
endforeach()
