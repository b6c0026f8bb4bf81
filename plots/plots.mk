# Standard sweeps and their plots (included by the top Makefile).
#
#   make sweep    run every bench/NAME.sweep into plots/out/NAME.csv with `ipusim sweep`
#                 (resuming one that was killed; starting over when the .sweep file or the
#                 ipusim binary is newer than its CSV)
#   make plots    render each plots/out/NAME.csv whose bench/NAME.sweep asks for a plot into
#                 plots/out/NAME.png and NAME.svg (gnuplot; plots/line.gp, plots/stacked.gp);
#                 statistics are titled as their tables name them (ipusim metrics);
#                 and the pictures of the profile in PROFILE_DIR (default profile, as
#                 `ipusim mnist --profile` writes it) when there is one (plots/profile.sh)
#
# Variables: SWEEPS=names (default: every bench/*.sweep), SWEEP_J=points at a time (default
# 2), SWEEP_DIR (bench), PLOT_OUT (plots/out, git-ignored). Format and how to add a sweep:
# docs/sweep.md.

SWEEP_DIR ?= bench
PLOT_OUT  ?= plots/out
SWEEP_J   ?= 2
PROFILE_DIR ?= profile
SWEEPS    ?= $(patsubst $(SWEEP_DIR)/%.sweep,%,$(sort $(wildcard $(SWEEP_DIR)/*.sweep)))

.PHONY: sweep plots

# Every sweep runs even when an earlier one has a failed point; the target then fails.
sweep: deps all
	@mkdir -p $(PLOT_OUT)
	@fail=0; for n in $(SWEEPS); do \
	  sh plots/sweep.sh $(BIN) $(SWEEP_DIR)/$$n.sweep $(PLOT_OUT)/$$n.csv $(SWEEP_J) || fail=1; \
	done; exit $$fail

# After `sweep` when both are asked for (make sweep plots).
# The binary lists the statistics' titles and units (ipusim metrics).
plots: deps all | $(filter sweep,$(MAKECMDGOALS))
	@mkdir -p $(PLOT_OUT)
	@IPUSIM=$(BIN) sh plots/render.sh $(SWEEP_DIR) $(PLOT_OUT) $(SWEEPS)
	@if [ -f $(PROFILE_DIR)/summary.json ]; then sh plots/profile.sh $(PROFILE_DIR); \
	 else echo "make plots: no profile in $(PROFILE_DIR) yet (ipusim mnist --profile)" >&2; fi

# The sweep suite tests the sweep module (bench/sweep/, in the library) and also runs
# `ipusim sweep` in-process, so it links the CLI's objects too; main.o's
# `main` is made local so the suite's own main() is the one that runs.
SWEEP_TEST_OBJ := $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJ)) $(BUILD)/tests/cli_table.o
$(BUILD)/tests/cli_table.o: $(BUILD)/cli/main.o
	@mkdir -p $(dir $@)
	objcopy --localize-symbol=main $< $@
$(BUILD)/tests/test_sweep: tests/test_sweep.c $(SWEEP_TEST_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(SWEEP_TEST_OBJ) $(LIB) -lcmocka $(LDLIBS)

# The profile suite calls the profile library (bench/profile/) and the sweep's reader directly
# and runs the binary, so it links the same objects as the sweep suite.
$(BUILD)/tests/test_profile: tests/test_profile.c $(SWEEP_TEST_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(SWEEP_TEST_OBJ) $(LIB) -lcmocka $(LDLIBS)
