# supkit: one non-recursive Makefile.
#
#   make            check the Debian packages (scripts/install-deps.sh --check:
#                   a missing one stops the build with the command that
#                   installs it; nothing is installed), build everything
#                   (tools, tests, the assembled man pages)
#   make build      the same
#   make deps       install the missing Debian packages (scripts/install-deps.sh)
#   make test       install what is missing, build, run every unit and CLI
#                   test, print "N passed, N failed"
#   make demo       install what is missing, run the main job on this machine
#                   (scripts/demo.sh)
#   make bench      check, build, benchmarks (bench/*.sh), figures printed,
#                   nothing asserted
#   make install    check, build the tools and the assembled man pages,
#                   install the tools, every man page and configs/ (as
#                   PREFIX/share/supkit/configs, where supkit train --arm
#                   finds it); PREFIX=/usr/local, DESTDIR staged
#   SAN=1           ASan + UBSan build (objects in build/san, binaries in build/san/bin)
#   DEV=1           -Werror
#   GPU=1           link the CUDA backend into supkit-train (needs nvcc and a GPU to run)
#   make dev-cuda   dev/cuda's kernel variants, their check and benchmark, on
#                   the emulated device (GPU=1: for a GPU, with nvcc)
#
# Folders are modules: every X/*.c except X/cmd_*.c goes into build/libX.a;
# X/cmd_NAME.c becomes bin/supkit-NAME (X/sub_*.c, its subcommands, are
# linked into every tool of X); tests/unit/X/test_*.c become test
# binaries linked with X's archives. New files need no Makefile edit.

SHELL := /bin/bash
.DEFAULT_GOAL := all
PREFIX ?= /usr/local

BUILD := build
BIN := bin
ifeq ($(SAN),1)
BUILD := build/san
BIN := build/san/bin
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
# GPU builds link kernels/ into the trainer's tools: keep them apart.
ifeq ($(GPU),1)
BUILD := $(BUILD)/gpu
BIN := $(BUILD)/bin
endif

PKGS := libcrypto libarchive libcjson libpcre2-8
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) lapacke openblas 2>/dev/null)
# without pkg-config (or its .pc files) the plain names, found on the default
# or LDFLAGS's paths (scripts/gpu-deps.sh's unpacked libraries)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lcrypto -larchive -lcjson -lpcre2-8)
BLAS_LIBS := $(shell pkg-config --libs lapacke openblas 2>/dev/null || echo -llapacke -lopenblas)
# data/parquet.c's codecs (Debian ships no snappy.pc)
CODEC_LIBS := $(shell pkg-config --libs libzstd zlib 2>/dev/null || echo -lzstd -lz) -lsnappy
LIBS := $(PKG_LIBS) $(CODEC_LIBS) -lgsl $(BLAS_LIBS) -lm -lpthread

OPT ?= -O2
WERROR := $(if $(DEV),-Werror,)
CPPFLAGS += -I. -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L
CFLAGS := -std=c11 -Wall -Wextra $(WERROR) $(OPT) -g $(SANFLAGS) $(PKG_CFLAGS) -MMD -MP $(EXTRA_CFLAGS)
LDFLAGS += $(SANFLAGS)

# CUDA (compiled when nvcc is found; linked into the trainer with GPU=1)
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
# One fat binary for the GPUs researchers have: machine code for sm_80 (A100),
# sm_89 (RTX 4090, L40, L40S), sm_90a (H100, H200: the only code with
# wgmma) and, where this nvcc knows them, Blackwell's sm_100 (B200) and
# sm_120 (RTX 5090); and compute_80 PTX, which a later GPU's driver compiles.
# The CUDA runtime picks the code for the device's compute capability when
# the process starts. CUDA_ARCHS=90a builds the H100/H200 code alone (a
# third of the compile time).
NVCC_ARCHS_KNOWN := $(if $(NVCC),$(shell $(NVCC) --list-gpu-code 2>/dev/null))
CUDA_ARCHS ?= 80 89 90a $(if $(filter sm_100,$(NVCC_ARCHS_KNOWN)),100) \
	$(if $(filter sm_120,$(NVCC_ARCHS_KNOWN)),120)
NVCC_GENCODE := $(foreach a,$(strip $(CUDA_ARCHS)),-gencode arch=compute_$(a),code=sm_$(a)) \
	-gencode arch=compute_80,code=compute_80
