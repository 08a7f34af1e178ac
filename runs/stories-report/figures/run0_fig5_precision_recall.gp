# Figure 5: Precision and Recall against N with the envelopes
# Run `gnuplot run0_fig5_precision_recall.gp` in this folder to redraw run0_fig5_precision_recall.svg and run0_fig5_precision_recall.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig5_precision_recall.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_fig5_precision_recall.png' }
  set multiplot layout 1,2
  set logscale x 2
  set xrange [1:128]
  set yrange [-0.03:1.08]
  set grid lc rgb '#e5e5e5'
  set bmargin 7.5
  set xlabel 'N (selected tokens, log scale)'
  set key at screen 0.5, screen 0.015 center bottom horizontal maxrows 2 font ',11' samplen 3 width 1
  set ylabel 'mean P(r_{max}, N) over heads'
  plot 'run0_fig5_precision_recall.dat' using 1:2 with lines lw 2.5 lc rgb '#08519c' title 'measured (mean over heads)', \
       '' using 1:4 with lines lw 1.5 dt 2 lc rgb '#d95f02' notitle, \
       '' using 1:5 with lines lw 1.5 lc rgb '#d95f02' title 'paper', \
       '' using 1:($4 > $5 ? $4 : 1/0) with points pt 13 ps 1.2 lc rgb '#d95f02' notitle, \
       '' using 1:8 with lines lw 1.5 dt 2 lc rgb '#1b9e77' notitle, \
       '' using 1:9 with lines lw 1.5 lc rgb '#1b9e77' title 'exact-mean', \
       '' using 1:($8 > $9 ? $8 : 1/0) with points pt 13 ps 1.2 lc rgb '#1b9e77' notitle, \
       '' using 1:12 with lines lw 1.5 dt 2 lc rgb '#7570b3' notitle, \
       '' using 1:13 with lines lw 1.5 lc rgb '#7570b3' title 'scale-invariant', \
       '' using 1:($12 > $13 ? $12 : 1/0) with points pt 13 ps 1.2 lc rgb '#7570b3' notitle, \
       '' using 1:16 with lines lw 1.5 dt 2 lc rgb '#66a61e' notitle, \
       '' using 1:17 with lines lw 1.5 lc rgb '#66a61e' title 'corrected', \
       '' using 1:($16 > $17 ? $16 : 1/0) with points pt 13 ps 1.2 lc rgb '#66a61e' notitle, \
       1/0 with points pt 13 ps 1.2 lc rgb '#444444' title 'inverted (lower > upper)', \
       1/0 with lines lw 1.5 lc rgb '#444444' title 'upper envelope', \
       1/0 with lines lw 1.5 dt 2 lc rgb '#444444' title 'lower envelope'
  unset key
  set ylabel 'mean R(r_{min}, N) over heads'
  plot 'run0_fig5_precision_recall.dat' using 1:3 with lines lw 2.5 lc rgb '#08519c' title 'measured (mean over heads)', \
       '' using 1:6 with lines lw 1.5 dt 2 lc rgb '#d95f02' notitle, \
       '' using 1:7 with lines lw 1.5 lc rgb '#d95f02' title 'paper', \
       '' using 1:($6 > $7 ? $6 : 1/0) with points pt 13 ps 1.2 lc rgb '#d95f02' notitle, \
       '' using 1:10 with lines lw 1.5 dt 2 lc rgb '#1b9e77' notitle, \
       '' using 1:11 with lines lw 1.5 lc rgb '#1b9e77' title 'exact-mean', \
       '' using 1:($10 > $11 ? $10 : 1/0) with points pt 13 ps 1.2 lc rgb '#1b9e77' notitle, \
       '' using 1:14 with lines lw 1.5 dt 2 lc rgb '#7570b3' notitle, \
       '' using 1:15 with lines lw 1.5 lc rgb '#7570b3' title 'scale-invariant', \
       '' using 1:($14 > $15 ? $14 : 1/0) with points pt 13 ps 1.2 lc rgb '#7570b3' notitle, \
       '' using 1:18 with lines lw 1.5 dt 2 lc rgb '#66a61e' notitle, \
       '' using 1:19 with lines lw 1.5 lc rgb '#66a61e' title 'corrected', \
       '' using 1:($18 > $19 ? $18 : 1/0) with points pt 13 ps 1.2 lc rgb '#66a61e' notitle, \
       1/0 with points pt 13 ps 1.2 lc rgb '#444444' title 'inverted (lower > upper)', \
       1/0 with lines lw 1.5 lc rgb '#444444' title 'upper envelope', \
       1/0 with lines lw 1.5 dt 2 lc rgb '#444444' title 'lower envelope'
  unset multiplot
  set bmargin

  unset output
}
