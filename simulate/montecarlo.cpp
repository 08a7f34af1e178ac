// Monte Carlo trials; see montecarlo.hpp.
#include "simulate/montecarlo.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/cpu_features.hpp"
#include "theory/single_gram.hpp"

namespace attngeo::simulate {
namespace {

// BLAS runs single-threaded inside each trial; parallelism is over trials.
void pin_blas_to_one_thread() {
    static const bool done = [] {
        openblas_set_num_threads(1);
        return true;
    }();
    (void)done;
}

// G = ranked·rankedᵀ through SYRK (lower), then mirrored.
void gram_of(const theory::RowMatrix& ranked, Eigen::MatrixXd& gram) {
    const int n = static_cast<int>(ranked.rows());
    const int d = static_cast<int>(ranked.cols());
    gram.resize(n, n);
    // Row-major [n, d] is column-major [d, n] = Yᵀ; C = (Yᵀ)ᵀ(Yᵀ) = Y Yᵀ.
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, d, 1.0, ranked.data(), d, 0.0,
                gram.data(), n);
    theory::symmetrize_from_lower(gram);
}

// The lower triangle of the single-precision Gram matrix of fl32(σ·ranked) (twice the speed of
// DSYRK; never mirrored: the Euclidean sweep and the realised statistics read only the lower
// triangle); theory/ widens its error bands to float32 rounding. The packed AVX2 tiles
// (single_gram.hpp) when use_avx2_fma(), else SSYRK (CPUs without AVX2, and ATTNGEO_PLAIN=1 so
// that CI runs this branch too). The leading dimension, a multiple of 24 and so of 8, keeps
// theory's strided reads aligned. Returns σ's exponent.
int single_gram_of(const theory::RowMatrix& ranked, theory::SingleRowMatrix& scaled,
                   std::vector<float>& panels, Eigen::MatrixXf& gram) {
    const int n = static_cast<int>(ranked.rows());
    const int d = static_cast<int>(ranked.cols());
    gram.resize(theory::single_gram_leading_dimension(n), n);
    if (use_avx2_fma()) {
        const int scale_exponent = theory::single_precision_scale_exponent(ranked);
        theory::single_gram_lower(ranked, scale_exponent, gram.data(),
                                  static_cast<int>(gram.rows()), panels);
        return scale_exponent;
    }
    const int scale_exponent = theory::scaled_single_precision(ranked, scaled);
    cblas_ssyrk(CblasColMajor, CblasLower, CblasTrans, n, d, 1.0f, scaled.data(), d, 0.0f,
                gram.data(), static_cast<int>(gram.rows()));
    return scale_exponent;
}

void accumulate(const std::vector<theory::SelectionMetrics>& rows, SimulationSums& sums) {
    for (std::size_t s = 0; s < rows.size(); ++s) {
        sums.by_size[s].precision.add(rows[s].precision_at_rmax);
        sums.by_size[s].recall.add(rows[s].recall_at_rmin);
        sums.by_size[s].fmax.add(rows[s].f_at_rmax);
        sums.by_size[s].fmin.add(rows[s].f_at_rmin);
    }
}

// The per-trial sink cosine and norm statistics shared by both realised-statistics paths:
// to_sink[j] = cos(v_0, v_j) and norm[j] = ‖v_j‖ for j ≥ 1.
void add_sink_and_norm_statistics(const std::vector<double>& to_sink, const double* norm,
                                  const Eigen::VectorXd& nominal, RealisedSums& sums) {
    const int n = static_cast<int>(to_sink.size());
    double sink_total = 0, ratio_sum = 0, ratio_sq = 0;
    int counted = 0;
    for (int j = 1; j < n; ++j) {
        sink_total += to_sink[j];
        if (nominal[j] > 0) {
            const double ratio = norm[j] / nominal[j];
            ratio_sum += ratio;
            ratio_sq += ratio * ratio;
            ++counted;
        }
    }
    sums.cos_to_sink.add(sink_total / (n - 1));
    if (counted > 0) {
        const double mean = ratio_sum / counted;
        const double variance = std::max(ratio_sq / counted - mean * mean, 0.0);
        sums.norm_ratio_mean.add(mean);
        sums.norm_ratio_cv.add(mean > 0 ? std::sqrt(variance) / mean : 0.0);
    }
}

}  // namespace

void RealisedSums::merge(const RealisedSums& o) {
    for (int k = 0; k < kRealisedLags; ++k)
        cos_by_lag[k].merge(o.cos_by_lag[k]);
    cos_to_sink.merge(o.cos_to_sink);
    norm_ratio_mean.merge(o.norm_ratio_mean);
    norm_ratio_cv.merge(o.norm_ratio_cv);
}

