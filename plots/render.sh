#!/bin/sh
# render.sh SWEEP_DIR OUT_DIR NAME...: for each NAME with a plot in SWEEP_DIR/NAME.sweep
# (PLOT=line or PLOT=stacked; format in docs/sweep.md) and a CSV OUT_DIR/NAME.csv, render
# OUT_DIR/NAME.png and OUT_DIR/NAME.svg with plots/line.gp or plots/stacked.gp. Skips a plot
# whose images are newer than its CSV, sweep file and scripts. The CSV is prepared first: only
# rows with status 0, sorted (line: by SERIES, then X; stacked: by the LABEL columns; numeric
# columns numerically, others in version order), and for stacked bars a first column "label"
# ("depth=3 io=64"). A quoted field (a value with commas, "0,1,2,3") is read as one, its commas
# shown as ';', a quote inside it as ' (a field may not hold a line break). Statistics the
# sweep file leaves untitled take their key titles and, for a single Y, the y label "TITLE
# (UNIT)" from the statistics' tables, as `$IPUSIM metrics` lists them (IPUSIM: the ipusim
# binary, default build/ipusim). `make plots` calls this.
set -eu
[ $# -ge 2 ] || { echo "usage: plots/render.sh SWEEP_DIR OUT_DIR NAME..." >&2; exit 2; }
sdir=$1 odir=$2
shift 2
plotsdir=$(dirname "$0")
command -v gnuplot >/dev/null 2>&1 || { echo "make plots: gnuplot is missing (make deps)" >&2; exit 2; }

# The statistics' units and titles, from the tables that declare them (cli/metrics.h), as
# `ipusim metrics` lists them; empty without the binary.
ipusim=${IPUSIM:-build/ipusim}

# Field $2 (2: unit, 3: title) of the statistic in column $1 (`ipusim metrics COLUMN` gives its
# line: per_ipu.2.finish is per_ipu.N.finish); empty for a column that is no statistic.
meta() {
    "$ipusim" metrics "$1" 2>/dev/null | awk -F '\t' -v f="$2" 'NR == 1 { print $f }'
}

# YTITLES and YLABEL from the tables where the sweep file leaves them empty.
titles_from_tables() {
    if [ -z "$YTITLES" ]; then
        t="" known=0
        for c in $Y; do
            ti=$(meta "$c" 3)
            if [ -n "$ti" ]; then known=1; else ti=$c; fi
            t="$t${t:+|}$ti"
        done
        [ $known = 0 ] || YTITLES=$t
    fi
    if [ -z "$YLABEL" ] && [ "$(echo $Y | wc -w)" = 1 ]; then
        ti=$(meta "$Y" 3) u=$(meta "$Y" 2)
        [ -z "$ti" ] || YLABEL="$ti${u:+ ($u)}"
    fi
}

# The CSV $1 without quoting: a quoted field's commas become ';', its quotes go, and a quote
# inside it ("") becomes ' (gnuplot would take it for the start of a string).
unquote() {
    awk '{ out = ""; q = 0; n = length($0)
           for (i = 1; i <= n; i++) {
               c = substr($0, i, 1)
               if (c == "\"") {
                   if (q && substr($0, i + 1, 1) == "\"") { out = out "'"'"'"; i++ } else q = !q
                   continue
               }
               out = out (c == "," && q ? ";" : c)
           }
           print out }' "$1"
}

# YREL: each Y column of the prepared data $1 also as "rel.COLUMN", in % of the row with
# SERIES = YREL and the same X (NaN where there is none); rel_y gets those columns' names.
# Fails when no row has SERIES = YREL.
relative() {
    sc=$(col "$SERIES" "$1") xc=$(col "$X" "$1") ycs="" rel_y=""
    for c in $Y; do ycs="$ycs $(col "$c" "$1")"; rel_y="$rel_y rel.$c"; done
    awk -F, -v OFS=, -v sc="$sc" -v xc="$xc" -v ycs="$ycs" -v base="$YREL" -v names="$Y" '
        BEGIN { n = split(ycs, yc, " "); split(names, nm, " ") }
        NR == FNR { if (FNR > 1 && $sc == base) { for (k = 1; k <= n; k++) b[$xc, k] = $yc[k]; found = 1 }
                    next }
        !found { exit 1 }
        FNR == 1 { l = $0; for (k = 1; k <= n; k++) l = l OFS "rel." nm[k]; print l; next }
        { l = $0
          for (k = 1; k <= n; k++) l = l OFS (($xc, k) in b && b[$xc, k] != 0 ? 100 * $yc[k] / b[$xc, k] : "NaN")
          print l }' "$1" "$1" > "$1.rel" && mv "$1.rel" "$1" || { rm -f "$1.rel"; return 1; }
}

# A gnuplot string literal's inside: ' doubled.
gq() { printf "%s" "$1" | sed "s/'/''/g"; }

# 1-based index of column $1 in the header of $2, or nothing.
col() { awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == n) { print i; exit } }' "$2"; }

