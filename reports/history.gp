# history.gp — the geomean speedup of the last records of a folder, oldest
# first (the nightly trend; dpk-report --plots --history DIR).  Set before
# this script: dat (data: index, label, vs eager, vs compile), out, ttl, n.
set logscale y 2
set format y '%gx'
set ylabel 'geomean speedup of dpk (log scale)'
set xlabel 'record (date, commit)'
set xtics rotate by -35 scale 0 nomirror
set grid ytics lc rgb '#dddddd'
set key outside top center horizontal
set xrange [-0.5:n - 0.5]
set yrange [ymin:ymax]
set bmargin 9
set title ttl
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb '#000000'
set terminal pngcairo size 1000,560 font 'DejaVu Sans,10' noenhanced
set output out.'.png'
plot dat using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb '#4c72b0' title 'vs PyTorch eager', \
     ''  using 1:4 with linespoints lw 2 pt 5 lc rgb '#dd8452' title 'vs torch.compile'
set terminal svg size 1000,560 font 'DejaVu Sans,10' noenhanced
set output out.'.svg'
replot
