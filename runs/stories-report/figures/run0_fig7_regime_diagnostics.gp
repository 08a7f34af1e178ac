# Figure 7: geometry of s(N) for a typical head of each regime
# Run `gnuplot run0_fig7_regime_diagnostics.gp` in this folder to redraw run0_fig7_regime_diagnostics.svg and run0_fig7_regime_diagnostics.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig7_regime_diagnostics.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig7_regime_diagnostics.png' }
  set multiplot layout 2,3
  set logscale x 2
  set xrange [1:128]
  set grid lc rgb '#e5e5e5'
  set key top left font ',10' spacing 0.9 samplen 2.5
  set title 'Retriever (layer 3, head 6)' font ',12'
  set xlabel 'N'
  set ylabel '‖s(N)‖'
  set yrange [0:*]
  plot 'run0_fig7_regime_diagnostics_Retriever.dat' using 1:2 with lines lw 2 lc rgb '#08519c' title 's(N)', \
       '' using 1:3 with lines lw 1.5 dt 4 lc rgb '#b00020' title 'without sink', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#31a354' title 'without last'
  set title 'Mixer (layer 2, head 2)' font ',12'
  set xlabel 'N'
  set ylabel '‖s(N)‖'
  set yrange [0:*]
  plot 'run0_fig7_regime_diagnostics_Mixer.dat' using 1:2 with lines lw 2 lc rgb '#08519c' title 's(N)', \
       '' using 1:3 with lines lw 1.5 dt 4 lc rgb '#b00020' title 'without sink', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#31a354' title 'without last'
  set title 'Reset (layer 2, head 6)' font ',12'
  set xlabel 'N'
  set ylabel '‖s(N)‖'
  set yrange [0:*]
  plot 'run0_fig7_regime_diagnostics_Reset.dat' using 1:2 with lines lw 2 lc rgb '#08519c' title 's(N)', \
       '' using 1:3 with lines lw 1.5 dt 4 lc rgb '#b00020' title 'without sink', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#31a354' title 'without last'
  unset title
  set ylabel 'cosine'
  set yrange [-1.05:1.05]
  plot 'run0_fig7_regime_diagnostics_Retriever.dat' using 1:5 with lines lw 2 lc rgb '#08519c' title 'cos(s, v_0)', \
       '' using 1:6 with lines lw 1.5 dt 2 lc rgb '#e6550d' title 'cos(s, v_L)'
  unset title
  set ylabel 'cosine'
  set yrange [-1.05:1.05]
  plot 'run0_fig7_regime_diagnostics_Mixer.dat' using 1:5 with lines lw 2 lc rgb '#08519c' title 'cos(s, v_0)', \
       '' using 1:6 with lines lw 1.5 dt 2 lc rgb '#e6550d' title 'cos(s, v_L)'
  unset title
  set ylabel 'cosine'
  set yrange [-1.05:1.05]
  plot 'run0_fig7_regime_diagnostics_Reset.dat' using 1:5 with lines lw 2 lc rgb '#08519c' title 'cos(s, v_0)', \
       '' using 1:6 with lines lw 1.5 dt 2 lc rgb '#e6550d' title 'cos(s, v_L)'
  unset multiplot

  unset output
}
