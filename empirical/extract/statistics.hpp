// Per-head statistics of real attention, streamed over documents (docs/design.md §6): value norms
// by position and their CV, λ, ρ0, cosine by lag, mean α and contribution by position, P/R/F on
// an N grid, the s(N) diagnostics of Figure 7, the three magnitudes and the head regime.
// Torch-free: it reads the final query row α and the value states of one document at a time.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/exact_sums.hpp"
#include "empirical/extract/query_positions.hpp"
#include "theory/metrics.hpp"

namespace attngeo::empirical {

struct StatisticsSettings {
    int context = 0;         // n = positions per window (all documents have it)
    int max_lag = 128;       // cos by lag 1..max_lag
    std::vector<int> sizes;  // the N grid for P/R/F and the diagnostics, within 1..n
    theory::Ranking ranking = theory::Ranking::attention;
    theory::Distance distance = theory::Distance::euclidean;
    // --queries other than last (docs/design.md §14): the query positions t ≥ 1 measured over
    // keys 0..t besides the final row, and the bins of L = t + 1 they are averaged in
    // (by_length.csv, heads_by_length.csv). Empty: the final row only, as without --queries.
    std::vector<int> positions;
    std::vector<LengthBin> length_bins;
};

// π for one head: token indices by descending score (α, or α‖v‖ with --rank contrib), ties to
// the lower index, exactly as theory::selection_order ranks them.                      [n]
std::vector<int> head_order(const float* alpha, const float* values, int n, int d,
                            theory::Ranking ranking);

// Whether P/R for this grid use the all-N Gram path (every N) or the per-N reference (a
// sparse grid, where |sizes|·n·d is cheaper than n²·d).
bool uses_gram_path(const StatisticsSettings& settings);

// One head's contributions y_i = α_i v_i in rank order, as the batched device path forms them.
struct RankedGram {
    const std::vector<int>* order = nullptr;  // [n] π, from head_order
    const Eigen::MatrixXd* gram = nullptr;    // [n, n] G[k, l] = ⟨y_{π_k}, y_{π_l}⟩
};

// What one document contributes to the per-document arrays (per_doc.safetensors), kept out of
// HeadStatistics so that its memory does not grow with the number of documents.
struct DocumentRecord {
    std::vector<float> precision, recall;  // [|sizes|] P(r_max,N), R(r_min,N)
    float rho0 = 0;                        // mean_{j≥1} cos(v_0, v_j)
    float lambda = 0;                      // ‖v_0‖ / median_{i≥1} ‖v_i‖ of this document
    // What compare's bootstrap over documents refits (docs/design.md §7 "Uncertainty of every
    // fit").
    std::vector<float> cos_by_lag;  // [max_lag] mean cos at lags 1..max_lag (NaN: no pair)
    std::vector<float> alpha;       // [n] this document's α
    float C = 0;                    // median_{i≥1} ‖v_i‖ of this document
    // What the claims' document bootstraps resample (docs/design.md §7 "The paper's claims"):
    // this document's terms of the means heads.csv, pr.csv and diag.csv report, the very values
    // the exact sums were given, rounded once to float32.
    float m_sink = 0, m_last = 0;           // ‖α_0 v_0‖, ‖α_{n−1} v_{n−1}‖
    float m_rest = 0;                       // ‖Σ_{0<i<n−1} α_i v_i‖
    std::vector<float> f_rmax, f_rmin;      // [|sizes|] F(r_max,N), F(r_min,N)
    std::vector<float> cos_s_v0, cos_s_vL;  // [|sizes|] cos(s(N), v_0), cos(s(N), v_{n−1})
};

// Runs work(h) for h in [0, count) on `threads` OpenMP threads (dynamic schedule: heads differ in
// their exact-decision work); the first exception thrown is rethrown here once all have stopped.
// Each head's HeadStatistics is its own, so the sums do not depend on the thread count.
void for_each_head(int count, int threads, const std::function<void(int)>& work);

// The thread count of a layer's statistics: `requested` when > 0, else every core
// (std::thread::hardware_concurrency), or one under ATTNGEO_PLAIN=1 (common/cpu_features.hpp).
int statistics_threads(int requested);

struct DocumentScratch;  // statistics_fast.cpp: one thread's buffers, reused across documents

// One (layer, query head): sums over documents. Every sum is exact (ExactSum,
// MomentSums), so the result does not depend on the order documents are added in: a run
// resumed from a checkpoint, or merged from shards, equals the uninterrupted run bit for bit.
class HeadStatistics {
  public:
    HeadStatistics() = default;
    explicit HeadStatistics(const StatisticsSettings& settings);