void SizeSums::merge(const SizeSums& o) {
    precision.merge(o.precision);
    recall.merge(o.recall);
    fmax.merge(o.fmax);
    fmin.merge(o.fmin);
}

TrialCounts TrialCounts::zeros(std::int64_t first, std::int64_t trials, int size_count) {
    if (first < 0 || trials < 0 || size_count < 0)
        throw std::logic_error("TrialCounts::zeros: negative extent");
    TrialCounts c;
    c.first = first;
    c.trials = trials;
    c.size_count = size_count;
    c.K_in.assign(static_cast<std::size_t>(trials) * size_count, 0);
    c.K_out.assign(c.K_in.size(), 0);
    return c;
}

void TrialCounts::append(const TrialCounts& next) {
    if (next.trials == 0) return;
    if (trials == 0) {
        *this = next;
        return;
    }
    if (next.size_count != size_count)
        throw std::logic_error("TrialCounts::append: size lists differ");
    if (next.first != first + trials)
        throw std::logic_error("TrialCounts::append: block from trial " +
                               std::to_string(next.first) + " does not follow trials " +
                               std::to_string(first) + ".." + std::to_string(first + trials - 1));
    trials += next.trials;
    K_in.insert(K_in.end(), next.K_in.begin(), next.K_in.end());
    K_out.insert(K_out.end(), next.K_out.begin(), next.K_out.end());
}

void SimulationSums::merge(const SimulationSums& o) {
    if (by_size.empty()) by_size.resize(o.by_size.size());
    if (by_size.size() != o.by_size.size())
        throw std::logic_error("SimulationSums::merge: size lists differ");
    counts.append(o.counts);  // first: it throws before anything is added
    trials += o.trials;
    for (std::size_t s = 0; s < by_size.size(); ++s)
        by_size[s].merge(o.by_size[s]);
    realised.merge(o.realised);
}

theory::HeadModel simulation_head(const SimulationSpec& spec) {
    return theory::build_head_model(spec.model);
}

GeneratorSettings generator_settings(const SimulationSpec& spec, const theory::HeadModel& head) {
    GeneratorSettings g;
    g.d = spec.d;
    g.beta = spec.model.beta;
    g.rho0 = spec.model.rho0;
    g.sink_mode = spec.sink_mode;
    g.norms = head.norms;
    g.norm_cv = spec.norm_cv;
    if (spec.model.cosine) g.cosine = spec.model.cosine;
    return g;
}

void add_realised_statistics(const theory::RowMatrix& values, const Eigen::VectorXd& nominal,
                             RealisedSums& sums) {
    const int n = static_cast<int>(values.rows());
    Eigen::VectorXd norms = values.rowwise().norm();
    theory::RowMatrix unit = values;
    for (int i = 0; i < n; ++i)
        if (norms[i] > 0) unit.row(i) /= norms[i];
    for (int k = 1; k <= kRealisedLags; ++k) {
        double total = 0;
        int pairs = 0;
        for (int i = 1; i + k < n; ++i, ++pairs)
            total += unit.row(i).dot(unit.row(i + k));
        if (pairs > 0) sums.cos_by_lag[k - 1].add(total / pairs);
    }
    std::vector<double> to_sink(n);
    for (int j = 1; j < n; ++j)
        to_sink[j] = unit.row(0).dot(unit.row(j));
    add_sink_and_norm_statistics(to_sink, norms.data(), nominal, sums);
}

namespace {

// Cosines gram_ij/(ℓ_i ℓ_j) with ℓ = gram_lengths (‖y‖ in the Gram matrix's units), and
// ‖v_i‖ = ‖y_i‖/α_i from `lengths` (‖y‖); both by rank.
template <class Gram>
void realised_statistics_from_gram(const Gram& gram, const Eigen::VectorXd& gram_lengths,
                                   const Eigen::VectorXd& lengths, const std::vector<int>& position,
                                   const Eigen::VectorXd& alpha, const Eigen::VectorXd& nominal,
                                   RealisedSums& sums) {
    const int n = static_cast<int>(position.size());
    std::vector<double> inverse_length(n), norm(n);
    for (int i = 0; i < n; ++i) {
        const double gram_length = gram_lengths[position[i]];
        inverse_length[i] = gram_length > 0 ? 1.0 / gram_length : 0.0;
        norm[i] = lengths[position[i]] / alpha[i];  // ‖α_i v_i‖/α_i
    }
    auto cosine = [&](int i, int j) {  // from the lower triangle
        const int p = std::max(position[i], position[j]), q = std::min(position[i], position[j]);
        return static_cast<double>(gram(p, q)) * inverse_length[i] * inverse_length[j];
    };
    for (int k = 1; k <= kRealisedLags; ++k) {
        double total = 0;
        int pairs = 0;
        for (int i = 1; i + k < n; ++i, ++pairs)
            total += cosine(i, i + k);
        if (pairs > 0) sums.cos_by_lag[k - 1].add(total / pairs);
    }
    std::vector<double> to_sink(n);
    for (int j = 1; j < n; ++j)
        to_sink[j] = cosine(0, j);
    add_sink_and_norm_statistics(to_sink, norm.data(), nominal, sums);
}

}  // namespace

