# tessera: short commands over the CMake presets (see README.md).
#
#   make deps      check the Debian packages; install missing ones (root) or print the apt-get line
#   make test      dev preset: configure, build, run every test
#   make sanitize  asan preset (ASan + UBSan)      make tsan   tsan preset (ThreadSanitizer)
#   make clang     clang preset (clang++ -Werror)  make demo   release build, run the arena demo
#   make netdemo   release build, run the arena over ENet: a server and two client processes
#   make fuzz      fuzz preset (clang): libFuzzer on the binary and JSON loaders and the replication
#                  mirror, FUZZ_SECONDS each
#   make bench     release benchmarks -> build/release/bench/results*.json, docs/benchmarks.md
#                  and docs/bench/*.svg (make bench-run: the same without configure + build)
#   make format    clang-format -i on every .hpp/.cpp
#   make format-check  the same as a check (--dry-run -Werror)   make lint  clang-tidy, clean
#   make docs      API reference (doxygen, docs/Doxyfile) -> build/docs/html/index.html
#
# Variables: JOBS (ctest parallelism, default 2), BENCH_FILTER (a --benchmark_filter regex),
# BENCH_ARGS (more Google Benchmark flags), CTEST_ARGS (more ctest flags, e.g. -R World),
# FUZZ_SECONDS (how long make fuzz runs each target, default 60).

SHELL := /bin/bash

JOBS ?= 2
BENCH_FILTER ?=
BENCH_ARGS ?=
CTEST_ARGS ?=
FUZZ_SECONDS ?= 60

DEB_PACKAGES := cmake ninja-build g++ clang libgtest-dev libgmock-dev libbenchmark-dev \
                libtbb-dev libglm-dev nlohmann-json3-dev python3 clang-format \
                libcpp-httplib-dev libenet-dev doxygen pkgconf ccache gdb
# libenet-dev: the transport of tessera::net_enet and the netarena demo. ENet gives reliable and
# unreliable sequenced channels and fragmentation over UDP, so tessera writes no protocol of
# its own over raw sockets (docs/networking-enet.md).
# The inspector's browser test (tests/browser/inspector_test.py): Chromium, its WebDriver and
# Debian's Python bindings for it (make browser-deps, run by the test targets).
BROWSER_DEB_PACKAGES := chromium chromium-driver python3-selenium
# What `make docs` alone needs (doxygen is in DEB_PACKAGES too: `make test` runs the doxygen_api
# test, which checks every public declaration is documented).
DOCS_DEB_PACKAGES := doxygen

DEMO := build/release/examples/arena/arena
DEMO_ARGS ?=
# The networked arena: one server and two client processes on 127.0.0.1 (NETDEMO_ARGS=--chaos
# adds 20% loss, duplicates and reordering); exits non-zero unless the hashes agree.
NETDEMO := build/release/examples/netarena/netarena
NETDEMO_ARGS ?=
# Benchmarks: the release preset's build (BENCH_DIR, for bench-run on another build of it).
BENCH_DIR ?= build/release
BENCH_BIN := $(BENCH_DIR)/bench/tessera_bench
BENCH_JSON := $(BENCH_DIR)/bench/results.json
BENCH_WARM_JSON := $(BENCH_DIR)/bench/results-warm.json
# The size sweep of the plots: every scenario that scales rerun at N = BENCH_SWEEP entities
# (results-n<N>.json; the standard run is N = 1,000,000), and at 1,000,000 the scenarios whose
# standard size is smaller, and at 10,000,000 the four whose per-entity cost should hold at any
# size (create, get_random, add_remove, iter_simple). Fewer repetitions and a shorter minimum
# time than the standard run.
BENCH_SWEEP ?= 1000 10000 100000
BENCH_SWEEP_ARGS ?= --benchmark_repetitions=3 --benchmark_min_time=0.2
BENCH_SWEEP_FILTER := ^(create|create_batch|destroy|add_remove|add_one|remove_add|get_seq|get_random|iter_simple|schedule|game_frame|propagate|clone|snapshot_binary|memory)/
BENCH_SWEEP_1M_FILTER := ^(add_remove|schedule|propagate)/
BENCH_SWEEP_10M_FILTER := ^(create|get_random|add_remove|iter_simple)/
# Debian's Python: the plots need its python3-matplotlib (a python3 earlier on PATH may lack it).
PYTHON ?= /usr/bin/python3
BENCH_DEB_PACKAGES := python3-matplotlib
FORMAT_DIRS := include src tests bench examples tools

