// Error types shared by every library. InputError is "the user gave us something we cannot
// use" (exit code 2); anything else escaping to main is an internal error (exit code 1).
#pragma once
#include <stdexcept>
#include <string>

namespace attngeo {

// Bad user input: a file, a flag or a value. The message names the file or flag and says
// what was expected, in one line: messages quote what the user gave (a field, a flag value, a
// JSON key), which may hold line breaks or control bytes, so those are escaped here, once.
class InputError : public std::runtime_error {
  public:
    explicit InputError(const std::string& message) : std::runtime_error(one_line(message)) {}

  private:
    static std::string one_line(const std::string& message) {
        std::string line;
        for (const char c : message) {
            const auto byte = static_cast<unsigned char>(c);
            if (c == '\n') {
                line += "\\n";
            } else if (c == '\r') {
                line += "\\r";
            } else if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
                const char* hex = "0123456789abcdef";
                line += std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
            } else {
                line += c;
            }
        }
        return line;
    }
};

// A long run stopped on request (Ctrl-C, SIGTERM, a window budget) after saving its state;
// main prints the message and exits with 130, the shell's code for an interrupt.
class Interrupted : public std::runtime_error {
  public:
    explicit Interrupted(const std::string& message) : std::runtime_error(message) {}
};

// theory/ and simulate/ reject invalid arguments Boost.Math-style: a std::domain_error whose
// message starts with the function's name.
[[noreturn]] inline void throw_domain_error(const char* function, const std::string& what) {
    throw std::domain_error(std::string(function) + ": " + what);
}

}  // namespace attngeo
