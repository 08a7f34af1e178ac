// Tests of empirical/extract/head_snapshot (Figures 1 and 10): the PCA projection against a float64 SVD
// reference, radii and distances against plain loops, rotation invariance, the default head
// choice (largest sink mass, ties to the lower head), N = n and d = 1, and bad --snapshot text.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "empirical/extract/head_snapshot.hpp"

namespace attngeo::empirical {
namespace {

struct Head {
    int n = 0, d = 0;
    std::vector<float> alpha, values;  // [n], [n, d]
};

// A softmax row with a sink weight `sink` and Gaussian values, as float32 like extract's capture.
Head random_head(int n, int d, float sink, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0, 1);
    Head h;
    h.n = n, h.d = d;
    std::vector<double> w(n);
    for (int i = 1; i < n; ++i)
        w[i] = std::exp(normal(rng));
    const double rest = std::accumulate(w.begin(), w.end(), 0.0);
    h.alpha.resize(n);
    h.alpha[0] = sink;
    for (int i = 1; i < n; ++i)
        h.alpha[i] = static_cast<float>((1 - sink) * w[i] / rest);
    for (int k = 0; k < n * d; ++k)
        h.values.push_back(static_cast<float>(normal(rng)));
    return h;
}

// Plain reference of the selection: I_N = the N largest α (ties to the lower index).
std::vector<int> top_n(const Head& h, int N) {
    std::vector<int> order(h.n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return h.alpha[a] > h.alpha[b]; });
    order.resize(N);
    return order;
}

