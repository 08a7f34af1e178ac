// The files of an extract folder from a finished grid, the manifest, and merge; see
// extract_folder.hpp.
#include "empirical/extract/extract_folder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/exact_sums.hpp"
#include "common/format.hpp"
#include "common/json_file.hpp"
#include "common/manifest_values.hpp"
#include "common/output_folder.hpp"
#include "common/run_columns.hpp"
#include "common/run_schema.hpp"
#include "common/safetensors.hpp"
#include "empirical/extract/sink_tables.hpp"
#include "theory/head_regime.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

nlohmann::json decisions() {
    return nlohmann::json::array({
        "Final causal query row only; value head for query head h is h / (H/H_kv); alpha = "
        "softmax(q k^T/sqrt(d) + mask) in float32.",
        "Geometry in double from the float32 captures; documents averaged per head.",
        "Sums over documents are exact (2^-64 fixed point in 128-bit integers), so a resumed or "
        "merged run equals the uninterrupted one bit for bit.",
        "lambda = mean |v_0| / median_{i>=1} of the document-mean norm profile; cv_positional "
        "over that profile (i>=1); cv_pooled over all tokens i>=1 of all documents.",
        "rho0 = mean over documents of mean_{j>=1} cos(v_0, v_j); cos by lag over pairs i>=1.",
        "Regime: Retriever if m_last is the largest of (m_sink, m_last, m_rest), Mixer if the "
        "middle one, Reset if the smallest (docs/design.md section 6).",
        "Shard i/n takes windows [i W/n, (i+1) W/n) of the W windows in run order.",
    });
}

// The five CSV tables of a folder, filled head by head.
struct CsvTables {
    std::ostringstream heads, pr, by_position, lags, diag;
    std::ostringstream by_length, heads_by_length;  // only with --queries

    CsvTables() {
        using schema::csv_header;
        heads << csv_header(schema::page::extract, schema::file::heads) << '\n';
        pr << csv_header(schema::page::extract, schema::file::precision_recall) << '\n';
        by_position << csv_header(schema::page::extract, schema::file::by_position) << '\n';
        lags << csv_header(schema::page::extract, schema::file::cos_by_lag) << '\n';
        diag << csv_header(schema::page::extract, schema::file::diagnostics) << '\n';
        by_length << csv_header(schema::page::extract, schema::file::by_length) << '\n';
        heads_by_length << csv_header(schema::page::extract, schema::file::heads_by_length) << '\n';
    }

    // by_length.csv and heads_by_length.csv: the query rows of --queries, per length bin.
    void add_lengths(int l, int h, const HeadStatistics& s, const StatisticsSettings& settings) {
        auto se = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
        for (std::size_t b = 0; b < settings.length_bins.size(); ++b) {
            const LengthBin& bin = settings.length_bins[b];
            const HeadStatistics::LengthSums& sums = s.by_length()[b];
            const double q = static_cast<double>(sums.queries);
            auto mean = [&](const ExactSum& sum) { return q > 0 ? sum.value() / q : 0.0; };
            const double m_sink = mean(sums.m_sink), m_last = mean(sums.m_last),
                         m_rest = mean(sums.m_rest);
            heads_by_length << l << ',' << h << ',' << bin.lo << ',' << bin.hi << ','
                            << sums.queries << ',' << format_double(mean(sums.lambda)) << ','
                            << format_double(mean(sums.rho0)) << ','
                            << format_double(mean(sums.sink_mass)) << ',' << format_double(m_sink)
                            << ',' << format_double(m_last) << ',' << format_double(m_rest) << ','
                            << theory::to_string(theory::classify_head(m_sink, m_last, m_rest))
                            << '\n';
            for (std::size_t i = 0; i < settings.sizes.size(); ++i) {
                if (settings.sizes[i] > bin.shortest) break;
                const auto p = estimate(sums.precision[i]), r = estimate(sums.recall[i]);
                by_length << l << ',' << h << ',' << bin.lo << ',' << bin.hi << ','
                          << settings.sizes[i] << ',' << sums.queries << ','
                          << format_double(p.mean) << ',' << se(p.se) << ','
                          << format_double(r.mean) << ',' << se(r.se) << '\n';
            }
        }
    }

