# Figure 1: one head's contributions α_i v_i around s(N)
# Run `gnuplot run0_fig1_snapshot.gp` in this folder to redraw run0_fig1_snapshot.svg and run0_fig1_snapshot.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig1_snapshot.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig1_snapshot.png' }
  set size ratio -1
  set xlabel 'principal axis 1'
  set ylabel 'principal axis 2'
  set grid lc rgb '#e5e5e5'
  set key outside right top font ',10'
  set xrange [-0.8904540244013966:0.0523085788736285]
  set yrange [-0.4646468565487257:0.4781157467262995]
  plot 'run0_fig1_snapshot_others.dat' using 1:2 with points pt 7 ps 0.6 lc rgb '#444444' title 'not selected', \
       'run0_fig1_snapshot_selected.dat' using 1:2 with points pt 3 ps 1.6 lw 1.5 lc rgb '#c51b7d' title 'selected (I_N)', \
       'run0_fig1_snapshot_rmax.dat' using 1:2 with lines lw 2 dt 2 lc rgb '#d95f02' title 'r_{max} = 0.432492', \
       'run0_fig1_snapshot_rmin.dat' using 1:2 with lines lw 2 lc rgb '#08519c' title 'r_{min} = 0.400838', \
       'run0_fig1_snapshot_s.dat' using 1:2 with points pt 9 ps 2 lc rgb '#b00020' title 's(N)'

  unset output
}
