# ipusim: top-level build.
#
#   make            build/ipusim and build/libipusim.a (-std=c11 -O2 -Wall -Wextra -Werror),
#                   NPROC compilers at once
#   make deps       install missing Debian packages (no-op when all are present): libnuma,
#                   cmocka, zlib, libinih, json-c, gnuplot, Open MPI
#   make data       fetch the real MNIST digits and Fashion-MNIST (workloads/mnist/mnist.mk)
#   make run        set up, then train the PopTorch tutorial's MNIST network pipelined over
#                   four simulated IPUs (ipusim mnist)
#   make test       set up, build and run every cmocka suite and the tests/isa/*.s programs,
#                   the MPI equivalence tests and the hostile-input suite (tests/hostile/)
#   make fuzz       libFuzzer targets (clang), FUZZ_SECONDS each (default 60)
#   make bench-speed   simulator speed benchmark (bench/speed.c, then bench/mnist.sh with 1 and
#                      2 threads); bench-reference, bench-mnist: MNIST (workloads/mnist/mnist.mk)
#   make bench-mpi     scale-out over MPI ranks (bench/mpi.sh): POD16 with 1 and 2 ranks,
#                      memory per rank on a POD64 (POD=N)
#   make docs       regenerate docs/isa.md from isa/opcodes.def
#   make check-layers  fail if an include points up or across the layers (make test runs it)
#   make check-sources fail if a file cites figures from outside docs/sources.md (make test runs it)
#   make format     apply .clang-format; make check-format fails on an unformatted file
#
# Variables: BUILD=dir (default build), SAN=address,undefined | thread (sanitizer build),
# MPI=0 (build without MPI even where mpicc exists: one rank only),
# TESTS=substring (run only the suites whose name contains it), CC, OPT.

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
TESTS   ?=
FUZZ_SECONDS ?= 60
# the builds that `make test` and `make fuzz` start run this many compilers at once
NPROC   := $(shell nproc 2>/dev/null || echo 1)

# -ffp-contract=off: a * b + c stays a rounded product, then a rounded sum (no fused
# multiply-add), as the ISA's fp32 and the AMP's documented order need; GCC's ISO C modes
# imply it, clang's default does not.
CFLAGS  := -std=c11 $(OPT) -g -ffp-contract=off -Wall -Wextra -Werror -D_GNU_SOURCE -I. -pthread -MMD -MP
LDFLAGS :=
ifneq ($(SAN),)
CFLAGS  += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SAN)
endif
LDLIBS  := -lnuma -linih -ljson-c -lz -lm -pthread

# MPI (Open MPI from Debian): found through mpicc's wrapper flags; then base/rank.c is built
# for several ranks and everything links against it. MPI=0 builds without it (one rank).
MPI ?= 1
MPI_LIBS := $(if $(filter 1,$(MPI)),$(shell mpicc --showme:link 2>/dev/null))
MPI_CFLAGS := $(patsubst -I%,-isystem %,$(if $(MPI_LIBS),$(shell mpicc --showme:compile 2>/dev/null)))
ifneq ($(MPI_LIBS),)
LDLIBS  += $(MPI_LIBS)
endif

