// The per-head loops of compare/: OpenMP over indices with exceptions carried out of the
// parallel region (none may escape it).
#pragma once
#include <exception>
#include <vector>

namespace attngeo::compare {

// Runs body(i) for i in [0, count) on `threads` OpenMP threads; the first exception in index
// order is rethrown after the loop, so errors are the same for any thread count.
template <class Body>
void parallel_for(int count, int threads, const Body& body) {
    std::vector<std::exception_ptr> errors(count);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1 && count > 1)
    for (int i = 0; i < count; ++i) {
        try {
            body(i);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    }
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace attngeo::compare
