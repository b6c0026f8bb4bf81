#!/usr/bin/env bash
# The hostile-input suite (make test runs it; tests/hostile/README.md says how to add a case).
# Every case in tests/hostile/*.cases runs in a scratch directory of its own under a timeout
# and asserts three things: the exit status, the one line on stderr, and what is left on disk.
# Prints one line per failing (FAIL) or skipped (SKIP) case, then the count by kind, and exits 1
# when a case failed (a hang, a crash, a wrong status, message or disk state).
#
# Usage: tests/hostile/run.sh [-v] [path/to/ipusim] [NAME-SUBSTRING]
#   -v: also print a line (and its seconds) for every case that passed
# HOSTILE_JOBS=N: cases at once (default: the online CPUs, at least 2; the cases mostly wait)
set -u
export LC_ALL=C
VERBOSE=0
if [ "${1:-}" = -v ]; then VERBOSE=1; shift; fi
cd "$(dirname "$0")/../.." || exit 2
ROOT=$(pwd)
BIN=${1:-build/ipusim}
FILTER=${2:-}
JOBS=${HOSTILE_JOBS:-$(($(nproc 2>/dev/null || echo 1) < 2 ? 2 : $(nproc 2>/dev/null || echo 1)))}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
if [ ! -f "$BIN" ] || [ ! -x "$BIN" ]; then
  echo "hostile: $BIN: no such program (make builds it)" >&2
  exit 2
fi

# What every case's command and setup can use (docs: tests/hostile/README.md).
export IPUSIM=$BIN ROOT
# the smallest mnist runs that still train and test: one host call of 2 micro-batches of 4
export MNIST_REF="mnist --reference --epochs 1 --max-calls 1 --batch-size 4 --gradient-accumulation 2 --device-iterations 1 --test-images 8"
export MNIST_SIM="mnist --ipus 1 --epochs 1 --max-calls 1 --batch-size 4 --gradient-accumulation 2 --device-iterations 1 --test-images 8"
# The sanitizers' own exit check on leaks stays on; their reports are a crash here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=0"