    // alpha: [n] final query row (token 0 = sink, n−1 = the query itself);
    // values: [n, d] value vectors of this head's kv head, row-major, float32.
    // ranked: the Gram matrix of this head's ranked contributions formed elsewhere (the
    // batched device path) with the order it used, or null to form it here. Either way the
    // counts come from theory/'s certified core, so they equal the per-N reference exactly.
    // The fast path (statistics_fast.cpp): the simulator's single-precision Gram matrix and
    // certified sweep for every N, the other statistics in O(n·d) vectorised passes (cos by
    // lag: O(max_lag·n·d)). Throws std::domain_error for α < 0 or non-finite inputs. Safe to
    // call for different heads on different threads at once.
    DocumentRecord add_document(const float* alpha, const float* values, int d,
                                const RankedGram* ranked = nullptr);
    // The plain loops the fast path must equal bit for bit (the saved states are compared in
    // tests/empirical/test_statistics_fast.cpp): a double Gram matrix with radii, per-pair
    // cosines, the s(N) diagnostics one reduction at a time.
    DocumentRecord add_document_reference(const float* alpha, const float* values, int d,
                                          const RankedGram* ranked = nullptr);

    // One more query row of the window (settings.positions): α over keys 0..t, t ≥ 1, and the
    // value rows [≥ t+1, d], into its length bin's sums — P(r_max,N) and R(r_min,N) for the N
    // ≤ the bin's shortest L, λ = ‖v_0‖ / median_{1≤i≤t}‖v_i‖, ρ0 = mean_{1≤j≤t} cos(v_0, v_j),
    // α_0 and the three magnitudes with t as the last token. At t = context − 1 each equals
    // what add_document adds for the window. std::domain_error for α < 0 or non-finite inputs.
    void add_query(const float* alpha, const float* values, int t, int d);

    // The sums of one length bin (settings.length_bins[b]).
    struct LengthSums {
        std::int64_t queries = 0;
        ExactSum lambda, rho0, sink_mass, m_sink, m_last, m_rest;
        std::vector<MomentSums> precision, recall;  // [|sizes|]; N ≤ the bin's shortest L
    };
    const std::vector<LengthSums>& by_length() const { return by_length_; }

    // Adds another head's sums (same settings); throws std::invalid_argument otherwise.
    void merge(const HeadStatistics& other);
    // The exact state as 64-bit words (int128 sums as two words), for checkpoints and merge.
    void save(std::vector<std::int64_t>& words) const;
    // Reads what save() wrote, advancing `cursor`; throws std::invalid_argument when the words
    // run out before the state is complete.
    void load(const std::int64_t*& cursor, const std::int64_t* end);
    std::size_t saved_words() const;
    bool operator==(const HeadStatistics& other) const;

    std::int64_t documents() const { return documents_; }

    // Results (means over documents unless said otherwise).
    std::vector<double> norm_by_position() const;     // [n] mean ‖v_i‖
    std::vector<double> alpha_by_position() const;    // [n] mean α_i
    std::vector<double> contrib_by_position() const;  // [n] mean ‖α_i v_i‖
    double norm_mean() const;      // mean over i ≥ 1 of the document-mean profile
    double norm_median() const;    // median over i ≥ 1 of the document-mean profile (= C)
    double cv_positional() const;  // CV over i ≥ 1 of the document-mean profile
    double cv_pooled() const;      // CV of ‖v_i‖ pooled over i ≥ 1 and documents
    double lambda() const;         // mean ‖v_0‖ / norm_median (docs/design.md §7)
    double rho0() const;           // mean over documents of mean_{j≥1} cos(v_0, v_j)
    double cos_at_lag(int lag) const;
    std::int64_t pairs_at_lag(int lag) const;
    double sink_mass() const { return mean(sink_mass_); }
    double last_mass() const { return mean(last_mass_); }
    double m_sink() const { return mean(m_sink_); }
    double m_last() const { return mean(m_last_); }
    double m_rest() const { return mean(m_rest_); }
    // Retriever if m_last is the largest of (m_sink, m_last, m_rest), Mixer if the middle one,
    // Reset if the smallest (docs/design.md §6 decision).
    std::string regime() const;
    // How far the head is from the nearest other regime: the ratio (>= 1) of the two magnitudes
    // whose order decides the label (Retriever: m_last / max(m_sink, m_rest); Reset:
    // min(m_sink, m_rest) / m_last; Mixer: the smaller of m_last / lower neighbour and upper
    // neighbour / m_last). 1 on a tie, +inf when the smaller magnitude is 0 and the larger not.
    double regime_margin() const;

