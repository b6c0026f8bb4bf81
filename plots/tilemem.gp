# tilemem.gp: the memory of the tiles of every IPU, stacked by kind (code, vertex state,
# always-live data, not-always-live data live at the peak), tiles along x, IPU after IPU (each
# IPU's tiles up to its last one in use: the CSV's column x), with the tile's SRAM as a line.
# Reads a profile's tile_memory.csv (cli/profile.c).
#
#   gnuplot -e "csv='profile/tile_memory.csv'; out='tile-memory.png'; sram='638976'" \
#           -e "title='Tile memory'" plots/tilemem.gp
#
# Variables besides those of common.gp:
#   csv      the CSV            sram    bytes of SRAM per tile

if (!exists("plotsdir")) plotsdir = "plots"
load plotsdir."/common.gp"
if (!exists("sram")) sram = "0"
eval "sram_v = 1.0 * (".sram.") / 1024"

set style fill solid 1.0 noborder
set boxwidth 1.0 absolute
set key outside right top vertical Left reverse
set xrange [-0.5:*]
set offsets 0, 1, 0, 0
set xtics scale 0 nomirror
set yrange [0:*]
if (xlabel eq "") set xlabel "tiles of each IPU, from tile 0 to its last tile in use"
if (ylabel eq "") set ylabel "KiB"
set grid noxtics ytics
plot csv using "x":(($4 + $5 + $6 + ($9 - $6)) / 1024) with boxes fc rgb "#87ceeb" title "not-always-live (live at peak)", \
     csv using "x":(($4 + $5 + $6) / 1024) with boxes fc rgb "#4682b4" title "always-live", \
     csv using "x":(($4 + $5) / 1024) with boxes fc rgb "#ff8c00" title "vertex state", \
     csv using "x":($4 / 1024):xtic(column("tile") == 0 ? sprintf("IPU %d", column("ipu")) : "") \
         with boxes fc rgb "#2e8b57" title "code", \
     csv using "x":(column("tile") == 0 ? sram_v : NaN) with impulses lc rgb "#808080" dt 2 notitle, \
     sram_v with lines lc rgb "#dc143c" dt 2 title "SRAM"
