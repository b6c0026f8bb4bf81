# timeline.gp: the steps of each IPU over cycles, coloured by PopVision category, as the
# execution trace of the Graph Analyser draws them (one row per IPU, IPU 0 on top). Reads a
# profile's timeline.csv (cli/profile.c: ipu,category,cat,start,end,step; cycles from the
# start of the part shown).
#
#   gnuplot -e "csv='profile/timeline.csv'; out='timeline.png'; nipus=4" \
#           -e "title='One device iteration'; machine='mk2'" plots/timeline.gp
#
# Variables besides those of common.gp:
#   csv      the timeline           nipus   the IPUs (rows)

if (!exists("plotsdir")) plotsdir = "plots"
load plotsdir."/common.gp"
if (!exists("nipus")) nipus = 1
eval "nipus_v = int(".nipus.")"

# The categories in the order of hw/cats.def, and a colour each.
cats = "OnTileExecute DoExchange GlobalExchange Sync StreamCopyBegin StreamCopyMid StreamCopyEnd StreamCopyMidRemoteBuffer Idle"
colours = "#2e8b57 #4682b4 #8a2be2 #c0c0c0 #ff8c00 #d2691e #ffd700 #dc143c #f5f5f5"
array rgb[9] = [0x2e8b57, 0x4682b4, 0x8a2be2, 0xc0c0c0, 0xff8c00, 0xd2691e, 0xffd700, 0xdc143c, 0xf5f5f5]
colour(c) = rgb[int(c) + 1]

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
     for [c=0:8] NaN with boxes fc rgb word(colours, c + 1) title word(cats, c + 1)
