// A sample whose bound differs by unit (docs/design.md §7, "Coherence of bound and measurement"):
// a compare model, where each document's α profile gives that document's bound (with the head's
// norms and cosines held fixed) and the unit value of the test is the per-document difference
// of measurement and bound, so the mean of P(α_d) is compared with the mean of b(α_d).
#pragma once
#include <memory>
#include <vector>

#include "compare/falsification.hpp"
#include "compare/fixed_bound_sample.hpp"
#include "theory/bounds.hpp"

namespace attngeo::compare {

// What the per-document bounds and differences of one model are computed from.
struct DocumentSampleInputs {
    // [H] per head: the norms and cosines of its bounds (α is replaced per document).
    std::vector<theory::HeadModel> heads;
    std::vector<int> sizes;  // [S] the N grid; point index = head · S + size index
    int documents = 0;       // U
    int tokens = 0;          // n: positions per document
    // [U, H, n] each document's α by position (any positive scale: renormalised to sum 1).
    std::vector<double> alpha;
    // [U, H·S] per document P(r_max,N) and R(r_min,N) at every point.
    UnitValues P, R;
    double d = 128;
    theory::BoundVariant variant = theory::BoundVariant::paper;
    BandSettings band;
};

// The κ-independent bound terms of each (head, document) of one model and variant, built on
// first use and kept for as many heads as a quarter of the memory budget holds (the others are
// rebuilt at every use: O(n² log n) per document). One serves the scan and the bound rows.
class DocumentTerms;
std::shared_ptr<DocumentTerms> document_terms_cache(const DocumentSampleInputs& inputs);
// Turns the cached terms into those of `variant`, which shares their μ (paper ↔ scale-invariant,
// exact-mean ↔ corrected: theory::BoundTerms::switch_variant), so the next variant's scan
// reuses them; the inputs it is used with must name `variant`.
void switch_variant(DocumentTerms& terms, theory::BoundVariant variant);

// The scan sample of one model and variant. The halves are the first ⌊U/2⌋ documents and the
// rest; they are judged when each has at least 2 documents. `terms` (document_terms_cache of
// the same inputs) may be shared with document_bounds; null makes the sample its own.
Sample document_bound_sample(ScanPoints points, std::shared_ptr<const DocumentSampleInputs> inputs,
                             std::shared_ptr<DocumentTerms> terms = nullptr);

// Every document's bounds at one κ, [U][side] of [H·S] (the tests' reference and the bound
// rows), through `terms` when given (built from the same inputs), else from scratch.
std::vector<std::array<std::vector<double>, kSideCount>> document_bounds(
    const DocumentSampleInputs& inputs, double kappa, DocumentTerms* terms = nullptr);

}  // namespace attngeo::compare
