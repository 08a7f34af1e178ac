# Figure 8: head regimes by layer
# Run `gnuplot run0_fig8_regimes_by_layer.gp` in this folder to redraw run0_fig8_regimes_by_layer.svg and run0_fig8_regimes_by_layer.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig8_regimes_by_layer.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig8_regimes_by_layer.png' }
  set style data histograms
  set style histogram rowstacked
  set style fill solid 0.85 border lc rgb '#ffffff'
  set boxwidth 0.8
  set xlabel 'layer'
  set ylabel 'heads'
  set yrange [0:*]
  set grid ytics lc rgb '#e5e5e5'
  set key outside right top
  plot 'run0_fig8_regimes_by_layer.dat' using 2:xtic(int($0) % 1 == 0 ? stringcolumn(1) : '') lc rgb '#e6550d' title 'Retriever', \
       '' using 3 lc rgb '#3182bd' title 'Mixer', \
       '' using 4 lc rgb '#31a354' title 'Reset'

  unset output
}
