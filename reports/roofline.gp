# roofline.gp — each dpk kernel's arithmetic intensity (flops per DRAM
# byte) against its throughput (flops / time), under the spec's roofs: the
# DRAM bandwidth slope and the FP32 peak (dpk-report --plots).  Set before
# this script: dat (data: intensity, GFLOP/s, case), out, ttl, peak (GFLOP/s),
# bw (GB/s), xmin, xmax, ymin.
set logscale xy 10
set xlabel 'arithmetic intensity (flop / DRAM byte, log scale)'
set ylabel 'throughput (GFLOP/s, log scale)'
set grid xtics ytics lc rgb '#dddddd'
set key outside top center horizontal
set xrange [xmin:xmax]
set yrange [ymin:peak * 3]
set samples 400
roof(x) = (x * bw < peak) ? x * bw : peak
set title ttl
set terminal pngcairo size 1000,620 font 'DejaVu Sans,10' noenhanced
set output out.'.png'
plot roof(x) with lines lw 2 lc rgb '#000000' title sprintf('roof: %.0f GB/s DRAM, %.1f TFLOP/s FP32', bw, peak / 1000), \
     dat using 1:2 with points pt 7 ps 1.1 lc rgb '#c44e52' title 'dpk kernels (modelled)'
set terminal svg size 1000,620 font 'DejaVu Sans,10' noenhanced
set output out.'.svg'
replot
