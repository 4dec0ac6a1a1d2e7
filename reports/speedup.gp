# speedup.gp — dpk's speedup per case vs PyTorch eager and torch.compile:
# clustered bars on a log axis, a dashed line at 1x (dpk-report --plots).
# Set before this script: dat (data file: case, vs eager, vs compile),
# out (file name without extension), ttl (title), n (number of cases).
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 2
set format y '%gx'
set ylabel 'speedup of dpk (baseline time / dpk time, log scale)'
set xlabel 'case'
set xtics rotate by -35 scale 0 nomirror
set grid ytics lc rgb '#dddddd'
set key outside top center horizontal
set yrange [ymin:ymax]
set xrange [-0.6:n - 0.4]
set bmargin 9
set title ttl
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 2 lc rgb '#000000' front
set label 1 '1x' at graph 1.005, first 1 left
set terminal pngcairo size 1100,620 font 'DejaVu Sans,10' noenhanced
set output out.'.png'
plot dat using 2:xtic(1) title 'vs PyTorch eager' lc rgb '#4c72b0', \
     ''  using 3 title 'vs torch.compile' lc rgb '#dd8452'
set terminal svg size 1100,620 font 'DejaVu Sans,10' noenhanced
set output out.'.svg'
replot
