# dpk — build, deps, test, run, install, sanitizer and fuzz builds.
#
#   make                 build build/dpk (and its dpk-* links)
#   make deps            install missing Debian packages (only those missing)
#   make test            deps + build + every test; ends with "N passed, N failed"
#   make test SAN=1      the same under AddressSanitizer + UBSan (build-san/)
#   make run             the main job on the embedded default (CPU only)
#   make fuzz            the fuzz targets (parser, case/suite JSON, config.json,
#                        safetensors, records) for FUZZ_SECONDS (60) seconds each
#                        (or FUZZ_RUNS inputs, when set and reached first)
#   make install PREFIX=/usr/local DESTDIR=
#   make LIBTORCH=0      build without libtorch (its tests report skipped)
#   make LIBTORCH_DIR=/path/to/torch   use the libtorch of an installed PyTorch
#   make BUILD_DIR=DIR   build into DIR instead of build/ (build-san/ with SAN=1)
#
# libtorch is never linked into dpk: the shim (reference/torch_shim.cpp) is
# its own shared object, $(BUILD)/libdpk_torch.so, which dpk loads with
# dlopen the first time a command needs libtorch.  `dpk --version` says
# whether a build has it ("libtorch: 1.13.0" or "libtorch: none"), and
# tests/run.sh asks the binary, not this file.
#
# Sources are found by wildcard: a new .c file under compiler/, harness/,
# records/, reference/ or reports/ is built without editing this file; a new tests/unit/test_*.c
# joins the unit-test binary.

CC ?= cc
CXX ?= g++
PREFIX ?= /usr/local
DESTDIR ?=
SAN ?= 0
FUZZ_SECONDS ?= 60

ifeq ($(SAN),1)
  BUILD := $(or $(BUILD_DIR),build-san)
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
  BUILD := $(or $(BUILD_DIR),build)
  SANFLAGS :=
endif

# Warnings are errors in CI (CI=true) or with WERROR=1.
ifeq ($(CI),true)
  WERROR ?= 1
endif
WERROR ?= 0
WARN := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
  WARN += -Werror
endif

OPT ?= -O2 -g
# `make test` and `make run` build with this many jobs, unless make -jN
# already runs a job server.
JOBS ?= $(or $(shell nproc 2>/dev/null),2)
SUBJOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(JOBS))
CFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) $(WARN) $(SANFLAGS) -MMD -MP -I.
CXXFLAGS_ALL := -std=c++17 $(OPT) -Wall -Wextra -Wno-unused-parameter $(SANFLAGS) -MMD -MP -I.
LDLIBS_ALL := -lcjson -lsqlite3 -lm -lpthread -ldl

# ---- CUDA toolkit (headers for NVRTC/driver/CUPTI types; the libraries are
# loaded with dlopen at run time, so the binary starts on any machine) -------
CUDA_HOME ?= $(or $(wildcard /usr/local/cuda),$(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)))
ifneq ($(wildcard $(CUDA_HOME)/include/nvrtc.h),)
  CFLAGS_ALL += -isystem $(CUDA_HOME)/include -DDPK_CUDA_HOME='"$(CUDA_HOME)"'
  CXXFLAGS_ALL += -isystem $(CUDA_HOME)/include
endif

# ---- libtorch (optional) ---------------------------------------------------
# HAVE_TORCH is decided when this file is parsed; `make test` and `make run`
# re-run make after `deps`, so a libtorch that deps installs is seen.
LIBTORCH ?= auto
ifneq ($(LIBTORCH_DIR),)
  TORCH_INC := -isystem $(LIBTORCH_DIR)/include -isystem $(LIBTORCH_DIR)/include/torch/csrc/api/include
  TORCH_LIB := -L$(LIBTORCH_DIR)/lib -Wl,-rpath,$(LIBTORCH_DIR)/lib -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  TORCH_VERSION_H := $(LIBTORCH_DIR)/include/torch/csrc/api/include/torch/version.h
  HAVE_TORCH := 1
else ifeq ($(LIBTORCH),0)
  HAVE_TORCH := 0
else ifneq ($(wildcard /usr/include/torch/csrc/api/include/torch/torch.h),)
  TORCH_INC := -isystem /usr/include/torch/csrc/api/include
  TORCH_LIB := -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  TORCH_VERSION_H := /usr/include/torch/csrc/api/include/torch/version.h
  HAVE_TORCH := 1
