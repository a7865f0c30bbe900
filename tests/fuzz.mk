# Every libFuzzer target also links with tests/fuzz/replay.c, a main that
# replays seeds, mutations of them and random inputs without libFuzzer, so
# the normal and ASan+UBSan builds compile and run every target
# (tests/integration/test_fuzz_replay.sh); `make fuzz` explores with
# libFuzzer (clang).
ifneq ($(SANITIZE),fuzz)
FUZZ_NAMES := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
$(foreach f,$(FUZZ_NAMES),$(eval tests/fuzz/replay/$(f)_SRCS := tests/fuzz/$(f).c tests/fuzz/replay.c))
TOOLS += $(addprefix tests/fuzz/replay/,$(FUZZ_NAMES))
endif
