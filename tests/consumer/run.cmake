# ctest driver for the find_package consumer test (tests/CMakeLists.txt passes the variables):
#   1. cmake --install <TESSERA_BUILD_DIR> --prefix <WORK_DIR>/prefix
#   2. configure tests/consumer with Ninja and -DCMAKE_PREFIX_PATH=<prefix>
#   3. build it and run the consumer executable
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
run_step("configure" "${CMAKE_COMMAND}" ${configure_args})
run_step("build" "${CMAKE_COMMAND}" --build "${build}")
run_step("run" "${build}/tessera_consumer")
message(STATUS "consumer test: find_package(tessera) + tessera::tessera works")
