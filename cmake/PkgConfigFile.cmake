# tessera_install_pkgconfig(<name> DESCRIPTION <text> LIBS <flags>
#                           [REQUIRES <pkgs>] [REQUIRES_PRIVATE <pkgs>] [LIBS_PRIVATE <flags>])
#
# Writes <build>/pkgconfig/<name>.pc and installs it to TESSERA_INSTALL_PKGCONFIGDIR. The file
# finds its prefix relative to itself (${pcfiledir}), so it stays right wherever the tree is
# installed (`cmake --install --prefix <dir>` included), unless the install directories are
# absolute paths, which are then written as they are. Consumers compile with -std=c++20 (the
# headers need it; a .pc file can't say which language standard to use).
function(tessera_install_pkgconfig name)
    cmake_parse_arguments(PARSE_ARGV 1 arg ""
        "DESCRIPTION;LIBS;LIBS_PRIVATE;REQUIRES;REQUIRES_PRIVATE" "")
    if(IS_ABSOLUTE "${TESSERA_INSTALL_PKGCONFIGDIR}")
        set(prefix "${CMAKE_INSTALL_PREFIX}")
    else()
        # From <prefix>/<pkgconfigdir> back up to <prefix>.
        file(RELATIVE_PATH up "/prefix/${TESSERA_INSTALL_PKGCONFIGDIR}" "/prefix")
        string(REGEX REPLACE "/$" "" up "${up}")
        set(prefix "\${pcfiledir}/${up}")
    endif()
    foreach(dir LIBDIR INCLUDEDIR)
        if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
            set(${dir} "${CMAKE_INSTALL_${dir}}")
        else()
            set(${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
        endif()
    endforeach()
    set(text "prefix=${prefix}\nlibdir=${LIBDIR}\nincludedir=${INCLUDEDIR}\n\n")
    string(APPEND text "Name: ${name}\nDescription: ${arg_DESCRIPTION}\n")
    string(APPEND text "Version: ${PROJECT_VERSION}\n")
    if(arg_REQUIRES)
        string(APPEND text "Requires: ${arg_REQUIRES}\n")
    endif()
    if(arg_REQUIRES_PRIVATE)
        string(APPEND text "Requires.private: ${arg_REQUIRES_PRIVATE}\n")
    endif()
    string(APPEND text "Libs: -L\${libdir} ${arg_LIBS}\n")
    if(arg_LIBS_PRIVATE)
        string(APPEND text "Libs.private: ${arg_LIBS_PRIVATE}\n")
    endif()
    string(APPEND text "Cflags: -I\${includedir}\n")
    set(file "${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc")
    file(WRITE "${file}" "${text}")
    install(FILES "${file}" DESTINATION "${TESSERA_INSTALL_PKGCONFIGDIR}")
endfunction()
