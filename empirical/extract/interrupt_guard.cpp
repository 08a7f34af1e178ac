// The signal flag of InterruptGuard; see interrupt_guard.hpp.
#include "empirical/extract/interrupt_guard.hpp"

#include <signal.h>

#include <csignal>

namespace attngeo::empirical {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_interrupt(int) {
    g_interrupted = 1;
}

}  // namespace

struct InterruptGuard::Saved {
    struct sigaction interrupt {};
    struct sigaction terminate {};
};

InterruptGuard::InterruptGuard() : saved_(std::make_unique<Saved>()) {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &saved_->interrupt);
    ::sigaction(SIGTERM, &action, &saved_->terminate);
}

InterruptGuard::~InterruptGuard() {
    ::sigaction(SIGINT, &saved_->interrupt, nullptr);
    ::sigaction(SIGTERM, &saved_->terminate, nullptr);
}

bool InterruptGuard::interrupted() {
    return g_interrupted != 0;
}

}  // namespace attngeo::empirical
