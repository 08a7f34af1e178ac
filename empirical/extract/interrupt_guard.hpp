// Ctrl-C and SIGTERM during a long run over windows (extract, truncate): while a guard lives, the
// signals set a flag instead of killing the process, so the loop finishes the current window,
// saves its state and stops resumably (exit 130).
#pragma once
#include <memory>

namespace attngeo::empirical {

class InterruptGuard {
  public:
    InterruptGuard();   // clears the flag and installs the handlers
    ~InterruptGuard();  // restores the previous handlers
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;
    // Whether SIGINT or SIGTERM arrived since the guard was made.
    static bool interrupted();

  private:
    struct Saved;
    std::unique_ptr<Saved> saved_;  // the handlers to restore
};

}  // namespace attngeo::empirical
