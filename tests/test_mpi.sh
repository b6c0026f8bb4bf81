#!/usr/bin/env bash
# The MPI equivalence tests (make test runs them): `mpirun -np R ipusim run PROG` must give
# the same report, JSON, memory dumps, fault and deadlock messages and exit status as
# `ipusim run PROG` in one process, for R = 2 (and 4 where the system has the IPUs), with
# 1 and 2 host threads. Skipped, with the reason printed, where mpirun is not installed or
# this ipusim was built without MPI. Usage: tests/test_mpi.sh [path/to/ipusim]
set -u
cd "$(dirname "$0")/.."
BIN=${1:-build/ipusim}
if ! command -v mpirun >/dev/null 2>&1; then
  echo "test_mpi: SKIPPED: mpirun is not installed (make deps installs openmpi-bin)"
  exit 0
fi
# The ranks run without LeakSanitizer's exit check (a sanitized build): Open MPI's plugins,
# opened with dlopen and closed by MPI_Finalize, leave allocations it cannot attribute (its
# report names only "<unknown module>" and libmpi, never ipusim). The one-process runs keep
# it, and the rank layer's one-process side is checked by every other suite.
MPIRUN=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if "${MPIRUN[@]}" -np 2 "$BIN" run tests/isa/sync_external.s --ipus 2 --tiles 2 \
     >/dev/null 2>"$TMP/probe"; then :; elif grep -q "built without MPI" "$TMP/probe"; then
  echo "test_mpi: SKIPPED: $BIN was built without MPI (libopenmpi-dev missing at build time)"
  exit 0
fi
fail=0
pass=0

# The run's output without what host time decides (host seconds and the rates from them, the
# compile's seconds) and the JSON's argv, an array over lines (each run names its own --json
# file).
stable() {
  grep -v -e '^  host time' "$1" |
    sed -E -e 's/"(seconds|host_seconds|train_seconds|test_seconds)": [0-9.e+-]*/"\1": -/g' \
      -e '/"argv": \[/,/^ *\],?$/d' \
      -e 's/"(train_images_per_second|instructions_per_host_second)": [0-9.e+-]*/"\1": -/g' \
      -e 's/(compile|programs,) [0-9.]+ s/\1 - s/'
}
# The run's own error lines (mpirun adds its banner when a rank exits non-zero).
errors() { grep -E '^(ipu|ipusim|tests/)' "$1" || true; }

# check NAME R ARGS...: `ipusim $CMD ARGS` (CMD: run unless set) in one process, then R
# ranks; every output must match (with ERRORS_ONLY=1, only the error lines and the exit
# status).
check() {
  local name=$1 np=$2 cmd=${CMD:-run}
  shift 2
  "$BIN" "$cmd" "$@" --json "$TMP/one.json" >"$TMP/one.out" 2>"$TMP/one.err"
  local rc1=$?
  timeout 300 "${MPIRUN[@]}" -np "$np" "$BIN" "$cmd" "$@" --json "$TMP/many.json" \
    >"$TMP/many.out" 2>"$TMP/many.err"
  local rcn=$?
  local bad=""
  [ "$rc1" = "$rcn" ] || bad="$bad exit status $rc1 vs $rcn;"
  : >"$TMP/diff"
  diff <(errors "$TMP/one.err") <(errors "$TMP/many.err") >>"$TMP/diff" || bad="$bad errors;"
  [ "${ERRORS_ONLY:-0}" = 1 ] ||
    diff <(stable "$TMP/one.out") <(stable "$TMP/many.out") >>"$TMP/diff" || bad="$bad report;"
  if [ "${ERRORS_ONLY:-0}" != 1 ] && { [ -f "$TMP/one.json" ] || [ -f "$TMP/many.json" ]; }; then
    diff <(stable "$TMP/one.json") <(stable "$TMP/many.json") >>"$TMP/diff" || bad="$bad JSON;"
  fi
  rm -f "$TMP/one.json" "$TMP/many.json"
  if [ -n "$bad" ]; then
    echo "test_mpi: FAILED: $name, $np ranks:$bad"
    head -n 20 "$TMP/diff"
    fail=1
  else
    echo "test_mpi: ok: $name, $np ranks (exit status $rc1)"
    pass=$((pass + 1))
  fi
}

