// The extract pipeline: windows → forward with last-row capture → HeadStatistics per
// (layer, head) → output files, each written atomically; see extract.hpp.
#include "empirical/extract.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attngeo/version.hpp"
#include "common/atomic_file.hpp"
#include "common/errors.hpp"
#include "common/format.hpp"
#include "common/number_list.hpp"
#include "empirical/capture.hpp"
#include "common/safetensors.hpp"
#include "empirical/statistics.hpp"
#include "empirical/tokenizer.hpp"
#include "empirical/transformer.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

HostTensor float_tensor(const std::string& name, std::vector<std::int64_t> shape,
                        std::shared_ptr<std::vector<float>> data) {
    HostTensor h;
    h.name = name;
    h.dtype = DType::F32;
    h.shape = std::move(shape);
    h.data = data->data();
    h.bytes = data->size() * sizeof(float);
    h.owner = std::shared_ptr<const void>(data, data->data());
    return h;
}

// Deterministic Fisher–Yates with SplitMix64, so the order is the same on every platform.
void seeded_shuffle(std::vector<std::vector<std::int64_t>>& items, std::uint64_t seed) {
    std::uint64_t state = seed;
    auto next = [&] {
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    for (std::size_t i = items.size(); i > 1; --i)
        std::swap(items[i - 1], items[next() % i]);
}

}  // namespace

std::vector<std::string> read_corpus(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw InputError("--corpus '" + path + "': cannot open");
    std::vector<std::string> documents;
    std::string line, current;
    int number = 0;
    const bool jsonl = fs::path(path).extension() == ".jsonl";
    while (std::getline(in, line)) {
        ++number;
        if (jsonl) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            nlohmann::json record;
            try {
                record = nlohmann::json::parse(line);
            } catch (const std::exception&) {
                throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                                 ": not valid JSON");
            }
            if (!record.is_object() || !record.contains("text") || !record.at("text").is_string()) {
                throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                                 ": expected an object with a \"text\" string");
            }
            documents.push_back(record.at("text").get<std::string>());
            continue;
        }
        if (line.find_first_not_of(" \t\r") == std::string::npos) {  // a blank line ends a document
            if (!current.empty()) documents.push_back(current);
            current.clear();
        } else {
            current += (current.empty() ? "" : "\n") + line;
        }
    }
    if (!current.empty()) documents.push_back(current);
    return documents;
}

std::vector<std::vector<std::int64_t>> make_windows(
    const std::vector<std::vector<std::int64_t>>& documents, int context, int bos_id,
    const std::string& bos, int stride, std::int64_t max_docs, std::int64_t& skipped) {
    if (bos != "auto" && bos != "yes" && bos != "no")
        throw InputError("--bos: '" + bos + "', expected auto, yes or no");
    if (context < 2) throw InputError("--context: " + std::to_string(context) + ", expected >= 2");
    if (stride < 0) throw InputError("--stride: " + std::to_string(stride) + ", expected >= 0");
    std::vector<std::vector<std::int64_t>> windows;
    skipped = 0;
    std::int64_t used = 0;
    for (const auto& doc : documents) {
        if (max_docs > 0 && used >= max_docs) break;
        const bool starts_with_bos = !doc.empty() && doc.front() == bos_id;
        const bool add_bos = bos == "yes" || (bos == "auto" && !starts_with_bos);
        if (add_bos && bos_id < 0)
            throw InputError("--bos: the model has no BOS token id; use --bos no");
        const std::int64_t take = add_bos ? context - 1 : context;
        if (static_cast<std::int64_t>(doc.size()) < take) {
            ++skipped;
            continue;
        }
        ++used;
        const std::int64_t step = stride > 0 ? stride : static_cast<std::int64_t>(doc.size()) + 1;
        for (std::int64_t offset = 0; offset + take <= static_cast<std::int64_t>(doc.size());
             offset += step) {
            std::vector<std::int64_t> w;
            if (add_bos) w.push_back(bos_id);
            w.insert(w.end(), doc.begin() + offset, doc.begin() + offset + take);
            windows.push_back(std::move(w));
        }
    }
    return windows;
}

