# tessera: short commands over the CMake presets (see README.md).
#
#   make deps      check the Debian packages; install missing ones (root) or print the apt-get line
#   make test      dev preset: configure, build, run every test
#   make sanitize  asan preset (ASan + UBSan)      make tsan   tsan preset (ThreadSanitizer)
#   make clang     clang preset (clang++ -Werror)  make demo   release build, run the arena demo
#   make bench     release benchmarks -> build/release/bench/results.json + docs/benchmarks.md
#   make format    clang-format -i on every .hpp/.cpp
#
# Variables: JOBS (ctest parallelism, default 2), BENCH_FILTER (a --benchmark_filter regex),
# BENCH_ARGS (more Google Benchmark flags), CTEST_ARGS (more ctest flags, e.g. -R World).

SHELL := /bin/bash

JOBS ?= 2
BENCH_FILTER ?=
BENCH_ARGS ?=
CTEST_ARGS ?=

DEB_PACKAGES := cmake ninja-build g++ clang libgtest-dev libgmock-dev libbenchmark-dev \
                libtbb-dev libglm-dev nlohmann-json3-dev python3 clang-format

DEMO := build/release/examples/arena/arena
DEMO_ARGS ?=
BENCH_BIN := build/release/bench/tessera_bench
BENCH_JSON := build/release/bench/results.json
BENCH_WARM_JSON := build/release/bench/results-warm.json
FORMAT_DIRS := include src tests bench examples tools

.DEFAULT_GOAL := help
.PHONY: help deps test sanitize tsan clang demo bench format

help:
	@echo "tessera make targets:"
	@echo "  make demo       build (release preset) and run the arena demo (DEMO_ARGS=--render draws it)"
	@echo "  make test       configure, build and run all tests (dev preset: -O2 -g, assertions on)"
	@echo "  make sanitize   the tests under AddressSanitizer + UBSan (asan preset)"
	@echo "  make tsan       the tests under ThreadSanitizer (tsan preset)"
	@echo "  make clang      the tests built with clang++ (clang preset)"
	@echo "  make bench      run the benchmarks, write $(BENCH_JSON) and docs/benchmarks.md"
	@echo "                  (BENCH_FILTER=<regex> selects benchmarks, BENCH_ARGS=... adds flags)"
	@echo "  make format     clang-format -i on all C++ sources"
	@echo "  make deps       install missing Debian packages (as root) or print the apt-get line"
	@echo "Variables: JOBS=$(JOBS) (parallel tests), CTEST_ARGS=... (extra ctest flags)"

# A no-op when everything is installed (one dpkg query per package).
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	    dpkg -s "$$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "deps: missing Debian packages:$$missing"; \
	if [ "$$(id -u)" -eq 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	else \
	    echo "deps: not root, so not installing them. Run:"; \
	    echo "    sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y$$missing"; \
	    exit 1; \
	fi

# configure + build + ctest for one preset: $(call preset_test,<preset>)
define preset_test
	cmake --preset $(1)
	cmake --build --preset $(1)
	ctest --preset $(1) -j $(JOBS) $(CTEST_ARGS)
endef

test: deps
	$(call preset_test,dev)

sanitize: deps
	$(call preset_test,asan)

tsan: deps
	$(call preset_test,tsan)

clang: deps
	$(call preset_test,clang)

demo: deps
	cmake --preset release
	cmake --build --preset release --target arena
	./$(DEMO) $(DEMO_ARGS)

bench: deps
	cmake --preset release
	cmake --build --preset release --target tessera_bench
	setarch -R ./$(BENCH_BIN) --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
	    --benchmark_out=$(BENCH_JSON) --benchmark_out_format=json \
	    $(if $(BENCH_FILTER),'--benchmark_filter=$(BENCH_FILTER)') $(BENCH_ARGS)
	setarch -R ./$(BENCH_BIN) --tessera-heap=warm --benchmark_repetitions=5 \
	    --benchmark_report_aggregates_only=true --benchmark_out=$(BENCH_WARM_JSON) \
	    --benchmark_out_format=json '--benchmark_filter=^(create|create_batch|destroy|clone|snapshot_binary)/' $(BENCH_ARGS)
	python3 tools/bench_report.py $(BENCH_JSON) docs/benchmarks.md --warm $(BENCH_WARM_JSON)

format: deps
	find $(wildcard $(FORMAT_DIRS)) -type f \( -name '*.hpp' -o -name '*.cpp' \) -print0 \
	    | xargs -0 -r clang-format -i