.DEFAULT_GOAL := help
.PHONY: help deps test sanitize tsan clang fuzz demo netdemo bench bench-run bench-deps format docs docs-deps

help:
	@echo "tessera make targets:"
	@echo "  make demo       build (release preset) and run the arena demo (DEMO_ARGS=--render draws it)"
	@echo "  make netdemo    build (release preset) and run the arena over ENet: a server, two client"
	@echo "                  processes; exits 0 when their hashes agree (NETDEMO_ARGS=--chaos)"
	@echo "  make test       configure, build and run all tests (dev preset: -O2 -g, assertions on)"
	@echo "  make sanitize   the tests under AddressSanitizer + UBSan (asan preset)"
	@echo "  make tsan       the tests under ThreadSanitizer (tsan preset, build/tsan; the"
	@echo "                  parallel paths run on plain threads there, see docs/threading.md)"
	@echo "  make clang      the tests built with clang++ (clang preset)"
	@echo "  make fuzz       libFuzzer (clang, ASan + UBSan) on the binary load, JSON from_json and"
	@echo "                  Mirror::apply, FUZZ_SECONDS=$(FUZZ_SECONDS) s each from tests/fuzz/corpus*;"
	@echo "                  a finding is kept there as a regression input that make test replays"
	@echo "  make bench      run the benchmarks, write $(BENCH_JSON), docs/benchmarks.md and"
	@echo "                  docs/bench/*.svg (BENCH_FILTER=<regex> selects benchmarks in every"
	@echo "                  run, BENCH_ARGS=... adds flags; make bench-run skips the build)"
	@echo "  make format     clang-format -i on all C++ sources"
	@echo "  make format-check  fail on any source clang-format would change (CI runs it)"
	@echo "  make lint       clang-tidy (.clang-tidy, warnings are errors) on src/ and examples/"
	@echo "                  (LINT_DIRS=...); CI runs it; tools/pre-commit runs both on a commit"
	@echo "  make docs       the API reference (doxygen) in build/docs/html/index.html"
	@echo "  make deps       install missing Debian packages (as root) or print the apt-get line"
	@echo "  make browser-deps  chromium, chromium-driver and python3-selenium for the inspector's"
	@echo "                  browser test (the test targets run it)"
	@echo "Variables: JOBS=$(JOBS) (parallel tests), CTEST_ARGS=... (extra ctest flags),"
	@echo "           FUZZ_SECONDS=$(FUZZ_SECONDS) (make fuzz: seconds per target)"

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

# configure + build + ctest for one preset: $(call preset_test,<preset>). The browser test
# must run here (browser-deps installed what it needs): TESSERA_BROWSER_REQUIRED=1 makes a
# missing browser a failure, not a skip.
define preset_test
	cmake --preset $(1)
	cmake --build --preset $(1)
	TESSERA_BROWSER_REQUIRED=1 ctest --preset $(1) -j $(JOBS) $(CTEST_ARGS)
endef

test: deps browser-deps
	$(call preset_test,dev)

sanitize: deps browser-deps
	$(call preset_test,asan)

tsan: deps browser-deps
	$(call preset_test,tsan)

clang: deps browser-deps
	$(call preset_test,clang)

# The fuzz preset builds only the libFuzzer targets (and the library copy they instrument);
# its test preset runs the tests labelled fuzz (fuzz_load_60s, fuzz_json_60s, fuzz_net_60s), side
# by side.
fuzz: deps
	cmake --preset fuzz -DTESSERA_FUZZ_SECONDS=$(FUZZ_SECONDS)
	cmake --build --preset fuzz
	ctest --preset fuzz -V -j $(JOBS) $(CTEST_ARGS)

demo: deps
	cmake --preset release
	cmake --build --preset release --target arena
	./$(DEMO) $(DEMO_ARGS)

netdemo: deps
	cmake --preset release
	cmake --build --preset release --target netarena
	./$(NETDEMO) $(NETDEMO_ARGS)

