// attngeo.HeadStatistics: the per-head statistics of `attngeo extract` (empirical/extract/statistics.hpp)
// fed from any model in Python — the final query row α and the value states per layer and
// document — and written as an extract folder through empirical::write_extract_folder, so
// `attngeo compare`, `merge` and `report` read it like one that `extract` wrote.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>

#include "common/format.hpp"
#include "common/number_list.hpp"
#include "empirical/extract/extract_folder.hpp"
#include "python/array_input.hpp"
#include "python/bindings.hpp"

namespace attngeo::python {
namespace {

const std::string kFunction = "attngeo.HeadStatistics";

// Shapes fixed by the first add(): H query heads, H_kv value heads of d_head.
struct HeadShape {
    int heads = 0, kv_heads = 0, head_dim = 0;
};

class StreamingStatistics {
  public:
    StreamingStatistics(int context, int layers, const py::handle& sizes, int max_lag,
                        const std::string& rank, const std::string& distance, int threads);
    // One layer of the current document: alpha [H, n], values [H_kv, n, d_head]. layer None:
    // the lowest layer this document has not had yet.
    void add(const py::handle& alpha, const py::handle& values, const py::object& layer);
    void write(const std::string& out, const py::dict& model, const py::dict& parameters,
               const py::object& windows, const std::string& command) const;
    std::int64_t documents() const { return per_doc_ ? per_doc_->windows() : 0; }
    int layers_in_progress() const { return layers_done_; }

  private:
    void start(const HeadShape& shape);
    int next_layer(const py::object& layer) const;
    void check_finite(const py::array_t<float>& array, const std::string& name, int layer) const;
    void check_nonnegative(const py::array_t<float>& alpha, int layer) const;

