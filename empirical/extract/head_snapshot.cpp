// The snapshot of one head for Figures 1 and 10; see head_snapshot.hpp. Everything is computed
// in double from the captured float32 rows, with theory's selection order and reference radii
// so r_min, r_max, P and R equal what pr.csv averages for that window.
#include "empirical/extract/head_snapshot.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/manifest_values.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "empirical/extract/statistics_kernels.hpp"

namespace attngeo::empirical {
namespace {

// A non-negative integer field of --snapshot, or an InputError naming the flag and the field.
std::int64_t snapshot_field(const std::string& text, const std::string& whole, const char* field) {
    const std::string expected =
        "expected auto, off, L:H:N:DOC or auto:N:DOC with non-negative integers";
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
        text.size() > 9)
        throw InputError("--snapshot '" + whole + "': " + field + " '" + text + "' is not valid; " +
                         expected);
    return std::stoll(text);
}

std::vector<std::string> split_colons(const std::string& text) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(text);
    while (std::getline(in, part, ':'))
        parts.push_back(part);
    if (!text.empty() && text.back() == ':') parts.push_back("");
    return parts;
}

theory::TokenGeometry geometry(const float* alpha, const float* values, int n, int d) {
    theory::TokenGeometry tokens;
    tokens.alpha.resize(n);
    tokens.values.resize(n, d);
    for (int i = 0; i < n; ++i) {
        tokens.alpha[i] = alpha[i];
        for (int k = 0; k < d; ++k)
            tokens.values(i, k) = values[static_cast<std::size_t>(i) * d + k];
    }
    return tokens;
}

// The two leading eigenvectors of the covariance of the rows of y (columns of the result),
// each signed so that its largest-magnitude entry is positive (ties to the lower index), and
// the fraction of the total variance each carries.
Eigen::MatrixXd principal_axes(const theory::RowMatrix& centred, double explained[2]) {
    const int d = static_cast<int>(centred.cols());
    const Eigen::MatrixXd covariance = centred.transpose() * centred;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(covariance);
    Eigen::MatrixXd axes = Eigen::MatrixXd::Zero(d, 2);
    const double total = std::max(0.0, covariance.trace());
    for (int a = 0; a < 2 && a < d; ++a) {
        Eigen::VectorXd axis = solver.eigenvectors().col(d - 1 - a);
        Eigen::Index largest = 0;
        for (Eigen::Index k = 1; k < axis.size(); ++k)
            if (std::abs(axis[k]) > std::abs(axis[largest])) largest = k;
        if (axis[largest] < 0) axis = -axis;
        axes.col(a) = axis;
        explained[a] = total > 0 ? std::max(0.0, solver.eigenvalues()[d - 1 - a]) / total : 0;
    }
    return axes;
}

double cosine(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
    return statistics_kernels::cosine_from_dot(a.dot(b), a.norm(), b.norm());
}

}  // namespace

SnapshotRequest parse_snapshot_request(const std::string& text) {
    SnapshotRequest r;
    if (text == "auto") return r;
    if (text == "off") {
        r.enabled = false;
        return r;
    }
    const std::vector<std::string> parts = split_colons(text);
    if (parts.size() == 3 && parts[0] == "auto") {
        r.N = static_cast<int>(snapshot_field(parts[1], text, "N"));
        r.document = snapshot_field(parts[2], text, "DOC");
    } else if (parts.size() == 4) {
        r.layer = static_cast<int>(snapshot_field(parts[0], text, "L"));
        r.head = static_cast<int>(snapshot_field(parts[1], text, "H"));
        r.N = static_cast<int>(snapshot_field(parts[2], text, "N"));
        r.document = snapshot_field(parts[3], text, "DOC");
    } else {
        throw InputError("--snapshot '" + text +
                         "': expected auto, off, L:H:N:DOC or auto:N:DOC (e.g. 2:5:8:0)");
    }
    if (r.N < 1) throw InputError("--snapshot '" + text + "': N must be >= 1");
    return r;
}

