# Figure 10: contributions ‖α_i v_i‖ by position, coloured by cos(v_i, s(N))
# Run `gnuplot run0_fig10_contribution_scatter.gp` in this folder to redraw run0_fig10_contribution_scatter.svg and run0_fig10_contribution_scatter.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig10_contribution_scatter.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig10_contribution_scatter.png' }
  set multiplot layout 1,3
  set logscale y
  set format y '10^{%L}'
  set xlabel 'token position i'
  set grid lc rgb '#e5e5e5'
  set cbrange [-1:1]
  set palette defined (-1 '#2166ac', 0 '#f7f7f7', 1 '#b2182b')
  set cblabel 'cos(v_i, s(N))'
  unset key
  set title 'Retriever (layer 3, head 6)' font ',12'
  set ylabel '‖α_i v_i‖'
  plot 'run0_fig10_contribution_scatter_Retriever.dat' using 1:2:3 with points pt 7 ps 0.7 lc palette
  set title 'Mixer (layer 2, head 2)' font ',12'
  set ylabel '‖α_i v_i‖'
  plot 'run0_fig10_contribution_scatter_Mixer.dat' using 1:2:3 with points pt 7 ps 0.7 lc palette
  set title 'Reset (layer 2, head 6)' font ',12'
  set ylabel '‖α_i v_i‖'
  plot 'run0_fig10_contribution_scatter_Reset.dat' using 1:2:3 with points pt 7 ps 0.7 lc palette
  unset multiplot

  unset output
}