    const std::vector<int>& sizes() const { return settings_.sizes; }
    const MomentSums& precision(std::size_t s) const { return precision_[s]; }
    const MomentSums& recall(std::size_t s) const { return recall_[s]; }
    const MomentSums& fmax(std::size_t s) const { return fmax_[s]; }
    const MomentSums& fmin(std::size_t s) const { return fmin_[s]; }
    // Σ over documents of SelectionMetrics::exact_decisions at sizes()[s]: the comparisons
    // decided by exact arithmetic within τ·w of a tie (theory/metrics.hpp), the same count
    // whichever path (CPU, device, threads, shards) formed the metrics.
    std::int64_t exact_decisions(std::size_t s) const { return exact_decisions_[s]; }
    // Figure 7 diagnostics at sizes()[s], means over documents.
    double s_norm(std::size_t s) const { return mean(diag_[s][0]); }
    double s_norm_no_sink(std::size_t s) const { return mean(diag_[s][1]); }
    double s_norm_no_last(std::size_t s) const { return mean(diag_[s][2]); }
    double cos_s_v0(std::size_t s) const { return mean(diag_[s][3]); }
    double cos_s_vL(std::size_t s) const { return mean(diag_[s][4]); }

  private:
    using Sum = ExactSum;
    // One document's tokens in double with their norms, as every part of add_document reads it.
    struct DocumentGeometry {
        theory::TokenGeometry tokens;  // alpha [n], values [n, d]
        std::vector<double> norm;      // [n] ‖v_i‖
        int d = 0;
        const double* row(int i) const {
            return tokens.values.data() + static_cast<std::size_t>(i) * d;
        }
    };
    // The first n tokens of α [n] and the values [n, d] in double, with their norms.
    static DocumentGeometry geometry_of(const float* alpha, const float* values, int n, int d);
    void add_profiles(const DocumentGeometry& doc);  // by-position and pooled norm sums
    // ρ0 and cos by lag into the sums and the document's record.
    void add_cosines(const DocumentGeometry& doc, DocumentRecord& record);
    // Masses and m_sink, m_last, m_rest into the sums and the document's record.
    void add_magnitudes(const DocumentGeometry& doc, DocumentRecord& record);
    std::vector<theory::SelectionMetrics> selection_rows(const DocumentGeometry& doc,
                                                         const RankedGram* ranked_gram) const;
    void add_selection(const std::vector<theory::SelectionMetrics>& rows, DocumentRecord& record);
    // Figure 7's s(N) diagnostics into the sums, the two cosines also into the record.
    void add_diagnostics(const DocumentGeometry& doc, DocumentRecord& record);
    // The fast path's parts (statistics_fast.cpp), on the scratch's transposed values.
    void add_profiles_fast(const DocumentScratch& scratch);
    void add_cosines_fast(DocumentScratch& scratch, int d, DocumentRecord& record);
    void add_magnitudes_fast(const DocumentScratch& scratch, const float* values, int d,
                             DocumentRecord& record);
    void add_diagnostics_fast(DocumentScratch& scratch, int d, DocumentRecord& record);
    double mean(const Sum& sum) const { return documents_ > 0 ? sum.value() / documents_ : 0.0; }
    template <class Self, class Visit>
    static void visit_state(Self& self, Visit&& visit);
    StatisticsSettings settings_;
    std::int64_t documents_ = 0;
    std::vector<Sum> norm_sum_, alpha_sum_, contrib_sum_;  // [n]
    Sum pooled_norm_, pooled_norm_sq_;
    std::int64_t pooled_count_ = 0;
    Sum rho0_sum_;
    std::vector<Sum> lag_sum_;             // [max_lag + 1]
    std::vector<std::int64_t> lag_pairs_;  // [max_lag + 1]
    Sum sink_mass_, last_mass_, m_sink_, m_last_, m_rest_;
    std::vector<MomentSums> precision_, recall_, fmax_, fmin_;  // [|sizes|]
    std::vector<std::int64_t> exact_decisions_;                 // [|sizes|]
    std::vector<std::array<Sum, 5>> diag_;                      // [|sizes|]
    std::vector<LengthSums> by_length_;                         // [|length_bins|]
};

}  // namespace attngeo::empirical