    empirical::StatisticsSettings settings_;
    std::string sizes_spec_;
    int layers_ = 0, threads_ = 0;
    HeadShape shape_;
    empirical::StatisticsGrid grid_;                    // [layers][heads], made by the first add
    std::unique_ptr<empirical::PerDocArrays> per_doc_;  // finished documents' records
    std::unique_ptr<empirical::WindowRecord> record_;   // the current document's record
    std::vector<char> layer_done_;                      // [layers] in the current document
    int layers_done_ = 0;
};

StreamingStatistics::StreamingStatistics(int context, int layers, const py::handle& sizes,
                                         int max_lag, const std::string& rank,
                                         const std::string& distance, int threads)
    : layers_(layers), threads_(threads) {
    // The same settings `attngeo extract --context --N --max-lag --rank --distance` makes.
    if (context < 2)
        throw_value_error(kFunction, "context = " + std::to_string(context) + ", expected >= 2");
    if (layers < 1)
        throw_value_error(kFunction, "layers = " + std::to_string(layers) + ", expected >= 1");
    if (max_lag < 1)
        throw_value_error(kFunction, "max_lag = " + std::to_string(max_lag) + ", expected >= 1");
    worker_count(threads, 1, kFunction);  // validates threads
    sizes_spec_ = selection_size_text(sizes, kFunction);
    settings_.context = context;
    settings_.max_lag = std::min(max_lag, context - 2);
    settings_.sizes = parse_selection_sizes(sizes_spec_, context, kFunction + ": N");
    settings_.ranking = ranking_argument(rank, kFunction);
    settings_.distance = distance_argument(distance, kFunction);
    layer_done_.assign(layers, 0);
}

void StreamingStatistics::start(const HeadShape& shape) {
    shape_ = shape;
    grid_ = empirical::make_grid(layers_, shape.heads, settings_);
    const empirical::PerDocLayout layout =
        empirical::per_doc_layout(layers_, shape.heads, settings_);
    per_doc_ = std::make_unique<empirical::PerDocArrays>(layout);
    record_ = std::make_unique<empirical::WindowRecord>(layout);
}

int StreamingStatistics::next_layer(const py::object& layer) const {
    if (layer.is_none()) {
        for (int l = 0; l < layers_; ++l)
            if (!layer_done_[l]) return l;
    }
    int chosen = -1;
    try {
        chosen = py::module_::import("operator").attr("index")(layer).cast<int>();
    } catch (const std::exception&) {
        throw_value_error(kFunction, "layer = " + py::repr(layer).cast<std::string>() +
                                         ", expected None or an int");
    }
    if (chosen < 0 || chosen >= layers_)
        throw_value_error(kFunction, "layer = " + std::to_string(chosen) +
                                         ", expected 0 <= layer < " + std::to_string(layers_));
    if (layer_done_[chosen])
        throw_value_error(kFunction,
                          "layer " + std::to_string(chosen) + " was already added to document " +
                              std::to_string(documents()) + "; a document has each layer once");
    return chosen;
}

void StreamingStatistics::check_finite(const py::array_t<float>& array, const std::string& name,
                                       int layer) const {
    const float* data = array.data();
    const auto row =
        static_cast<std::size_t>(array.size() / std::max<py::ssize_t>(1, array.shape(0)));
    for (py::ssize_t k = 0; k < array.size(); ++k)
        if (!std::isfinite(data[k]))
            throw_value_error(kFunction, name + " of layer " + std::to_string(layer) +
                                             " in document " + std::to_string(documents()) +
                                             " holds " + format_double(data[k]) + " (head " +
                                             std::to_string(k / row) + "), expected finite values");
}

// Checked here, before the library sees it, so the message names the argument, head and
// position and prints the weight as `attngeo metrics` prints a negative alpha.
void StreamingStatistics::check_nonnegative(const py::array_t<float>& alpha, int layer) const {
    const float* data = alpha.data();
    const py::ssize_t n = alpha.shape(1);
    for (py::ssize_t k = 0; k < alpha.size(); ++k)
        if (data[k] < 0)
            throw_value_error(kFunction,
                              "alpha of layer " + std::to_string(layer) + " in document " +
                                  std::to_string(documents()) + ", head " + std::to_string(k / n) +
                                  ", position " + std::to_string(k % n) + ": alpha = " +
                                  format_double(data[k]) + " is negative, expected alpha >= 0");
}

void StreamingStatistics::add(const py::handle& alpha_in, const py::handle& values_in,
                              const py::object& layer_in) {
    const py::array_t<float> alpha = float_array(alpha_in, 2, kFunction, "alpha");
    const py::array_t<float> values = float_array(values_in, 3, kFunction, "values");
    const HeadShape shape{static_cast<int>(alpha.shape(0)), static_cast<int>(values.shape(0)),
                          static_cast<int>(values.shape(2))};
    const int n = settings_.context;
    if (alpha.shape(1) != n || values.shape(1) != n)
        throw_value_error(kFunction, "alpha " + shape_text(alpha) + " and values " +
                                         shape_text(values) +
                                         " must have context = " + std::to_string(n) +
                                         " positions (alpha [H, n], values [H_kv, n, d_head])");
    if (shape.heads < 1 || shape.kv_heads < 1 || shape.head_dim < 1 ||
        shape.heads % shape.kv_heads != 0)
        throw_value_error(kFunction, "alpha " + shape_text(alpha) + " and values " +
                                         shape_text(values) +
                                         ": expected H >= 1 query heads, a divisor H_kv of H "
                                         "value heads and d_head >= 1");
    if (grid_.empty()) {
        start(shape);
    } else if (shape.heads != shape_.heads || shape.kv_heads != shape_.kv_heads ||
               shape.head_dim != shape_.head_dim) {
        throw_value_error(kFunction, "alpha " + shape_text(alpha) + " and values " +
                                         shape_text(values) + " differ from the first add's " +
                                         std::to_string(shape_.heads) + " heads, " +
                                         std::to_string(shape_.kv_heads) + " kv heads, d_head " +
                                         std::to_string(shape_.head_dim));
    }
    const int layer = next_layer(layer_in);
    check_finite(alpha, "alpha", layer);
    check_finite(values, "values", layer);
    check_nonnegative(alpha, layer);
    const int group = shape_.heads / shape_.kv_heads, d = shape_.head_dim;
    std::vector<empirical::DocumentRecord> records(shape_.heads);
    {
        const py::gil_scoped_release unlocked;
        parallel_for(shape_.heads, worker_count(threads_, shape_.heads, kFunction), [&](int h) {
            records[h] = grid_[layer][h].add_document(
                alpha.data() + static_cast<std::size_t>(h) * n,
                values.data() + static_cast<std::size_t>(h / group) * n * d, d);
        });
    }
    for (int h = 0; h < shape_.heads; ++h)
        record_->set(layer, h, records[h]);
    layer_done_[layer] = 1;
    if (++layers_done_ == layers_) {  // the document is complete
        per_doc_->append(*record_);
        layer_done_.assign(layers_, 0);
        layers_done_ = 0;
    }
}

// A dict's entries with a check that every key is one of `known`.
std::string text_or(const py::dict& entries, const char* key, const std::string& fallback) {
    return entries.contains(key) ? py::str(entries[key]).cast<std::string>() : fallback;
}

void check_keys(const py::dict& entries, const std::vector<std::string>& known,
                const std::string& what) {
    for (const auto& item : entries) {
        const std::string key = py::str(item.first).cast<std::string>();
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            std::string list;
            for (const auto& k : known)
                list += (list.empty() ? "" : ", ") + k;
            throw_value_error(kFunction, what + ": unknown key '" + key + "', expected " + list);
        }
    }
}

void StreamingStatistics::write(const std::string& out, const py::dict& model,
                                const py::dict& parameters, const py::object& windows_in,
                                const std::string& command) const {
    if (layers_done_ > 0)
        throw_value_error(kFunction, "write: document " + std::to_string(documents()) + " has " +
                                         std::to_string(layers_done_) + " of " +
                                         std::to_string(layers_) + " layers; add the rest first");
    if (documents() == 0) throw_value_error(kFunction, "write: no complete document was added");
    check_keys(model, {"path", "family", "vocab", "engine", "dtype", "device", "tokenizer"},
               "model");
    check_keys(parameters, {"docs", "bos", "stride", "seed", "shard", "tokens", "corpus"},
               "parameters");
    std::vector<std::vector<std::int64_t>> windows;
    if (!windows_in.is_none()) windows = windows_in.cast<std::vector<std::vector<std::int64_t>>>();
    if (!windows_in.is_none() && static_cast<std::int64_t>(windows.size()) != documents())
        throw_value_error(kFunction, "write: windows has " + std::to_string(windows.size()) +
                                         " token lists, expected one per document (" +
                                         std::to_string(documents()) + ")");
    empirical::ExtractRunInfo run;
    run.command = command;
    run.model = {text_or(model, "path", ""),
                 text_or(model, "family", "llama"),
                 layers_,
                 shape_.heads,
                 shape_.kv_heads,
                 shape_.head_dim,
                 model.contains("vocab") ? model["vocab"].cast<int>() : 0,
                 text_or(model, "engine", "python (attngeo.HeadStatistics)"),
                 text_or(model, "dtype", "float32"),
                 text_or(model, "device", "cpu")};
    empirical::ExtractParameters& p = run.parameters;
    p.docs = parameters.contains("docs") ? parameters["docs"].cast<std::int64_t>() : 0;
    p.bos = text_or(parameters, "bos", "caller");
    p.stride = parameters.contains("stride") ? parameters["stride"].cast<int>() : 0;
    p.seed = parameters.contains("seed") ? parameters["seed"].cast<std::uint64_t>() : 0;
    p.sizes_spec = sizes_spec_;
    p.engine = "python";
    p.metrics = empirical::uses_gram_path(settings_) ? "theory/ certified Gram path per head"
                                                     : "per-N reference (sparse N grid)";
    p.shard = text_or(parameters, "shard", "0/1");
    p.tokens_file = text_or(parameters, "tokens", "");
    p.corpus = text_or(parameters, "corpus", "");
    run.documents = {documents(), documents(), 0, documents()};
    run.tokenizer = text_or(model, "tokenizer", "none (Python caller)");
    run.run_fingerprint =
        empirical::run_fingerprint(empirical::extract_settings_text(settings_, run.model), windows);
    const py::gil_scoped_release unlocked;
    empirical::write_extract_folder(out, grid_, settings_, run, *per_doc_);
}

}  // namespace