    void add_head(int l, int h, int kv_head, const HeadStatistics& s,
                  const StatisticsSettings& settings) {
        heads << l << ',' << h << ',' << kv_head << ',' << s.documents() << ','
              << format_double(s.norm_mean()) << ',' << format_double(s.norm_median()) << ','
              << format_double(s.cv_positional()) << ',' << format_double(s.cv_pooled()) << ','
              << format_double(s.lambda()) << ',' << format_double(s.rho0()) << ','
              << format_double(s.sink_mass()) << ',' << format_double(s.last_mass()) << ','
              << format_double(s.m_sink()) << ',' << format_double(s.m_last()) << ','
              << format_double(s.m_rest()) << ',' << s.regime() << ','
              << format_double(s.regime_margin()) << '\n';
        add_sizes(l, h, s, settings);
        const auto norms = s.norm_by_position(), alphas = s.alpha_by_position(),
                   contribs = s.contrib_by_position();
        for (int pos = 0; pos < settings.context; ++pos)
            by_position << l << ',' << h << ',' << pos << ',' << format_double(norms[pos]) << ','
                        << format_double(alphas[pos]) << ',' << format_double(contribs[pos])
                        << '\n';
        for (int lag = 1; lag <= settings.max_lag; ++lag)
            lags << l << ',' << h << ',' << lag << ',' << format_double(s.cos_at_lag(lag)) << ','
                 << s.pairs_at_lag(lag) << '\n';
    }

    // pr.csv and diag.csv: one row per N.
    void add_sizes(int l, int h, const HeadStatistics& s, const StatisticsSettings& settings) {
        // A standard error needs two documents; with one it is undefined and written as an
        // empty field (compare reads that as "missing"), never as nan.
        auto se = [](double x) { return std::isfinite(x) ? format_double(x) : std::string(); };
        for (std::size_t i = 0; i < settings.sizes.size(); ++i) {
            const auto p = estimate(s.precision(i)), r = estimate(s.recall(i));
            pr << l << ',' << h << ',' << settings.sizes[i] << ',' << s.documents() << ','
               << format_double(p.mean) << ',' << se(p.se) << ',' << format_double(r.mean) << ','
               << se(r.se) << ',' << format_double(estimate(s.fmax(i)).mean) << ','
               << format_double(estimate(s.fmin(i)).mean) << ',' << s.exact_decisions(i) << '\n';
            diag << l << ',' << h << ',' << settings.sizes[i] << ',' << format_double(s.s_norm(i))
                 << ',' << format_double(s.s_norm_no_sink(i)) << ','
                 << format_double(s.s_norm_no_last(i)) << ',' << format_double(s.cos_s_v0(i)) << ','
                 << format_double(s.cos_s_vL(i)) << '\n';
        }
    }
};

void write_per_doc(const fs::path& path, const StatisticsSettings& settings, int layers, int heads,
                   std::int64_t documents, const PerDocWriter& per_doc) {
    const PerDocLayout layout = per_doc_layout(layers, heads, settings);
    std::vector<TensorSpec> specs;
    for (int t = 0; t < PerDocLayout::kTensors; ++t)
        specs.push_back({PerDocLayout::kNames[t], DType::F32, layout.shape(t, documents)});
    const std::int64_t S = layout.sizes;
    specs.push_back({"N", DType::I64, {S}});
    write_safetensors_streamed(path.string(), specs, [&](std::size_t t, std::ostream& stream) {
        if (t < PerDocLayout::kTensors) {
            per_doc(static_cast<int>(t), stream);
        } else {
            const std::vector<std::int64_t> sizes(settings.sizes.begin(), settings.sizes.end());
            stream.write(reinterpret_cast<const char*>(sizes.data()),
                         sizes.size() * sizeof(std::int64_t));
        }
    });
}

