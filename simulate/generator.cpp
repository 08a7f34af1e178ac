// Synthetic value states; see generator.hpp.
#include "simulate/generator.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/format.hpp"
#include "simulate/generator_kernels.hpp"

namespace attngeo::simulate {
SinkMode parse_sink_mode(const std::string& text, const std::string& source) {
    return parse_choice(text, source, kSinkModeChoices);
}

const char* to_string(SinkMode mode) {
    return choice_name(mode, kSinkModeChoices);
}

ValueGenerator::ValueGenerator(GeneratorSettings settings)
    : settings_(std::move(settings)), n_(static_cast<int>(settings_.norms.size())) {
    const char* fn = "ValueGenerator";
    if (settings_.d < 1)
        throw_domain_error(fn, "d = " + std::to_string(settings_.d) + ", expected d >= 1");
    if (n_ < 2) throw_domain_error(fn, "need at least 2 tokens, got n = " + std::to_string(n_));
    for (int i = 0; i < n_; ++i) {
        if (!(settings_.norms[i] >= 0) || !std::isfinite(settings_.norms[i])) {
            throw_domain_error(fn, "norm " + std::to_string(i) + " = " +
                                       format_double(settings_.norms[i]) +
                                       ", expected finite and >= 0");
        }
    }
    if (!(settings_.norm_cv >= 0) || !std::isfinite(settings_.norm_cv)) {
        throw_domain_error(fn, "norm_cv = " + format_double(settings_.norm_cv) + ", expected >= 0");
    }
    log_sigma_ = std::sqrt(std::log1p(settings_.norm_cv * settings_.norm_cv));
    if (settings_.cosine) {
        const Eigen::MatrixXd& K = *settings_.cosine;
        if (K.rows() != n_ || K.cols() != n_)
            throw_domain_error(fn, "cosine matrix size does not match n = " + std::to_string(n_));
        Eigen::LLT<Eigen::MatrixXd> llt(K);
        if (llt.info() != Eigen::Success) {
            throw_domain_error(
                fn,
                "the explicit cosine matrix is not positive definite, so no Gaussian directions "
                "have it as covariance");
        }
        cholesky_ = llt.matrixL();
        return;
    }
    if (!(settings_.beta > 0) || !std::isfinite(settings_.beta))
        throw_domain_error(fn, "beta = " + format_double(settings_.beta) + ", expected beta > 0");
    if (!(std::abs(settings_.rho0) <= 1))
        throw_domain_error(
            fn, "rho0 = " + format_double(settings_.rho0) + ", expected -1 <= rho0 <= 1");
    const int L = n_ - 1;
    r_ = std::exp(-settings_.beta);
    innovation_ = std::sqrt(1 - r_ * r_);
    if (settings_.sink_mode == SinkMode::exact) {
        const double inverse_sum = kms_inverse_sum(L, r_);
        const double tau2 = 1 - settings_.rho0 * settings_.rho0 * inverse_sum;
        if (tau2 < 0) {
            throw_domain_error(
                fn, "rho0 = " + format_double(settings_.rho0) +
                        " is infeasible with beta = " + format_double(settings_.beta) +
                        " and L = " + std::to_string(L) + ": the largest feasible |rho0| is " +
                        format_double(max_feasible_rho0(L, settings_.beta)) +
                        " (or use --sink-mode project, which changes the token-token cosines)");
        }
        sink_noise_ = std::sqrt(tau2);
        // K⁻¹1 of the tridiagonal inverse: 1/(1+r) at both ends, (1−r)/(1+r) inside.
        sink_weights_ = Eigen::VectorXd::Constant(n_, settings_.rho0 * (1 - r_) / (1 + r_));
        sink_weights_[0] = 0;
        if (L == 1) {
            sink_weights_[1] = settings_.rho0;
        } else {
            sink_weights_[1] = sink_weights_[L] = settings_.rho0 / (1 + r_);
        }
    }
}

void ValueGenerator::draw_directions(RandomStream& stream, theory::RowMatrix& g) const {
    if (settings_.cosine) {
        draw_cholesky_directions(stream, g);
        return;
    }
    draw_ar1(stream, g, false, nullptr, nullptr);
}

void ValueGenerator::draw_values(RandomStream& stream, theory::RowMatrix& v) const {
    if (settings_.cosine) {
        draw_cholesky_directions(stream, v);
        normalise(stream, v);
        return;
    }
    draw_ar1(stream, v, true, nullptr, nullptr);
}

void ValueGenerator::draw_cholesky_directions(RandomStream& stream, theory::RowMatrix& g) const {
    const int d = settings_.d;
    g.resize(n_, d);
    stream.fill_normals(g.data(), static_cast<std::size_t>(n_) * d);
    g *= 1.0 / std::sqrt(static_cast<double>(d));  // ε ~ N(0, I/d)
    // g = L ε row-wise; lower-triangular, so rows are rewritten from the last.
    for (int i = n_ - 1; i >= 0; --i)
        g.row(i) = cholesky_.row(i).head(i + 1) * g.topRows(i + 1);
}

// One pass over the rows, each drawn, scaled, filtered and (without norm noise) normalised while
// it is in cache, instead of a pass over the whole matrix per step. Each element still gets the
// same operations in the same order (ε = z/√d; the AR(1) state a_i = r a_{i−1} + √(1−r²) ε_i
// for i ≥ 2; the sink sum s += w_i a_i, or the row ρ0 g_0 + √(1−ρ0²) a_i; the norm of the
// finished row), so the bits equal those of the plain passes (tests/simulate/test_rng.cpp).
void ValueGenerator::draw_ar1(RandomStream& stream, theory::RowMatrix& g, bool normalised,
                              const std::vector<int>* position,
                              const Eigen::VectorXd* alpha) const {
    const int d = settings_.d;
    g.resize(n_, d);
    // Token i's row: i, or position[i] when the rows go straight to their ranked places.
    const auto row_of = [&](int i) { return g.row(position ? (*position)[i] : i).data(); };
    const bool exact = settings_.sink_mode == SinkMode::exact;
    const bool normalise_rows = normalised && settings_.norm_cv == 0;
    if (alpha && !normalise_rows)
        throw std::logic_error("draw_ar1: α scaling needs rows normalised one at a time");
    generator_kernels::Ar1Row step;
    step.scale = 1.0 / std::sqrt(static_cast<double>(d));
    step.r = r_;
    step.innovation = innovation_;
    step.exact = exact;
    step.rho0 = settings_.rho0;
    step.keep = exact ? 0.0 : std::sqrt(1 - settings_.rho0 * settings_.rho0);
    Eigen::RowVectorXd state(d), sink(d);  // AR(1) state a_{i−1}; the sink's sum so far
    double* a = state.data();
    double* s = sink.data();

    double* g0 = row_of(0);
    stream.fill_normals(g0, static_cast<std::size_t>(d));
    for (int k = 0; k < d; ++k)
        g0[k] *= step.scale;
    if (exact)
        for (int k = 0; k < d; ++k)
            s[k] = sink_noise_ * g0[k];
    for (int i = 1; i < n_; ++i) {
        double* row = row_of(i);
        stream.fill_normals(row, static_cast<std::size_t>(d));
        step.first = i == 1;
        step.weight = exact ? sink_weights_[i] : 0.0;
        generator_kernels::ar1_row(row, a, s, g0, step, d);
        if (alpha) {  // normalise_rows holds: one pass for the norm and α
            generator_kernels::normalise_and_scale_row(row, settings_.norms[i], (*alpha)[i], d);
        } else if (normalise_rows) {
            generator_kernels::normalise_row(row, settings_.norms[i], d);
        }
    }
    if (exact)
        for (int k = 0; k < d; ++k)
            g0[k] = s[k];
    if (alpha) {
        generator_kernels::normalise_and_scale_row(g0, settings_.norms[0], (*alpha)[0], d);
    } else if (normalise_rows) {
        generator_kernels::normalise_row(g0, settings_.norms[0], d);
    } else if (normalised) {
        normalise(stream, g);
    }
}

// row ← α·row: the one rounding of the scalar-times-row product the simulator's copy makes.
void ValueGenerator::scale_row(double* row, double alpha, int d) {
    for (int k = 0; k < d; ++k)
        row[k] = alpha * row[k];
}

void ValueGenerator::draw_ranked_contributions(RandomStream& stream,
                                               const std::vector<int>& position,
                                               const Eigen::VectorXd& alpha,
                                               theory::RowMatrix& ranked,
                                               theory::RowMatrix& scratch) const {
    if (static_cast<int>(position.size()) != n_ || alpha.size() != n_)
        throw std::logic_error("draw_ranked_contributions: position or alpha size is not n");
    if (!settings_.cosine && settings_.norm_cv == 0) {  // rows finish one at a time
        draw_ar1(stream, ranked, true, &position, &alpha);
        return;
    }
    draw_values(stream, scratch);  // the norm noise or the Cholesky factor needs every row first
    ranked.resize(n_, settings_.d);
    for (int i = 0; i < n_; ++i) {
        ranked.row(position[i]) = scratch.row(i);
        scale_row(ranked.row(position[i]).data(), alpha[i], settings_.d);
    }
}

// v_i ← ‖v_i‖ g_i/‖g_i‖ row by row, drawing each row's norm noise in row order.
void ValueGenerator::normalise(RandomStream& stream, theory::RowMatrix& v) const {
    for (int i = 0; i < n_; ++i) {
        double norm = settings_.norms[i];
        if (settings_.norm_cv > 0) {
            norm *= std::exp(log_sigma_ * stream.next_normal() - 0.5 * log_sigma_ * log_sigma_);
        }
        generator_kernels::normalise_row(v.row(i).data(), norm, static_cast<int>(v.cols()));
    }
}

}  // namespace attngeo::simulate