void validate_snapshot_request(const SnapshotRequest& r, int layers, int heads, int context,
                               std::int64_t windows) {
    if (!r.enabled) return;
    auto fail = [](const std::string& what) { throw InputError("--snapshot: " + what); };
    if (r.layer >= layers)
        fail("layer " + std::to_string(r.layer) + " outside the model's 0.." +
             std::to_string(layers - 1));
    if (r.head >= heads)
        fail("head " + std::to_string(r.head) + " outside the model's 0.." +
             std::to_string(heads - 1));
    if (r.N > context)
        fail("N = " + std::to_string(r.N) + " above the context " + std::to_string(context));
    if (r.document >= windows)
        fail("document " + std::to_string(r.document) + " outside the run's windows 0.." +
             std::to_string(windows - 1));
}

HeadSnapshot snapshot_head(const float* alpha, const float* values, int n, int d, int N,
                           theory::Ranking ranking) {
    const theory::TokenGeometry tokens = geometry(alpha, values, n, d);
    theory::validate_token_geometry(tokens, "snapshot_head");
    if (N < 1 || N > n)
        throw std::domain_error("snapshot_head: N = " + std::to_string(N) + ", expected 1.." +
                                std::to_string(n));
    const theory::SelectionMetrics m =
        theory::selection_metrics_reference(tokens, {N}, ranking, theory::Distance::euclidean)[0];
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(tokens, ranking));
    const theory::RowMatrix y = theory::selection_contributions(tokens);
    const std::vector<double> centroid = theory::selection_centroid(y, order, N);
    const Eigen::VectorXd s = Eigen::Map<const Eigen::VectorXd>(centroid.data(), d);

    HeadSnapshot snap;
    snap.N = N, snap.n = n, snap.d = d;
    snap.r_min = m.r_min, snap.r_max = m.r_max;
    snap.precision = m.precision_at_rmax, snap.recall = m.recall_at_rmin;
    const Eigen::RowVectorXd mean = y.colwise().mean();
    const theory::RowMatrix centred = y.rowwise() - mean;
    const Eigen::MatrixXd axes = principal_axes(centred, snap.explained);
    const Eigen::RowVectorXd s_projected = (s.transpose() - mean) * axes;
    snap.s_pc1 = s_projected[0], snap.s_pc2 = s_projected[1];
    snap.selected.assign(n, 0);
    for (int k = 0; k < N; ++k)
        snap.selected[order[k]] = 1;
    for (int i = 0; i < n; ++i) {
        const Eigen::RowVectorXd p = centred.row(i) * axes;
        snap.alpha.push_back(tokens.alpha[i]);
        snap.pc1.push_back(p[0]);
        snap.pc2.push_back(p[1]);
        snap.contrib_norm.push_back(y.row(i).norm());
        snap.distance_to_s.push_back((y.row(i).transpose() - s).norm());
        snap.cos_to_s.push_back(cosine(tokens.values.row(i).transpose(), s));
    }
    return snap;
}

HeadContributions head_contributions(const float* alpha, const float* values, int n, int d, int N,
                                     theory::Ranking ranking) {
    const theory::TokenGeometry tokens = geometry(alpha, values, n, d);
    theory::validate_token_geometry(tokens, "head_contributions");
    const std::vector<int> order =
        theory::selection_order(theory::selection_scores(tokens, ranking));
    const theory::RowMatrix y = theory::selection_contributions(tokens);
    const std::vector<double> centroid = theory::selection_centroid(y, order, N);
    const Eigen::VectorXd s = Eigen::Map<const Eigen::VectorXd>(centroid.data(), d);
    HeadContributions c;
    for (int i = 0; i < n; ++i) {
        c.alpha.push_back(tokens.alpha[i]);
        c.contrib_norm.push_back(y.row(i).norm());
        c.cos_to_s.push_back(cosine(tokens.values.row(i).transpose(), s));
    }
    return c;
}

SnapshotCollector::SnapshotCollector(const SnapshotRequest& request, int context,
                                     theory::Ranking ranking)
    : request_(request), context_(context), N_(std::min(request.N, context)), ranking_(ranking) {}

