#!/usr/bin/env bash
# Compile time of a tessera translation unit (docs/performance.md, "Compile time"): the median
# of RUNS (5) wall-clock times from /usr/bin/time of each command, on the sources of this
# checkout. Usage: tools/compile_time.sh [CXX] (default g++). Prints one line per measurement.
# The machine is shared: run it when nothing else builds, and compare lines from one run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cxx=${1:-g++}
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '#include <tessera/tessera.hpp>' > "$tmp/include_only.cpp"

median() {  # the median of the seconds of `runs` runs of "$@"
    local times=()
    for ((i = 0; i < runs; ++i)); do
        /usr/bin/time -f %e -o "$tmp/time" "$@" > /dev/null 2>&1
        times+=("$(tail -1 "$tmp/time")")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

inc=(-std=c++20 -I "$root/include")
echo "one_system.cpp, $cxx -O2 -c: $(median "$cxx" "${inc[@]}" -O2 -c \
    "$root/tools/compile_time/one_system.cpp" -o "$tmp/o.o") s"
echo "#include <tessera/tessera.hpp>, $cxx -O2 -c: $(median "$cxx" "${inc[@]}" -O2 -c \
    "$tmp/include_only.cpp" -o "$tmp/i.o") s"
echo "#include <tessera/tessera.hpp>, $cxx -O0 -fsyntax-only: $(median "$cxx" "${inc[@]}" -O0 \
    -fsyntax-only "$tmp/include_only.cpp") s"
python3 "$root/tools/check_header_budget.py" "$cxx" "$root/include" 1000000000 | tail -1