RING=(tests/mpi/ring.s --tiles 8 --dump-mem 0:0:0x2000:4 --dump-mem 7:7:0x4000:12
      --dump-mem 4:3:0x3000:4 --dump-mem 3:5:0x4000:12)
for t in 1 2; do
  check "ring, 8 IPUs (a box per rank), $t threads" 2 --ipus 8 --threads "$t" "${RING[@]}"
  check "ring, 8 IPUs (2 IPUs per rank), $t threads" 4 --ipus 8 --threads "$t" "${RING[@]}"
done
check "ring, 4 IPUs (one box split)" 2 --ipus 4 tests/mpi/ring.s --tiles 8 \
  --dump-mem 3:7:0x4000:12 --dump-mem 1:0:0x2000:4
check "a fault on rank 1 while rank 0 waits" 2 --ipus 4 --tiles 2 tests/mpi/fault_wait.s
# Faults on both ranks in different supersteps: rank 1 runs a superstep further before the
# ranks meet; the message, the status and the statistics after it must be one process's (the
# ranks run the program again up to where one process stops: eng_stop_at).
check "faults on both ranks, the earlier superstep's named" 2 --ipus 4 --tiles 2 \
  tests/mpi/fault_first.s
check "a fault on rank 0 while rank 1 runs on (dumps)" 2 --ipus 8 --tiles 2 \
  tests/mpi/fault_late.s --dump-mem 5:1:0x2100:4 --dump-mem 5:1:0x3000:4
check "an exchange conflict found settling rank 1's IPU while rank 0 runs on" 2 --ipus 8 \
  --tiles 4 tests/mpi/fault_settle.s --dump-mem 1:0:0x2100:4 --dump-mem 1:0:0x3000:4 \
  --dump-mem 6:1:0x2100:4
check "a superstep-limit fault: the others past it named from every rank" 2 --ipus 8 \
  --tiles 2 tests/mpi/fault_limit.s --max-superstep-cycles 500
check "a superstep-limit fault on 32 IPUs (8 named, then how many more)" 4 --ipus 32 \
  --tiles 2 tests/mpi/fault_limit.s --max-superstep-cycles 500
check "an external deadlock" 2 --ipus 4 --tiles 2 tests/isa/fault_deadlock_external.s
check "skewed internal supersteps" 2 --ipus 4 --tiles 2 tests/isa/sync_ipus_skewed.s
check "more ranks than IPUs (2 own none), a sync with the host" 4 --ipus 2 --tiles 2 \
  tests/isa/sync_host.s

# An external_host sync whose host copies end later on rank 1's IPUs than on rank 0's, through
# the library (tests/mpi/host_release.c: no command reaches it): the release is the latest copy
# end over every rank, so the cycles and every IPU's time split are one process's.
HR=$(dirname "$BIN")/tests/mpi/host_release
"$HR" >"$TMP/one.out" 2>&1
rc1=$?
timeout 120 "${MPIRUN[@]}" -np 2 "$HR" >"$TMP/many.out" 2>&1
rcn=$?
if [ "$rc1" = 0 ] && [ "$rcn" = 0 ] && cmp -s "$TMP/one.out" "$TMP/many.out"; then
  echo "test_mpi: ok: an external_host release after every rank's host copies"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: an external_host release under 2 ranks (exit status $rc1 vs $rcn;" \
    "make test builds $HR)"
  diff "$TMP/one.out" "$TMP/many.out" | head -n 10
  fail=1
fi