// The sink tensors of the per-document arrays, streamed into memory ([D, L, H] floats each:
// small beside the folder's other arrays).
SinkArrays sink_arrays(const PerDocLayout& layout, std::int64_t documents,
                       const PerDocWriter& per_doc) {
    auto tensor = [&](int t) {
        std::ostringstream bytes;
        per_doc(t, bytes);
        const std::string raw = bytes.str();
        std::vector<float> values(static_cast<std::size_t>(documents * layout.block(t)));
        if (raw.size() != values.size() * sizeof(float))
            throw std::logic_error("sink_arrays: per-document tensor of another size");
        std::memcpy(values.data(), raw.data(), raw.size());
        return values;
    };
    SinkArrays a;
    a.windows = documents;
    a.layers = layout.layers;
    a.heads = layout.heads;
    a.sink_attention = tensor(PerDocLayout::sink_attention);
    a.key_norm_ratio = tensor(PerDocLayout::key_norm_ratio);
    a.cos_query_sink = tensor(PerDocLayout::cos_query_sink);
    a.cos_query_rest = tensor(PerDocLayout::cos_query_rest);
    a.massive = tensor(PerDocLayout::massive);
    a.secondary = tensor(PerDocLayout::secondary_sinks);
    return a;
}

}  // namespace

std::string extract_settings_text(const StatisticsSettings& settings,
                                  const ExtractModelInfo& model) {
    nlohmann::json json = {{"context", settings.context},
                           {"max_lag", settings.max_lag},
                           {"sizes", settings.sizes},
                           {"rank", theory::to_string(settings.ranking)},
                           {"distance", theory::to_string(settings.distance)},
                           {"layers", model.layers},
                           {"heads", model.heads},
                           {"kv_heads", model.kv_heads},
                           {"head_dim", model.head_dim},
                           {"family", model.family},
                           {"dtype", model.dtype}};
    if (!settings.positions.empty()) {  // --queries: absent otherwise, as before it existed
        json["positions"] = settings.positions;
        nlohmann::json bins = nlohmann::json::array();
        for (const LengthBin& bin : settings.length_bins)
            bins.push_back({bin.lo, bin.hi, bin.shortest});
        json["length_bins"] = bins;
    }
    return json.dump();
}

std::map<std::string, std::string> extract_state_metadata(const StatisticsSettings& settings,
                                                          const ExtractRunInfo& run) {
    return {{"run_fingerprint", run.run_fingerprint},
            {"shard", run.parameters.shard},
            {"windows", std::to_string(run.documents.windows_used)},
            {"settings", extract_settings_text(settings, run.model)}};
}

nlohmann::json extract_manifest(const StatisticsSettings& settings, const ExtractRunInfo& run) {
    const ExtractModelInfo& m = run.model;
    const ExtractParameters& p = run.parameters;
    nlohmann::json manifest = manifest_header("extract", run.command);
    manifest["model"] = {{"path", m.path},         {"family", m.family},
                         {"layers", m.layers},     {"heads", m.heads},
                         {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim},
                         {"vocab", m.vocab},       {"engine", m.engine_description},
                         {"dtype", m.dtype},       {"device", m.device}};
    manifest["parameters"] = {{"context", settings.context},
                              {"docs", p.docs},
                              {"bos", p.bos},
                              {"stride", p.stride},
                              {"seed", p.seed},
                              {"max_lag", settings.max_lag},
                              {"N", p.sizes_spec},
                              {"sizes", settings.sizes.size()},
                              {"rank", theory::to_string(settings.ranking)},
                              {"distance", theory::to_string(settings.distance)},
                              {"dtype", m.dtype},
                              {"device", m.device},
                              {"engine", p.engine},
                              {"metrics", p.metrics},
                              {"shard", p.shard},
                              {"tokens", p.tokens_file},
                              {"corpus", p.corpus}};
    if (!settings.positions.empty()) {
        manifest["parameters"]["queries"] = p.queries;
        manifest["parameters"]["positions"] = settings.positions;
        manifest["parameters"]["length_bins"] =
            length_bins_json(settings.length_bins, settings.positions);
    }
    manifest["run_fingerprint"] = run.run_fingerprint;
    const ExtractDocumentsInfo& d = run.documents;
    manifest["documents"] = {{"windows_used", d.windows_used},
                             {"windows_in_run", d.windows_in_run},
                             {"skipped_too_short", d.skipped_too_short},
                             {"in_file", d.in_file}};
    manifest["tokenizer"] = run.tokenizer;
    manifest["decisions"] = decisions();
    manifest["timings"] = run.timings;
    return manifest;
}

