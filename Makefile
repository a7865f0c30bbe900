# dptop — top-level build.
#
# Each top-level directory is one module.  Its `module.mk` names the sources of
# the module library (`<mod>_SRCS`) and any programs, shared libraries, tests
# helpers it adds (PROGRAMS / SHLIBS / TOOLS with `<name>_SRCS`).  This file
# turns those lists into rules; nothing module-specific lives here.
#
#   make            release build into build/
#   make asan       ASan+UBSan build (clang) into build/asan/
#   make test       deps, both builds, every unit and integration test
#   make bench      deps, release build, every benchmark
#   make demo       deps, release build, dptop on a local simulated cluster
#   make lint       clang-format check and cppcheck
#   make fuzz       every decoder's libFuzzer target for FUZZ_SECONDS each
#   make deps       install the Debian packages that are missing
#   make install    the programs, libraries, header, pkg-config file, man
#                   pages, example configuration and systemd units under
#                   DESTDIR/PREFIX (PREFIX default /usr/local); make uninstall
#   make deb        the Debian package, build/dptop_<version>_<arch>.deb

BUILD    ?= build
SANITIZE ?= 0
# Builds use every core (the tests themselves run one at a time).
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CC       ?= cc
AR       ?= ar

CPPFLAGS := -D_GNU_SOURCE -I. -I/usr/include/json-c
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS   := -std=c11 -O2 -g $(WARN) -fPIC -pthread -MMD -MP
LDFLAGS  := -pthread
ifeq ($(SANITIZE),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CFLAGS   := -std=c11 -O1 -g $(WARN) -fPIC -pthread -MMD -MP $(SANFLAGS) -DDP_SANITIZE=1
LDFLAGS  += $(SANFLAGS)
endif
# libFuzzer build (clang): module code instrumented, targets linked with the fuzzer main.
ifeq ($(SANITIZE),fuzz)
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CFLAGS   := -std=c11 -O1 -g $(WARN) -fPIC -pthread -MMD -MP $(SANFLAGS) -DDP_SANITIZE=1
LDFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all
endif
LDLIBS   := -lzmq -ljson-c -lz -lncursesw -ltinfo -lm -ldl -lrt

# Link order does not matter: module libraries are linked as one group.
ALL_MODULES := base bus clock gpu node tui
MODULES  ?= $(ALL_MODULES)
PROGRAMS :=
SHLIBS   :=
TOOLS    :=

include $(wildcard $(addsuffix /module.mk,$(MODULES)))
include $(wildcard tests/*.mk bench/*.mk)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

define module_rules
$(1)_OBJS := $$(call obj,$$($(1)_SRCS))
$(BUILD)/lib/libdp$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(if $($(m)_SRCS),$(eval $(call module_rules,$(m)))))
MODLIBS := $(foreach m,$(MODULES),$(if $($(m)_SRCS),$(BUILD)/lib/libdp$(m).a))
LINKMODS := -Wl,--start-group $(MODLIBS) -Wl,--end-group

# Programs: $(BUILD)/<name>; shared libraries: $(BUILD)/<name>.so;
# tools (test and bench helpers): $(BUILD)/<dir>/<name>.
define program_rules
$(BUILD)/$(1): $$(call obj,$$($(1)_SRCS)) $$(MODLIBS)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$(call obj,$$($(1)_SRCS)) $$(LINKMODS) $$(or $$($(1)_LDLIBS),$$(LDLIBS))
endef
define shlib_rules
$(BUILD)/$(1).so: $$(call obj,$$($(1)_SRCS)) $$(MODLIBS)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -shared -Wl,-soname,$(1).so -o $$@ $$(call obj,$$($(1)_SRCS)) $$(LINKMODS) $$(or $$($(1)_LDLIBS),$$(LDLIBS))
endef
define tool_rules
$(BUILD)/$(1): $$(call obj,$$($(1)_SRCS)) $$(MODLIBS)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) $$($(1)_LDFLAGS) -o $$@ $$(call obj,$$($(1)_SRCS)) $$(LINKMODS) $$(or $$($(1)_LDLIBS),$$(LDLIBS))
endef
$(foreach p,$(PROGRAMS),$(eval $(call program_rules,$(p))))
$(foreach s,$(SHLIBS),$(eval $(call shlib_rules,$(s))))
$(foreach t,$(TOOLS),$(eval $(call tool_rules,$(t))))

# Unit tests: one cmocka program per tests/test_<module>.c.
UNIT_SRCS  := $(wildcard tests/test_*.c)
# With a module subset (MODULES=...), only the tests of those modules build.
unit_wanted = $(if $(filter $(ALL_MODULES),$(1)),$(filter $(MODULES),$(1)),$(1))
UNIT_TESTS := $(foreach t,$(UNIT_SRCS),$(if $(call unit_wanted,$(patsubst tests/test_%.c,%,$(t))),$(patsubst tests/%.c,$(BUILD)/tests/%,$(t))))
$(BUILD)/tests/test_%: $(BUILD)/obj/tests/test_%.o $(MODLIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LINKMODS) -lcmocka $(LDLIBS)

# Benchmarks: one program per bench/bench_<name>.c.
BENCH_SRCS := $(wildcard bench/bench_*.c)
# A benchmark named bench_<module>[_x].c builds only when its module does.
bench_mod  = $(firstword $(subst _, ,$(patsubst bench/bench_%.c,%,$(1))))
BENCHES    := $(foreach b,$(BENCH_SRCS),$(if $(call unit_wanted,$(call bench_mod,$(b))),$(patsubst bench/%.c,$(BUILD)/bench/%,$(b))))
$(BUILD)/bench/bench_%: $(BUILD)/obj/bench/bench_%.o $(MODLIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(LINKMODS) $(LDLIBS)

# libFuzzer targets: one per decoder of outside input, tests/fuzz/fuzz_<name>.c.
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZERS    := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
$(BUILD)/fuzz/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(MODLIBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(LINKMODS) $(LDLIBS)

# Order-only: the packages are checked (quickly; nothing is installed twice)
# before anything compiles, without making every object out of date.
$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $($(notdir $(basename $<))_CFLAGS) -c -o $@ $<

ALL_TARGETS := $(MODLIBS) $(addprefix $(BUILD)/,$(PROGRAMS)) \
               $(addprefix $(BUILD)/,$(addsuffix .so,$(SHLIBS))) \
               $(addprefix $(BUILD)/,$(TOOLS))

.PHONY: all asan tests-build bench-build fuzz-build test bench demo lint deps fuzz clean screenshots \
        install uninstall deb
.DEFAULT_GOAL := all
.SECONDARY:

all: $(ALL_TARGETS)

tests-build: all $(UNIT_TESTS)

bench-build: all $(BENCHES)

# The sanitizer build is clang's: its UBSan checks more than gcc's (a zero
# offset applied to a null pointer, which gcc's passes, for one).  A build
# directory made by another compiler is made again.
SAN_CC ?= clang
asan:
	@bash scripts/deps.sh clang libclang-rt-14-dev
	@[ "$$(cat build/asan/.cc 2>/dev/null)" = "$(SAN_CC)" ] || \
	  { rm -rf build/asan; mkdir -p build/asan; echo "$(SAN_CC)" > build/asan/.cc; }
	$(MAKE) -j$(JOBS) CC=$(SAN_CC) SANITIZE=1 BUILD=build/asan tests-build

deps:
	@bash scripts/deps.sh

# The tests also run a real framework (torch.distributed, gloo ranks) and
# read the Perfetto export with protoc --decode_raw.
test: deps
	@bash scripts/deps.sh python3-torch protobuf-compiler
	$(MAKE) -j$(JOBS) tests-build
	$(MAKE) asan
	bash tests/run.sh build build/asan

bench: deps
	$(MAKE) bench-build
	bash bench/run.sh build

fuzz-build: $(FUZZERS)

# Each decoder's fuzzer for FUZZ_SECONDS (default 20) with clang's libFuzzer.
FUZZ_SECONDS ?= 20
fuzz:
	@bash scripts/deps.sh clang libclang-rt-14-dev
	$(MAKE) CC=clang SANITIZE=fuzz BUILD=build/fuzz fuzz-build
	bash tests/fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

demo: deps
	$(MAKE) all
	$(BUILD)/dptop --demo

screenshots: deps
	$(MAKE) all
	bash scripts/screenshots.sh build

LINT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
lint:
	@bash scripts/deps.sh clang-format cppcheck
	@[ -n "$(LINT_FILES)" ] || { echo "lint: no files (not a git checkout?)"; exit 1; }
	clang-format --dry-run -Werror $(LINT_FILES)
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
	  --std=c11 --inline-suppr --suppress=missingIncludeSystem -D__GNUC__ -I. \
	  $(filter %.c,$(LINT_FILES))

# Installation.  The configuration example goes to PREFIX/share/dptop (the
# package puts it in /etc/dptop); units go where systemd looks under PREFIX.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
LIBDIR   = $(PREFIX)/lib
INCDIR   = $(PREFIX)/include
MANDIR   = $(PREFIX)/share/man
DATADIR  = $(PREFIX)/share/dptop
UNITDIR  = $(PREFIX)/lib/systemd/system
VERSION  = $(shell sed -n 's/^\#define DP_VERSION *"\(.*\)"/\1/p' base/base.h)
INSTALL_PROGRAMS = dptop dpnode dpclock
INSTALL_LIBS     = $(filter-out $(BUILD)/libdptrace_cupti.so,$(BUILD)/libdptrace.so) \
                   $(wildcard $(BUILD)/libdptrace_cupti.so)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(DATADIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(addprefix $(BUILD)/,$(INSTALL_PROGRAMS)) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(INSTALL_LIBS) $(DESTDIR)$(LIBDIR)/
	install -m 0644 gpu/dptrace.h $(DESTDIR)$(INCDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' dist/dptrace.pc.in \
	  >$(DESTDIR)$(LIBDIR)/pkgconfig/dptrace.pc
	install -m 0644 docs/dptop.1 docs/dpnode.1 docs/dpclock.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/dptrace.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 dist/dptop.json dist/dpnode.default $(DESTDIR)$(DATADIR)/
	sed -e 's|/usr/bin/dpnode|$(BINDIR)/dpnode|' dist/dpnode.service \
	  >$(DESTDIR)$(UNITDIR)/dpnode.service
	sed -e 's|/usr/bin/dpnode|$(BINDIR)/dpnode|' dist/dpnode-master.service \
	  >$(DESTDIR)$(UNITDIR)/dpnode-master.service

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(INSTALL_PROGRAMS)) \
	  $(DESTDIR)$(LIBDIR)/libdptrace.so $(DESTDIR)$(LIBDIR)/libdptrace_cupti.so \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/dptrace.pc $(DESTDIR)$(INCDIR)/dptrace.h \
	  $(addprefix $(DESTDIR)$(MANDIR)/man1/,dptop.1 dpnode.1 dpclock.1) \
	  $(DESTDIR)$(MANDIR)/man3/dptrace.3 \
	  $(DESTDIR)$(DATADIR)/dptop.json $(DESTDIR)$(DATADIR)/dpnode.default \
	  $(DESTDIR)$(UNITDIR)/dpnode.service $(DESTDIR)$(UNITDIR)/dpnode-master.service
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null

deb: all
	@bash scripts/deps.sh dpkg-dev
	bash scripts/deb.sh $(BUILD)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
