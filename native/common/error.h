// The one exception type native code throws. The N-API layer turns it into a JS Error whose `code` is `code`.
#pragma once
#include <stdexcept>
#include <string>

namespace quorum {

class Error : public std::runtime_error {
 public:
  Error(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;  // always a string literal, e.g. "ERR_SHAPE"
};

// Throws Error(code, message) unless ok: argument checks read as one line each.
inline void need(bool ok, const char* code, const std::string& message) {
  if (!ok) throw Error(code, message);
}

}  // namespace quorum
