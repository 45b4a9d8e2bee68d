# tessera_write_if_changed(<path> <content>): writes <content> to <path> only when it differs,
# so a file generated at configure time keeps its time stamp, and what includes or compiles it
# is not rebuilt, when a configure run makes the same text (DocSamples.cmake, GdbScripts.cmake).
include_guard(GLOBAL)

function(tessera_write_if_changed path content)
    if(EXISTS "${path}")
        file(READ "${path}" _old)
        if(_old STREQUAL content)
            return()
        endif()
    endif()
    file(WRITE "${path}" "${content}")
endfunction()