# signal_after SIG CMD...: run CMD in a process group of its own (so that SIGINT is not ignored,
# as it is for a background job without job control), wait until it has installed its handler
# for SIG and run a little, send SIG, and return CMD's exit status. CMD's stderr is the
# caller's; the shell's own job notices go nowhere. signal_twice: SIG again 0.3 s later.
signal_after() { signal_n 1 "$@"; }
signal_twice() { signal_n 2 "$@"; }
signal_n() {
  local times=$1 sig=$2 bit pid i caught rc
  shift 2
  case $sig in INT) bit=2 ;; TERM) bit=15 ;; *) echo "signal_after: $sig?" >&2; return 99 ;; esac
  exec 3>&2 2>/dev/null
  set -m
  "$@" 2>&3 &
  pid=$!
  for i in $(seq 200); do
    caught=$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || break
    [ -n "$caught" ] && (( (16#$caught >> (bit - 1)) & 1 )) && break
    sleep 0.05
  done
  sleep 0.3
  kill -"$sig" "$pid"
  if [ "$times" = 2 ]; then sleep 0.3; kill -"$sig" "$pid"; fi
  wait "$pid"
  rc=$?
  set +m
  return $rc
}
# wait_for FILE LINES: wait (at most 10 s) until FILE has at least LINES lines.
wait_for() {
  local i
  for i in $(seq 200); do
    [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
# mpi_run ARGS...: mpirun ARGS (oversubscribed; allowed as root; LeakSanitizer's exit check
# off in the ranks, as tests/test_mpi.sh says why), with only the program's own lines on
# stderr (mpirun adds its banner when a rank exits non-zero); mpirun's exit status. With
# MPI_INT_AFTER=S: Ctrl-C (SIGINT) to mpirun S seconds after it started.
mpi_run() {
  local root=() rc
  [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
  exec 4>&1
  if [ -n "${MPI_INT_AFTER:-}" ]; then
    (ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" mpirun --oversubscribe "${root[@]}" "$@" &
      p=$!; sleep "$MPI_INT_AFTER"; kill -INT "$p"; wait "$p") 2>&1 >&4 | grep -E '^ipu' >&2
  else
    ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" mpirun --oversubscribe "${root[@]}" "$@" \
      2>&1 >&4 | grep -E '^ipu' >&2
  fi
  rc=${PIPESTATUS[0]}
  exec 4>&-
  return "$rc"
}
export -f signal_after signal_twice signal_n wait_for mpi_run

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ipusim-hostile.XXXXXX")
trap 'chmod -R u+rwx "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
chmod 755 "$TMP" # a case run as another user must reach its scratch directory

ME=$(id -u)
# every scratch directory starts with p.s (prog.s, the README's program) and m.ini (mk2's preset)
FIX_PROG=$(<prog.s)
FIX_MACHINE=$(<machines/mk2.ini)
declare -A NPASS NFAIL NSKIP
KINDS="crash hang lost unclear"
for k in $KINDS; do NPASS[$k]=0 NFAIL[$k]=0 NSKIP[$k]=0; done
declare -A SEEN

# The scratch directory's state, read into an associative array (path -> type, mode, size,
# modification time in ns, inode and a link's target; a directory: its type and mode, so a
# temporary file made and removed in it is no change). A file written (in place or replaced by
# a rename) or re-moded shows as changed. One find, no sort: the cases run many at once on
# small machines, and every process counts.
snapshot() { # DIR FILE ARRAY
  find "$1" -mindepth 1 \( -type d -printf '%P\t%y %m\n' \) -o -printf '%P\t%y %m %s %T@ %i %l\n' >"$2"
  local -n arr=$3 # the caller's array
  local p rest
  # shellcheck disable=SC2034
  while IFS=$'\t' read -r p rest; do arr[$p]=$rest; done <"$2"
}

# One disk check, run in the scratch directory; adds why it fails to WHY (nothing when it
# holds). Builtins where it can: the cases run many at once on small machines.
check_one() {
  local what=$1 p pat hit f
  shift
  case $what in
    unchanged)
      for p in "${!SNAPA[@]}"; do
        [ "${SNAPA[$p]}" = "${NOWA[$p]:-}" ] || WHY+="$p changed (${SNAPA[$p]} -> ${NOWA[$p]:-gone}); "
      done
      for p in "${!NOWA[@]}"; do [ -n "${SNAPA[$p]:-}" ] || WHY+="$p added; "; done
      ;;
    same)
      for p in "$@"; do
        [ -n "${SNAPA[$p]:-}" ] || { WHY+="same $p: not there after the setup; "; continue; }
        [ "${SNAPA[$p]}" = "${NOWA[$p]:-}" ] || WHY+="$p changed (${NOWA[$p]:-gone}); "
      done
      ;;
    new)
      # the entries added since the setup are exactly those matching the patterns (each
      # pattern matching one, unless it starts with '?'); nothing was removed
      for p in "${!SNAPA[@]}"; do [ -n "${NOWA[$p]:-}" ] || WHY+="removed: $p; "; done
      for p in "${!NOWA[@]}"; do
        [ -z "${SNAPA[$p]:-}" ] || continue
        hit=0
        # shellcheck disable=SC2053 # the patterns are globs
        for pat in "$@"; do [[ $p == ${pat#\?} ]] && hit=1; done
        [ $hit = 1 ] || WHY+="stray: $p; "
      done
      for pat in "$@"; do
        [ "${pat:0:1}" != "?" ] || continue
        hit=0
        # shellcheck disable=SC2053
        for p in "${!NOWA[@]}"; do [ -z "${SNAPA[$p]:-}" ] && [[ $p == $pat ]] && hit=1; done
        [ $hit = 1 ] || WHY+="not written: $pat; "
      done
      ;;
    absent) for p in "$@"; do [ ! -e "$p" ] && [ ! -L "$p" ] || WHY+="$p exists; "; done ;;
    file) [ -f "$1" ] && [ ! -L "$1" ] || WHY+="$1 is not a regular file; " ;;
    dir) [ -d "$1" ] && [ ! -L "$1" ] || WHY+="$1 is not a directory; " ;;
    chardev) [ -c "$1" ] || WHY+="$1 is not a character device; " ;;
    fifo) [ -p "$1" ] || WHY+="$1 is not a FIFO; " ;;
    link) [ -L "$1" ] && [ "$(readlink "$1")" = "$2" ] || WHY+="$1 is not a link to $2; " ;;
    lines) [ -f "$1" ] && [ "$(wc -l <"$1")" -eq "$2" ] || WHY+="$1 has not $2 lines ($(wc -l <"$1" 2>/dev/null)); " ;;
    grep) f=$1; shift; grep -qaE -- "$*" "$f" 2>/dev/null || WHY+="$f has no line matching /$*/; " ;;
    nogrep) f=$1; shift; ! grep -qaE -- "$*" "$f" 2>/dev/null || WHY+="$f has a line matching /$*/; " ;;
    stdout) grep -qaE -- "$*" "$OUTF" || WHY+="stdout has no line matching /$*/; " ;;
    stdout-empty) [ ! -s "$OUTF" ] || WHY+="stdout is not empty: $(head -c 80 "$OUTF"); " ;;
    sh) bash -c "$*" >/dev/null 2>&1 || WHY+="failed: $*; " ;;
    *) WHY+="unknown check '$what'; " ;;
  esac
}

