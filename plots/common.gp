# common.gp: the terminal, the title and the defaults shared by line.gp and stacked.gp.
# Loaded by them (`load "plots/common.gp"` relative to the repository root, or the directory
# in the variable `plotsdir`); not a plot by itself.
#
# Variables it reads (all strings, given with gnuplot -e "name='value'"):
#   out      the output file                      fmt      png (default) or svg
#   title    what the plot shows                  machine  the machine preset (mk2)
#   fixed    the parameters held fixed, e.g. "M = 1536, N = 1472, fp32" (may be empty)
#   xlabel, ylabel   axis labels, with units: "K (elements)", "throughput (% of fp32 peak)"
#   ytitles  key titles of the y columns, separated by '|' (default: the column names)
#   yscale   factor applied to every y value (default 1), e.g. 1e-3 for cycles -> kcycles

if (!exists("fmt")) fmt = "png"
if (!exists("title")) title = ""
if (!exists("machine")) machine = ""
if (!exists("fixed")) fixed = ""
if (!exists("xlabel")) xlabel = ""
if (!exists("ylabel")) ylabel = ""
if (!exists("ytitles")) ytitles = ""
if (!exists("yscale")) yscale = "1"
# Numbers given as strings: eval reads every form (real() rejects "1e-3").
eval "yscale_v = 1.0 * (".yscale.")"

set datafile separator ","
set datafile missing ""
set datafile columnheaders
if (fmt eq "svg") {
    set terminal svg size 900,540 dynamic noenhanced font "sans,12" background "white"
} else {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
        set terminal pngcairo size 900,540 noenhanced font "sans,10" background "white"
    } else {
        set terminal png size 900,540 noenhanced
    }
}
set output out

# The i-th of the '|'-separated fields of s (1-based).
field(s, i) = i <= 1 ? (strstrt(s, "|") ? s[1:strstrt(s, "|") - 1] : s) \
                     : (strstrt(s, "|") ? field(s[strstrt(s, "|") + 1:], i - 1) : "")
# Key title of y column i: from ytitles, else the column's name.
ytitle(i) = (ytitles ne "" && field(ytitles, i) ne "") ? field(ytitles, i) : word(ycols, i)

subtitle = (machine ne "" ? "machine ".machine : "").((machine ne "" && fixed ne "") ? "; " : "").fixed
set title (subtitle ne "" ? title."\n".subtitle : title)
set xlabel xlabel
set ylabel ylabel
set grid lc rgb "#d0d0d0"
set border lc rgb "#404040"
