# Figure 2 (left): value-state norm by position, over all heads
# Run `gnuplot run0_fig2_norm_by_position.gp` in this folder to redraw run0_fig2_norm_by_position.svg and run0_fig2_norm_by_position.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig2_norm_by_position.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig2_norm_by_position.png' }
  set xlabel 'token position i'
  set ylabel 'mean ‖v_i‖ over heads'
  set grid lc rgb '#e5e5e5'
  set key top right
  set xrange [-2:127]
  plot 'run0_fig2_norm_by_position.dat' using 1:3:4 with filledcurves lc rgb '#9ecae1' fs transparent solid 0.5 title 'interquartile range over heads', \
       '' using 1:2 with lines lw 2 lc rgb '#08519c' title 'mean over heads', \
       '' every ::0::0 using 1:2 with points pt 7 ps 1.6 lc rgb '#b00020' title 'sink (position 0)'

  unset output
}
