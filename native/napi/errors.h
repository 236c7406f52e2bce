// Typed errors at the N-API boundary: every binding converts C++ exceptions into a JS Error with a `code`,
// so no exception ever escapes into V8 and aborts the process.
#pragma once
#include <napi.h>

#include <exception>
#include <string>

namespace quorum::napi {

Napi::Error typed_error(Napi::Env env, const char* code, const std::string& message);

// The (code, message) of the exception being handled; call only inside a catch block.
void describe_current_exception(const char*& code, std::string& message);

// Throws a JS error (as a C++ Napi::Error) from the exception being handled.
[[noreturn]] void rethrow_as_js(Napi::Env env);

// Runs f(), turning any C++ exception into a typed JS error (methods of wrapped objects use it directly).
template <class F>
Napi::Value guard(Napi::Env env, F&& f) {
  try {
    return f();
  } catch (const Napi::Error&) {
    throw;
  } catch (...) {
    rethrow_as_js(env);
  }
}

// Wraps a binding so that any C++ exception becomes a typed JS error.
template <Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value guarded(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&] { return F(info); });
}

}  // namespace quorum::napi
