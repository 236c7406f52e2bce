// The one exception type native code throws. The N-API layer turns it into a JS Error whose `code` is `code`.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

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

// The same for checks inside loops over data: the message is a callable, built only when the check fails (a message
// argument is built on every call, which cost a muf_fuse of 64 questions 10 ms in strings).
template <class MakeMessage, class = decltype(std::string(std::declval<MakeMessage&>()()))>
inline void need(bool ok, const char* code, MakeMessage&& message) {
  if (!ok) throw Error(code, message());
}

}  // namespace quorum