void run_extract(const ExtractRequest& r) {
    const auto start = std::chrono::steady_clock::now();
    if (r.out.empty()) throw InputError("--out: an output folder is required");
    if (r.tokens_file.empty() == r.corpus.empty())
        throw InputError("--tokens / --corpus: give exactly one of them");
    if (r.max_lag < 1)
        throw InputError("--max-lag: " + std::to_string(r.max_lag) + ", expected >= 1");
    const Transformer model = Transformer::load(r.model, LoadOptions{r.device, r.dtype});
    const ModelConfig& config = model.config();
    std::string tokenizer_name = "none (--tokens)";
    std::vector<std::vector<std::int64_t>> documents;
    if (!r.tokens_file.empty()) {
        documents = read_token_file(r.tokens_file, false);
    } else {
        const auto tokenizer = tokenizer_for_model(r.model, config.vocab_size);
        tokenizer_name = tokenizer->name();
        for (const std::string& text : read_corpus(r.corpus)) {
            std::vector<std::int64_t> ids;
            for (int id : tokenizer->encode(text))
                ids.push_back(id);
            if (!ids.empty()) documents.push_back(std::move(ids));
        }
        if (documents.empty()) throw InputError("--corpus '" + r.corpus + "': no documents");
    }
    if (r.seed != 0) seeded_shuffle(documents, r.seed);
    std::int64_t skipped = 0;
    const auto windows =
        make_windows(documents, r.context, config.bos_token_id >= 0 ? config.bos_token_id : 1,
                     r.bos, r.stride, r.docs, skipped);
    if (windows.empty()) {
        throw InputError(
            (r.tokens_file.empty() ? "--corpus '" + r.corpus : "--tokens '" + r.tokens_file) +
            "': no document has " + std::to_string(r.context) + " tokens (all " +
            std::to_string(skipped) + " skipped); lower --context");
    }
    StatisticsSettings settings;
    settings.context = r.context;
    settings.max_lag = std::min(r.max_lag, r.context - 2);
    settings.sizes = parse_selection_sizes(r.sizes, r.context, "--N");
    settings.ranking = theory::parse_ranking(r.rank);
    settings.distance = theory::parse_distance(r.distance);
    const int L = config.num_layers, H = config.num_heads,
              group = config.num_heads / config.num_kv_heads, d = config.head_dim;
    std::vector<std::vector<HeadStatistics>> stats(
        L, std::vector<HeadStatistics>(H, HeadStatistics(settings)));

    const bool progress = !r.quiet && ::isatty(STDERR_FILENO);
    CaptureOptions options;
    options.queries = QueryRows::last;
    options.all_logits = false;
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const auto ids = torch::tensor(windows[w], torch::kInt64).unsqueeze(0);
        const CaptureResult result = model.forward(ids, options);
        for (int l = 0; l < L; ++l) {
            const auto attention =
                result.layers[l].attention.to(torch::kCPU).contiguous();  // [1, H, 1, T]
            const auto values =
                result.layers[l].values.to(torch::kCPU).contiguous();  // [1, Hkv, T, d]
            const float* a = attention.data_ptr<float>();
            const float* v = values.data_ptr<float>();
            for (int h = 0; h < H; ++h) {
                stats[l][h].add_document(a + static_cast<std::size_t>(h) * r.context,
                                         v + static_cast<std::size_t>(h / group) * r.context * d,
                                         d);
            }
        }
        if (progress) {
            const double elapsed =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const double rate = (w + 1) / elapsed;
            std::fprintf(stderr, "\rextract: %zu/%zu windows, %.2f windows/s, ETA %.0f s   ", w + 1,
                         windows.size(), rate, (windows.size() - w - 1) / rate);
        }
    }
    if (progress) std::fprintf(stderr, "\n");

    const std::int64_t D = static_cast<std::int64_t>(windows.size());
    std::ostringstream heads, pr, by_position, lags, diag;
    heads << "layer,head,kv_head,docs,norm_mean,norm_median,cv_positional,cv_pooled,lambda,rho0,"
             "sink_mass,last_mass,"
             "m_sink,m_last,m_rest,regime\n";
    pr << "layer,head,N,docs,P_mean,P_se,R_mean,R_se,Fmax_mean,Fmin_mean\n";
    by_position << "layer,head,pos,norm_mean,alpha_mean,contrib_mean\n";
    lags << "layer,head,lag,cos_mean,pairs\n";
    diag << "layer,head,N,s_norm,s_norm_no_sink,s_norm_no_last,cos_s_v0,cos_s_vL\n";
    const std::size_t S = settings.sizes.size();
    auto P = std::make_shared<std::vector<float>>(D * L * H * S),
         R = std::make_shared<std::vector<float>>(D * L * H * S);
    auto rho0 = std::make_shared<std::vector<float>>(D * L * H),
         lambda = std::make_shared<std::vector<float>>(D * L * H);
    auto f = [](double x) { return format_double(x); };
    for (int l = 0; l < L; ++l) {
        for (int h = 0; h < H; ++h) {
            const HeadStatistics& s = stats[l][h];
            heads << l << ',' << h << ',' << h / group << ',' << s.documents() << ','
                  << f(s.norm_mean()) << ',' << f(s.norm_median()) << ',' << f(s.cv_positional())
                  << ',' << f(s.cv_pooled()) << ',' << f(s.lambda()) << ',' << f(s.rho0()) << ','
                  << f(s.sink_mass()) << ',' << f(s.last_mass()) << ',' << f(s.m_sink()) << ','
                  << f(s.m_last()) << ',' << f(s.m_rest()) << ',' << s.regime() << '\n';
            for (std::size_t i = 0; i < S; ++i) {
                const auto p = simulate::estimate(s.precision(i)),
                           rr = simulate::estimate(s.recall(i));
                pr << l << ',' << h << ',' << settings.sizes[i] << ',' << s.documents() << ','
                   << f(p.mean) << ',' << f(p.se) << ',' << f(rr.mean) << ',' << f(rr.se) << ','
                   << f(simulate::estimate(s.fmax(i)).mean) << ','
                   << f(simulate::estimate(s.fmin(i)).mean) << '\n';
                diag << l << ',' << h << ',' << settings.sizes[i] << ',' << f(s.s_norm(i)) << ','
                     << f(s.s_norm_no_sink(i)) << ',' << f(s.s_norm_no_last(i)) << ','
                     << f(s.cos_s_v0(i)) << ',' << f(s.cos_s_vL(i)) << '\n';
            }
            const auto norms = s.norm_by_position(), alphas = s.alpha_by_position(),
                       contribs = s.contrib_by_position();
            for (int pos = 0; pos < r.context; ++pos) {
                by_position << l << ',' << h << ',' << pos << ',' << f(norms[pos]) << ','
                            << f(alphas[pos]) << ',' << f(contribs[pos]) << '\n';
            }
            for (int lag = 1; lag <= settings.max_lag; ++lag) {
                lags << l << ',' << h << ',' << lag << ',' << f(s.cos_at_lag(lag)) << ','
                     << s.pairs_at_lag(lag) << '\n';
            }
            for (std::int64_t doc = 0; doc < D; ++doc) {
                const std::size_t base = (static_cast<std::size_t>(doc) * L + l) * H + h;
                (*rho0)[base] = s.per_doc_rho0()[doc];
                (*lambda)[base] = s.per_doc_lambda()[doc];
                for (std::size_t i = 0; i < S; ++i) {
                    (*P)[base * S + i] = s.per_doc_precision()[doc][i];
                    (*R)[base * S + i] = s.per_doc_recall()[doc][i];
                }
            }
        }
    }
    auto sizes_data =
        std::make_shared<std::vector<std::int64_t>>(settings.sizes.begin(), settings.sizes.end());
    HostTensor sizes_tensor;
    sizes_tensor.name = "N";
    sizes_tensor.dtype = DType::I64;
    sizes_tensor.shape = {static_cast<std::int64_t>(S)};
    sizes_tensor.data = sizes_data->data();
    sizes_tensor.bytes = S * sizeof(std::int64_t);
    sizes_tensor.owner = std::shared_ptr<const void>(sizes_data, sizes_data->data());

    const nlohmann::json manifest = {
        {"tool", "attngeo"},
        {"version", kVersion},
        {"git_commit", kGitCommit},
        {"kind", "extract"},
        {"command", r.command_line},
        {"model",
         {{"path", r.model},
          {"family", config.family},
          {"layers", L},
          {"heads", H},
          {"kv_heads", config.num_kv_heads},
          {"head_dim", d},
          {"vocab", config.vocab_size}}},
        {"parameters",
         {{"context", r.context},
          {"docs", r.docs},
          {"bos", r.bos},
          {"stride", r.stride},
          {"seed", r.seed},
          {"max_lag", settings.max_lag},
          {"N", r.sizes},
          {"rank", r.rank},
          {"distance", r.distance},
          {"dtype", r.dtype},
          {"device", r.device},
          {"tokens", r.tokens_file},
          {"corpus", r.corpus}}},
        {"documents",
         {{"windows_used", D}, {"skipped_too_short", skipped}, {"in_file", documents.size()}}},
        {"tokenizer", tokenizer_name},
        {"decisions",
         nlohmann::json::array({
             "Final causal query row only; value head for query head h is h / (H/H_kv); alpha = "
             "softmax(q k^T/sqrt(d) + mask) in float32.",
             "Geometry in double from the float32 captures; documents averaged per head.",
             "lambda = mean |v_0| / median_{i>=1} of the document-mean norm profile; cv_positional "
             "over that profile (i>=1); cv_pooled over all tokens i>=1 of all documents.",
             "rho0 = mean over documents of mean_{j>=1} cos(v_0, v_j); cos by lag over pairs i>=1.",
             "Regime: Retriever if m_last is the largest of (m_sink, m_last, m_rest), Mixer if the "
             "middle one, Reset if the smallest (SPEC 6).",
         })},
        {"timings",
         {{"total_s",
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()}}},
    };
    std::error_code ec;
    fs::create_directories(r.out, ec);
    if (ec) throw InputError("--out '" + r.out + "': cannot create folder: " + ec.message());
    const fs::path out(r.out);
    write_safetensors((out / "per_doc.safetensors").string(),
                      {float_tensor("P", {D, L, H, static_cast<std::int64_t>(S)}, P),
                       float_tensor("R", {D, L, H, static_cast<std::int64_t>(S)}, R),
                       float_tensor("rho0", {D, L, H}, rho0),
                       float_tensor("lambda", {D, L, H}, lambda), sizes_tensor});
    write_file_atomic((out / "heads.csv").string(), heads.str());
    write_file_atomic((out / "pr.csv").string(), pr.str());
    write_file_atomic((out / "by_position.csv").string(), by_position.str());
    write_file_atomic((out / "cos_by_lag.csv").string(), lags.str());
    write_file_atomic((out / "diag.csv").string(), diag.str());
    write_file_atomic((out / "manifest.json").string(), manifest.dump(2) + "\n");
}

}  // namespace attngeo::empirical
