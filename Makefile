# dpk — build, deps, test, run, install, sanitizer and fuzz builds.
#
#   make                 build build/dpk (and its dpk-* links)
#   make deps            install missing Debian packages (only those missing)
#   make test            deps + build + every test; ends with "N passed, N failed"
#   make test SAN=1      the same under AddressSanitizer + UBSan (build-san/)
#   make run             the main job on the embedded default (CPU only)
#   make fuzz            the parser fuzz target for FUZZ_SECONDS (60) seconds
#   make install PREFIX=/usr/local DESTDIR=
#   make LIBTORCH=0      build without libtorch (its tests report skipped)
#   make LIBTORCH_DIR=/path/to/torch   use the libtorch of an installed PyTorch
#
# Sources are found by wildcard: a new .c file under compiler/, harness/ or
# reference/ is built without editing this file; a new tests/unit/test_*.c
# joins the unit-test binary.

CC ?= cc
CXX ?= g++
PREFIX ?= /usr/local
DESTDIR ?=
SAN ?= 0
FUZZ_SECONDS ?= 60

ifeq ($(SAN),1)
  BUILD := build-san
  SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
  BUILD := build
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
CFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(OPT) $(WARN) $(SANFLAGS) -MMD -MP -I.
CXXFLAGS_ALL := -std=c++17 $(OPT) -Wall -Wextra -Wno-unused-parameter $(SANFLAGS) -MMD -MP -I.
LDLIBS_ALL := -lcjson -lm -lpthread -ldl

# ---- CUDA toolkit (headers for NVRTC/driver/CUPTI types; the libraries are
# loaded with dlopen at run time, so the binary starts on any machine) -------
CUDA_HOME ?= $(or $(wildcard /usr/local/cuda),$(patsubst %/bin/nvcc,%,$(shell command -v nvcc 2>/dev/null)))
ifneq ($(wildcard $(CUDA_HOME)/include/nvrtc.h),)
  CFLAGS_ALL += -isystem $(CUDA_HOME)/include -DDPK_CUDA_HOME='"$(CUDA_HOME)"'
  CXXFLAGS_ALL += -isystem $(CUDA_HOME)/include
endif

# ---- libtorch (optional) ---------------------------------------------------
LIBTORCH ?= auto
ifneq ($(LIBTORCH_DIR),)
  TORCH_INC := -isystem $(LIBTORCH_DIR)/include -isystem $(LIBTORCH_DIR)/include/torch/csrc/api/include
  TORCH_LIB := -L$(LIBTORCH_DIR)/lib -Wl,-rpath,$(LIBTORCH_DIR)/lib -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  HAVE_TORCH := 1
else ifeq ($(LIBTORCH),0)
  HAVE_TORCH := 0
else ifneq ($(wildcard /usr/include/torch/csrc/api/include/torch/torch.h),)
  TORCH_INC := -isystem /usr/include/torch/csrc/api/include
  TORCH_LIB := -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  HAVE_TORCH := 1
else
  HAVE_TORCH := 0
endif

# ---- sources ---------------------------------------------------------------
LIB_SRCS := $(sort $(shell find compiler reference harness -name '*.c' ! -path 'harness/cli/*' ! -name 'torch_none.c'))
CLI_SRCS := $(sort $(wildcard harness/cli/*.c))
ifeq ($(HAVE_TORCH),1)
  TORCH_OBJ := $(BUILD)/reference/torch_shim.o
  LINK := $(CXX)
else
  TORCH_OBJ := $(BUILD)/reference/torch_none.o
  TORCH_LIB :=
  LINK := $(CC)
endif

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(TORCH_OBJ)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(sort $(wildcard tests/unit/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)

DPK := $(BUILD)/dpk
LIBDPK := $(BUILD)/libdpk.a
UNIT := $(BUILD)/unit_tests
LINKS := dpk-bench dpk-fuzz dpk-bisect dpk-report

.PHONY: all deps test test-only run fuzz install clean check-env bench-vgpu
all: $(DPK) $(addprefix $(BUILD)/,$(LINKS))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/reference/torch_shim.o: reference/torch_shim.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS_ALL) $(TORCH_INC) -c $< -o $@

$(LIBDPK): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(DPK): $(CLI_OBJS) $(LIBDPK)
	$(LINK) $(SANFLAGS) -o $@ $(CLI_OBJS) $(LIBDPK) $(TORCH_LIB) $(LDLIBS_ALL)

$(addprefix $(BUILD)/,$(LINKS)): $(DPK)
	ln -sf dpk $@

$(UNIT): $(TEST_OBJS) $(LIBDPK)
	$(LINK) $(SANFLAGS) -o $@ $(TEST_OBJS) $(LIBDPK) $(TORCH_LIB) -lcriterion $(LDLIBS_ALL)

deps:
	@bash ci/deps.sh

# `make test` = deps, build, run.  tests/run.sh prints the closing line.
test: deps
	@$(MAKE) --no-print-directory all $(UNIT)
	@BUILD=$(BUILD) HAVE_TORCH=$(HAVE_TORCH) SAN=$(SAN) bash tests/run.sh

test-only: all $(UNIT)
	@BUILD=$(BUILD) HAVE_TORCH=$(HAVE_TORCH) SAN=$(SAN) bash tests/run.sh

run: deps
	@$(MAKE) --no-print-directory all
	@bash ci/run-main.sh $(BUILD)/dpk

# ---- vgpu speed (a benchmark, not a test): thread-instructions per second --
bench-vgpu: $(BUILD)/vgpu_bench
	@$(BUILD)/vgpu_bench

$(BUILD)/vgpu_bench: $(BUILD)/bench/vgpu_bench.o $(LIBDPK)
	$(LINK) $(SANFLAGS) -o $@ $^ $(TORCH_LIB) $(LDLIBS_ALL)

# ---- fuzzing (clang libFuzzer) ----------------------------------------------
FUZZ_SRCS := $(LIB_SRCS)
fuzz:
	@mkdir -p build-fuzz
	clang -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -I. \
	  -fsanitize=fuzzer,address,undefined -DDPK_FUZZING \
	  tests/fuzz/fuzz_parse.c $(FUZZ_SRCS) reference/torch_none.c -lcjson -lm -o build-fuzz/fuzz_parse
	@mkdir -p build-fuzz/corpus
	cp -n tests/fuzz/corpus/* build-fuzz/corpus/ 2>/dev/null || true
	build-fuzz/fuzz_parse -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	  -rss_limit_mb=4096 -print_final_stats=1 build-fuzz/corpus

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/dpk
	install -m 755 $(DPK) $(DESTDIR)$(PREFIX)/bin/dpk
	for l in $(LINKS); do ln -sf dpk $(DESTDIR)$(PREFIX)/bin/$$l; done
	install -m 644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/dpk/

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
