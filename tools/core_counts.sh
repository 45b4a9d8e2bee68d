#!/usr/bin/env bash
# Instructions per core operation (add+remove pair, iterated row, get, accessor try_get,
# spawn+despawn with two components and empty), from callgrind: exact and repeatable, so an A/B
# of two checkouts shows a change far below the benchmarks' noise (issue budgets such as "within
# 3% by instruction counts" are checked with it). Usage:
#   tools/core_counts.sh [BUILD_DIR]   (default build/release; it must hold libtessera.a)
# Run it in each checkout against that checkout's own build (the headers must match the library)
# and compare the lines. Needs valgrind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build/release}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -std=c++20 -O3 -DNDEBUG -g -I "$root/include" -I "$build/generated" \
    "$root/tools/core_counts/ops.cpp" "$build/libtessera.a" -ltbb -o "$tmp/ops"
"$tmp/ops" > "$tmp/divisors"
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$tmp/ops" > /dev/null 2>&1
callgrind_annotate --inclusive=yes "$tmp/cg.out" > "$tmp/annotated"
while read -r op count; do
    [[ $op == sum ]] && continue
    total=$(grep -E "ops.cpp:.*phase_${op}\(" "$tmp/annotated" | head -1 | awk '{gsub(",", "", $1); print $1}')
    awk -v op="$op" -v t="$total" -v n="$count" 'BEGIN {printf "%-20s %8.1f instructions\n", op, t / n}'
done < "$tmp/divisors"
