// Where extract's forward spends its time (issue 42): writes a Chrome trace of one forward that
// bench/run.py folds into the forward's stages and the aten operations inside them.
//   forward_profile MODEL TOKENS TRACE.json
#include <cstdio>
#include <exception>
#include <string>

#include "empirical/model/forward_profile.hpp"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: forward_profile MODEL TOKENS TRACE.json\n");
        return 2;
    }
    try {
        attngeo::empirical::profile_forward(argv[1], std::stoll(argv[2]), argv[3]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "forward_profile: %s\n", e.what());
        return 1;
    }
    return 0;
}