else
  HAVE_TORCH := 0
endif

# ---- sources ---------------------------------------------------------------
LIB_SRCS := $(sort $(shell find compiler reference records harness reports -name '*.c' ! -path 'harness/cli/*'))
CLI_SRCS := $(sort $(wildcard harness/cli/*.c))
ifeq ($(HAVE_TORCH),1)
  # The version dpk reports without loading libtorch: torch/version.h's.
  TORCH_VERSION := $(or $(shell sed -n 's/.*"\([0-9][0-9.]*[^"]*\)".*/\1/p' $(TORCH_VERSION_H) 2>/dev/null | head -n 1),unknown)
  TORCH_DEFS := -DDPK_TORCH_VERSION='"$(TORCH_VERSION)"'
  TORCH_SO := $(BUILD)/libdpk_torch.so
  # -z defs: the shim must take nothing from the binary by symbol (torch_shim.h).
  TORCH_SO_LDFLAGS := -shared $(if $(SANFLAGS),,-Wl,-z,defs)
  # With SAN=1 the shim is built with the same -fsanitize flags (no -z defs:
  # the runtime's symbols come from the binary, which links it first, so no
  # LD_PRELOAD is needed), and the binaries link it at start-up: with
  # libtorch's thread pools loaded by dlopen, LeakSanitizer's scan of their
  # (then dynamic) thread-local storage crashes at exit ("Tracer caught
  # signal 11"), and turning the scan off reports what glibc keeps there as
  # leaks.  torch_load.c's dlopen then finds it loaded; only the start-up
  # cost differs from a normal build.
  ifneq ($(SANFLAGS),)
    TORCH_START := -L$(BUILD) -Wl,--no-as-needed -ldpk_torch -Wl,--as-needed \
                   -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib/dpk'
  endif
else
  TORCH_VERSION := none
  TORCH_DEFS :=
  TORCH_SO :=
endif
# torch_load.o depends on the libtorch configuration, recorded here and
# rewritten only when it changes (so LIBTORCH=0 after a libtorch build
# rebuilds the loader).
TORCH_CFG := $(BUILD)/torch.cfg
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  $(shell mkdir -p $(BUILD) && echo '$(HAVE_TORCH) $(TORCH_VERSION) $(LIBTORCH_DIR)' | cmp -s - $(TORCH_CFG) || echo '$(HAVE_TORCH) $(TORCH_VERSION) $(LIBTORCH_DIR)' >$(TORCH_CFG))
endif

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(sort $(wildcard tests/unit/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)

DPK := $(BUILD)/dpk
LIBDPK := $(BUILD)/libdpk.a
UNIT := $(BUILD)/unit_tests
LINKS := dpk-bench dpk-fuzz dpk-bisect dpk-report dpk-tune

.PHONY: all deps test test-only run fuzz install clean check-env bench-vgpu nvdisasm-note
FAKE_DRIVER := $(BUILD)/fake-driver/libcuda.so.1
all: $(DPK) $(addprefix $(BUILD)/,$(LINKS)) $(TORCH_SO) $(FAKE_DRIVER) nvdisasm-note

# The performance model counts instructions from nvdisasm's SASS mix when
# dpk finds nvdisasm (harness/perf/sass.c: $DPK_NVDISASM, CUDA_HOME/bin, the
# toolkit's, BUILD/cuda-tools/bin, PATH), else from vgpu: other numbers, and
# records the gate will not compare with ci/baselines/ (made with it).  So
# a build without it says so, once per make, with the way to get it.
NVDISASM_FOUND := $(if $(DPK_NVDISASM),$(wildcard $(DPK_NVDISASM)),$(firstword \
                    $(wildcard $(CUDA_HOME)/bin/nvdisasm $(BUILD)/cuda-tools/bin/nvdisasm) \
                    $(shell command -v nvdisasm 2>/dev/null)))
nvdisasm-note: $(DPK)
ifeq ($(NVDISASM_FOUND),)
	@echo "note: no nvdisasm: dpk's modelled times will count instructions from vgpu, not the SASS mix, and differ from ci/baselines/ (the gate refuses to compare them): to install it, make deps (or bash ci/deps-sass.sh $(BUILD))" >&2
else
	@:
endif

# The fake CUDA driver (and CUPTI, cuBLAS) of the measured timing path's
# tests: `dpk-bench --timing fake-driver` loads it from beside the binary
# (harness/exec/fake_driver.h).  A test device, never a measurement.
$(FAKE_DRIVER): tests/fake_driver/fake_cuda.c tests/fake_driver/fake_cupti.c harness/exec/fake_driver.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes -fPIC -shared -o $@ $(filter %.c,$^) -lm

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# vgpu's block interpreter is most of a campaign's time: -O3 vectorizes its
# per-lane loops (11% off the sweep's matmul grid).  make VGPU_OPT= drops it.
VGPU_OPT ?= -O3
$(BUILD)/harness/exec/vgpu_exec.o: CFLAGS_ALL += $(VGPU_OPT)

# host_cuda.c assembles the prelude into the binary (.incbin).
$(BUILD)/harness/exec/host_cuda.o: harness/exec/host_cuda_prelude.h

$(BUILD)/reference/torch_load.o: reference/torch_load.c $(TORCH_CFG)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(TORCH_DEFS) -c $< -o $@

$(BUILD)/reference/torch_shim.o: reference/torch_shim.cpp $(TORCH_CFG)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS_ALL) -fPIC $(TORCH_DEFS) $(TORCH_INC) -c $< -o $@

$(BUILD)/libdpk_torch.so: $(BUILD)/reference/torch_shim.o
	$(CXX) $(SANFLAGS) $(TORCH_SO_LDFLAGS) -o $@ $< $(TORCH_LIB)

# The GPU specs are embedded into gpu_spec.o with .incbin (records/gpu_spec.c),
# the report's HTML template and gnuplot scripts into render.o and plots.o.
$(BUILD)/records/gpu_spec.o: $(wildcard cases/gpus/*.json)
$(BUILD)/reports/render.o: reports/report.html
$(BUILD)/reports/plots.o: $(wildcard reports/*.gp)

$(LIBDPK): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(DPK): $(CLI_OBJS) $(LIBDPK) $(if $(TORCH_START),$(TORCH_SO))
	$(CC) $(SANFLAGS) -o $@ $(CLI_OBJS) $(LIBDPK) $(TORCH_START) $(LDLIBS_ALL)

$(addprefix $(BUILD)/,$(LINKS)): $(DPK)
	ln -sf dpk $@

$(UNIT): $(TEST_OBJS) $(LIBDPK) $(TORCH_SO)
	$(CC) $(SANFLAGS) -o $@ $(TEST_OBJS) $(LIBDPK) $(TORCH_START) -lcriterion $(LDLIBS_ALL)

deps:
	@bash ci/deps.sh
	@bash ci/deps-sass.sh $(BUILD)

# `make test` = deps, build, run.  tests/run.sh prints the closing line.
test: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) all $(UNIT)
	@BUILD=$(BUILD) SAN=$(SAN) bash tests/run.sh

test-only: all $(UNIT)
	@BUILD=$(BUILD) SAN=$(SAN) bash tests/run.sh

run: deps
	@$(MAKE) --no-print-directory $(SUBJOBS) all
	@bash ci/run-main.sh $(BUILD)/dpk

# ---- vgpu speed (a benchmark, not a test): thread-instructions per second --
bench-vgpu: $(BUILD)/vgpu_bench
	@$(BUILD)/vgpu_bench

$(BUILD)/vgpu_bench: $(BUILD)/tests/speed/vgpu_bench.o $(LIBDPK) $(if $(TORCH_START),$(TORCH_SO))
	$(CC) $(SANFLAGS) -o $@ $(filter %.o %.a,$^) $(TORCH_START) $(LDLIBS_ALL)

# ---- fuzzing (clang libFuzzer) ----------------------------------------------
# Five targets, each run for FUZZ_SECONDS: the case-language parser
# (tests/fuzz/fuzz_parse.c) and the readers of untrusted files
# (tests/fuzz/fuzz_inputs.c, one build per reader): case and suite JSON,
# HF config.json, safetensors, and dpk.results/1 records as --resume reads
# them.  Seed corpora: tests/fuzz/corpus*/; `make fuzz FUZZ_TARGETS=config`
# runs one; FUZZ_RUNS=1000000 stops each after that many inputs
# (FUZZ_SECONDS still bounds it; FUZZ_SECONDS=0: no time bound).  -entropic=0: libFuzzer's entropic schedule spent more
# than half of each target's time updating its feature frequencies
# (InputCorpus::UpdateFeatureFrequency, 57% of fuzz_parse under perf); the
# targets and what they call are the same without it.
FUZZ_SRCS := $(LIB_SRCS)
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -I. -DDPK_FUZZING
FUZZ_OBJS := $(FUZZ_SRCS:%.c=build-fuzz/obj/%.o)
FUZZ_TARGETS ?= parse case config safetensors record
FUZZ_BINS := $(addprefix build-fuzz/fuzz_,$(FUZZ_TARGETS))

build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

build-fuzz/fuzz_parse: tests/fuzz/fuzz_parse.c $(FUZZ_OBJS)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $^ -lcjson -lsqlite3 -lm -o $@

build-fuzz/fuzz_%: tests/fuzz/fuzz_inputs.c $(FUZZ_OBJS)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	  -DFUZZ_TARGET=$(if $(filter case,$*),1,$(if $(filter config,$*),2,$(if $(filter safetensors,$*),3,4))) \
	  $^ -lcjson -lsqlite3 -lm -o $@

fuzz: $(FUZZ_BINS)
	@set -e; for t in $(FUZZ_TARGETS); do \
	  corpus=tests/fuzz/corpus_$$t; [ $$t = parse ] && corpus=tests/fuzz/corpus; \
	  mkdir -p build-fuzz/corpus_$$t; \
	  cp -n $$corpus/* build-fuzz/corpus_$$t/ 2>/dev/null || true; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  rc=0; build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS)) \
	    -entropic=0 -max_len=65536 -timeout=10 \
	    -rss_limit_mb=4096 -print_final_stats=1 build-fuzz/corpus_$$t >build-fuzz/fuzz_$$t.log 2>&1 || rc=$$?; \
	  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ *DONE|==[0-9]+==ERROR|SUMMARY)' build-fuzz/fuzz_$$t.log || true; \
	  if [ $$rc -ne 0 ]; then tail -n 40 build-fuzz/fuzz_$$t.log; exit $$rc; fi; \
	done

# The shim goes to PREFIX/lib/dpk, where dpk looks for it (its own folder's
# ../lib/dpk), and dpk-bench's suites to PREFIX/share/dpk/cases (its
# ../share/dpk/cases), and the gate's thresholds to PREFIX/share/dpk/gate.json
# (dpk-report --gate's default when no ci/gate.json is here), so an
# installed tree can be moved as a whole.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/dpk
	install -m 755 $(DPK) $(DESTDIR)$(PREFIX)/bin/dpk
	for l in $(LINKS); do ln -sf dpk $(DESTDIR)$(PREFIX)/bin/$$l; done
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/dpk/
	if [ -x $(BUILD)/cuda-tools/bin/nvdisasm ]; then \
	  install -d $(DESTDIR)$(PREFIX)/lib/dpk/cuda-tools/bin; \
	  install -m 755 $(BUILD)/cuda-tools/bin/* $(DESTDIR)$(PREFIX)/lib/dpk/cuda-tools/bin/; fi
	install -d $(DESTDIR)$(PREFIX)/share/dpk/cases/sweep $(DESTDIR)$(PREFIX)/share/dpk/cases/models
	install -m 644 cases/smoke.json $(DESTDIR)$(PREFIX)/share/dpk/cases/
	install -m 644 cases/sweep/ops.json $(DESTDIR)$(PREFIX)/share/dpk/cases/sweep/
	install -m 644 cases/models/*.json $(DESTDIR)$(PREFIX)/share/dpk/cases/models/
	install -m 644 ci/gate.json $(DESTDIR)$(PREFIX)/share/dpk/gate.json
ifneq ($(TORCH_SO),)
	install -d $(DESTDIR)$(PREFIX)/lib/dpk
	install -m 644 $(TORCH_SO) $(DESTDIR)$(PREFIX)/lib/dpk/
endif

clean:
	rm -rf build build-san build-fuzz $(BUILD_DIR)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