TEST(HeadSnapshot, ProjectionAndRadiiMatchAPlainFloat64Reference) {
    const Head h = random_head(40, 6, 0.3f, 11);
    const int N = 5;
    const HeadSnapshot s =
        snapshot_head(h.alpha.data(), h.values.data(), h.n, h.d, N, theory::Ranking::attention);
    // y_i = α_i v_i in double; s(N) over the top N.
    Eigen::MatrixXd y(h.n, h.d);
    for (int i = 0; i < h.n; ++i)
        for (int k = 0; k < h.d; ++k)
            y(i, k) = double(h.alpha[i]) * double(h.values[i * h.d + k]);
    const std::vector<int> selected = top_n(h, N);
    Eigen::VectorXd centroid = Eigen::VectorXd::Zero(h.d);
    for (int i : selected)
        centroid += y.row(i).transpose();
    double r_max = 0, r_min = std::numeric_limits<double>::infinity();
    for (int i = 0; i < h.n; ++i) {
        const double dist = (y.row(i).transpose() - centroid).norm();
        const bool in = std::find(selected.begin(), selected.end(), i) != selected.end();
        EXPECT_EQ(s.selected[i], in ? 1 : 0) << i;
        (in ? r_max : r_min) = in ? std::max(r_max, dist) : std::min(r_min, dist);
    }
    EXPECT_NEAR(s.r_max, r_max, 1e-12 * r_max);
    EXPECT_NEAR(s.r_min, r_min, 1e-12 * r_min);
    // PCA by the SVD of the centred contributions: projections = U Σ, each axis up to sign.
    const Eigen::RowVectorXd mean = y.colwise().mean();
    const Eigen::MatrixXd centred = y.rowwise() - mean;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(centred, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Eigen::MatrixXd scores = svd.matrixU() * svd.singularValues().asDiagonal();
    const double total = svd.singularValues().squaredNorm();
    double largest = 0;
    for (int a = 0; a < 2; ++a) {
        const std::vector<double>& pc = a == 0 ? s.pc1 : s.pc2;
        const double sign = (pc[0] * scores(0, a) >= 0) ? 1 : -1;
        for (int i = 0; i < h.n; ++i)
            largest = std::max(largest, std::abs(pc[i] - sign * scores(i, a)));
        const Eigen::VectorXd axis = svd.matrixV().col(a) * sign;
        const double s_ref = (centroid.transpose() - mean).dot(axis);
        EXPECT_NEAR(a == 0 ? s.s_pc1 : s.s_pc2, s_ref, 1e-12);
        EXPECT_NEAR(s.explained[a], std::pow(svd.singularValues()[a], 2) / total, 1e-12);
    }
    RecordProperty("largest_pca_difference", std::to_string(largest));
    std::cout << "largest |PCA coordinate - SVD reference|: " << largest << "\n";
    EXPECT_LT(largest, 1e-12);
    // Distances and cosines in the full space.
    for (int i = 0; i < h.n; ++i) {
        EXPECT_NEAR(s.distance_to_s[i], (y.row(i).transpose() - centroid).norm(), 1e-13);
        EXPECT_NEAR(s.contrib_norm[i], y.row(i).norm(), 1e-15);
        Eigen::VectorXd v(h.d);
        for (int k = 0; k < h.d; ++k)
            v[k] = h.values[i * h.d + k];
        EXPECT_NEAR(s.cos_to_s[i], v.dot(centroid) / (v.norm() * centroid.norm()), 1e-13);
    }
}

TEST(HeadSnapshot, RotationLeavesTheProjectionAndRadiiUnchanged) {
    const Head h = random_head(24, 4, 0.2f, 5);
    // A 90° rotation in the (0, 1) plane and a swap of axes 2, 3: exact in float32.
    Head rotated = h;
    for (int i = 0; i < h.n; ++i) {
        const float* v = &h.values[i * 4];
        float* r = &rotated.values[i * 4];
        r[0] = -v[1], r[1] = v[0], r[2] = v[3], r[3] = v[2];
    }
    const auto a =
        snapshot_head(h.alpha.data(), h.values.data(), h.n, h.d, 4, theory::Ranking::attention);
    const auto b = snapshot_head(rotated.alpha.data(), rotated.values.data(), h.n, h.d, 4,
                                 theory::Ranking::attention);
    EXPECT_DOUBLE_EQ(a.r_min, b.r_min);
    EXPECT_DOUBLE_EQ(a.r_max, b.r_max);
    double largest = 0;
    for (int i = 0; i < h.n; ++i)
        largest = std::max({largest, std::abs(std::abs(a.pc1[i]) - std::abs(b.pc1[i])),
                            std::abs(std::abs(a.pc2[i]) - std::abs(b.pc2[i]))});
    std::cout << "largest |PCA coordinate change| under rotation: " << largest << "\n";
    EXPECT_LT(largest, 1e-12);
}

TEST(HeadSnapshot, DegenerateSizes) {
    const Head h = random_head(10, 1, 0.5f, 3);
    const auto all =
        snapshot_head(h.alpha.data(), h.values.data(), h.n, h.d, h.n, theory::Ranking::attention);
    EXPECT_TRUE(std::isinf(all.r_min));  // nothing left out at N = n
    for (double p : all.pc2)
        EXPECT_EQ(p, 0);  // d = 1 has one axis only
    EXPECT_THROW(
        snapshot_head(h.alpha.data(), h.values.data(), h.n, h.d, 0, theory::Ranking::attention),
        std::domain_error);
    EXPECT_THROW(snapshot_head(h.alpha.data(), h.values.data(), h.n, h.d, h.n + 1,
                               theory::Ranking::attention),
                 std::domain_error);
}

TEST(SnapshotCollector, DefaultIsTheLargestSinkMassOfTheWindowTiesToTheLowerHead) {
    const int layers = 2, heads = 3, n = 16, d = 3;
    const float sinks[layers][heads] = {{0.1f, 0.6f, 0.2f}, {0.6f, 0.3f, 0.05f}};
    SnapshotCollector collector(parse_snapshot_request("auto"), n, theory::Ranking::attention);
    std::vector<Head> kept;
    for (std::int64_t window = 0; window < 2; ++window) {
        collector.start_window(window);
        for (int l = 0; l < layers; ++l)
            for (int h = 0; h < heads; ++h) {
                // Window 1 has a larger sink everywhere: only window 0 may be picked.
                const float sink = window == 0 ? sinks[l][h] : 0.9f;
                kept.push_back(random_head(n, d, sink, unsigned(10 * l + h + 100 * window)));
                collector.observe(l, h, kept.back().alpha.data(), kept.back().values.data(), d);
            }
    }
    ASSERT_TRUE(collector.complete());
    const std::string json = collector.snapshot_json();
    // Layer 0 head 1 and layer 1 head 0 tie at 0.6: the first seen (layer 0) wins.
    EXPECT_NE(json.find("\"layer\": 0"), std::string::npos) << json;
    EXPECT_NE(json.find("\"head\": 1"), std::string::npos) << json;
    const std::string contributions = collector.contributions_csv();
    EXPECT_EQ(std::count(contributions.begin(), contributions.end(), '\n'), 1 + layers * heads * n);
    const std::string csv = collector.snapshot_csv();
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "pos,alpha,selected,pc1,pc2,contrib_norm,distance_to_s,cos_to_s");
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + n);
}

