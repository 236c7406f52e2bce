#include "errors.h"

#include <new>

#include "../common/error.h"

namespace quorum::napi {

Napi::Error typed_error(Napi::Env env, const char* code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, code));
  e.Set("name", Napi::String::New(env, "QuorumError"));
  return e;
}

void describe_current_exception(const char*& code, std::string& message) {
  try {
    throw;
  } catch (const quorum::Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = "ERR_NOMEM";
    message = "out of memory";
  } catch (const std::exception& e) {
    code = "ERR_NATIVE";
    message = std::string("native error: ") + e.what();
  } catch (...) {
    code = "ERR_NATIVE";
    message = "unknown native error";
  }
}

void rethrow_as_js(Napi::Env env) {
  const char* code;
  std::string message;
  describe_current_exception(code, message);
  throw typed_error(env, code, message);
}

}  // namespace quorum::napi