bench: deps bench-deps
	cmake --preset release
	cmake --build --preset release --target tessera_bench
	@$(MAKE) --no-print-directory bench-run

# The plots need matplotlib; `make test` does not.
bench-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BENCH_DEB_PACKAGES)"

# The standard run, the warm-heap run of the setup-heavy scenarios, the size sweep, the report.
bench-run: bench-deps
	setarch -R ./$(BENCH_BIN) --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
	    --benchmark_out=$(BENCH_JSON) --benchmark_out_format=json \
	    $(if $(BENCH_FILTER),'--benchmark_filter=$(BENCH_FILTER)') $(BENCH_ARGS)
	setarch -R ./$(BENCH_BIN) --tessera-heap=warm --benchmark_repetitions=5 \
	    --benchmark_report_aggregates_only=true --benchmark_out=$(BENCH_WARM_JSON) \
	    --benchmark_out_format=json '--benchmark_filter=^(create|create_batch|destroy|clone|snapshot_binary)/' $(BENCH_ARGS)
	$(foreach n,$(BENCH_SWEEP) 1000000 10000000,setarch -R ./$(BENCH_BIN) --tessera-n=$(n) \
	    $(BENCH_SWEEP_ARGS) --benchmark_report_aggregates_only=true --benchmark_out_format=json \
	    --benchmark_out=$(BENCH_DIR)/bench/results-n$(n).json \
	    '--benchmark_filter=$(or $(BENCH_FILTER),$(if $(filter 1000000,$(n)),$(BENCH_SWEEP_1M_FILTER),$(if $(filter 10000000,$(n)),$(BENCH_SWEEP_10M_FILTER),$(BENCH_SWEEP_FILTER))))' \
	    $(BENCH_ARGS) &&) true
	$(PYTHON) tools/bench_report.py $(BENCH_JSON) docs/benchmarks.md --warm $(BENCH_WARM_JSON) \
	    --sweep $(foreach n,$(BENCH_SWEEP) 1000000 10000000,$(BENCH_DIR)/bench/results-n$(n).json)

format: deps
	find $(wildcard $(FORMAT_DIRS)) -type f \( -name '*.hpp' -o -name '*.cpp' \) -print0 \
	    | xargs -0 -r clang-format -i

# Static checks; CI runs both (tools/pre-commit runs them on the staged files).
#   make format-check  clang-format --dry-run -Werror on every .hpp/.cpp of FORMAT_DIRS
#   make lint          clang-tidy with .clang-tidy (warnings are errors) on every source of
#                      LINT_DIRS, through the dev preset's compile_commands.json (configured,
#                      not built), LINT_JOBS at a time; the headers they include are checked too
# clang-tidy is its own Debian package: neither clang nor clang-format in DEB_PACKAGES brings it
# in, and only lint needs it, so lint-deps installs it as bench-deps and docs-deps do theirs.
LINT_DEB_PACKAGES := clang-tidy
LINT_DIRS ?= src examples
LINT_JOBS ?= 2
lint_space := $(subst ,, )

.PHONY: lint lint-deps format-check
format-check: deps
	find $(wildcard $(FORMAT_DIRS)) -type f \( -name '*.hpp' -o -name '*.cpp' \) -print0 \
	    | xargs -0 -r clang-format --dry-run -Werror

lint-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(LINT_DEB_PACKAGES)"

lint: deps lint-deps
	cmake --preset dev > /dev/null
	run-clang-tidy -p build/dev -j $(LINT_JOBS) -quiet \
	    '^$(CURDIR)/($(subst $(lint_space),|,$(strip $(LINT_DIRS))))/.*\.cpp$$'

# The API reference: doxygen on docs/Doxyfile (public headers, README.md as the main page,
# docs/*.md as related pages). Needs only doxygen: `deps` with DOCS_DEB_PACKAGES.
docs-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(DOCS_DEB_PACKAGES)"

docs: docs-deps
	rm -rf build/docs/html
	doxygen docs/Doxyfile
	@echo "docs: open $(CURDIR)/build/docs/html/index.html"

# The inspector's browser test (ctest inspect_browser, label "browser"): Debian's Chromium,
# chromium-driver and python3-selenium (for /usr/bin/python3), nothing from npm.
.PHONY: browser-deps
browser-deps:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(BROWSER_DEB_PACKAGES)"