# Sort key option for column index $1 of $2 (as column $1 + $3 of the sorted file): g when
# every value is a number, else V.
skey() {
    k=$(($1 + ${3:-0}))
    if awk -F, -v c="$1" 'NR > 1 && $c !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ { bad = 1; exit }
                         END { exit bad }' "$2"; then
        echo "-k$k,${k}g"
    else
        echo "-k$k,${k}V"
    fi
}

fail() { echo "make plots: $name: $*" >&2; status=1; }

render() {
    f=$sdir/$name.sweep csv=$odir/$name.csv base=$odir/$name
    case $f in */*) ;; *) f=./$f ;; esac
    PLOT="" TITLE="" MACHINE="" FIXED="" X="" XLABEL="" Y="" YTITLES="" YLABEL="" SERIES=""
    LOGX="" YMIN="" YSCALE=1 MARKX="" MARKLABEL="" LABEL="" FROM="" YREL="" ycolours=""
    text=$(tr '\r' '\n' <"$f") || { fail "cannot read $f"; return 0; }
    eval "$text" # CR and CRLF line ends read as LF ones, as in plots/sweep.sh
    [ -z "$FROM" ] || csv=$odir/$FROM.csv # another view of that sweep's rows
    titles_from_tables
    case $PLOT in
    line | stacked) ;;
    "" | none) return 0 ;;
    *) fail "PLOT=$PLOT: expected line, stacked or none"; return 0 ;;
    esac
    if [ ! -f "$csv" ]; then
        echo "make plots: $name: no $csv yet (make sweep)" >&2
        return 0
    fi
    if [ -f "$base.png" ] && [ -f "$base.svg" ] && [ "$base.png" -nt "$csv" ] &&
       [ "$base.png" -nt "$f" ] && [ "$base.png" -nt "$plotsdir/render.sh" ] &&
       [ "$base.png" -nt "$plotsdir/line.gp" ] && [ "$base.png" -nt "$plotsdir/stacked.gp" ] &&
       [ "$base.png" -nt "$plotsdir/common.gp" ]; then
        return 0
    fi
    shown=$csv
    csv=$odir/.$name.plain.csv
    unquote "$shown" > "$csv"
    st=$(col status "$csv")
    [ -n "$st" ] || { fail "$shown has no status column"; rm -f "$csv"; return 0; }
    for c in $X $Y $SERIES $LABEL; do
        [ -n "$(col "$c" "$csv")" ] || { fail "column '$c' is not in $shown"; rm -f "$csv"; return 0; }
    done
    data=$odir/.$name.data.csv
    keys=""
    if [ "$PLOT" = line ]; then
        [ -n "$X" ] && [ -n "$Y" ] || { fail "PLOT=line needs X and Y"; return 0; }
        [ -z "$SERIES" ] || keys=$(skey "$(col "$SERIES" "$csv")" "$csv")
        keys="$keys $(skey "$(col "$X" "$csv")" "$csv")"
        { head -n 1 "$csv"; awk -F, -v s="$st" 'NR > 1 && $s == "0"' "$csv" | sort -t, $keys; } > "$data"
        if [ -n "$YREL" ]; then
            [ -n "$SERIES" ] || { fail "YREL needs SERIES"; rm -f "$data" "$csv"; return 0; }
            relative "$data" && Y=$rel_y || { fail "YREL=$YREL: no row with $SERIES = $YREL"; rm -f "$data" "$csv"; return 0; }
            [ -n "$YLABEL" ] || YLABEL="% of $SERIES = $YREL"
        fi
    else
        [ -n "$Y" ] || { fail "PLOT=stacked needs Y"; return 0; }
        if [ -z "$LABEL" ]; then # the parameters: every column before status
            LABEL=$(head -n 1 "$csv" | awk -F, -v s="$st" '{ for (i = 1; i < s; i++) printf "%s ", $i }')
        fi
        idx=""
        for c in $LABEL; do
            i=$(col "$c" "$csv")
            idx="$idx $i"
            keys="$keys $(skey "$i" "$csv" 1)"
        done
        awk -F, -v s="$st" -v idx="$idx" '
            BEGIN { n = split(idx, ix, " ") }
            NR == 1 { print "label," $0; for (k = 1; k <= n; k++) name[k] = $ix[k]; next }
            $s == "0" { l = ""; for (k = 1; k <= n; k++) l = l (k > 1 ? " " : "") name[k] "=" $ix[k]
                        print l "," $0 }' "$csv" > "$data.u"
        { head -n 1 "$data.u"; tail -n +2 "$data.u" | sort -t, $keys; } > "$data"
        rm -f "$data.u"
        ycolours="" # the time categories' own colours, when every bar part is one
        for c in $Y; do ycolours="$ycolours $(meta "$c" 5)"; done
        [ "$(echo $ycolours | wc -w)" = "$(echo $Y | wc -w)" ] || ycolours=""
    fi
    if [ "$(wc -l < "$data")" -lt 2 ]; then
        fail "$shown has no row with status 0"
        rm -f "$data" "$csv"
        return 0
    fi
    mx=$MARKX
    case $mx in @*) # the value of a column, first data row
        c=$(col "${mx#@}" "$data")
        [ -n "$c" ] || { fail "MARKX column '${mx#@}' is not in $shown"; rm -f "$data" "$csv"; return 0; }
        mx=$(awk -F, -v c="$c" 'NR == 2 { print $c }' "$data") ;;
    esac
    # an x axis of whole numbers: ticks a whole number apart (at most about ten of them)
    xstep=""
    if [ "$PLOT" = line ]; then
        xstep=$(awk -F, -v c="$(col "$X" "$data")" 'NR > 1 { if ($c !~ /^-?[0-9]+$/) { bad = 1; exit }
                    v = $c + 0; if (n++ == 0 || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
                END { if (!bad && n) { s = int((hi - lo + 9) / 10); print (s < 1 ? 1 : s) } }' "$data")
    fi
    sv=""
    if [ -n "$SERIES" ]; then
        sv=$(awk -F, -v c="$(col "$SERIES" "$data")" 'NR > 1 && !seen[$c]++ { printf "%s ", $c }' "$data")
    fi
    done_fmts=""
    for fmt in png svg; do
        gnuplot -e "plotsdir='$(gq "$plotsdir")'; csv='$(gq "$data")'; out='$(gq "$base.$fmt.tmp")'; fmt='$fmt'" \
                -e "title='$(gq "$TITLE")'; machine='$(gq "$MACHINE")'; fixed='$(gq "$FIXED")'" \
                -e "xlabel='$(gq "$XLABEL")'; ylabel='$(gq "$YLABEL")'; yscale='$(gq "$YSCALE")'" \
                -e "xcol='$(gq "$X")'; ycols='$(gq "$Y")'; ytitles='$(gq "$YTITLES")'" \
                -e "series='$(gq "$SERIES")'; series_values='$(gq "$sv")'; logx='$(gq "$LOGX")'" \
                -e "ymin='$(gq "$YMIN")'; markx='$(gq "$mx")'; marklabel='$(gq "$MARKLABEL")'" \
                -e "xstep='$xstep'; ycolours='$(echo $ycolours)'" \
                "$plotsdir/$PLOT.gp" || { fail "gnuplot failed"; rm -f "$base.$fmt.tmp"; break; }
        mv "$base.$fmt.tmp" "$base.$fmt"
        done_fmts="$done_fmts $base.$fmt"
    done
    rm -f "$data" "$csv"
    [ -z "$done_fmts" ] || echo "make plots:$done_fmts" >&2
}

status=0
for name in "$@"; do
    render
done
exit $status