# The POD benchmark's program (bench/pod.s, make bench-mpi) on 8 IPUs of 4 tiles: the same
# under 2 ranks, and its ring all-reduce right: word k of tile t's acc after it is the sum
# over the 8 IPUs of (ipu + 1)(k + 1) + t = 36 (k + 1) + 8 t.
check "the POD benchmark's GEMM and ring all-reduce" 2 --ipus 8 --tiles 4 bench/pod.s \
  --dump-mem 7:3:0x10200:32 --dump-mem 2:0:0x10200:32
want=""
for t in 3 0; do
  for k in 0 1 2 3 4 5 6 7; do want="$want $(printf '%08x' $((36 * (k + 1) + 8 * t)) |
    sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/')"; done
done
got=$(sed -n 's/^ *0x0102[0-9a-f]*: //p' "$TMP/many.out" | tr '\n' ' ')
if [ "$(echo $got)" = "$(echo $want)" ]; then
  echo "test_mpi: ok: the POD benchmark's all-reduce sums every IPU's words"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: the POD benchmark's all-reduce: got $got, want $want"
  fail=1
fi

# --rank-stats: a line per rank after the report, which is otherwise unchanged.
"$BIN" run tests/mpi/ring.s --ipus 8 --tiles 8 >"$TMP/one.out" 2>&1
timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" run tests/mpi/ring.s --ipus 8 --tiles 8 --rank-stats \
  >"$TMP/many.out" 2>&1
if [ "$(grep -cE 'rank [01]: run [0-9.]+ s, in collectives [0-9.]+ s \(' "$TMP/many.out")" = 2 ] &&
  diff <(stable "$TMP/one.out") <(stable "$TMP/many.out" | grep -v -e 'rank stats' \
    -e '^  *rank 1: run') >/dev/null; then
  echo "test_mpi: ok: --rank-stats prints a line per rank and changes nothing else"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: --rank-stats:"
  head -n 20 "$TMP/many.out"
  fail=1
fi

# ipusim micro (every microbenchmark: exchange, syncs over 2-16 IPUs, IPU-Links, memory, AMP,
# the all-reduce) over 2 and 4 ranks: the same table and CSV as one process, but the host
# seconds in the header. IPUSIM_SLOW_TESTS=0 (the sanitizer builds of .ci/run): 2 ranks only,
# the same rank code at a third of the time.
"$BIN" micro all --threads 1 --csv "$TMP/one.csv" >"$TMP/one.out" 2>&1
rc1=$?
nps="2 4"
[ "${IPUSIM_SLOW_TESTS:-1}" = 0 ] && nps=2
for np in $nps; do
  timeout 300 "${MPIRUN[@]}" -np "$np" "$BIN" micro all --threads 1 --csv "$TMP/many.csv" \
    >"$TMP/many.out" 2>&1
  rcn=$?
  if [ "$rc1" = 0 ] && [ "$rcn" = 0 ] && cmp -s "$TMP/one.csv" "$TMP/many.csv" &&
    diff <(sed 's/figures in [0-9.]* s/figures in - s/' "$TMP/one.out") \
      <(sed 's/figures in [0-9.]* s/figures in - s/' "$TMP/many.out") >/dev/null; then
    echo "test_mpi: ok: ipusim micro all, $np ranks"
    pass=$((pass + 1))
  else
    echo "test_mpi: FAILED: ipusim micro all, $np ranks (exit status $rc1 vs $rcn)"
    diff "$TMP/one.out" "$TMP/many.out" | head -n 10
    fail=1
  fi
  rm -f "$TMP/many.csv"
done

# io-bench: the IPUs shared out in whole host-link groups (a link's bookings stay in one
# rank), with I/O tiles and buffering; ranks past the groups own none.
CMD=io-bench check "io-bench, 8 IPUs (a box per rank)" 2 --ipus 8 --tiles 16 --steps 6
CMD=io-bench check "io-bench, 8 IPUs, I/O tiles, depth 2 (2 ranks own none)" 4 --ipus 8 \
  --tiles 16 --steps 6 --io-tiles 4 --depth 2 --loaders 2