# The library: every layer below cli/, with the bench modules (bench/*/: the sweep engine);
# bench/*.c are benchmark programs of their own (BENCH_SRC).
LIB_SRC   := $(sort $(wildcard base/*.c hw/*.c isa/*.c fabric/*.c host/*.c workloads/*.c \
                               workloads/*/*.c bench/*/*.c))
CLI_SRC   := $(sort $(wildcard cli/*.c))
TEST_SRC  := $(sort $(wildcard tests/test_*.c))
BENCH_SRC := $(sort $(wildcard bench/*.c))

CODELETS  := $(sort $(wildcard workloads/*/*.s))
MACHINES  := $(sort $(wildcard machines/*.ini))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/codelets.o $(BUILD)/gen/machines.o
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/version.o
LIB       := $(BUILD)/libipusim.a
BIN       := $(BUILD)/ipusim
# The longest suites first (they started last and ran alone at the end: test_mnist_plan took
# 148 s of a 10-minute make test), then the rest in name order.
LONG_TESTS := test_mnist_gtrain test_mnist_balance test_mnist_plan test_mnist_sim test_cli
TEST_BINS := $(LONG_TESTS:%=$(BUILD)/tests/%) \
  $(filter-out $(LONG_TESTS:%=$(BUILD)/tests/%),$(TEST_SRC:tests/%.c=$(BUILD)/tests/%))
BENCH_BINS := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
SELECTED_TESTS := $(if $(TESTS),$(foreach t,$(TEST_BINS),$(if $(findstring $(TESTS),$(notdir $(t))),$(t))),$(TEST_BINS))

DEB_PKGS := libnuma-dev libcmocka-dev zlib1g-dev libinih-dev libjson-c-dev gnuplot-nox libopenmpi-dev openmpi-bin
FUZZ_PKGS := clang libclang-rt-14-dev

.PHONY: all build-all deps deps-fuzz run test fuzz bench-speed bench-mpi docs clean check-layers check-sources format check-format
.DEFAULT_GOAL := all

# `make` compiles NPROC files at once: the build runs in a sub-make with -j, while the top
# level stays in order (make run: deps, then data, then the build).
all:
	@$(MAKE) --no-print-directory -j$(NPROC) build-all
build-all: $(BIN) $(LIB) ipusim

# Install what is missing; sudo only when not root. Quiet no-op when everything is present.
define install_missing
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  echo "make deps: installing$$missing"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PKGS))

deps-fuzz: deps
	$(call install_missing,$(FUZZ_PKGS))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# The rank layer is the one file that sees MPI's header.
ifneq ($(MPI_LIBS),)
$(BUILD)/base/rank.o: CFLAGS += -DIPUSIM_MPI $(MPI_CFLAGS)
endif
# A build's MPI choice is part of it: rank.o is rebuilt when it changes.
$(BUILD)/base/rank.o: $(BUILD)/mpi.flags
$(BUILD)/mpi.flags: FORCE
	@mkdir -p $(dir $@)
	@echo '$(MPI_LIBS)' | cmp -s - $@ || echo '$(MPI_LIBS)' > $@
.PHONY: FORCE
FORCE:

# The interpreter's computed-goto dispatch predicts better when the compiler keeps one
# indirect jump per handler instead of merging them (callgrind --branch-sim: indirect
# mispredictions per simulated instruction fall from ~1 to ~0 on the bench loop).
INTERP_FLAGS := $(shell $(CC) -fno-crossjumping -fno-gcse -E -x c /dev/null >/dev/null 2>&1 && echo -fno-crossjumping -fno-gcse)
$(BUILD)/isa/interp.o: CFLAGS += $(INTERP_FLAGS)

# Embed the codelets: each workloads/DIR/NAME.s becomes a C string in a lookup table.
$(BUILD)/gen/codelets.c: $(CODELETS) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated by the Makefile from the workloads codelets; do not edit */'; \
	  echo '#include <string.h>'; echo '#include "workloads/codelets.h"'; \
	  echo 'static const struct { const char *name, *src; } table[] = {'; \
	  for f in $(CODELETS); do \
	    n=$$(basename $$f .s); echo "{\"$$n\","; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $$f; echo '},'; \
	  done; \
	  echo '};'; \
	  echo 'const char *wl_codelet(const char *name) {'; \
	  echo '    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)'; \
	  echo '        if (strcmp(table[i].name, name) == 0) return table[i].src;'; \
	  echo '    return NULL;'; echo '}'; } > $@.tmp && mv $@.tmp $@

# Embed the machine presets: each machines/NAME.ini becomes a C string (the INI files are the
# only place the numbers live; hw/machine_ini.c parses them).
$(BUILD)/gen/machines.c: $(MACHINES) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated by the Makefile from machines/NAME.ini; do not edit */'; \
	  echo '#include <string.h>'; echo '#include "hw/machine.h"'; \
	  echo 'static const struct { const char *name, *text; } table[] = {'; \
	  for f in $(MACHINES); do \
	    n=$$(basename $$f .ini); echo "{\"$$n\","; \
	    sed -e 's/\r$$//' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' -e 's/^/"/' \
	        -e 's/$$/\\n"/' $$f; echo '},'; \
	  done; \
	  echo '};'; \
	  echo 'const char *mach_preset_text(const char *name) {'; \
	  echo '    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)'; \
	  echo '        if (strcmp(table[i].name, name) == 0) return table[i].text;'; \
	  echo '    return NULL;'; echo '}'; \
	  echo 'const char *mach_preset_name(size_t i) {'; \
	  echo '    return i < sizeof table / sizeof table[0] ? table[i].name : NULL;'; echo '}'; \
	  } > $@.tmp && mv $@.tmp $@

# The program's version, as `ipusim --version` and every JSON report's config give it: the
# release and the commit it was built from (", modified" when the work tree differed from it).
# Rewritten only when it changes, so that a build of an unchanged tree relinks nothing.
VERSION := 0.16
$(BUILD)/gen/version.c: FORCE
	@mkdir -p $(dir $@)
	@c=$$(git rev-parse --short=12 HEAD 2>/dev/null) || c=""; \
	 if [ -z "$$c" ]; then v="$(VERSION)"; \
	 elif git diff --quiet HEAD -- 2>/dev/null; then v="$(VERSION) (commit $$c)"; \
	 else v="$(VERSION) (commit $$c, modified)"; fi; \
	 printf '/* generated by the Makefile; do not edit */\n#include "cli/cli.h"\nconst char *cli_version(void)\n{\n    return "%s";\n}\n' "$$v" > $@.tmp; \
	 if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

ipusim: $(BIN)
	@if [ "$(BUILD)" = build ]; then ln -sf build/ipusim ipusim; fi

$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) -lcmocka $(LDLIBS)