# The stderr check, on ERR (the lines of stderr): "REGEX" (exactly one line, matching), "-"
# (empty), or with "diag" the assembler's form (each error a header file:line:col: error:, the
# source line and a caret line; the first header matching REGEX). Sets WHY.
check_err() {
  local mode=$1 re=$2 n=${#ERR[@]} i all
  all=$(printf '%s|' "${ERR[@]:0:4}")
  all=${all:0:200}
  if [ "$mode" = stderr ] && [ "$re" = - ]; then
    [ "$n" -eq 0 ] || WHY="stderr not empty: $all"
  elif [ "$mode" = stderr ]; then
    if [ "$n" -ne 1 ]; then
      WHY="$n lines on stderr, not 1: $all"
    elif ! [[ ${ERR[0]} =~ $re ]]; then
      WHY="stderr does not match /$re/: ${ERR[0]:0:200}"
    fi
  else
    if [ "$n" -lt 3 ] || [ $((n % 3)) -ne 0 ]; then
      WHY="$n lines on stderr, not diagnostics of 3: $all"
    elif ! [[ ${ERR[0]} =~ $re ]]; then
      WHY="first diagnostic does not match /$re/: ${ERR[0]:0:200}"
    else
      for ((i = 0; i < n; i += 3)); do
        [[ ${ERR[i]} =~ ^[^:]+:[0-9]+:[0-9]+:\ error:\  ]] && [[ ${ERR[i + 2]} =~ ^\ *\^ ]] ||
          WHY="not file:line:col: error: / source / caret: ${ERR[i]:0:100}|${ERR[i + 2]:0:100}"
      done
    fi
  fi
}

NCASE=0
RUNNING=0
BAD=0 # malformed cases (no kind to count them under)
# The verdict of case N goes to $TMP/N.verdict: "ok|FAIL|SKIP KIND NAME[: why]" (and a second
# line with where the case is and its command, for a failure); the lines are printed in the
# cases' order once all have run.
verdict() { printf '%s\n' "$2" >"$TMP/$1.verdict"; }

# Check the case whose fields are in C_*; run it in the background (at most $JOBS at once).
run_case() {
  local name=$C_NAME kind=$C_KIND
  [ -n "$name" ] || return
  NCASE=$((NCASE + 1))
  if [ -n "$FILTER" ] && [[ $name != *"$FILTER"* ]]; then return; fi
  case " $KINDS " in *" $kind "*) ;; *)
    echo "FAIL ? $name: kind '$kind' is none of: $KINDS ($C_WHERE)"; BAD=$((BAD + 1)); return ;;
  esac
  if [ -n "${SEEN[$name]:-}" ]; then
    verdict $NCASE "FAIL $kind $name: a second case of this name ($C_WHERE, first at ${SEEN[$name]})"
    return
  fi
  SEEN[$name]=$C_WHERE
  if [ -n "$C_SKIP" ]; then
    verdict $NCASE "SKIP $kind $name: $C_SKIP"
    return
  fi
  if [ -z "$C_RUN" ] || [ -z "$C_STATUS" ] || [ -z "$C_ERR" ] || [ ${#C_CHECKS[@]} -eq 0 ]; then
    verdict $NCASE "FAIL $kind $name: a case needs run, status, stderr (or diag) and a check ($C_WHERE)"
    return
  fi
  if [ "$RUNNING" -ge "$JOBS" ]; then wait -n; RUNNING=$((RUNNING - 1)); fi
  case_body $NCASE &
  RUNNING=$((RUNNING + 1))
}

# Run case N (C_* set) in $TMP/N/work and write its verdict.
case_body() {
  local n=$1 name=$C_NAME kind=$C_KIND t0=${EPOCHREALTIME/./}
  local d=$TMP/$n
  local W=$d/work s rc=0 c
  local -a pre=()
  local -A SNAPA=() NOWA=()
  WHY=""
  export OUTF=$d/stdout
  mkdir -p "$W"
  cd "$W" || return
  printf '%s\n' "$FIX_PROG" >p.s
  printf '%s\n' "$FIX_MACHINE" >m.ini
  for s in "${C_SETUP[@]}"; do
    if ! bash -c "$s" >"$d/setup.log" 2>&1; then
      WHY="setup failed: $s: $(head -c 200 "$d/setup.log")"
      break
    fi
  done
  if [ -z "$WHY" ] && [ "$C_USER" = nobody ] && [ "$ME" = 0 ]; then
    # as root every file is readable and every directory writable: drop to nobody
    if command -v setpriv >/dev/null 2>&1; then
      chown -hR 65534:65534 "$W"
      pre=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    else
      verdict "$n" "SKIP $kind $name: needs a user other than root (setpriv is not installed)"
      return
    fi
  fi
  if [ -z "$WHY" ]; then
    snapshot "$W" "$d/snap" SNAPA
    "${pre[@]}" timeout -k 2 "$C_TIMEOUT" bash -c "$C_RUN" >"$OUTF" 2>"$d/stderr" </dev/null
    rc=$?
    mapfile -t ERR <"$d/stderr"
    if [ $rc = 124 ] || [ $rc = 137 ]; then
      WHY="hang: still running after $C_TIMEOUT s"
    elif [[ ${ERR[*]} =~ (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime\ error: ]]; then
      for c in "${ERR[@]}"; do [[ $c =~ Sanitizer|runtime\ error: ]] && break; done
      WHY="crash: sanitizer report: ${c:0:200}"
    elif [ $rc -ge 128 ] && [ "$C_STATUS" -lt 128 ]; then
      WHY="crash: killed by signal $((rc - 128))"
    elif [ "$rc" != "$C_STATUS" ]; then
      WHY="exit status $rc, expected $C_STATUS; stderr: $(printf '%s|' "${ERR[@]:0:3}")"
    else
      check_err "$C_ERRMODE" "$C_ERR"
    fi
    if [ -z "$WHY" ]; then
      snapshot "$W" "$d/snap" NOWA
      for c in "${C_CHECKS[@]}"; do
        eval "check_one $c"
        [ -z "$WHY" ] || break
      done
    fi
  fi
  cd "$TMP" || return
  if [ -n "$WHY" ]; then
    verdict "$n" "FAIL $kind $name: $WHY
     ($C_WHERE) $C_RUN"
  else
    local us=$((${EPOCHREALTIME/./} - t0))
    verdict "$n" "ok   $kind $name ($((us / 1000000)).$(printf '%02d' $((us / 10000 % 100))) s)"
  fi
}

reset_case() {
  C_NAME="" C_KIND="" C_RUN="" C_STATUS="" C_ERR="" C_ERRMODE=stderr C_SKIP="" C_USER=""
  C_TIMEOUT=20 C_WHERE=$1
  C_SETUP=() C_CHECKS=()
}

START=$(date +%s)
for f in tests/hostile/*.cases; do
  reset_case ""
  lineno=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    line=${line#"${line%%[![:space:]]*}"}
    case $line in '' | '#'*) continue ;; esac
    key=${line%%[[:space:]]*}
    val=${line#"$key"}
    val=${val#"${val%%[![:space:]]*}"}
    case $key in
      case) run_case; reset_case "$f:$lineno"; C_NAME=$val ;;
      kind) C_KIND=$val ;;
      setup) C_SETUP+=("$val") ;;
      run) C_RUN=$val ;;
      status) C_STATUS=$val ;;
      stderr) C_ERR=$val C_ERRMODE=stderr ;;
      diag) C_ERR=$val C_ERRMODE=diag ;;
      check) C_CHECKS+=("$val") ;;
      skip) C_SKIP=$val ;;
      user) C_USER=$val ;;
      timeout) C_TIMEOUT=$val ;;
      *) echo "FAIL ? $f:$lineno: unknown key '$key'"; BAD=$((BAD + 1)) ;;
    esac
  done <"$f"
  run_case
done

wait
for n in $(seq "$NCASE"); do
  [ -f "$TMP/$n.verdict" ] || continue
  v=$(cat "$TMP/$n.verdict")
  read -r what kind _ <<<"$v"
  case $what in
    ok) NPASS[$kind]=$((NPASS[$kind] + 1)); [ $VERBOSE = 1 ] && echo "$v" ;;
    SKIP) NSKIP[$kind]=$((NSKIP[$kind] + 1)); echo "$v" ;;
    *) NFAIL[$kind]=$((NFAIL[$kind] + 1)); echo "$v" ;;
  esac
done

total=0
failed=$BAD
summary=""
for k in $KINDS; do
  summary="$summary, $k ${NPASS[$k]} passed"
  [ "${NFAIL[$k]}" = 0 ] || summary="$summary ${NFAIL[$k]} FAILED"
  [ "${NSKIP[$k]}" = 0 ] || summary="$summary ${NSKIP[$k]} skipped"
  total=$((total + NPASS[$k] + NFAIL[$k] + NSKIP[$k]))
  failed=$((failed + NFAIL[$k]))
done
[ "$BAD" = 0 ] || summary="$summary, $BAD malformed"
echo "hostile: $total cases in $(($(date +%s) - START)) s${summary}"
[ "$failed" = 0 ]
