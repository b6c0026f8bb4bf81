#!/usr/bin/env bash
# Runs the test suites given as arguments, JOBS of them at a time (the environment's JOBS, by
# default 1), each with its output kept aside and printed whole when it ends, with its time
# (an argument is a program, or a command line of words without spaces in them):
#   == build/tests/test_x
#   ...its output...
#   == build/tests/test_x: 12 s
# A suite that fails prints "FAILED: build/tests/test_x" after its output. Every suite runs even
# when another fails; the exit status is 1 if any failed. The suites use their own temporary
# directories (tu_mkdtemp), so two of them can run side by side; most run on one thread, so on
# a machine with N cores N at a time finish in about 1/N of the time.
set -u
jobs=${JOBS:-1}
logdir=$(mktemp -d "${TMPDIR:-/tmp}/ipusim-suites.XXXXXX") || exit 1
trap 'rm -rf "$logdir"' EXIT

# One suite: its output and exit status to files named after its place in the list.
run_one() {
  local n=$1 t=$2 s
  s=$(date +%s)
  $t >"$logdir/$n.out" 2>&1 # split into words: a command line
  echo "$? $(($(date +%s) - s))" >"$logdir/$n.rc"
}

# Print the finished suites in the order given, as soon as each and all before it are done.
suites=("$@")
next=0
flush() {
  local t rc secs
  while [ "$next" -lt "${#suites[@]}" ] && [ -e "$logdir/$next.rc" ]; do
    t=${suites[$next]}
    read -r rc secs <"$logdir/$next.rc"
    echo "== $t"
    cat "$logdir/$next.out"
    [ "$rc" = 0 ] || { echo "FAILED: $t"; echo 1 >"$logdir/failed"; }
    echo "== $t: $secs s"
    next=$((next + 1))
  done
}

i=0
for t in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n
    flush
  done
  run_one "$i" "$t" &
  i=$((i + 1))
done
wait
flush
[ ! -e "$logdir/failed" ]
