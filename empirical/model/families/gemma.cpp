// Gemma (transformers' GemmaForCausalLM): the llama block with (1 + w) RMSNorm, embeddings
// scaled by √hidden, GeGLU-tanh, a tied classifier and a head_dim of its own.
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical::family_tables {

const Architecture& gemma() {
    static const Architecture a = [] {
        Architecture a;
        a.family = "gemma";
        a.tensors = llama_tensor_rows();
        a.config = llama_config_rows(/*tied_by_default=*/true);
        for (ConfigKey& key : a.config) {
            if (key.name != "hidden_act") continue;
            // GemmaConfig's hidden_activation (hidden_act in older files); Gemma 1's
            // transformers forces the tanh approximation when "gelu" is asked.
            key = activation("hidden_activation", "gelu_pytorch_tanh", {"hidden_act"});
            key.read_as = {{"gelu", "gelu_pytorch_tanh"}};
        }
        a.norm = NormKind::rms_one_plus_weight;
        a.embed_scale = true;
        return a;
    }();
    return a;
}

}  // namespace attngeo::empirical::family_tables
