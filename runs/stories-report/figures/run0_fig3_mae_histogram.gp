# Figure 3 (left): error of the exponential cosine fit over heads
# Run `gnuplot run0_fig3_mae_histogram.gp` in this folder to redraw run0_fig3_mae_histogram.svg and run0_fig3_mae_histogram.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig3_mae_histogram.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig3_mae_histogram.png' }
  set style fill solid 0.75 border lc rgb '#ffffff'
  set grid lc rgb '#e5e5e5'
  set xlabel 'MAE of e^{-βk} to the mean cos by lag'
  set ylabel 'heads'
  set yrange [0:6]
  unset key
  plot 'run0_fig3_mae_histogram.dat' using 1:4:($3-$2) with boxes lc rgb '#3182bd'

  unset output
}
