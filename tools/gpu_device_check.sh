#!/usr/bin/env bash
# The GPU kernel systems' device check (docs/gpu.md, "Reproducing the break-even table").
#
#   tools/gpu_device_check.sh prepare [BUILD_DIR]   here, on a machine with nvcc (no GPU needed):
#       configures a Release build with tests, benchmarks and the CUDA backend for the H200
#       (CMAKE_CUDA_ARCHITECTURES=90), builds test_gpu_cuda and tessera_bench, and copies the
#       shared libraries they need that a bare CUDA machine lacks (oneTBB, Google Benchmark)
#       into BUILD_DIR/lib.                                          (default BUILD_DIR build/h200)
#   tools/gpu_device_check.sh run [BUILD_DIR] [OUT_DIR]   on the machine with the GPU (carry
#       BUILD_DIR there): the parity tests (CUDA against the CPU backend, every row of every
#       matching table, simple, gravity and pairwise kernels, enableable and mixed archetypes)
#       and the gpu_* benchmarks at 10K..16M entities (5 repetitions, medians), then writes
#       OUT_DIR/gpu_break_even.md: per kernel and readback mode, the smallest measured entity
#       count at which CUDA beats the CPU backend on all cores.          (default OUT_DIR $OUT or .)
#       Only these need to travel (under 8 MiB): BUILD_DIR/tests/test_gpu_cuda,
#       BUILD_DIR/bench/tessera_bench, BUILD_DIR/lib (and this script). About 5 to 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
build=${2:-build/h200}

case "$mode" in
prepare)
    export PATH=/usr/local/cuda/bin:$PATH
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG" \
        -DTESSERA_BUILD_TESTS=ON -DTESSERA_BUILD_BENCH=ON -DTESSERA_BUILD_EXAMPLES=OFF \
        -DTESSERA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
    cmake --build "$build" -j "${JOBS:-2}" --target test_gpu_cuda tessera_bench
    mkdir -p "$build/lib"
    for bin in "$build/tests/test_gpu_cuda" "$build/bench/tessera_bench"; do
        # Everything outside the CUDA toolkit and the C runtime: the device machine has CUDA
        # but none of Debian's -dev packages.
        ldd "$bin" | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt|ld-linux)[.-]|/usr/local/cuda' |
            while read -r lib; do cp -L "$lib" "$build/lib/"; done
    done
    echo "prepared $build (carry it, then: tools/gpu_device_check.sh run $build)"
    ;;
run)
    out=${3:-${OUT:-.}}
    mkdir -p "$out"
    export LD_LIBRARY_PATH="$PWD/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu_device.txt" 2>&1 || true
    nproc >> "$out/gpu_device.txt"
    status=0
    "$build/tests/test_gpu_cuda" --gtest_brief=0 > "$out/gpu_parity.txt" 2>&1 || status=$?
    tail -n 3 "$out/gpu_parity.txt"
    TESSERA_GPU_BENCH_LARGE=1 "$build/bench/tessera_bench" --benchmark_filter='^gpu_' \
        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_min_time=0.2 --benchmark_out="$out/gpu_bench.json" \
        --benchmark_out_format=json > "$out/gpu_bench.txt" 2>&1 || status=$?
    python3 - "$out/gpu_bench.json" "$out/gpu_break_even.md" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
med = {}
for r in runs:
    if r.get("aggregate_name") != "median" or r.get("error_occurred"):
        continue
    name, n = r["run_name"].rsplit("/", 1)
    med[(name, int(n))] = r["real_time"]  # microseconds per frame
sizes = sorted({n for (_, n) in med})
lines = ["| kernel | readback | break-even (entities) | " + " | ".join(f"{n:,}" for n in sizes) + " |",
         "|---" * (3 + len(sizes)) + "|"]
for kernel in ("simple", "gravity"):
    for mode in ("none", "async", "sync"):
        cpu = {n: med.get((f"gpu_{kernel}/cpu_backend", n)) for n in sizes}
        gpu = {n: med.get((f"gpu_{kernel}/cuda_{mode}", n)) for n in sizes}
        even = next((n for n in sizes if cpu[n] and gpu[n] and gpu[n] < cpu[n]), None)
        cells = [f"{cpu[n] / gpu[n]:.2f}x" if cpu[n] and gpu[n] else "-" for n in sizes]
        if not any(gpu.values()):
            verdict = "not measured (no CUDA result)"
        else:
            verdict = f"{even:,}" if even else f"never, up to {sizes[-1]:,}"
        lines.append(f"| {kernel} | {mode} | {verdict} | " + " | ".join(cells) + " |")
lines.append("")
lines.append("Cells: CPU backend time / CUDA time per frame (medians of 5; > 1 means CUDA is faster).")
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
    exit $status
    ;;
*)
    sed -n 2,16p "$0"
    exit 2
    ;;
esac
