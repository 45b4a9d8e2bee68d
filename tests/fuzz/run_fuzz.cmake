# Runs the loader fuzz target for 60 s on a copy of the corpus (ctest test fuzz_load_60s).
#   cmake -DFUZZER=<tessera_load_fuzz> -DCORPUS=<tests/fuzz/corpus> -DWORK_DIR=<scratch> -P run_fuzz.cmake
# New inputs go to WORK_DIR/corpus, findings (crash-*, timeout-*, leak-*, oom-*) to
# WORK_DIR/artifacts: copy findings into tests/fuzz/corpus/ to keep them as regression cases.
foreach(var FUZZER CORPUS WORK_DIR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "run_fuzz.cmake: ${var} is not set")
    endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/artifacts")
file(GLOB _inputs "${CORPUS}/*")
file(COPY ${_inputs} DESTINATION "${WORK_DIR}/corpus")

execute_process(
    COMMAND "${FUZZER}" -max_total_time=60 -rss_limit_mb=2048 -timeout=10
        "-artifact_prefix=${WORK_DIR}/artifacts/" "${WORK_DIR}/corpus"
    RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "tessera_load_fuzz found a problem (exit ${_rc}); the input is in "
                        "${WORK_DIR}/artifacts/: copy it into ${CORPUS}/ as a regression case")
endif()
