// Documents and windows of a run over a checkpoint's corpus, shared by extract and truncate; see
// run_documents.hpp.
#include "empirical/extract/run_documents.hpp"

#include "common/errors.hpp"
#include "empirical/tokenizers/token_file.hpp"
#include "empirical/tokenizers/tokenizer_lookup.hpp"

namespace attngeo::empirical {

namespace {

// The model's tokenizer; one it cannot read (Qwen2's or LLaMA-3's tokenizer.json pre-tokenise
// with their own regex) points at --tokens, which any model takes.
std::unique_ptr<Tokenizer> tokenizer_of(const std::string& model, int vocab_size) {
    try {
        return tokenizer_for_model(model, vocab_size);
    } catch (const InputError& e) {
        throw InputError(std::string(e.what()) + "; or pass the documents as token ids (--tokens)");
    }
}

}  // namespace

Documents load_documents(const ExtractPlan& plan, int vocab_size) {
    Documents documents;
    if (!plan.tokens_file.empty()) {
        documents.ids = read_token_file(plan.tokens_file, false, vocab_size);
    } else {
        const auto tokenizer = tokenizer_of(plan.model, vocab_size);
        documents.tokenizer = tokenizer->name();
        for (const std::string& text : read_corpus(plan.corpus)) {
            std::vector<std::int64_t> ids;
            for (int id : tokenizer->encode(text))
                ids.push_back(id);
            if (!ids.empty()) documents.ids.push_back(std::move(ids));
        }
        if (documents.ids.empty()) throw InputError("--corpus '" + plan.corpus + "': no documents");
    }
    for (const auto& doc : documents.ids)
        for (std::int64_t id : doc)
            if (id < 0 || id >= vocab_size)
                throw InputError(plan.documents_flag() + "': token id " + std::to_string(id) +
                                 " outside the model's vocabulary 0.." +
                                 std::to_string(vocab_size - 1));
    return documents;
}

RunWindows cut_windows(const ExtractPlan& plan, std::vector<std::vector<std::int64_t>> documents,
                       int bos_id, const std::string& missing_bos) {
    if (plan.seed != 0) seeded_shuffle(documents, plan.seed);
    RunWindows windows;
    windows.all = make_windows(documents, plan.settings.context, bos_id, plan.bos, plan.stride,
                               plan.docs, windows.skipped, missing_bos);
    if (windows.all.empty())
        throw InputError(plan.documents_flag() + "': no document has " +
                         std::to_string(plan.settings.context) + " tokens (all " +
                         std::to_string(windows.skipped) + " skipped); lower --context");
    const std::int64_t W = static_cast<std::int64_t>(windows.all.size());
    windows.first = W * plan.shard.index / plan.shard.count;
    windows.count = W * (plan.shard.index + 1) / plan.shard.count - windows.first;
    return windows;
}

}  // namespace attngeo::empirical
