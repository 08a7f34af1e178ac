// The documents and windows of a run over a checkpoint (extract, truncate): the corpus through
// the model's tokenizer or token ids from --tokens, checked against the vocabulary, and cut into
// the run's windows with this shard's range. Torch-free header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "empirical/extract/extract_plan.hpp"

namespace attngeo::empirical {

// The run's documents as token ids within the model's vocabulary, and the tokenizer used.
struct Documents {
    std::vector<std::vector<std::int64_t>> ids;
    std::string tokenizer = "none (--tokens)";
};

// Reads plan.tokens_file or tokenizes plan.corpus; InputError naming the flag for an empty
// corpus or an id outside 0..vocab_size − 1.
Documents load_documents(const ExtractPlan& plan, int vocab_size);

// Every window of the run in run order, and this shard's range [first, first + count).
struct RunWindows {
    std::vector<std::vector<std::int64_t>> all;
    std::int64_t skipped = 0, first = 0, count = 0;
};

// The seeded order, make_windows and the shard's range; InputError when no document is long
// enough for plan.settings.context. `missing_bos` says why bos_id < 0 (missing_bos_reason).
RunWindows cut_windows(const ExtractPlan& plan, std::vector<std::vector<std::int64_t>> documents,
                       int bos_id, const std::string& missing_bos);

}  // namespace attngeo::empirical
