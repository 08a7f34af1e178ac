# Figure 11: Precision and Recall against N, per regime
# Run `gnuplot run0_fig11_precision_recall_by_regime.gp` in this folder to redraw run0_fig11_precision_recall_by_regime.svg and run0_fig11_precision_recall_by_regime.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig11_precision_recall_by_regime.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig11_precision_recall_by_regime.png' }
  set multiplot layout 1,2
  set logscale x 2
  set xrange [1:128]
  set yrange [-0.03:1.08]
  set grid lc rgb '#e5e5e5'
  set bmargin 6
  set xlabel 'N (selected tokens, log scale)'
  set key at screen 0.5, screen 0.015 center bottom horizontal font ',12' samplen 3 width 2
  set ylabel 'mean P(r_{max}, N)'
  plot 'run0_fig11_precision_recall_by_regime.dat' using 1:2 with lines lw 2 lc rgb '#e6550d' title 'Retriever (1 head)', \
       'run0_fig11_precision_recall_by_regime.dat' using 1:5 with lines lw 2 lc rgb '#3182bd' title 'Mixer (37 heads)', \
       'run0_fig11_precision_recall_by_regime.dat' using 1:8 with lines lw 2 lc rgb '#31a354' title 'Reset (2 heads)'
  unset key
  set ylabel 'mean R(r_{min}, N)'
  plot 'run0_fig11_precision_recall_by_regime.dat' using 1:3 with lines lw 2 lc rgb '#e6550d' title 'Retriever (1 head)', \
       'run0_fig11_precision_recall_by_regime.dat' using 1:6 with lines lw 2 lc rgb '#3182bd' title 'Mixer (37 heads)', \
       'run0_fig11_precision_recall_by_regime.dat' using 1:9 with lines lw 2 lc rgb '#31a354' title 'Reset (2 heads)'
  unset multiplot
  set bmargin

  unset output
}
