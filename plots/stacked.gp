# stacked.gp: a stacked bar chart from a CSV with a header row: one bar per row, labelled by
# the column labelcol, split into the y columns (e.g. the time split by category: compute,
# exchange, sync, stream copies, idle). Rows are drawn in file order.
#
#   gnuplot -e "csv='split.csv'; out='split.png'; labelcol='label'" \
#           -e "ycols='split.compute split.sync'; ytitles='compute|sync'" \
#           -e "ylabel='time per step (us)'; title='Time split'; machine='mk2'" plots/stacked.gp
#
# Variables besides those of common.gp:
#   csv       the CSV                 labelcol  the column naming each bar (default "label")
#   ycols     the stacked columns' names, separated by spaces, bottom first
#   ycolours  their colours, "#rrggbb" separated by spaces (optional: a time category's own,
#             from `ipusim metrics`; default gnuplot's)

if (!exists("plotsdir")) plotsdir = "plots"
load plotsdir."/common.gp"
if (!exists("labelcol")) labelcol = "label"
if (!exists("ycolours")) ycolours = ""

ny = words(ycols)
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb "#303030"
set boxwidth 0.7 relative
set key outside right top vertical reverse Left
set yrange [0:*]
set xtics nomirror rotate by -25 left
set grid noxtics ytics
if (words(ycolours) == ny) {
    plot for [i=1:ny] csv using (column(word(ycols, i)) * yscale_v):xtic(strcol(labelcol)) \
         lc rgb word(ycolours, i) title ytitle(i)
} else {
    plot for [i=1:ny] csv using (column(word(ycols, i)) * yscale_v):xtic(strcol(labelcol)) title ytitle(i)
}
