# fuzz.mk: the fuzz harnesses (tests/fuzz/fuzz_NAME.c), included by the Makefile.
#
#   FUZZ_REPLAY      $(BUILD)/fuzz/replay_NAME: the harness + tests/fuzz/driver.c
#                    with $(CC) $(CFLAGS) (so SAN=1 gives ASan+UBSan), linked with
#                    the module's archives; tests/cli/fuzz_regressions.sh replays
#                    the seeds and tests/fuzz/regressions/NAME/ through them.
#   make fuzz        libFuzzer binaries build/fuzz/lf/fuzz_NAME (clang,
#                    -fsanitize=fuzzer,address,undefined; the module sources are
#                    compiled again with clang into build/fuzz/lf/obj).
#   make fuzz-run SECONDS=N [FUZZ=NAME...]
#                    run each for N seconds (tests/fuzz/run.sh): seeds from
#                    tests/fuzz/seeds.txt, crashes and hangs minimised into
#                    tests/fuzz/regressions/NAME/.
#
# A harness is built when its module is named below (FUZZ_MOD_NAME); a
# tests/fuzz/fuzz_*.c without an entry is left out (add the line).

FUZZ_MOD_udiff := replay
FUZZ_MOD_diffs := replay
FUZZ_MOD_manifest := supplements
FUZZ_MOD_records := supplements
FUZZ_MOD_zipdir := supplements
FUZZ_MOD_safetensors := lib
FUZZ_MOD_shard := data
FUZZ_MOD_ranks := data
FUZZ_MOD_encoder := data
FUZZ_MOD_corpus := data
FUZZ_MOD_config := trainer
FUZZ_MOD_stats := audit
FUZZ_MOD_checkpoint := trainer
FUZZ_MOD_loader_state := data
FUZZ_MOD_parquet := data
FUZZ_MOD_ckpt_state := trainer
FUZZ_MOD_pickle := data
FUZZ_MOD_sweep := sweep
FUZZ_MOD_optim := trainer
FUZZ_MOD_token_bytes := data
FUZZ_MOD_decode := data
FUZZ_MOD_geometry := audit
FUZZ_MOD_compute := audit
FUZZ_MOD_verify_walk := supplements

FUZZ_ALL := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES := $(foreach n,$(FUZZ_ALL),$(if $(FUZZ_MOD_$(n)),$(n)))
FUZZ_REPLAY := $(patsubst %,$(BUILD)/fuzz/replay_%,$(FUZZ_NAMES))

# libFuzzer build: clang objects of their own (fuzzer coverage + ASan + UBSan),
# apart from the gcc objects in $(BUILD).
FUZZ_CC ?= clang
FUZZ_LF := build/fuzz/lf
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=c11 -g -O1 $(FUZZ_SAN) $(PKG_CFLAGS) -MMD -MP
FUZZ_BINS := $(patsubst %,$(FUZZ_LF)/fuzz_%,$(FUZZ_NAMES))
fuzz_archives = $(foreach m,$(DEPS_$(1)),$(FUZZ_LF)/lib$(m).a)

define fuzz_rules
$$(BUILD)/fuzz/replay_$(1): tests/fuzz/fuzz_$(1).c $$(BUILD)/tests/fuzz/driver.o $$(call archives,$$(FUZZ_MOD_$(1)))
	@mkdir -p $$(@D)
	$$(CC) $$(CPPFLAGS) $$(CFLAGS) -MF $$@.d -o $$@ $$< $$(BUILD)/tests/fuzz/driver.o $$(call archives,$$(FUZZ_MOD_$(1))) $$(LDFLAGS) $$(LIBS)
$$(FUZZ_LF)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $$(call fuzz_archives,$$(FUZZ_MOD_$(1)))
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(CPPFLAGS) $$(FUZZ_CFLAGS) -fsanitize=fuzzer -MF $$@.d -o $$@ $$< $$(call fuzz_archives,$$(FUZZ_MOD_$(1))) $$(LIBS)
endef
$(foreach n,$(FUZZ_NAMES),$(eval $(call fuzz_rules,$(n))))

define fuzz_module_rules
$$(FUZZ_LF)/lib$(1).a: $$(patsubst %.c,$$(FUZZ_LF)/obj/%.o,$$($(1)_SRCS))
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call fuzz_module_rules,$(m))))

$(FUZZ_LF)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

fuzz: $(FUZZ_BINS)

SECONDS ?= 60
fuzz-run: fuzz
	@FUZZ_LF=$(FUZZ_LF) bash tests/fuzz/run.sh -t $(SECONDS) $(or $(FUZZ),$(FUZZ_NAMES))

-include $(wildcard $(FUZZ_LF)/*.d $(BUILD)/fuzz/*.d)
