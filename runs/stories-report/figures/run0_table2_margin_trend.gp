# Table 2's trend: the margins Δ/B and Δ_0/B against N, by regime
# Run `gnuplot run0_table2_margin_trend.gp` in this folder to redraw run0_table2_margin_trend.svg and run0_table2_margin_trend.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_table2_margin_trend.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_table2_margin_trend.png' }
  set multiplot layout 1,2
  set logscale x 2
  set xrange [1:128]
  set yrange [-0.12137759152729378:0.005941562753529664]
  set grid lc rgb '#e5e5e5'
  set xlabel 'N'
  set key bottom left font ',10' spacing 0.9
  set arrow from 1,0 to 128,0 nohead lc rgb '#888888'
  set title 'Δ/B' font ',12'
  set ylabel 'Δ/B'
  plot 'run0_table2_margin_trend_II.dat' using 1:2 with points pt 7 ps 0.4 lc rgb '#d95f02' title 'regime II', \
       'run0_table2_margin_trend_III.dat' using 1:2 with points pt 7 ps 0.4 lc rgb '#1b9e77' title 'regime III', \
       'run0_table2_margin_trend_V.dat' using 1:2 with points pt 7 ps 0.4 lc rgb '#e7298a' title 'regime V', \
       'run0_table2_margin_trend_median.dat' using 1:2 with lines lw 2.5 lc rgb '#444444' title 'median over heads'
  set title 'Δ_0/B' font ',12'
  set ylabel 'Δ_0/B'
  plot 'run0_table2_margin_trend_II.dat' using 1:3 with points pt 7 ps 0.4 lc rgb '#d95f02' title 'regime II', \
       'run0_table2_margin_trend_III.dat' using 1:3 with points pt 7 ps 0.4 lc rgb '#1b9e77' title 'regime III', \
       'run0_table2_margin_trend_V.dat' using 1:3 with points pt 7 ps 0.4 lc rgb '#e7298a' title 'regime V', \
       'run0_table2_margin_trend_median.dat' using 1:3 with lines lw 2.5 lc rgb '#444444' title 'median over heads'
  unset multiplot

  unset output
}
