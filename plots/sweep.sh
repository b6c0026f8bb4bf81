#!/bin/sh
# sweep.sh IPUSIM SWEEPFILE CSV JOBS: run one standard sweep (bench/NAME.sweep, format in
# docs/sweep.md) into CSV with `ipusim sweep -j JOBS`. A CSV older than the sweep file or the
# ipusim binary is stale (other arguments, another model): it is removed and the sweep starts
# over (its points' reports, CSV.points/, with it); otherwise the sweep resumes it (points already there are skipped). A sweep file with
# FROM=NAME plots another sweep's CSV: this runs (or resumes) that sweep instead. `make sweep`
# calls this once per sweep file.
set -eu
[ $# -eq 4 ] || { echo "usage: plots/sweep.sh IPUSIM SWEEPFILE CSV JOBS" >&2; exit 2; }
ipusim=$1 f=$2 csv=$3 jobs=$4
# '.' of a file that is not there, or not readable, stops with the shell's own words: one line
# naming the sweep file instead
why=""
if [ ! -e "$f" ]; then why="no such sweep file"
elif [ -d "$f" ]; then why="a directory, not a sweep file"
elif [ ! -r "$f" ]; then why="cannot read the sweep file (permission denied)"
fi
if [ -n "$why" ]; then
    echo "make sweep: $f: $why" >&2
    exit 2
fi
case $f in */*) ;; *) f=./$f ;; esac
SWEEP="" FROM=""
# CR and CRLF line ends read as LF ones, as ipusim's readers do (base/file.h, file_read_text)
text=$(tr '\r' '\n' <"$f") || exit 2
eval "$text"
if [ -n "$FROM" ]; then
    exec sh "$0" "$ipusim" "$(dirname "$f")/$FROM.sweep" "$(dirname "$csv")/$FROM.csv" "$jobs"
fi
if [ -z "$SWEEP" ]; then
    echo "make sweep: $f sets no SWEEP=\"--param ... -- COMMAND ARGS\"" >&2
    exit 2
fi
if [ -f "$csv" ] && { [ "$f" -nt "$csv" ] || [ "$ipusim" -nt "$csv" ]; }; then
    echo "make sweep: $f or $ipusim is newer than $csv: running the sweep from the start" >&2
    rm -rf "$csv" "${csv%.csv}.points"
fi
echo "make sweep: $f -> $csv" >&2
eval "\"\$ipusim\" sweep -j \"\$jobs\" --out \"\$csv\" $SWEEP"
