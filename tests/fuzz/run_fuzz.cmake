# Runs a loader fuzz target for SECONDS (default 60) on a copy of its corpus (ctest tests
# fuzz_load_60s and fuzz_json_60s):
#   cmake -DFUZZER=<target> -DNAME=<load|json> -DCORPUS=<tests/fuzz/corpus...> [-DDICT=<file>]
#         [-DSECONDS=60] -DWORK_DIR=<scratch> -P run_fuzz.cmake
# New inputs go to WORK_DIR/corpus and stay there. A finding (crash-*, timeout-*, leak-*,
# oom-*, slow-unit-*) is copied into CORPUS, where the default test run replays it from then
# on (commit it), and the test fails. Prints one summary line: "fuzz <name>: <runs> runs in
# <s> s (<runs/s>/s), corpus <n> inputs, <findings> findings".
foreach(var FUZZER NAME CORPUS WORK_DIR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "run_fuzz.cmake: ${var} is not set")
    endif()
endforeach()
if(NOT DEFINED SECONDS OR SECONDS STREQUAL "")
    set(SECONDS 60)
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/corpus" "${WORK_DIR}/artifacts")
file(GLOB _inputs "${CORPUS}/*")
file(COPY ${_inputs} DESTINATION "${WORK_DIR}/corpus")

set(_args -max_total_time=${SECONDS} -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
    "-artifact_prefix=${WORK_DIR}/artifacts/")
if(DEFINED DICT AND NOT DICT STREQUAL "")
    list(APPEND _args "-dict=${DICT}")
endif()
string(TIMESTAMP _start "%s")
execute_process(
    COMMAND "${FUZZER}" ${_args} "${WORK_DIR}/corpus"
    RESULT_VARIABLE _rc
    OUTPUT_FILE "${WORK_DIR}/fuzz.log"
    ERROR_FILE "${WORK_DIR}/fuzz.log")
string(TIMESTAMP _end "%s")
math(EXPR _elapsed "${_end} - ${_start}")

file(READ "${WORK_DIR}/fuzz.log" _log)
set(_runs "?")
if(_log MATCHES "stat::number_of_executed_units: ([0-9]+)")
    set(_runs "${CMAKE_MATCH_1}")
endif()
set(_rate "?")
if(_runs MATCHES "^[0-9]+$" AND _elapsed GREATER 0)
    math(EXPR _rate "${_runs} / ${_elapsed}")
endif()
file(GLOB _grown "${WORK_DIR}/corpus/*")
list(LENGTH _grown _corpus_size)
file(GLOB _findings "${WORK_DIR}/artifacts/*")
list(LENGTH _findings _finding_count)
message(STATUS "fuzz ${NAME}: ${_runs} runs in ${_elapsed} s (${_rate}/s), corpus ${_corpus_size} "
               "inputs, ${_finding_count} findings")

if(_finding_count GREATER 0 OR NOT _rc EQUAL 0)
    foreach(f ${_findings})
        get_filename_component(_base "${f}" NAME)
        file(COPY "${f}" DESTINATION "${CORPUS}")
        message(STATUS "fuzz ${NAME}: kept ${CORPUS}/${_base} as a regression input")
    endforeach()
    string(LENGTH "${_log}" _len)
    if(_len GREATER 6000)
        math(EXPR _from "${_len} - 6000")
        string(SUBSTRING "${_log}" ${_from} -1 _log)
    endif()
    message("${_log}")
    message(FATAL_ERROR "tessera_${NAME}_fuzz found a problem (exit ${_rc}); the input is kept in "
                        "${CORPUS}/ (the default test run replays it): fix it and commit the input")
endif()