void bind_head_statistics(py::module_& module) {
    py::class_<StreamingStatistics>(module, "HeadStatistics", R"doc(
Per-head statistics of real attention, as `attngeo extract` forms them (docs/design.md §6),
streamed from any model: add() each layer of each document, then write() an extract folder.

HeadStatistics(context, layers, N="all", max_lag=128, rank="attn", distance="euclidean",
threads=0): context = n positions per document (BOS included), layers = the model's layers.)doc")
        .def(py::init<int, int, const py::handle&, int, const std::string&, const std::string&,
                      int>(),
             py::arg("context"), py::arg("layers"), py::arg("N") = "all", py::arg("max_lag") = 128,
             py::arg("rank") = "attn", py::arg("distance") = "euclidean", py::arg("threads") = 0)
        .def("add", &StreamingStatistics::add, py::arg("alpha"), py::arg("values"),
             py::arg("layer") = py::none(),
             R"doc(One layer of the current document: alpha [H, n] (the final query row of each
query head, softmax after masking and scaling), values [H_kv, n, d_head] (query head h reads
value head h // (H / H_kv)); float16/32/64, converted to float32. layer None: the next layer
this document has not had. The document is complete when every layer was added once.)doc")
        .def("write", &StreamingStatistics::write, py::arg("out"), py::arg("model") = py::dict(),
             py::arg("parameters") = py::dict(), py::arg("windows") = py::none(),
             py::arg("command") = "",
             R"doc(Writes the extract folder `out` (heads.csv, pr.csv, by_position.csv,
cos_by_lag.csv, diag.csv, per_doc.safetensors, sums.safetensors, manifest.json). model: path,
family ("llama"), vocab, engine, dtype, device, tokenizer for the manifest; parameters: docs,
bos, stride, seed, shard, tokens, corpus; windows: each document's token ids (the run
fingerprint, as `extract` hashes them).)doc")
        .def_property_readonly("documents", &StreamingStatistics::documents,
                               "Documents with every layer added.")
        .def_property_readonly("layers_in_progress", &StreamingStatistics::layers_in_progress,
                               "Layers added to the current, unfinished document.");
}

}  // namespace attngeo::python
