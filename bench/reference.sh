#!/bin/sh
# bench_reference: the native reference trainer's speed (make bench-reference).
#   sh bench/reference.sh BIN [RUNS]   (make bench-reference)
# Trains 3 epochs on mnist-digits and 1 epoch on fashion-mnist with the tutorial's defaults,
# RUNS times each (default 3), and prints the median training images/s (the time of the
# training loop only: data loading and the test pass are excluded) and the test accuracy.
set -eu
BIN=${1:?usage: bench/reference.sh BIN [RUNS]}
RUNS=${2:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

field() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$2" | head -n 1; }

bench() { # name dataset epochs
    i=1
    : >"$TMP/$1.rates"
    while [ "$i" -le "$RUNS" ]; do
        "$BIN" mnist --reference --dataset "$2" --epochs "$3" --json "$TMP/$1.$i.json" >/dev/null
        field train_images_per_second "$TMP/$1.$i.json" >>"$TMP/$1.rates"
        i=$((i + 1))
    done
    median=$(sort -n "$TMP/$1.rates" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    all=$(sort -n "$TMP/$1.rates" | tr '\n' ' ')
    acc=$(field test_accuracy "$TMP/$1.1.json")
    imgs=$(field images_trained "$TMP/$1.1.json")
    printf '%-14s %d epoch(s), %s images: median %.0f images/s (runs: %s) test accuracy %.2f%%\n' \
        "$1" "$3" "$imgs" "$median" "$all" "$acc"
}

echo "bench-reference: native reference trainer, 1 thread, tutorial defaults, median of $RUNS"
bench mnist-digits mnist-digits 3
bench fashion-mnist fashion-mnist 1
