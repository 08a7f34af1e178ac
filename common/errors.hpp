// Error types shared by every library. InputError is "the user gave us something we cannot
// use" (exit code 2); anything else escaping to main is an internal error (exit code 1).
#pragma once
#include <stdexcept>
#include <string>

namespace attngeo {

// Bad user input: a file, a flag or a value. The message names the file or flag and says
// what was expected, in one line.
class InputError : public std::runtime_error {
  public:
    explicit InputError(const std::string& message) : std::runtime_error(message) {}
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
