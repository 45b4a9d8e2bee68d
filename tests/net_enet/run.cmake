# ctest driver of net_enet_two_processes: `PEER server | PEER client`, both at once (one
# execute_process pipeline), at most 30 s; each must exit 0.
if(NOT DEFINED PEER)
    message(FATAL_ERROR "run.cmake: pass -DPEER=<net_enet_peer>")
endif()
execute_process(
    COMMAND "${PEER}" server
    COMMAND "${PEER}" client
    TIMEOUT 30
    RESULTS_VARIABLE results
    ERROR_VARIABLE err
    OUTPUT_VARIABLE out)
message(STATUS "${err}${out}")
if(NOT results STREQUAL "0;0")
    message(FATAL_ERROR "net_enet_two_processes: exit codes server;client = ${results}")
endif()
message(STATUS "net_enet_two_processes: server and client agree")
