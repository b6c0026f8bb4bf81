#!/bin/sh
# bench_mpi: one simulated system over MPI ranks (make bench-mpi; docs/scale-out.md).
#   sh bench/mpi.sh BIN [RUNS] [POD]
# (a) bench/pod.s (a GEMM part on every tile, then a ring all-reduce over the IPU-Links) on a
#     POD16 (16 Mk2 IPUs, 4 boxes) with R = 1 and 2 ranks, RUNS runs each (default 3): the
#     run's host time (median, rank 0's), the share of it each rank spends in the ranks'
#     collectives (its meetings and the exchange between them: waiting for the slower rank
#     and moving bytes), and each rank's peak resident memory; the all-reduce's result is
#     checked, and the reports of R = 1 and 2 compared (they must be the same but host time).
#     The host's cores are shared out: each rank gets --threads cores / R (at least 1).
# (b) the replicated MNIST (2 replicas of the pipelined net, a box each, one host call) with
#     R = 1 and 2, the same figures as (a); the reports must be the same.
# (c) bench/pod.s on a POD of POD IPUs (default 64: 94,208 tiles), one run for each R of 1, 2
#     and 4: peak memory per rank and host time (R above the cores oversubscribes them, so
#     the time is not a speed-up there).
# A benchmark, not a test: it prints figures and stops at a wrong result, nothing else.
set -eu
BIN=${1:?usage: bench/mpi.sh BIN [RUNS] [POD]}
RUNS=${2:-3}
POD=${3:-64}
PROG=bench/pod.s
if ! command -v mpirun >/dev/null 2>&1; then
    echo "bench-mpi: skipped: no mpirun here (make deps installs Open MPI)"
    exit 0
fi
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" = 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
CORES=$(nproc)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# R OUT ARGS...: one run of `ipusim ARGS` on R ranks (1: no mpirun), with cores / R threads
launch() {
    r=$1
    out=$2
    shift 2
    th=$((CORES / r))
    [ "$th" -ge 1 ] || th=1
    if [ "$r" = 1 ]; then
        "$BIN" "$@" --threads "$th" >"$out" 2>&1
    else
        $MPIRUN -np "$r" "$BIN" "$@" --threads "$th" >"$out" 2>&1
    fi
}
# R IPUS OUT: one run of PROG on R ranks, dumping the last tile's first words
one() {
    launch "$1" "$3" run "$PROG" --ipus "$2" --rank-stats --dump-mem "$(($2 - 1)):1471:0x10200:8"
}
# The figures of one run's output: run seconds (rank 0), then per rank "share% memMiB"
figures() {
    sed -n 's/.*rank \([0-9]*\): run \([0-9.]*\) s, in collectives [0-9.]* s (\([0-9.]*\)%.*peak memory \([0-9.]*\) MiB/\1 \2 \3 \4/p' "$1"
}
# The all-reduce's words 0 and 1 of tile 1471 of the last IPU: (k + 1) n (n + 1) / 2 + 1471 n
check() {
    n=$1
    words=$(sed -n 's/^ *0x010200: \([0-9a-f]*\) \([0-9a-f]*\).*/\1 \2/p' "$2")
    k=1
    for w in $words; do
        le=$(echo "$w" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')
        got=$(printf '%d' "0x$le")
        want=$((k * n * (n + 1) / 2 + 1471 * n))
        if [ "$got" != "$want" ]; then
            echo "bench-mpi: wrong all-reduce on $n IPUs: word $((k - 1)) is $got, want $want" >&2
            exit 1
        fi
        k=$((k + 1))
    done
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# the report without what depends on the host (threads, host time, compile time, rank stats)
report() {
    grep -v -e 'host time' -e 'rank stats' -e '^  *rank [0-9]*: run' "$1" |
        sed -E -e 's/, [0-9]* host threads*$//' -e 's/(compile|programs,) [0-9.]+ s/\1 - s/'
}
# RUNS runs each of R = 1 and 2 of `ipusim ARGS` (with --rank-stats) into $TMP/TAG$r.$i, then
# the table: median run seconds (rank 0's), the first run's collectives share and memory per
# rank. CHECK (a function name, or :) is called with each output.
table() {
    tag=$1
    chk=$2
    shift 2
    printf '  %-6s %10s %28s %26s\n' ranks "run s" "in collectives, per rank" "peak memory, per rank"
    for r in 1 2; do
        : >"$TMP/secs"
        i=1
        while [ "$i" -le "$RUNS" ]; do
            launch "$r" "$TMP/$tag$r.$i" "$@"
            $chk "$TMP/$tag$r.$i"
            figures "$TMP/$tag$r.$i" | awk '$1 == 0 { print $2 }' >>"$TMP/secs"
            i=$((i + 1))
        done
        share=$(figures "$TMP/$tag$r.1" | awk '{ printf "%s%s%%", (NR > 1 ? " " : ""), $3 }')
        mem=$(figures "$TMP/$tag$r.1" | awk '{ printf "%s%s MiB", (NR > 1 ? " " : ""), $4 }')
        printf '  %-6s %10s %28s %26s\n' "$r" "$(median <"$TMP/secs")" "$share" "$mem"
    done
    report "$TMP/${tag}1.1" >"$TMP/rep1"
    report "$TMP/${tag}2.1" >"$TMP/rep2"
    if ! cmp -s "$TMP/rep1" "$TMP/rep2"; then
        echo "bench-mpi: the reports of 1 and 2 ranks differ:" >&2
        diff "$TMP/rep1" "$TMP/rep2" >&2 || true
        exit 1
    fi
}
check16() { check 16 "$1"; }

echo "bench-mpi: $PROG, $CORES host cores shared out among the ranks"
echo "(a) POD16 (16 IPUs, 23,552 tiles), median of $RUNS runs"
table a check16 run "$PROG" --ipus 16 --rank-stats --dump-mem 15:1471:0x10200:8
echo "  the reports of 1 and 2 ranks are the same (but threads and host time); the all-reduce is right"

echo "(b) replicated MNIST: 2 replicas pipelined over 4 IPUs each (8 IPUs, a box per rank),"
echo "    1 host call (all 8,000 mnist-digits training images) and 100 test images, median of $RUNS runs"
table b : mnist --replicas 2 --epochs 1 --max-calls 1 --test-images 100 --rank-stats
echo "  the reports of 1 and 2 ranks are the same (but threads and host time): losses, cycles, accuracy"

echo "(c) POD$POD ($POD IPUs, $((POD * 1472)) tiles), one run each"
printf '  %-6s %10s %40s\n' ranks "run s" "peak memory, per rank"
for r in 1 2 4; do
    one "$r" "$POD" "$TMP/c$r"
    check "$POD" "$TMP/c$r"
    mem=$(figures "$TMP/c$r" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $4 }')
    printf '  %-6s %10s %40s\n' "$r" "$(figures "$TMP/c$r" | awk '$1 == 0 { print $2 }')" "$mem MiB"
done
