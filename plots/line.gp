# line.gp: a line plot from a CSV with a header row: column xcol on the x axis against one or
# more y columns, optionally one curve per value of a series column. The rows must be sorted
# by series, then x (plots/render.sh sorts them).
#
#   gnuplot -e "csv='gemm-k.csv'; out='gemm-k.png'; xcol='k'; ycols='gemm.pct_peak'" \
#           -e "xlabel='K (elements)'; ylabel='throughput (% of fp32 peak)'" \
#           -e "title='GEMM % of peak against K'; machine='mk2'; fixed='M = 1536'" plots/line.gp
#
# Variables besides those of common.gp:
#   csv      the CSV                        xcol   the x column's name
#   ycols    the y columns' names, separated by spaces
#   series   a column: one curve per value (optional); series_values: those values, in
#            order, separated by spaces (render.sh finds them)
#   logx     a base (2, 10) for a logarithmic x axis (optional)
#   ymin     the lower end of the y axis, e.g. 0 (optional; default: automatic)
#   markx    an x value to mark with a dashed vertical line (optional); marklabel its label
#   xstep    a whole-number tick step for an x axis of whole numbers (optional; render.sh
#            gives it, so that 1, 2, 3 are not ticked 1, 1.5, 2)

if (!exists("plotsdir")) plotsdir = "plots"
load plotsdir."/common.gp"
if (!exists("series")) series = ""
if (!exists("series_values")) series_values = ""
if (!exists("logx")) logx = ""
if (!exists("ymin")) ymin = ""
if (!exists("markx")) markx = ""
if (!exists("marklabel")) marklabel = ""
if (!exists("xstep")) xstep = ""

if (logx ne "") { eval "set logscale x ".logx }
if (xstep ne "" && logx eq "") { eval "set xtics ".xstep }
if (ymin ne "") { eval "set yrange [".ymin.":*]" }
if (markx ne "") {
    eval "markx_v = 1.0 * (".markx.")"
    set arrow from markx_v, graph 0 to markx_v, graph 1 nohead dt 2 lw 1.5 lc rgb "#606060"
    set label marklabel at markx_v, graph 0.04 offset 0.6, 0 left tc rgb "#404040"
}
ny = words(ycols)
ns = words(series_values)
set key below box
set bmargin 6 # the x label, then the key under it
if (ny == 1 && series eq "") { unset key }

if (series eq "") {
    plot for [i=1:ny] csv using (column(xcol)):(column(word(ycols, i)) * yscale_v) \
         with linespoints lw 2 pt 7 ps 0.9 title ytitle(i)
} else {
    plot for [i=1:ny] for [j=1:ns] csv \
         using (column(xcol)):(strcol(series) eq word(series_values, j) ? column(word(ycols, i)) * yscale_v : NaN) \
         with linespoints lw 2 pt 7 ps 0.9 \
         title (ny > 1 ? ytitle(i)." " : "").series." = ".word(series_values, j)
}
