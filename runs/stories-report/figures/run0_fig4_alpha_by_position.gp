# Figure 4: attention mass by position, over all heads
# Run `gnuplot run0_fig4_alpha_by_position.gp` in this folder to redraw run0_fig4_alpha_by_position.svg and run0_fig4_alpha_by_position.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig4_alpha_by_position.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig4_alpha_by_position.png' }
  set logscale y
  set format y '10^{%L}'
  set xlabel 'token position i'
  set ylabel 'α_i'
  set grid lc rgb '#e5e5e5'
  set key top center font ',11'
  set xrange [-2:127]
  plot 'run0_fig4_alpha_by_position.dat' using 1:($3>0?$3:1/0):($4>0?$4:1/0) with filledcurves lc rgb '#9ecae1' fs transparent solid 0.5 title 'interquartile range over heads', \
       'run0_fig4_alpha_by_position.dat' using 1:($2>0?$2:1/0) with lines lw 2 lc rgb '#08519c' title 'mean over heads', \
       'run0_fig4_alpha_by_position.dat' using 1:($5>0?$5:1/0) with lines lw 2 dt 2 lc rgb '#d95f02' title 'fitted Assumption-3 profile'

  unset output
}
