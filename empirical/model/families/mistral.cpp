// Mistral (transformers' MistralForCausalLM): the llama block with a sliding attention window
// of `sliding_window` keys per query (0 or absent: full causal).
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical::family_tables {

const Architecture& mistral() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "mistral";
        a.tensors = llama_tensor_rows();
        a.config = llama_config_rows(/*tied_by_default=*/false);
        a.config.push_back(count_or("sliding_window", &ModelConfig::sliding_window, 0,
                                    /*zero_allowed=*/true));
        return a;
    }();
    return a;
}

}  // namespace attngeo::empirical::family_tables