void write_extract_outputs(const std::string& out, const StatisticsSettings& settings,
                           const StatisticsGrid& grid, int group, std::int64_t documents,
                           const PerDocWriter& per_doc,
                           const std::map<std::string, std::string>& state_metadata,
                           const nlohmann::json& manifest,
                           const std::map<std::string, std::string>& extra_files) {
    const int L = static_cast<int>(grid.size()), H = static_cast<int>(grid[0].size());
    CsvTables tables;
    for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h)
            tables.add_head(l, h, h / group, grid[l][h], settings);
    if (!settings.positions.empty())
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < H; ++h)
                tables.add_lengths(l, h, grid[l][h], settings);
    // Staged beside `out` and moved in whole (docs/design.md §10): a failure leaves no output file
    // behind.
    OutputFolder folder(out, "--out");
    const fs::path staged(folder.staging());
    write_per_doc(staged / schema::file::per_document, settings, L, H, documents, per_doc);
    save_state((staged / schema::file::exact_state).string(), grid, state_metadata);
    folder.write(schema::file::heads, tables.heads.str());
    folder.write(schema::file::precision_recall, tables.pr.str());
    folder.write(schema::file::by_position, tables.by_position.str());
    folder.write(schema::file::cos_by_lag, tables.lags.str());
    folder.write(schema::file::diagnostics, tables.diag.str());
    if (!settings.positions.empty()) {
        folder.write(schema::file::by_length, tables.by_length.str());
        folder.write(schema::file::heads_by_length, tables.heads_by_length.str());
    }
    const SinkTables sinks =
        sink_tables(sink_arrays(per_doc_layout(L, H, settings), documents, per_doc), group);
    folder.write(schema::file::sink_heads, sinks.heads);
    folder.write(schema::file::sink_layers, sinks.layers);
    folder.write(schema::file::secondary_sinks, sinks.secondary);
    for (const auto& [name, contents] : extra_files)
        folder.write(name, contents);
    folder.write(schema::file::manifest, manifest.dump(2) + "\n");
    folder.commit();
}

void PerDocArrays::append(const WindowRecord& record) {
    records_.insert(records_.end(), record.floats().begin(), record.floats().end());
    ++windows_;
}

void PerDocArrays::write(int tensor, std::ostream& stream) const {
    const std::int64_t record = layout_.record_floats(), block = layout_.block(tensor);
    for (std::int64_t w = 0; w < windows_; ++w)
        stream.write(
            reinterpret_cast<const char*>(records_.data() + w * record + layout_.offset(tensor)),
            static_cast<std::streamsize>(block * sizeof(float)));
}

void write_extract_folder(const std::string& out, const StatisticsGrid& grid,
                          const StatisticsSettings& settings, const ExtractRunInfo& run,
                          const PerDocArrays& per_doc) {
    const ExtractModelInfo& m = run.model;
    const std::int64_t D = run.documents.windows_used;
    const bool grid_matches =
        static_cast<int>(grid.size()) == m.layers && m.layers > 0 && m.heads > 0 &&
        m.kv_heads > 0 && m.heads % m.kv_heads == 0 &&
        std::all_of(grid.begin(), grid.end(), [&](const std::vector<HeadStatistics>& layer) {
            return static_cast<int>(layer.size()) == m.heads &&
                   std::all_of(layer.begin(), layer.end(), [&](const HeadStatistics& head) {
                       return head.documents() == D && head.sizes() == settings.sizes;
                   });
        });
    const PerDocLayout& layout = per_doc.layout();
    const PerDocLayout expected = per_doc_layout(m.layers, m.heads, settings);
    const bool arrays_match = per_doc.windows() == D && layout.layers == expected.layers &&
                              layout.heads == expected.heads && layout.sizes == expected.sizes &&
                              layout.max_lag == expected.max_lag &&
                              layout.context == expected.context;
    if (!grid_matches || !arrays_match)
        throw InputError(
            "--out '" + out + "': the statistics grid (" + std::to_string(grid.size()) +
            " layers) and " + std::to_string(per_doc.windows()) +
            " per-document rows do not match the model (" + std::to_string(m.layers) + " layers, " +
            std::to_string(m.heads) + " heads, " + std::to_string(m.kv_heads) + " kv heads) and " +
            std::to_string(D) + " windows used");
    write_extract_outputs(
        out, settings, grid, m.heads / m.kv_heads, D,
        [&](int tensor, std::ostream& stream) { per_doc.write(tensor, stream); },
        extract_state_metadata(settings, run), extract_manifest(settings, run));
}

}  // namespace attngeo::empirical
