#!/bin/sh
# profile.sh DIR: render the pictures of a profile written by --profile (bench/profile/) into
# DIR: timeline.png/svg (the steps of each IPU over one device iteration, or the window's
# first period, coloured by category; plots/timeline.gp), proportions.png/svg (each IPU's
# cycles by category, stacked; plots/stacked.gp) and tile-memory.png/svg (every tile's memory
# by kind; plots/tilemem.gp). `ipusim profile DIR --plot` and `make plots` call this.
set -eu
[ $# -eq 1 ] || { echo "usage: plots/profile.sh DIR" >&2; exit 2; }
dir=$1
plotsdir=$(dirname "$0")
command -v gnuplot >/dev/null 2>&1 || { echo "profile.sh: gnuplot is missing (make deps)" >&2; exit 2; }
for f in summary.json timeline.csv proportions.csv tile_memory.csv; do
    [ -f "$dir/$f" ] || { echo "profile.sh: $dir/$f: no such file (a run with --profile writes it)" >&2; exit 2; }
done

# A number of summary.json's top level.
num() { sed -n "s/^  \"$1\": \([0-9]*\),*$/\1/p" "$dir/summary.json"; }
# A gnuplot string literal's inside: ' doubled.
gq() { printf "%s" "$1" | sed "s/'/''/g"; }

machine=$(sed -n 's/^  "machine": "\(.*\)",*$/\1/p' "$dir/summary.json")
run=$(sed -n 's/^  "run": "\(.*\)",*$/\1/p' "$dir/summary.json")
nipus=$(num nipus) sram=$(num sram_bytes)
# The categories and their colours, from the engine's table (hw/cats.def) as `ipusim metrics`
# lists them: io-bench's split, a line each, the colour fifth (IPUSIM: the binary; `ipusim
# profile --plot` sets it to itself), so every picture names and colours them alike.
ipusim=${IPUSIM:-build/ipusim}
split=$("$ipusim" metrics --command io-bench 2>/dev/null |
        awk -F '\t' '$1 ~ /^iobench\.split\./ { sub(/^iobench\.split\./, "", $1); print $1, $5 }') || split=""
cats=$(printf "%s\n" "$split" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $1 }')
colours=$(printf "%s\n" "$split" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }')
[ -n "$cats" ] && [ "$(echo $colours | wc -w)" = "$(echo $cats | wc -w)" ] ||
    { echo "profile.sh: no categories from '$ipusim metrics' (build it: make)" >&2; exit 2; }

render() { # NAME SCRIPT GNUPLOT-SETTINGS...
    name=$1 script=$2
    shift 2
    for fmt in png svg; do
        gnuplot -e "plotsdir='$(gq "$plotsdir")'; fmt='$fmt'; out='$(gq "$dir/$name.$fmt.tmp")'" \
                -e "machine='$(gq "$machine")'" "$@" "$plotsdir/$script" || {
            rm -f "$dir/$name.$fmt.tmp"; echo "profile.sh: gnuplot failed on $name" >&2; exit 1; }
        mv "$dir/$name.$fmt.tmp" "$dir/$name.$fmt"
    done
    echo "profile.sh: $dir/$name.png $dir/$name.svg" >&2
}

render timeline timeline.gp -e "csv='$(gq "$dir/timeline.csv")'; nipus='$nipus'; colours='$colours'" \
    -e "title='$(gq "$run"): the steps of each IPU by category'"
render proportions stacked.gp -e "csv='$(gq "$dir/proportions.csv")'; labelcol='label'" \
    -e "ycols='$cats'; ycolours='$colours'; ylabel='share of the total cycles (%)'" \
    -e "title='$(gq "$run"): execution summary, proportions per IPU'"
render tile-memory tilemem.gp -e "csv='$(gq "$dir/tile_memory.csv")'; sram='$sram'" \
    -e "title='$(gq "$run"): tile memory'"