CMD=io-bench check "io-bench, 4 IPUs (one host link: rank 1 owns none)" 2 --ipus 4 --tiles 16 \
  --steps 6

# mnist on the real digits, a few host calls: pipelined over one box (rank 1 owns none; the
# weights it saves must be rank 0's), two pipelined replicas (a box each: the losses, the
# gradient all-reduce, the test pass on weights read back from their owners), eight
# one-IPU replicas over 4 ranks with the sum outfeed and optimiser state in remote buffers.
# IPUSIM_SLOW_TESTS=0 (the sanitizer builds): one epoch of the two host calls, not two (the
# same rank code; the mnist checks took 145 s of the 4 min this script ran under ASan).
MN=(--max-calls 2 --test-images 64 --batch-size 8 --device-iterations 2 --epochs 2)
[ "${IPUSIM_SLOW_TESTS:-1}" = 0 ] && MN=(--max-calls 2 --test-images 64 --batch-size 8 \
  --device-iterations 2 --epochs 1)
rm -rf "$TMP/w1" "$TMP/wn"
"$BIN" mnist "${MN[@]}" --ipus 4 --save-weights "$TMP/w1" >/dev/null 2>&1
timeout 300 "${MPIRUN[@]}" -np 2 "$BIN" mnist "${MN[@]}" --ipus 4 --save-weights "$TMP/wn" \
  >/dev/null 2>&1
if [ -d "$TMP/w1" ] && diff -r "$TMP/w1" "$TMP/wn" >/dev/null; then
  echo "test_mpi: ok: mnist --save-weights under 2 ranks writes one process's weights"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: mnist --save-weights under 2 ranks"
  fail=1
fi
CMD=mnist check "mnist, pipelined over 4 IPUs" 2 "${MN[@]}" --ipus 4
CMD=mnist check "mnist, 2 pipelined replicas over 8 IPUs" 2 "${MN[@]}" --ipus 4 --replicas 2
CMD=mnist check "mnist, 8 one-IPU replicas, sum outfeed, offloaded optimiser" 4 "${MN[@]}" \
  --ipus 1 --replicas 8 --output-mode sum --offload-optimiser

# What does not spread: one line from rank 0, status 2 from every rank.
refused() {
  local name=$1 want=$2
  shift 2
  timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" = 2 ] && [ "$(errors "$TMP/err" | grep -c "$want")" = 1 ]; then
    echo "test_mpi: ok: $name under mpirun is refused"
    pass=$((pass + 1))
  else
    echo "test_mpi: FAILED: $name under mpirun: status $rc, stderr:"
    head -n 5 "$TMP/err"
    fail=1
  fi
}
refused "mnist --reference" "does not spread over MPI ranks" mnist --reference --max-calls 1

# --profile: every IPU's supersteps gathered from its owner, so the trace, the summaries and
# the CSV files rank 0 writes are one process's (with chosen tiles' context tracks too).
profiled() {
  local name=$1 np=$2
  shift 2
  rm -rf "$TMP/p1" "$TMP/pn"
  "$BIN" "$@" --profile --profile-dir "$TMP/p1" >/dev/null 2>&1
  timeout 300 "${MPIRUN[@]}" -np "$np" "$BIN" "$@" --profile --profile-dir "$TMP/pn" \
    >/dev/null 2>&1
  if [ -s "$TMP/p1/trace.json" ] && diff -r "$TMP/p1" "$TMP/pn" >/dev/null; then
    echo "test_mpi: ok: $name --profile, $np ranks: the same files"
    pass=$((pass + 1))
  else
    echo "test_mpi: FAILED: $name --profile, $np ranks"
    diff -r "$TMP/p1" "$TMP/pn" | head -n 5
    fail=1
  fi
}
profiled "run ring, 8 IPUs" 4 run --ipus 8 --threads 1 tests/mpi/ring.s --tiles 8 \
  --profile-tiles 0..2
