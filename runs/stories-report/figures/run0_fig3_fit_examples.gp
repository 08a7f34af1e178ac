# Figure 3 (right): cosine by lag and the fitted decay, three example heads
# Run `gnuplot run0_fig3_fit_examples.gp` in this folder to redraw run0_fig3_fit_examples.svg and run0_fig3_fit_examples.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig3_fit_examples.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig3_fit_examples.png' }
  set multiplot layout 1,3
  set xrange [0:126]
  set autoscale y
  set offsets 0, 0, graph 0.1, graph 0.05
  set grid lc rgb '#e5e5e5'
  set key top right font ',10' spacing 0.9 samplen 2.5
  set xlabel 'lag k'
  set arrow 1 from 64, graph 0 to 64, graph 1 nohead dt 3 lc rgb '#888888'
  set title 'layer 1, head 2: MAE 0.0344125' font ',11'
  set ylabel 'mean cos(v_i, v_{i+k})'
  plot 'run0_fig3_fit_examples_0.dat' using 1:2 with points pt 7 ps 0.5 lc rgb '#444444' title 'measured', \
       '' using 1:3 with lines lw 2 lc rgb '#08519c' title 'e^{-βk}', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'offset model'
  set title 'layer 4, head 6: MAE 0.0755253' font ',11'
  set ylabel ''
  plot 'run0_fig3_fit_examples_1.dat' using 1:2 with points pt 7 ps 0.5 lc rgb '#444444' title 'measured', \
       '' using 1:3 with lines lw 2 lc rgb '#08519c' title 'e^{-βk}', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'offset model'
  set title 'layer 0, head 3: MAE 0.139014' font ',11'
  set ylabel ''
  plot 'run0_fig3_fit_examples_2.dat' using 1:2 with points pt 7 ps 0.5 lc rgb '#444444' title 'measured', \
       '' using 1:3 with lines lw 2 lc rgb '#08519c' title 'e^{-βk}', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#d95f02' title 'offset model'
  unset arrow 1
  set offsets
  unset multiplot

  unset output
}
