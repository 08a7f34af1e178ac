// The one list of supported model families (one file each in this folder) and the lookups
// by config.json's model_type; see architecture.hpp.
#include "common/errors.hpp"
#include "empirical/model/families/families.hpp"

namespace attngeo::empirical {

const std::vector<const Architecture*>& families() {
    static const std::vector<const Architecture*> all = {
        &family_tables::llama(), &family_tables::mistral(),  &family_tables::gemma(),
        &family_tables::gpt2(),  &family_tables::gpt_neox(), &family_tables::qwen2(),
    };
    return all;
}

std::string family_names() {
    std::string names;
    for (const Architecture* family : families())
        names += (names.empty() ? "" : ", ") + family->family;
    return names;
}

const Architecture* find_architecture(const std::string& family) {
    for (const Architecture* a : families())
        if (a->family == family) return a;
    return nullptr;
}

const Architecture& architecture_for(const std::string& family) {
    if (const Architecture* a = find_architecture(family)) return *a;
    throw InputError("unknown architecture '" + family + "' (supported: " + family_names() + ")");
}

}  // namespace attngeo::empirical
