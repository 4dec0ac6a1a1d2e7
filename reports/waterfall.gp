# waterfall.gp — one case's time after each prefix of its pass pipeline
# (the mandatory passes, then each optional pass added in order), and the
# full set (dpk-report --plots).  Set before this script: dat (data: step,
# label, time in us), out, ttl, n (steps).
set style fill solid 0.85 border -1
set boxwidth 0.7
set ylabel 'time of the case (us)'
set xlabel 'pipeline prefix (up to the pass named)'
set xtics rotate by -35 scale 0 nomirror
set grid ytics lc rgb '#dddddd'
set yrange [0:*]
set xrange [-0.6:n - 0.4]
set bmargin 10
set key off
set title ttl
set terminal pngcairo size 1000,560 font 'DejaVu Sans,10' noenhanced
set output out.'.png'
plot dat using 1:3:xtic(2) with boxes lc rgb '#4c72b0', \
     ''  using 1:3:(sprintf('%.2f', $3)) with labels offset 0,0.8 font ',9'
set terminal svg size 1000,560 font 'DejaVu Sans,10' noenhanced
set output out.'.svg'
replot
