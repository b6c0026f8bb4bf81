# timeline.gp: the steps of each IPU over cycles, coloured by PopVision category, as the
# execution trace of the Graph Analyser draws them (one row per IPU, IPU 0 on top), the
# longest compute steps named above their spans. Reads a
# profile's timeline.csv (cli/profile.c: ipu,category,cat,start,end,step; cycles from the
# start of the part shown).
#
#   gnuplot -e "csv='profile/timeline.csv'; out='timeline.png'; nipus=4" \
#           -e "title='One device iteration'; machine='mk2'" plots/timeline.gp
#
# Variables besides those of common.gp:
#   csv      the timeline           nipus   the IPUs (rows)
#   colours  the categories' colours in the order of hw/cats.def, "#rrggbb" separated by spaces
#            (`ipusim metrics` gives them; plots/profile.sh passes them)

if (!exists("plotsdir")) plotsdir = "plots"
load plotsdir."/common.gp"
if (!exists("nipus")) nipus = 1
eval "nipus_v = int(".nipus.")"

# The categories in the order of hw/cats.def, and their colours from it.
cats = "OnTileExecute DoExchange GlobalExchange Sync StreamCopyBegin StreamCopyMid StreamCopyEnd StreamCopyMidRemoteBuffer Idle"
if (!exists("colours") || words(colours) != 9) { print "timeline.gp: colours must give the 9 categories' colours"; exit status 1 }
array rgb[9]
do for [i=1:9] { eval sprintf("rgb[%d] = 0x%s", i, word(colours, i)[2:]) }
colour(c) = rgb[int(c) + 1]

# Step names on the compute spans long enough to show (1.2% of the width or more; the text
# stands upright, white, inside the bar); the width read before the axes' ranges are set.
stats csv using 5 nooutput
wide = 0.012 * STATS_max

set ytics nomirror scale 0 ("IPU 0" 0)
set for [i=1:nipus_v-1] ytics add (sprintf("IPU %d", i) -i)
set yrange [-nipus_v + 0.4:0.6]
set xrange [0:*]
set grid xtics noytics
set key outside right top vertical Left reverse
set style fill solid 1.0 noborder
if (xlabel eq "") set xlabel "cycles (thousands) from the start of the part shown"
plot csv using (($4 + $5) / 2e3):(-$1):(($5 - $4) / 2e3):(0.35):(colour($3)) \
         with boxxyerror fc rgb variable notitle, \
     csv using (($4 + $5) / 2e3):(-$1):(($5 - $4) >= wide && $3 == 0 ? strcol(6) : "") \
         with labels rotate by 90 center font ",7" tc rgb "white" notitle, \
     for [c=0:8] NaN with boxes fc rgb word(colours, c + 1) title word(cats, c + 1)