void add_realised_statistics_from_gram(const Eigen::MatrixXd& gram,
                                       const std::vector<int>& position,
                                       const Eigen::VectorXd& alpha, const Eigen::VectorXd& nominal,
                                       RealisedSums& sums) {
    const Eigen::VectorXd lengths = gram.diagonal().cwiseSqrt();
    realised_statistics_from_gram(gram, lengths, lengths, position, alpha, nominal, sums);
}

void add_realised_statistics_from_single_gram(const Eigen::MatrixXf& gram, int scale_exponent,
                                              const std::vector<double>& scaled_lengths,
                                              const std::vector<int>& position,
                                              const Eigen::VectorXd& alpha,
                                              const Eigen::VectorXd& nominal, RealisedSums& sums) {
    // The cosines stay in σ-scaled units (σ‖y‖ ≤ √d), so no 2^(−2e) factor can under- or
    // overflow for extreme scales; otherwise the bits equal scaling G back first.
    const Eigen::Map<const Eigen::VectorXd> gram_lengths(
        scaled_lengths.data(), static_cast<Eigen::Index>(scaled_lengths.size()));
    Eigen::VectorXd lengths(gram_lengths.size());
    for (Eigen::Index i = 0; i < lengths.size(); ++i)  // exact (σ = 2^e) unless subnormal
        lengths[i] = std::ldexp(gram_lengths[i], -scale_exponent);
    realised_statistics_from_gram(gram, gram_lengths, lengths, position, alpha, nominal, sums);
}

TrialEngine::TrialEngine(const SimulationSpec& spec)
    : spec_(spec), head_(simulation_head(spec)), generator_(generator_settings(spec, head_)) {
    if (spec.d_infinite)
        throw std::logic_error("TrialEngine: d = inf has no trials; use infinite_d_metrics");
    pin_blas_to_one_thread();
    const int n = generator_.tokens();
    fixed_order_ = spec.ranking == theory::Ranking::attention || spec.norm_cv == 0;
    if (fixed_order_) {
        theory::TokenGeometry nominal;
        nominal.alpha = head_.alpha;
        nominal.values = theory::RowMatrix::Zero(n, 1);
        nominal.values.col(0) = head_.norms;
        order_ = theory::selection_order(theory::selection_scores(nominal, spec.ranking));
        position_.resize(n);
        for (int k = 0; k < n; ++k)
            position_[order_[k]] = k;
    }
    realised_from_gram_ = fixed_order_ && spec.all_sizes && (head_.alpha.array() > 0).all();
}