profiled "io-bench, 8 IPUs" 2 io-bench --ipus 8 --tiles 16 --steps 6 --io-tiles 4
profiled "mnist, 2 pipelined replicas" 2 mnist "${MN[@]}" --ipus 4 --replicas 2 \
  --profile-tiles 0..1

# A command that does not spread over ranks yet: one line, status 2 from every rank.
timeout 120 "${MPIRUN[@]}" -np 2 "$BIN" gemm >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" = 2 ] && [ "$(errors "$TMP/err" | grep -c 'runs as one process only')" = 1 ]; then
  echo "test_mpi: ok: ipusim gemm under mpirun says it runs as one process only"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: ipusim gemm under mpirun: status $rc, stderr:"
  head -n 5 "$TMP/err"
  fail=1
fi

# Ranks that do not run one command on the same files never start (they hung, or overflowed
# the exchange's buffers, each rank sizing them from its own configuration): every rank exits
# 2 within the timeout and rank 0 says which rank differs and how. mpmd NAME WANT A -- B runs
# rank 0 with arguments A in $TMP/a and rank 1 with B in $TMP/b.
mpmd() {
  local name=$1 want=$2 a=() b=() bin
  shift 2
  while [ "$1" != "--" ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  bin=$(realpath "$BIN")
  timeout 60 "${MPIRUN[@]}" -np 1 -wdir "$TMP/a" "$bin" "${a[@]}" : -np 1 -wdir "$TMP/b" "$bin" \
    "${b[@]}" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" = 2 ] && [ "$(errors "$TMP/err")" = "$want" ]; then
    echo "test_mpi: ok: $name"
    pass=$((pass + 1))
  else
    echo "test_mpi: FAILED: $name: status $rc, stderr:"
    head -n 5 "$TMP/err"
    fail=1
  fi
}
mkdir -p "$TMP/a" "$TMP/b"
cp tests/isa/sync_external.s "$TMP/a/s.s"
cp tests/isa/sync_external.s "$TMP/b/s.s"
OTHER="ipusim run: rank 1 reads other files than rank 0 (a program or machine file that differs, or cannot be read) for 'run s.s --ipus 2 --tiles 2'"
mpmd "ranks with other IPU counts are refused" \
  "ipusim run: the ranks must run one command line: rank 0 runs 'run s.s --ipus 2 --tiles 2', rank 1 'run s.s --ipus 4 --tiles 2'" \
  run s.s --ipus 2 --tiles 2 -- run s.s --ipus 4 --tiles 2
echo "main: halt" >"$TMP/b/s.s"
mpmd "a rank whose program differs is refused" "$OTHER" \
  run s.s --ipus 2 --tiles 2 -- run s.s --ipus 2 --tiles 2
rm "$TMP/b/s.s"
mpmd "a rank that cannot open its program is refused" "$OTHER" \
  run s.s --ipus 2 --tiles 2 -- run s.s --ipus 2 --tiles 2

# Ctrl-C under mpirun: mpirun passes SIGTERM to the ranks and kills them a moment later;
# each ends its compute round at once and they meet: rank 0 prints where its IPUs are.
echo "main: br main" >"$TMP/spin.s"
"${MPIRUN[@]}" -np 2 "$BIN" run "$TMP/spin.s" --ipus 2 --max-superstep-cycles 0 \
  >"$TMP/out" 2>"$TMP/err" &
job=$!
sleep 3
kill -INT "$job"
wait "$job"
if grep -qE '^ipusim run: stopped at cycle [0-9]+: ipu 0: tiles 0 \(pc 0x0\).* still computing, 0 waiting at syncs; 1 IPU on the other ranks$' "$TMP/err"; then
  echo "test_mpi: ok: Ctrl-C under mpirun: one line from rank 0"
  pass=$((pass + 1))
else
  echo "test_mpi: FAILED: Ctrl-C under mpirun, stderr:"
  head -n 5 "$TMP/err"
  fail=1
fi

[ $fail = 0 ] && echo "test_mpi: all $pass checks passed"
exit $fail