void SnapshotCollector::observe(int layer, int head, const float* alpha, const float* values,
                                int d) {
    if (!active_) return;
    HeadContributions c = head_contributions(alpha, values, context_, d, N_, ranking_);
    c.layer = layer, c.head = head;
    contributions_.push_back(std::move(c));
    const bool named = request_.layer == layer && request_.head == head;
    // Default choice: strictly larger sink mass wins, so ties keep the lower (layer, head).
    const bool chosen = request_.layer < 0 && static_cast<double>(alpha[0]) > best_sink_;
    if (!named && !chosen) return;
    best_sink_ = alpha[0];
    snapshot_ = snapshot_head(alpha, values, context_, d, N_, ranking_);
    snapshot_.layer = layer, snapshot_.head = head, snapshot_.document = request_.document;
}

std::string SnapshotCollector::snapshot_csv() const {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::extract, schema::file::snapshot_table) << '\n';
    const HeadSnapshot& s = snapshot_;
    for (int i = 0; i < s.n; ++i)
        csv << i << ',' << format_double(s.alpha[i]) << ',' << s.selected[i] << ','
            << format_double(s.pc1[i]) << ',' << format_double(s.pc2[i]) << ','
            << format_double(s.contrib_norm[i]) << ',' << format_double(s.distance_to_s[i]) << ','
            << format_double(s.cos_to_s[i]) << '\n';
    return csv.str();
}

std::string SnapshotCollector::snapshot_json() const {
    const HeadSnapshot& s = snapshot_;
    nlohmann::json j = {
        {"layer", s.layer},
        {"head", s.head},
        {"N", s.N},
        {"document", s.document},
        {"chosen_by",
         request_.layer < 0 ? "largest sink mass alpha_0 in the window" : "--snapshot"},
        {"ranking", theory::to_string(ranking_)},
        {"n", s.n},
        {"d", s.d},
        {"r_min", json_number(s.r_min)},
        {"r_max", json_number(s.r_max)},
        {"precision_at_rmax", json_number(s.precision)},
        {"recall_at_rmin", json_number(s.recall)},
        {"s_pc1", json_number(s.s_pc1)},
        {"s_pc2", json_number(s.s_pc2)},
        {"explained_variance", {json_number(s.explained[0]), json_number(s.explained[1])}}};
    return j.dump(2) + "\n";
}

std::string SnapshotCollector::contributions_csv() const {
    std::ostringstream csv;
    csv << schema::csv_header(schema::page::extract, schema::file::contributions) << '\n';
    for (const HeadContributions& c : contributions_)
        for (std::size_t i = 0; i < c.alpha.size(); ++i)
            csv << c.layer << ',' << c.head << ',' << i << ',' << format_double(c.alpha[i]) << ','
                << format_double(c.contrib_norm[i]) << ',' << format_double(c.cos_to_s[i]) << '\n';
    return csv.str();
}

namespace fs = std::filesystem;

void stage_snapshot(const SnapshotCollector& collector, const std::string& out) {
    if (!collector.complete()) return;
    const fs::path staged = fs::path(out) / schema::file::resume_state_folder;
    fs::create_directories(staged);
    write_file_atomic((staged / kSnapshotFiles[0]).string(), collector.snapshot_csv());
    write_file_atomic((staged / kSnapshotFiles[1]).string(), collector.snapshot_json());
    write_file_atomic((staged / kSnapshotFiles[2]).string(), collector.contributions_csv());
}

void publish_snapshot(const std::string& out) {
    const fs::path staged = fs::path(out) / schema::file::resume_state_folder;
    for (const char* name : kSnapshotFiles) {
        const fs::path from = staged / name, to = fs::path(out) / name;
        if (!fs::exists(from)) {
            fs::remove(to);
            continue;
        }
        std::ifstream in(from, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        write_file_atomic(to.string(), text.str());
        fs::remove(from);
    }
}

}  // namespace attngeo::empirical
