// The tokenizers' file helpers; see tokenizer_files.hpp.
#include "empirical/tokenizers/tokenizer_files.hpp"

#include <filesystem>

#include "common/errors.hpp"
#include "common/json_file.hpp"

namespace attngeo::empirical::tokenizer_files {

namespace fs = std::filesystem;

std::string file_label(const std::string& path) {
    return "'" + path + "'";
}

void require_file(const std::string& path, const std::string& what) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
        throw InputError(file_label(path) + ": file not found (expected " + what + ")");
    }
}

nlohmann::json read_json(const std::string& path, const std::string& what) {
    require_file(path, what);
    return read_json_file(path, what);
}

}  // namespace attngeo::empirical::tokenizer_files
