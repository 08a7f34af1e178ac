# Figure 2 (right): coefficient of variation of the non-sink value norms
# Run `gnuplot run0_fig2_cv_histogram.gp` in this folder to redraw run0_fig2_cv_histogram.svg and run0_fig2_cv_histogram.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig2_cv_histogram.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig2_cv_histogram.png' }
  set multiplot layout 1,2
  set style fill solid 0.75 border lc rgb '#ffffff'
  set grid lc rgb '#e5e5e5'
  unset key
  set ylabel 'heads'
  set title 'cv\_positional' font ',12'
  set yrange [0:7]
  set xlabel 'CV over positions of the mean norm profile'
  plot 'run0_fig2_cv_histogram_positional.dat' using 1:4:($3-$2) with boxes lc rgb '#3182bd'
  set title 'cv\_pooled' font ',12'
  set yrange [0:8]
  set xlabel 'CV pooled over tokens'
  plot 'run0_fig2_cv_histogram_pooled.dat' using 1:4:($3-$2) with boxes lc rgb '#e6550d'
  unset title
  unset multiplot

  unset output
}