NVCCFLAGS ?= -O3 -std=c++17 $(NVCC_GENCODE) -I. -Xcompiler -fPIC,-Wall
CU_SRCS := $(wildcard kernels/*.cu)
# nvcc's objects do not depend on BUILD's variant (SAN, GPU): one copy in
# $(CU_BUILD)/kernels for all of them, each with its compile's output in
# X.o.log (tests/cli/cuda_compile.sh: no warnings)
CU_BUILD := build
CU_OBJS := $(patsubst %.cu,$(CU_BUILD)/%.o,$(CU_SRCS))

MODULES := lib data replay supplements trainer audit sweep
DEPS_lib := lib
DEPS_data := data lib
# the sweep runner reads configs (trainer/config.c, arm_file.c) and starts
# supkit-train as child processes: no model code
DEPS_sweep := sweep trainer lib
DEPS_replay := replay lib
DEPS_supplements := supplements replay lib
DEPS_trainer := trainer data lib
DEPS_audit := audit trainer data lib
# plot draws with cairo and its FreeType font backend; a machine without
# them (the GPU machine's carried libraries) builds the other tools
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo freetype2 2>/dev/null)
CAIRO_LIBS := $(shell pkg-config --libs cairo freetype2 2>/dev/null)
ifneq ($(CAIRO_LIBS),)
MODULES += plot
DEPS_plot := plot lib
endif
# supkit train over MPI ranks (trainer/dist.c) with Open MPI; a machine
# without it builds a trainer of one process
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS := $(shell pkg-config --libs ompi-c 2>/dev/null)
ifneq ($(MPI_LIBS),)
LIBS += $(MPI_LIBS)
endif
ifeq ($(GPU),1)
ifneq ($(NVCC),)
# kernels/ registers the "cuda" backend from a static initialiser that no
# symbol pulls in: the whole archive goes into the trainer's and audit's tools
KERNELS_DEP_trainer := $(BUILD)/libkernels.a
KERNELS_DEP_audit := $(BUILD)/libkernels.a
KERNELS_LINK := -Wl,--whole-archive $(BUILD)/libkernels.a -Wl,--no-whole-archive
LIBS += -L$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lcudart -lstdc++
endif
endif

archives = $(foreach m,$(DEPS_$(1)),$(BUILD)/lib$(m).a)

# Per module: library objects, tool mains, unit tests.
define module_rules
$(1)_SRCS := $$(filter-out $(1)/cmd_%.c,$$(wildcard $(1)/*.c))
$(1)_OBJS := $$(patsubst %.c,$$(BUILD)/%.o,$$($(1)_SRCS))
$(1)_CMDS := $$(wildcard $(1)/cmd_*.c)
$(1)_TOOLS := $$(patsubst $(1)/cmd_%.c,$$(BIN)/supkit-%,$$($(1)_CMDS))
$(1)_SUBOBJS := $$(patsubst %.c,$$(BUILD)/%.o,$$(wildcard $(1)/sub_*.c))
$(1)_TESTS := $$(patsubst tests/unit/$(1)/%.c,$$(BUILD)/tests/$(1)/%,$$(wildcard tests/unit/$(1)/test_*.c))
$$(BUILD)/lib$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
$$(BIN)/supkit-%: $(1)/cmd_%.c $$($(1)_SUBOBJS) $$(call archives,$(1)) $$(KERNELS_DEP_$(1))
	@mkdir -p $$(@D) $$(BUILD)/$(1)
	$$(CC) $$(CPPFLAGS) $$(CFLAGS) -MF $$(BUILD)/$(1)/cmd_$$*.d -o $$@ $$< $$($(1)_SUBOBJS) $$(if $$(KERNELS_DEP_$(1)),$$(KERNELS_LINK)) $$(call archives,$(1)) $$(LDFLAGS) $$(LIBS)
$$(BUILD)/tests/$(1)/%: tests/unit/$(1)/%.c $$(call archives,$(1)) $$(KERNELS_DEP_$(1))
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) -Itests/unit $$(CFLAGS) -MF $$@.d -o $$@ $$< $$(if $$(KERNELS_DEP_$(1)),$$(KERNELS_LINK)) $$(call archives,$(1)) $$(LDFLAGS) $$(LIBS)
endef
$(foreach m,$(MODULES),$(eval $(call module_rules,$(m))))
$(BUILD)/plot/%.o $(BUILD)/tests/plot/% $(BIN)/supkit-plot: CFLAGS += $(CAIRO_CFLAGS)
$(BUILD)/tests/plot/% $(BIN)/supkit-plot: LIBS += $(CAIRO_LIBS)
ifneq ($(MPI_LIBS),)
$(BUILD)/trainer/dist.o: CFLAGS += $(MPI_CFLAGS) -DSUPKIT_MPI=1
endif

$(BUILD)/libkernels.a: $(CU_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The CUDA kernels on the CPU: kernels/attention_mma.cu and
# kernels/backend_kernels.cuh built as host C++ for the SIMT emulator of
# tests/emu (no nvcc, no GPU needed); tests/emu/test_*.cc (test_cudart_emu
# includes tests/emu/cudart.cc, the emulated runtime, itself).
CXXFLAGS := -std=c++17 -Wall -Wextra -Wno-unknown-pragmas -Wno-unused-function \
	-fno-strict-aliasing $(WERROR) $(OPT) -g $(SANFLAGS)
EMU_TESTS := $(patsubst tests/emu/%.cc,$(BUILD)/tests/emu/%,$(wildcard tests/emu/test_*.cc))
$(BUILD)/tests/emu/%: tests/emu/%.cc tests/emu/simt.cc tests/emu/cudart.cc \
		$(wildcard tests/emu/*.h tests/emu/shim/*.h) \
		kernels/attention_mma.cu $(wildcard kernels/*.cuh) kernels/cuda_internal.h \
		tests/unit/t.h $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -DSUPKIT_EMU -Itests/emu/shim -Itests/unit $(CXXFLAGS) -o $@ \
		$< tests/emu/simt.cc $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)

# The whole CUDA backend on the CPU (tests/emu/cudart.h): kernels/*.cu with
# their launches rewritten by tests/emu/launch.sed, built as host C++ against
# the emulated CUDA runtime, cuBLAS and CUB, and tests/gpu/test_cuda_ops.c
# linked with it (kernels/backend_cuda.cu registers "cuda" as it does on a GPU) as
# build/tests/emu/test_cuda_ops_emu: the GPU op tests in make test, its
# training tests in make test-emu (tests/run.sh).
EMU_HDRS := $(wildcard tests/emu/*.h tests/emu/shim/*.h tests/emu/shim/cub/device/*.cuh) \
	$(wildcard kernels/*.h kernels/*.cuh) trainer/backend.h trainer/idx_sort.h trainer/optim_elem.h
EMU_RT_OBJS := $(patsubst kernels/%.cu,$(BUILD)/emu/%.o,$(CU_SRCS)) $(BUILD)/emu/simt.o \
	$(BUILD)/emu/cudart.o
EMU_CXX = $(CXX) $(CPPFLAGS) -DSUPKIT_EMU -DSUPKIT_EMU_RT -Itests/emu/shim $(CXXFLAGS) $(PKG_CFLAGS) \
	-Wno-sign-compare
$(BUILD)/emu/%.cc: kernels/%.cu tests/emu/launch.sed
	@mkdir -p $(@D)
	{ echo '#line 1 "$<"'; sed -f tests/emu/launch.sed $<; } >$@.tmp && mv $@.tmp $@
$(BUILD)/emu/%.o: $(BUILD)/emu/%.cc $(EMU_HDRS)
	$(EMU_CXX) -c -o $@ $<
$(BUILD)/emu/optim.o: CXXFLAGS += -ffp-contract=off
# the emulated GEMMs' fixed order (tests/emu/gemm.h): no contracted multiply-adds
$(BUILD)/emu/cudart.o $(BUILD)/tests/emu/test_cudart_emu: CXXFLAGS += -ffp-contract=off
$(BUILD)/emu/%.o: tests/emu/%.cc $(EMU_HDRS)
	@mkdir -p $(@D)
	$(EMU_CXX) -c -o $@ $<
$(BUILD)/emu/test_cuda_ops.o: tests/gpu/test_cuda_ops.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -MF $@.d -c -o $@ $<
$(BUILD)/tests/emu/test_cuda_ops_emu: $(BUILD)/emu/test_cuda_ops.o $(EMU_RT_OBJS) \
		$(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(EMU_RT_OBJS) $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
EMU_TESTS += $(BUILD)/tests/emu/test_cuda_ops_emu
# supkit-train on the emulated device, for tests/cli/train_cuda_emu.sh
$(BUILD)/emu/cmd_train.o: trainer/cmd_train.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MF $@.d -c -o $@ $<
$(BUILD)/emu/bin/supkit-train: $(BUILD)/emu/cmd_train.o $(EMU_RT_OBJS) $(BUILD)/libtrainer.a \
		$(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(EMU_RT_OBJS) $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
# supkit-eval on the emulated device (tests/gpu/train_cli.sh evaluates the
# run it trains with both)
$(BUILD)/emu/cmd_eval.o: trainer/cmd_eval.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MF $@.d -c -o $@ $<
$(BUILD)/emu/bin/supkit-eval: $(BUILD)/emu/cmd_eval.o $(EMU_RT_OBJS) $(BUILD)/libtrainer.a \
		$(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(EMU_RT_OBJS) $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
# gpu_bench on the emulated device, for tests/cli/bench_gpu_emu.sh (its code
# paths at small sizes, without a GPU)
$(BUILD)/emu/gpu_bench.o: tests/gpu/gpu_bench.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MF $@.d -c -o $@ $<
$(BUILD)/emu/bin/gpu_bench: $(BUILD)/emu/gpu_bench.o $(EMU_RT_OBJS) $(BUILD)/libtrainer.a \
		$(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(EMU_RT_OBJS) $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
EMU_TOOLS := $(BUILD)/emu/bin/supkit-train $(BUILD)/emu/bin/supkit-eval $(BUILD)/emu/bin/gpu_bench

# dev/cuda: kernel variants that are not in the product (dev/cuda/README.md)
# and the mains that check and time them against the product's kernels.
# On the emulated device as $(BUILD)/emu/dev/bin/* (built with the tests;
# tests/cli/dev_cuda_emu.sh runs them under make test-emu); with GPU=1 and
# nvcc as $(BUILD)/dev/bin/* (make dev-cuda GPU=1), linked with the GPU
# build's kernels. make cuda compiles their .cu with nvcc as it does
# kernels/ (compile only: tests/cli/cuda_compile.sh).
DEV_CU_SRCS := $(wildcard dev/cuda/*.cu)
DEV_HDRS := $(wildcard dev/cuda/*.h) kernels/attention_mma.cuh
DEV_MAINS := $(patsubst dev/cuda/%.c,%,$(wildcard dev/cuda/*.c))
DEV_CU_OBJS := $(patsubst %.cu,$(CU_BUILD)/%.o,$(DEV_CU_SRCS))
DEV_EMU_OBJS := $(patsubst dev/cuda/%.cu,$(BUILD)/emu/dev/%.o,$(DEV_CU_SRCS))
$(BUILD)/emu/dev/%.cc: dev/cuda/%.cu tests/emu/launch.sed
	@mkdir -p $(@D)
	{ echo '#line 1 "$<"'; sed -f tests/emu/launch.sed $<; } >$@.tmp && mv $@.tmp $@
$(BUILD)/emu/dev/%.o: $(BUILD)/emu/dev/%.cc $(EMU_HDRS) $(DEV_HDRS)
	$(EMU_CXX) -c -o $@ $<
$(BUILD)/emu/devmain/%.o: dev/cuda/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -MF $@.d -c -o $@ $<
$(BUILD)/emu/dev/bin/%: $(BUILD)/emu/devmain/%.o $(DEV_EMU_OBJS) $(EMU_RT_OBJS) \
		$(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) -o $@ $< $(DEV_EMU_OBJS) $(EMU_RT_OBJS) $(BUILD)/libtrainer.a $(BUILD)/libdata.a \
		$(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
# the variants' kernels launched one by one on the emulator (as
# tests/emu/test_mma_emu does the product's)
$(BUILD)/emu/dev/bin/kernels_emu: dev/cuda/kernels_emu.cc dev/cuda/attention_variants.cu \
		kernels/attention_mma.cu $(DEV_HDRS) tests/emu/simt.cc \
		$(wildcard tests/emu/*.h tests/emu/shim/*.h) kernels/cuda_internal.h tests/unit/t.h \
		$(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) -DSUPKIT_EMU -Itests/emu/shim -Itests/unit $(CXXFLAGS) -o $@ \
		$< tests/emu/simt.cc $(BUILD)/libtrainer.a $(BUILD)/libdata.a $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)
DEV_EMU_BINS := $(patsubst %,$(BUILD)/emu/dev/bin/%,$(DEV_MAINS) kernels_emu)
EMU_TOOLS += $(DEV_EMU_BINS)
# kept after the build (not removed as intermediates of the pattern rules
# above): a later link or a second make running beside this one finds them
.SECONDARY: $(DEV_EMU_OBJS) $(patsubst %,$(BUILD)/emu/devmain/%.o,$(DEV_MAINS)) \
	$(DEV_EMU_OBJS:.o=.cc) $(patsubst kernels/%.cu,$(BUILD)/emu/%.cc,$(CU_SRCS))
$(CU_BUILD)/dev/cuda/%.o: dev/cuda/%.cu $(DEV_HDRS) $(wildcard kernels/*.h kernels/*.cuh)
	@mkdir -p $(@D)
	set -o pipefail; $(NVCC) $(NVCCFLAGS) -c -o $@ $< 2>&1 | tee $@.log
$(BUILD)/dev/bin/%: dev/cuda/%.c $(DEV_CU_OBJS) $(BUILD)/libkernels.a $(call archives,trainer)
	@mkdir -p $(@D) $(BUILD)/dev
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -MF $(BUILD)/dev/$*.d -o $@ $< $(DEV_CU_OBJS) \
		$(KERNELS_LINK) $(call archives,trainer) $(LDFLAGS) $(LIBS)

TOOLS := $(BIN)/supkit $(foreach m,$(MODULES),$($(m)_TOOLS))
UNIT_TESTS := $(foreach m,$(MODULES),$($(m)_TESTS)) $(EMU_TESTS)
ALL_OBJS := $(foreach m,$(MODULES),$($(m)_OBJS))

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(CU_BUILD)/kernels/%.o: kernels/%.cu $(wildcard kernels/*.h kernels/*.cuh trainer/backend.h trainer/idx_sort.h trainer/optim_elem.h)
	@mkdir -p $(@D)
	set -o pipefail; $(NVCC) $(NVCCFLAGS) -c -o $@ $< 2>&1 | tee $@.log

# the optimizer's passes round as the host does: no contracted multiply-adds
$(CU_BUILD)/kernels/optim.o: NVCCFLAGS += -fmad=false

$(BIN)/supkit: front/supkit.c $(BUILD)/liblib.a
	@mkdir -p $(@D) $(BUILD)/front
	$(CC) $(CPPFLAGS) $(CFLAGS) -MF $(BUILD)/front/supkit.d -o $@ $< $(BUILD)/liblib.a $(LDFLAGS) $(LIBS)

# The man pages: those written by hand (man/*.1, man/*.5) and three
# assembled from the fragments in man/src by scripts/make-man.sh (build
# outputs, not committed: .gitignore).
MAN_GEN := man/supkit-audit.1 man/supkit-train.1 man/supkit-formats.5
MAN1 := $(sort $(wildcard man/*.1) $(filter %.1,$(MAN_GEN)))
MAN5 := $(sort $(wildcard man/*.5) $(filter %.5,$(MAN_GEN)))
$(MAN_GEN): scripts/make-man.sh $(wildcard man/src/*)
	bash scripts/make-man.sh $@
man: $(MAN_GEN)

.PHONY: all build build-only check-deps tools tests cuda dev-cuda man deps test test-run test-emu demo bench clean install fuzz \
	fuzz-run dep-flags
# The dependencies' compile flags (line 1) and link flags (line 2), for the
# scripts that compile a driver against the archives (tests/gpu/lib.sh).
dep-flags:
	@echo '$(PKG_CFLAGS) $(EXTRA_CFLAGS)'
	@echo '$(LDFLAGS) $(LIBS)'

all: build

# build and install check the packages first and stop when one is missing;
# only deps, test and demo install. build-only: the build
# without the check (after deps).
build: check-deps
	@$(MAKE) --no-print-directory build-only

check-deps:
	@bash scripts/install-deps.sh --check --build

# tests/fuzz/fuzz.mk (libFuzzer harnesses) adds FUZZ_REPLAY: plain drivers that replay the
# committed regression inputs inside make test; and the fuzz / fuzz-run targets.
-include tests/fuzz/fuzz.mk

build-only: tools tests man cuda $(FUZZ_REPLAY)
ifeq ($(CAIRO_LIBS),)
	@echo "✗ supkit plot skipped: cairo not found (pkg-config cairo freetype2; Debian libcairo2-dev)"
endif
ifeq ($(MPI_LIBS),)
	@echo "✗ supkit train over MPI skipped: Open MPI not found (pkg-config ompi-c; Debian libopenmpi-dev): one process only"
endif

tools: $(TOOLS)
tests: $(UNIT_TESTS) $(EMU_TOOLS)

# CUDA sources compile wherever nvcc exists (CI cannot run them).
cuda:
ifneq ($(NVCC),)
	@if [ -n "$(CU_SRCS)" ]; then $(MAKE) --no-print-directory $(CU_OBJS) && echo "✓ CUDA backend compiled with $(NVCC)"; else echo "✓ nvcc found ($(NVCC)); no CUDA sources yet"; fi
	@if [ -n "$(DEV_CU_SRCS)" ]; then $(MAKE) --no-print-directory $(DEV_CU_OBJS) && echo "✓ dev/cuda variants compiled with $(NVCC)"; fi
else
	@echo "✗ CUDA backend skipped: nvcc not found (set CUDA_HOME or PATH)"
endif

# dev/cuda's check and benchmark (dev/cuda/README.md): on the emulated
# device, or with GPU=1 on a GPU
dev-cuda:
ifeq ($(GPU),1)
ifneq ($(NVCC),)
	@$(MAKE) --no-print-directory $(patsubst %,$(BUILD)/dev/bin/%,$(DEV_MAINS))
	@echo "✓ dev/cuda built for a GPU: $(patsubst %,$(BUILD)/dev/bin/%,$(DEV_MAINS))"
else
	@echo "✗ dev/cuda needs nvcc for GPU=1 (set CUDA_HOME or PATH)"; exit 1
endif
else
	@$(MAKE) --no-print-directory $(DEV_EMU_BINS)
	@echo "✓ dev/cuda built for the emulated device: $(DEV_EMU_BINS)"
endif

deps:
	@bash scripts/install-deps.sh

test: deps
	@$(MAKE) --no-print-directory build-only
	@$(MAKE) --no-print-directory test-run

test-run:
	@BIN=$(BIN) BUILD=$(BUILD) SAN=$(SAN) bash tests/run.sh

# the whole-runtime and whole-training emulation of the CUDA backend
# (tests/run.sh, EMU=1): opt-in, make test runs the emulator's kernel checks
test-emu: deps
	@$(MAKE) --no-print-directory build-only
	@BIN=$(BIN) BUILD=$(BUILD) SAN=$(SAN) EMU=1 bash tests/run.sh

demo:
	@bash scripts/install-deps.sh --demo
	@$(MAKE) --no-print-directory build-only
	@BIN=$(BIN) BUILD=$(BUILD) GPU=$(GPU) bash scripts/demo.sh

bench:
	@bash scripts/install-deps.sh --check
	@$(MAKE) --no-print-directory build-only
	@BIN=$(BIN) BUILD=$(BUILD) GPU=$(GPU) bash bench/run.sh

# configs/ keeps its layout under share/supkit: baseline.cfg and each arm's
# .cfg and .diff (supkit-train(1), CONFIGURATION: where --arm looks)
SHARE := $(DESTDIR)$(PREFIX)/share/supkit
install: check-deps
	@$(MAKE) --no-print-directory tools man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MAN1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(PREFIX)/share/man/man5/
	install -d $(SHARE)/configs/arms/d6 $(SHARE)/configs/arms/d8
	install -m 644 configs/baseline.cfg $(SHARE)/configs/
	install -m 644 $(wildcard configs/arms/d6/*.cfg configs/arms/d6/*.diff) $(SHARE)/configs/arms/d6/
	install -m 644 $(wildcard configs/arms/d8/*.cfg configs/arms/d8/*.diff) $(SHARE)/configs/arms/d8/

clean:
	rm -rf build bin
	rm -f $(MAN_GEN)

# Dependency files. A tool's file (BUILD/<module>/cmd_<tool>.d) names its
# source first; once that source has moved to another module the file would
# ask for a source that is gone, so it is read only while the source exists.
DEP_FILES := $(shell find $(BUILD) -name '*.d' 2>/dev/null)
dep_live = $(if $(and $(filter cmd_%,$(notdir $(1))),$(filter-out %.o.d,$(1))),$(wildcard $(patsubst $(BUILD)/%.d,%.c,$(1))),x)
-include $(foreach d,$(DEP_FILES),$(if $(call dep_live,$(d)),$(d)))