SimulationSums TrialEngine::run(std::int64_t first, std::int64_t last, int threads) const {
    if (first < 0 || last < first) throw std::logic_error("TrialEngine::run: bad trial range");
    const int n = generator_.tokens();
    const int d = generator_.dimension();
    SimulationSums total;
    total.by_size.resize(spec_.sizes.size());
    // Every thread writes its trials' rows straight into place (trial − first): the threads'
    // sums are merged in whatever order they finish, so concatenating there would depend on
    // the schedule.
    const int size_count = static_cast<int>(spec_.sizes.size());
    total.counts = TrialCounts::zeros(first, last - first, size_count);
    // Left to OpenMP, the count is one under ATTNGEO_PLAIN: the sequential loop every thread
    // count must reproduce (an explicit count still runs in parallel, for the tests).
    const int thread_count =
        threads > 0 ? threads : (plain_paths_forced() ? 1 : omp_get_max_threads());
#pragma omp parallel num_threads(thread_count)
    {
        SimulationSums local;
        local.by_size.resize(spec_.sizes.size());
        theory::TokenGeometry tokens;
        tokens.alpha = head_.alpha;
        theory::RowMatrix ranked(n, d);
        Eigen::MatrixXd gram;
        theory::SingleRowMatrix scaled;  // [n, d] fl32(σ·ranked), the SSYRK path's input
        std::vector<float> panels;       // the packed tiles' σ·ranked
        Eigen::MatrixXf single_gram;     // [ld, n], lower triangle of the top n rows
        std::vector<theory::SelectionMetrics> rows;
#pragma omp for schedule(dynamic, 4)
        for (std::int64_t trial = first; trial < last; ++trial) {
            RandomStream stream(spec_.seed, spec_.grid_point, static_cast<std::uint32_t>(trial));
            if (realised_from_gram_) {  // only the ranked contributions are needed
                generator_.draw_ranked_contributions(stream, position_, head_.alpha, ranked,
                                                     tokens.values);
            } else {
                generator_.draw_values(stream, tokens.values);
                add_realised_statistics(tokens.values, head_.norms, local.realised);
            }
            if (spec_.all_sizes) {
                if (!realised_from_gram_) {
                    const std::vector<int> trial_order =
                        fixed_order_ ? order_
                                     : theory::selection_order(
                                           theory::selection_scores(tokens, spec_.ranking));
                    for (int k = 0; k < n; ++k) {
                        ranked.row(k) =
                            tokens.alpha[trial_order[k]] * tokens.values.row(trial_order[k]);
                    }
                }
                if (spec_.distance == theory::Distance::euclidean) {
                    const int scale_exponent = single_gram_of(ranked, scaled, panels, single_gram);
                    // σ‖y_ℓ‖ once for the bands and the realised cosines.
                    const std::vector<double> band_norms =
                        theory::band_row_norms(ranked, scale_exponent);
                    if (realised_from_gram_) {
                        add_realised_statistics_from_single_gram(single_gram, scale_exponent,
                                                                 band_norms, position_, head_.alpha,
                                                                 head_.norms, local.realised);
                    }
                    theory::selection_metrics_from_single_gram(
                        ranked, single_gram.data(), static_cast<int>(single_gram.rows()),
                        scale_exponent, spec_.sizes, rows, /*radii=*/false, &band_norms);
                } else {
                    gram_of(ranked, gram);
                    if (realised_from_gram_) {
                        add_realised_statistics_from_gram(gram, position_, head_.alpha, head_.norms,
                                                          local.realised);
                    }
                    theory::selection_metrics_from_gram(ranked, gram, spec_.sizes, spec_.distance,
                                                        rows, /*radii=*/false);
                }
            } else {
                rows = theory::selection_metrics_reference(tokens, spec_.sizes, spec_.ranking,
                                                           spec_.distance);
            }
            accumulate(rows, local);
            const std::size_t row = static_cast<std::size_t>(trial - first) * size_count;
            for (int s = 0; s < size_count; ++s) {
                total.counts.K_in[row + s] = rows[s].K_in;
                total.counts.K_out[row + s] = rows[s].K_out;
            }
            ++local.trials;
        }
#pragma omp critical
        total.merge(local);
    }
    return total;
}

SimulationSums run_trials(const SimulationSpec& spec, std::int64_t first, std::int64_t last,
                          int threads) {
    return TrialEngine(spec).run(first, last, threads);
}

std::vector<theory::SelectionMetrics> infinite_d_metrics(const SimulationSpec& spec) {
    const theory::HeadModel head = simulation_head(spec);
    const int n = static_cast<int>(head.alpha.size());
    Eigen::MatrixXd K = head.cosine;
    if (!spec.model.cosine && spec.sink_mode == SinkMode::project) {
        const double rho0 = spec.model.rho0;
        for (int i = 1; i < n; ++i)
            for (int j = 1; j < n; ++j)
                if (i != j) K(i, j) = rho0 * rho0 + (1 - rho0 * rho0) * K(i, j);
    }
    theory::TokenGeometry nominal;
    nominal.alpha = head.alpha;
    nominal.values = theory::RowMatrix::Zero(n, 1);
    nominal.values.col(0) = head.norms;
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(nominal, spec.ranking));
    const Eigen::VectorXd a = head.alpha.cwiseProduct(head.norms);
    Eigen::MatrixXd gram(n, n);
    for (int k = 0; k < n; ++k)
        for (int l = 0; l < n; ++l)
            gram(k, l) = a[order[k]] * a[order[l]] * K(order[k], order[l]);
    return theory::selection_metrics_expected_gram(gram, spec.sizes, spec.distance);
}

}  // namespace attngeo::simulate
