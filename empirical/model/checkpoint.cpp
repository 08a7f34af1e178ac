// The checkpoint format decision and the readers behind it; see checkpoint.hpp.
#include "empirical/model/checkpoint.hpp"

#include <filesystem>
#include <fstream>

#include "common/errors.hpp"
#include "common/safetensors.hpp"
#include "empirical/model/gguf.hpp"
#include "empirical/model/llama2c.hpp"

namespace fs = std::filesystem;

namespace attngeo::empirical {
namespace {

// What a file's first bytes prove it to be: a pickle starts with the PROTO opcode 0x80 and its
// protocol (2 to 5 for any torch.save); torch.save's zip format is a zip ("PK\3\4") whose
// entries include data.pkl, named within the first local headers.
bool is_pickle_checkpoint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(65536, '\0');
    in.read(&head[0], static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 &&
        head[1] <= 5)
        return true;
    return head.rfind("PK\3\4", 0) == 0 && head.find("data.pkl") != std::string::npos;
}

}  // namespace

const char* to_string(CheckpointFormat format) {
    switch (format) {
        case CheckpointFormat::hugging_face:
            return "hugging_face";
        case CheckpointFormat::llama2c:
            return "llama2c";
        case CheckpointFormat::gguf:
            return "gguf";
    }
    return "unknown";
}

CheckpointFormat checkpoint_format(const std::string& path) {
    if (fs::is_directory(path)) return CheckpointFormat::hugging_face;
    if (!fs::exists(path)) throw InputError("--model '" + path + "': no such file or folder");
    const std::string extension = fs::path(path).extension().string();
    if (extension == ".gguf") return CheckpointFormat::gguf;
    // The header decides before the name: a llama2.c file whose dim is 128 mod 256 begins
    // with 0x80 like a pickle, but only a llama2.c header adds up to the file's length.
    if (is_llama2c_checkpoint(path)) return CheckpointFormat::llama2c;
    if (is_pickle_checkpoint(path) || extension == ".pt" || extension == ".pth") {
        throw InputError(
            "--model '" + path +
            "': a PyTorch pickle checkpoint; attngeo never unpickles (it can run code). "
            "Convert it: python3 -c \"from transformers import AutoModelForCausalLM as M; "
            "M.from_pretrained('DIR').save_pretrained('OUT', safe_serialization=True)\"");
    }
    if (extension == ".bin") return CheckpointFormat::llama2c;
    throw InputError("--model '" + path +
                     "': expected a Hugging Face folder, a llama2.c .bin or a .gguf file");
}

const Llama2cCheckpoint* Checkpoint::llama2c() const {
    return format == CheckpointFormat::llama2c ? static_cast<const Llama2cCheckpoint*>(store.get())
                                               : nullptr;
}

Checkpoint open_checkpoint(const std::string& path) {
    return open_checkpoint(path, checkpoint_format(path));
}

Checkpoint open_checkpoint(const std::string& path, CheckpointFormat format) {
    Checkpoint checkpoint;
    checkpoint.format = format;
    checkpoint.path = path;
    switch (checkpoint.format) {
        case CheckpointFormat::hugging_face: {
            // config.json first: its errors name the field before any tensor is mapped.
            checkpoint.config = read_hf_config((fs::path(path) / "config.json").string());
            checkpoint.store = std::make_shared<const SafetensorsCheckpoint>(path);
            break;
        }
        case CheckpointFormat::llama2c: {
            auto store = std::make_shared<const Llama2cCheckpoint>(path);
            checkpoint.config = store->config();
            checkpoint.store = std::move(store);
            break;
        }
        case CheckpointFormat::gguf: {
            auto store = std::make_shared<const GgufCheckpoint>(path);
            checkpoint.config = store->config();
            checkpoint.store = std::move(store);
            break;
        }
    }
    return checkpoint;
}

}  // namespace attngeo::empirical
