// The one GNU Fortran runtime function the prebuilt quorum_faiss needs (QUORUM_STATIC_FAISS only; docs/building.md,
// Prebuilt binaries). faiss calls LAPACK for PCA, OPQ, ITQ and random rotations; OpenBLAS's LAPACK is Fortran, and
// of the Fortran runtime its SVD drivers (sgesvd / dgesvd, sormbr / dormbr) use only string concatenation, to build
// the option strings they pass to ilaenv. Debian's libgfortran.a is not position-independent and cannot be linked
// into a shared module, so the function is defined here, to gfortran's ABI: CHARACTER lengths are passed by value
// as size_t, and a result longer than both parts is padded with blanks. scripts/prebuild.sh checks that the module
// leaves no other Fortran symbol undefined.
#include <cstddef>
#include <cstring>

extern "C" __attribute__((visibility("hidden"))) void _gfortran_concat_string(std::size_t dest_len, char* dest, std::size_t len1, const char* s1,
                                        std::size_t len2, const char* s2) {
  if (dest_len <= len1) {
    std::memcpy(dest, s1, dest_len);
    return;
  }
  std::memcpy(dest, s1, len1);
  dest += len1;
  dest_len -= len1;
  if (dest_len <= len2) {
    std::memcpy(dest, s2, dest_len);
    return;
  }
  std::memcpy(dest, s2, len2);
  std::memset(dest + len2, ' ', dest_len - len2);
}
