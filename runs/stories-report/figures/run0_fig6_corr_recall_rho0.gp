# Figure 6: correlation of Recall with ρ0 across heads
# Run `gnuplot run0_fig6_corr_recall_rho0.gp` in this folder to redraw run0_fig6_corr_recall_rho0.svg and run0_fig6_corr_recall_rho0.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig6_corr_recall_rho0.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig6_corr_recall_rho0.png' }
  set logscale x 2
  set xrange [1:128]
  set yrange [-1.05:1.05]
  set grid lc rgb '#e5e5e5'
  set key bottom left
  set xlabel 'N (selected tokens, log scale)'
  set ylabel 'corr(R(r_{min}, N), ρ_0)'
  set arrow 1 from 1, 0 to 128, 0 nohead lc rgb '#888888'
  plot 'run0_fig6_corr_recall_rho0.dat' using 1:3:4 with filledcurves lc rgb '#9ecae1' fs transparent solid 0.5 title '95% bootstrap interval', \
       'run0_fig6_corr_recall_rho0.dat' using 1:2 with lines lw 2.5 lc rgb '#08519c' title 'Pearson correlation'
  unset arrow 1

  unset output
}
