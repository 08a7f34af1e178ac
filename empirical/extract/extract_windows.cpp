// Corpus reading, document order and windowing for extract; see extract_windows.hpp.
#include "empirical/extract/extract_windows.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/errors.hpp"
#include "common/flag_choice.hpp"
#include "common/splitmix64.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

bool blank(const std::string& line) {
    return line.find_first_not_of(" \t\r") == std::string::npos;
}

std::string read_jsonl_text(const std::string& line, const std::string& path, int number) {
    nlohmann::json record;
    try {
        record = nlohmann::json::parse(line);
    } catch (const std::exception&) {
        throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                         ": not valid JSON");
    }
    if (!record.is_object() || !record.contains("text") || !record.at("text").is_string())
        throw InputError("--corpus '" + path + "' line " + std::to_string(number) +
                         ": expected an object with a \"text\" string");
    return record.at("text").get<std::string>();
}

}  // namespace

namespace {
const FlagChoice<BosPolicy> kBosPolicies[] = {
    {"auto", BosPolicy::automatic}, {"yes", BosPolicy::always}, {"no", BosPolicy::never}};
}  // namespace

const char* to_string(BosPolicy policy) {
    return choice_name(policy, kBosPolicies);
}

BosPolicy parse_bos_policy(const std::string& text) {
    return parse_choice(text, "--bos", kBosPolicies);
}

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
            if (!blank(line)) documents.push_back(read_jsonl_text(line, path, number));
        } else if (blank(line)) {  // a blank line ends a document
            if (!current.empty()) documents.push_back(current);
            current.clear();
        } else {
            current += (current.empty() ? "" : "\n") + line;
        }
    }
    if (!current.empty()) documents.push_back(current);
    return documents;
}

void seeded_shuffle(std::vector<std::vector<std::int64_t>>& documents, std::uint64_t seed) {
    SplitMix64 rng(seed);
    for (std::size_t i = documents.size(); i > 1; --i)
        std::swap(documents[i - 1], documents[rng.next() % i]);
}

std::vector<std::vector<std::int64_t>> make_windows(
    const std::vector<std::vector<std::int64_t>>& documents, int context, int bos_id, BosPolicy bos,
    int stride, std::int64_t max_docs, std::int64_t& skipped, const std::string& missing_bos) {
    if (context < 2) throw InputError("--context: " + std::to_string(context) + ", expected >= 2");
    if (stride < 0) throw InputError("--stride: " + std::to_string(stride) + ", expected >= 0");
    std::vector<std::vector<std::int64_t>> windows;
    skipped = 0;
    std::int64_t used = 0;
    for (const auto& doc : documents) {
        if (max_docs > 0 && used >= max_docs) break;
        const bool starts_with_bos = bos_id >= 0 && !doc.empty() && doc.front() == bos_id;
        const bool add_bos =
            bos == BosPolicy::always || (bos == BosPolicy::automatic && !starts_with_bos);
        if (add_bos && bos_id < 0)
            throw InputError(std::string("--bos ") + to_string(bos) +
                             ": the model has no BOS token id (" + missing_bos +
                             "); pass --bos no to use the documents as they are");
        const std::int64_t take = add_bos ? context - 1 : context;
        if (static_cast<std::int64_t>(doc.size()) < take) {
            ++skipped;
            continue;
        }
        ++used;
        const std::int64_t step = stride > 0 ? stride : static_cast<std::int64_t>(doc.size()) + 1;
        for (std::int64_t offset = 0; offset + take <= static_cast<std::int64_t>(doc.size());
             offset += step) {
            std::vector<std::int64_t> window;
            if (add_bos) window.push_back(bos_id);
            window.insert(window.end(), doc.begin() + offset, doc.begin() + offset + take);
            windows.push_back(std::move(window));
        }
    }
    return windows;
}

}  // namespace attngeo::empirical
