# Figure 10: contribution ‖α_i v_i‖ by position, per regime
# Run `gnuplot run0_fig10_contribution_by_regime.gp` in this folder to redraw run0_fig10_contribution_by_regime.svg and run0_fig10_contribution_by_regime.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig10_contribution_by_regime.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig10_contribution_by_regime.png' }
  set logscale y
  set format y '10^{%L}'
  set xlabel 'token position i'
  set ylabel 'mean ‖α_i v_i‖'
  set grid lc rgb '#e5e5e5'
  set key top center font ',11'
  set xrange [-2:127]
  plot 'run0_fig10_contribution_by_regime.dat' using 1:($2>0?$2:1/0) with lines lw 2 lc rgb '#e6550d' title 'Retriever (1 head)', \
       'run0_fig10_contribution_by_regime.dat' using 1:($3>0?$3:1/0) with lines lw 2 lc rgb '#3182bd' title 'Mixer (37 heads)', \
       'run0_fig10_contribution_by_regime.dat' using 1:($4>0?$4:1/0) with lines lw 2 lc rgb '#31a354' title 'Reset (2 heads)'

  unset output
}
