#!/bin/sh
# bench_mnist: the simulated MNIST run's speed against the reference trainer's (make bench-mnist,
# and make bench-speed with THREADS "1 2").
#   sh bench/mnist.sh BIN [RUNS] [THREADS]
# One epoch of mnist-digits with the tutorial's defaults, in the same invocation: the native
# reference trainer RUNS times (default 3, the median), then the run on one simulated Mk2 IPU,
# the tutorial's run pipelined over four, and that run with its layers planned over the whole
# IPU (--mapping planned, docs/planning.md), each once when it takes a minute or more (else
# RUNS times, the median), with each number of host threads in THREADS (a list such as "1 2";
# default: ipusim's own default, the online CPUs). Prints each one's training
# wall time (the training loop from the JSON's train_seconds; the simulated one includes
# building and compiling the graph, shown apart), training images per host second, the
# ratio simulated / reference of the wall times, and the speed-up from the first THREADS to
# each other. A benchmark, not a test: nothing is checked.
set -eu
BIN=${1:?usage: bench/mnist.sh BIN [RUNS] [THREADS]}
RUNS=${2:-3}
THREADS=${3:-default}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# NAME OPTIONS...: RUNS runs, or only one for the simulated run when it took 60 s or more;
# sets $secs (the median training time) and $runs
bench() {
    name=$1
    shift
    i=1
    : >"$TMP/$name.secs"
    while [ "$i" -le "$RUNS" ]; do
        "$BIN" mnist "$@" --dataset mnist-digits --epochs 1 --json "$TMP/$name.$i.json" >/dev/null
        s=$(field train_seconds "$TMP/$name.$i.json")
        echo "$s" >>"$TMP/$name.secs"
        if [ "$name" != reference ] && [ "$i" = 1 ] && awk "BEGIN { exit !($s >= 60) }"; then
            break
        fi
        i=$((i + 1))
    done
    secs=$(median "$TMP/$name.secs")
    runs=$(wc -l <"$TMP/$name.secs" | tr -d ' ')
}

echo "bench-mnist: 1 epoch of mnist-digits, tutorial defaults (batch 40 x 10 x 10)"
bench reference --reference
ref_s=$secs
ref_runs=$runs
ref_acc=$(field test_accuracy "$TMP/reference.1.json")
imgs=$(field images_trained "$TMP/reference.1.json")
# one simulated configuration, once for each THREADS: bench it and print its lines (label,
# then mnist's options)
sim() {
    config=$1 # (bench sets $name)
    shift
    first_s=
    for th in $THREADS; do
        if [ "$th" = default ]; then
            sim1 "$config" "$@"
        else
            sim1 "$config-t$th" "$@" --threads "$th"
        fi
        if [ -z "$first_s" ]; then
            first_s=$sim_s
        else
            printf '           speed-up from %s to %s host threads: %.2fx\n' \
                "${THREADS%% *}" "$th" "$(awk "BEGIN { print $first_s / $sim_s }")"
        fi
    done
}
sim1() {
    label=$1
    shift
    bench "$label" "$@"
    sim_s=$secs
    sim_runs=$runs
    j="$TMP/$label.1.json"
    sim_acc=$(field test_accuracy "$j")
    threads=$(field host_threads "$j")
    cycles=$(sed -n '/"train": {/,/"cycles"/s/^ *"cycles": \([0-9]*\),*$/\1/p' "$j" | head -n 1)
    sim_ips=$(field images_per_simulated_second "$j")
    compile=$(sed -n '/"compile": {/,/"seconds"/s/^ *"seconds": \([0-9.e+-]*\),*$/\1/p' "$j" | head -n 1)
    printf '%-10s %9.2f s  %8.1f images/s  test accuracy %.2f%%  (%s host thread%s; %s)\n' \
        "$label" "$sim_s" "$(awk "BEGIN { print $imgs / $sim_s }")" "$sim_acc" "$threads" \
        "$([ "$threads" = 1 ] || echo s)" \
        "$([ "$sim_runs" -lt "$RUNS" ] && echo "one run: it took over a minute" || echo "median of $sim_runs runs")"
    printf '           of which graph compile %.2f s; %s simulated cycles, %.0f images per simulated second\n' \
        "$compile" "$cycles" "$sim_ips"
    printf '           simulated / reference wall time: %.1f\n' "$(awk "BEGIN { print $sim_s / $ref_s }")"
}

printf 'reference  %9.2f s  %8.1f images/s  test accuracy %.2f%%  (1 host thread; median of %s runs)\n' \
    "$ref_s" "$(awk "BEGIN { print $imgs / $ref_s }")" "$ref_acc" "$ref_runs"
sim one-ipu --ipus 1
sim pipelined
sim planned --mapping planned