# The metrics suite checks the statistics' tables, which the CLI gathers (cli/metrics.c: the
# options' from the commands' tables), against the binary's reports: it links the CLI's
# objects but its main.
CLI_LIB_OBJ := $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJ))
$(BUILD)/tests/test_metrics: tests/test_metrics.c $(CLI_LIB_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CLI_LIB_OBJ) $(LIB) -lcmocka $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The MPI equivalence tests (tests/test_mpi.sh: mpirun -np 2 and 4 against one process; they
# skip themselves, saying why, without mpirun) run with the suites, or alone with TESTS=mpi;
# tests/mpi/host_release.c, a program on the library that the script runs, is built for them.
RUN_MPI_TEST := $(if $(TESTS),$(findstring $(TESTS),test_mpi),test_mpi)
# The hostile-input suite (tests/hostile/run.sh: every case's exit status, message and what is
# left on disk) runs with the suites, first, beside them (its cases mostly wait), or alone with
# TESTS=hostile; it runs $(BIN), so the sanitizer builds run it too.
RUN_HOSTILE := $(if $(TESTS),$(findstring $(TESTS),hostile),hostile)

# Every suite runs even when an earlier one fails; the target fails if any did. The suites run
# $(NPROC) at a time (tests/run_suites.sh: each one's output printed whole when it ends).
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) $(BIN) $(SELECTED_TESTS) $(if $(RUN_MPI_TEST),$(BUILD)/tests/mpi/host_release)
	@fail=0; bash tests/check_layers.sh || fail=1; bash tests/check_sources.sh || fail=1; \
	JOBS=$(NPROC) bash tests/run_suites.sh $(if $(RUN_HOSTILE),"bash tests/hostile/run.sh $(BIN)") \
	  $(SELECTED_TESTS) || fail=1; \
	if [ -n "$(RUN_MPI_TEST)" ]; then \
	  echo "== tests/test_mpi.sh"; bash tests/test_mpi.sh $(BIN) || { echo "FAILED: tests/test_mpi.sh"; fail=1; }; \
	fi; \
	if [ $$fail = 0 ]; then echo "make test: all suites passed"; else echo "make test: some suites FAILED"; fi; \
	exit $$fail

# One format (.clang-format): `make format` applies it, `make check-format` fails on a file
# that differs (CI runs it).
FORMAT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i --style=file $(FORMAT_SRC)
check-format:
	@command -v clang-format >/dev/null || $(MAKE) --no-print-directory deps-format
	@clang-format --style=file --dry-run -Werror $(FORMAT_SRC) && echo "check-format: every file is formatted"

deps-format:
	$(call install_missing,clang-format)

# Includes point downwards only (cli -> bench -> workloads -> host -> fabric -> hw -> isa -> base).
check-layers:
	@bash tests/check_layers.sh

check-sources:
	@bash tests/check_sources.sh

run: deps data all
	$(BIN) mnist

docs: $(BIN)
	$(BIN) isa-doc > docs/isa.md.tmp && mv docs/isa.md.tmp docs/isa.md

bench-speed: deps $(BIN) $(BENCH_BINS) $(MNIST_DIGITS_STAMP)
	$(BUILD)/bench/speed
	@sh bench/mnist.sh $(BIN) 3 "1 2"

# bench/mpi.sh: a POD16 over 1 and 2 MPI ranks, the replicated MNIST, memory per rank on a
# POD64 (POD=N for another size)
POD ?= 64
bench-mpi: deps $(BIN) $(MNIST_DIGITS_STAMP)
	@sh bench/mpi.sh $(BIN) 3 $(POD)

# libFuzzer targets: tests/fuzz/fuzz_*.c, each linked against the library built once with
# clang (objects instrumented for the fuzzer, in build-fuzz/lib, by this Makefile's own rules),
# with cli/opts.c: the option parser has a target of its own; it needs nothing else of cli/.
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIB  := build-fuzz/lib/libipusim.a build-fuzz/lib/cli/opts.o
build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB)
	clang -std=c11 -O1 -g -ffp-contract=off -D_GNU_SOURCE -I. -pthread -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  -o $@ $< build-fuzz/lib/cli/opts.o build-fuzz/lib/libipusim.a $(LDLIBS)
fuzz: deps-fuzz
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-fuzz/lib CC=clang OPT=-O1 SAN=fuzzer-no-link,address,undefined $(FUZZ_LIB)
	@$(MAKE) --no-print-directory -j$(NPROC) $(FUZZ_BINS)
	@printf '%s\n' $(FUZZ_BINS) | xargs -P$(NPROC) -I{} sh -c '\
	  f={}; n=$$(basename $$f); mkdir -p fuzz-corpus/$$n tests/fuzz/seeds/$$n; \
	  if ! $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	       fuzz-corpus/$$n tests/fuzz/seeds/$$n > build-fuzz/$$n.log 2>&1; then \
	    tail -n 40 build-fuzz/$$n.log; echo "FUZZ FAILED: $$n"; exit 255; \
	  fi; \
	  echo "== $$n, $(FUZZ_SECONDS)s: $$(grep -E "stat::number_of_executed_units" build-fuzz/$$n.log | tail -n 1)"'

clean:
	rm -rf build build-* ipusim

-include $(wildcard workloads/*/*.mk)
-include plots/plots.mk
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d)
