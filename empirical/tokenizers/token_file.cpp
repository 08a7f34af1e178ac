// Token-id files (`--tokens`): one sequence of ids per line. Torch-free, so the CLI's readers
// and the fuzz targets can use it without libtorch.
#include "empirical/tokenizers/token_file.hpp"

#include <fstream>
#include <sstream>

#include "common/errors.hpp"

namespace attngeo::empirical {

std::vector<std::vector<std::int64_t>> read_token_file(const std::string& path, bool equal_lengths,
                                                       std::int64_t vocab_size) {
    std::ifstream in(path);
    if (!in) throw InputError("--tokens '" + path + "': cannot open");
    std::vector<std::vector<std::int64_t>> rows;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        std::istringstream fields(line);
        std::vector<std::int64_t> row;
        std::string field;
        while (fields >> field) {
            std::size_t used = 0;
            long long id = -1;
            try {
                id = std::stoll(field, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != field.size() || id < 0) {
                throw InputError(
                    "--tokens '" + path + "' line " + std::to_string(number) + ": '" + field +
                    "' is not a token id (expected non-negative integers separated by spaces)");
            }
            if (vocab_size > 0 && id >= vocab_size)
                throw InputError("--tokens '" + path + "' line " + std::to_string(number) +
                                 ": token id " + field + " outside the model's vocabulary 0.." +
                                 std::to_string(vocab_size - 1));
            row.push_back(id);
        }
        if (row.empty()) continue;
        if (equal_lengths && !rows.empty() && row.size() != rows.front().size()) {
            throw InputError("--tokens '" + path + "' line " + std::to_string(number) + ": " +
                             std::to_string(row.size()) + " ids, expected " +
                             std::to_string(rows.front().size()) +
                             " like the first line (one batch)");
        }
        rows.push_back(std::move(row));
    }
    if (rows.empty()) throw InputError("--tokens '" + path + "': no token ids");
    return rows;
}

}  // namespace attngeo::empirical
