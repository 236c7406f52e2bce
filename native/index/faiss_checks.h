// What DenseIndex lets faiss hold. faiss's factory accepts strings whose indexes crash later (HNSW0, IVF0,Flat,
// PQ4x0, NSG with a small first batch), and faiss's reader trusts the sizes and graph links inside a file: an
// HNSW file with an altered neighbour list loads and then reads out of bounds in search. These checks run on
// every index DenseIndex builds (check_built) and every one it loads (check_loaded), so that such input is a
// typed error instead of a crash.
//
// Supported: Flat; HNSW over Flat or SQ storage; IVF (Flat or HNSW coarse quantizer) with Flat, PQ or SQ
// codes; PQ; SQ; behind optional PCA / OPQ / random-rotation / normalisation / centring stages. Anything else
// (NSG, LSH, additive quantizers, fast-scan, refine, 2-level) is ERR_UNSUPPORTED: we cannot vouch for it.
#pragma once

namespace faiss {
struct Index;
}

namespace quorum::index {

// ERR_UNSUPPORTED for an index type outside the list above, ERR_ARG for parameters that cannot work
// (HNSW M < 2, nlist 0, PQ with 0 or more than 16 bits, ...).
void check_built(const faiss::Index* top);

// check_built's checks as ERR_FORMAT, plus the consistency of what the file brought: storage sizes against
// ntotal, PQ / SQ tables against their dimensions, IVF lists and their id map, the id map of IndexIDMap2, and
// the HNSW graph (levels, offsets, neighbour ids in range, entry point).
void check_loaded(const faiss::Index* top);

}  // namespace quorum::index