TEST(SnapshotCollector, NamedHeadAndWindow) {
    SnapshotCollector collector(parse_snapshot_request("1:2:4:1"), 12, theory::Ranking::attention);
    const Head a = random_head(12, 2, 0.9f, 1), b = random_head(12, 2, 0.1f, 2);
    collector.start_window(0);
    collector.observe(1, 2, a.alpha.data(), a.values.data(), 2);
    EXPECT_FALSE(collector.complete());  // window 0 is not the one asked for
    collector.start_window(1);
    collector.observe(0, 0, a.alpha.data(), a.values.data(), 2);
    collector.observe(1, 2, b.alpha.data(), b.values.data(), 2);
    ASSERT_TRUE(collector.complete());
    const std::string json = collector.snapshot_json();
    EXPECT_NE(json.find("\"layer\": 1"), std::string::npos) << json;
    EXPECT_NE(json.find("\"head\": 2"), std::string::npos) << json;
    EXPECT_NE(json.find("\"N\": 4"), std::string::npos) << json;
    EXPECT_NE(json.find("\"document\": 1"), std::string::npos) << json;
}

TEST(SnapshotRequest, ParsesAndRejectsNamingTheFlag) {
    const SnapshotRequest r = parse_snapshot_request("2:5:8:3");
    EXPECT_EQ(r.layer, 2);
    EXPECT_EQ(r.head, 5);
    EXPECT_EQ(r.N, 8);
    EXPECT_EQ(r.document, 3);
    const SnapshotRequest a = parse_snapshot_request("auto:16:2");
    EXPECT_EQ(a.layer, -1);
    EXPECT_EQ(a.N, 16);
    EXPECT_EQ(a.document, 2);
    EXPECT_FALSE(parse_snapshot_request("off").enabled);
    for (const char* bad : {"", "1:2:3", "1:2:3:4:5", "a:1:2:3", "-1:0:4:0", "1:2:0:0",
                            "1:2:3:", "1.5:0:4:0", "auto:0:0", "on", "1:2:99999999999999:0"}) {
        try {
            parse_snapshot_request(bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        } catch (const InputError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("--snapshot", 0), 0u) << e.what();
        }
    }
    // Against the model and the run.
    EXPECT_NO_THROW(validate_snapshot_request(r, 3, 6, 16, 4));
    EXPECT_THROW(validate_snapshot_request(r, 2, 6, 16, 4), InputError);  // layer 2 of 2
    EXPECT_THROW(validate_snapshot_request(r, 3, 5, 16, 4), InputError);  // head 5 of 5
    EXPECT_THROW(validate_snapshot_request(r, 3, 6, 7, 4), InputError);   // N above context
    EXPECT_THROW(validate_snapshot_request(r, 3, 6, 16, 3), InputError);  // window 3 of 3
    EXPECT_NO_THROW(validate_snapshot_request(parse_snapshot_request("off"), 1, 1, 1, 1));
}

}  // namespace
}  // namespace attngeo::empirical
