# κ scan of the exact-mean bounds: coverage and envelope width against κ
# Run `gnuplot run0_kappa_exact-mean.gp` in this folder to redraw run0_kappa_exact-mean.svg and run0_kappa_exact-mean.png.
set encoding utf8
do for [out in "svg png"] {
  if (out eq "svg") { set terminal svg size 860,600 dynamic enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_kappa_exact-mean.svg' } else { set terminal pngcairo size 1290,900 enhanced font 'Helvetica,13' background rgb 'white'; set output 'run0_kappa_exact-mean.png' }
  set multiplot layout 2,2
  set logscale x 10
  set format x '10^{%L}'
  set xrange [1e-8:1e8]
  set xtics 1e-8, 1e4, 1e8
  set yrange [-0.03:1.08]
  set key bottom left font ',10' samplen 2
  set grid lc rgb '#e5e5e5'
  set xlabel 'κ (log scale)' font ',11'
  set title 'P lower' font ',12'
  set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb '#888888'
  plot 'run0_kappa_exact-mean.dat' index 0 using 1:2 with lines lw 2 lc rgb '#1b9e77' title 'coverage', \
       '' index 0 using 1:3 with lines lw 1.4 dt 2 lc rgb '#1b9e77' title 'mean width', \
       'run0_kappa_exact-mean_star.dat' every ::0::0 using 2:3 with points pt 7 ps 1.8 lc rgb '#222222' title 'κ*', \
       '' every ::0::0 using 2:(-0.03):(0):(1.11) with vectors nohead dt 4 lc rgb '#222222' notitle
  set title 'P upper' font ',12'
  set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb '#888888'
  plot 'run0_kappa_exact-mean.dat' index 1 using 1:2 with lines lw 2 lc rgb '#d95f02' title 'coverage', \
       '' index 1 using 1:3 with lines lw 1.4 dt 2 lc rgb '#d95f02' title 'mean width', \
       'run0_kappa_exact-mean_star.dat' every ::1::1 using 2:3 with points pt 7 ps 1.8 lc rgb '#222222' title 'κ*', \
       '' every ::1::1 using 2:(-0.03):(0):(1.11) with vectors nohead dt 4 lc rgb '#222222' notitle
  set title 'R lower' font ',12'
  set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb '#888888'
  plot 'run0_kappa_exact-mean.dat' index 2 using 1:2 with lines lw 2 lc rgb '#7570b3' title 'coverage', \
       '' index 2 using 1:3 with lines lw 1.4 dt 2 lc rgb '#7570b3' title 'mean width', \
       'run0_kappa_exact-mean_star.dat' every ::2::2 using 2:3 with points pt 7 ps 1.8 lc rgb '#222222' title 'κ*', \
       '' every ::2::2 using 2:(-0.03):(0):(1.11) with vectors nohead dt 4 lc rgb '#222222' notitle
  set title 'R upper' font ',12'
  set arrow 1 from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb '#888888'
  plot 'run0_kappa_exact-mean.dat' index 3 using 1:2 with lines lw 2 lc rgb '#e7298a' title 'coverage', \
       '' index 3 using 1:3 with lines lw 1.4 dt 2 lc rgb '#e7298a' title 'mean width', \
       'run0_kappa_exact-mean_star.dat' every ::3::3 using 2:3 with points pt 7 ps 1.8 lc rgb '#222222' title 'κ*', \
       '' every ::3::3 using 2:(-0.03):(0):(1.11) with vectors nohead dt 4 lc rgb '#222222' notitle
  unset multiplot

  unset output
}
