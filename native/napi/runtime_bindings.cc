// Process-wide settings: thread count and kernel variant, and what the CPU offers.
#include <napi.h>

#include "../common/cpu_features.h"
#include "../common/error.h"
#include "../common/thread_pool.h"
#include "../kernels/dispatch.h"
#include "../kernels/quant_dot.h"
#include "errors.h"
#include "scalar_args.h"

namespace quorum::napi {
namespace {

Napi::Value Capabilities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& cpu = cpu_features();
  Napi::Object o = Napi::Object::New(env);
  o.Set("isa", kernels::active_isa());
  Napi::Array isas = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& name : kernels::available_isas()) isas.Set(i++, name);
  o.Set("availableIsas", isas);
  o.Set("threads", ThreadPool::global().threads());
  o.Set("int8Queries", kernels::quant_dot().fast_s8);
  Napi::Object c = Napi::Object::New(env);
  c.Set("avx2", cpu.avx2_fma);
  c.Set("avx512", cpu.avx512);
  c.Set("avx512bf16", cpu.avx512_bf16);
  c.Set("avx512vnni", cpu.avx512_vnni);
  c.Set("avx512vpopcntdq", cpu.avx512_vpopcntdq);
  c.Set("f16c", cpu.f16c);
  c.Set("neon", cpu.neon);
  c.Set("dotprod", cpu.dotprod);
  c.Set("bf16", cpu.bf16);
  o.Set("cpu", c);
  Napi::Array devices = Napi::Array::New(env);
  devices.Set(0u, "cpu");
  o.Set("devices", devices);
  return o;
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  ThreadPool::global().set_threads(threads_arg(info[0]));
  return info.Env().Undefined();
}

Napi::Value SetIsa(const Napi::CallbackInfo& info) {
  if (!info[0].IsString()) throw Error("ERR_ARG", "isa must be a string");
  kernels::set_isa(info[0].As<Napi::String>().Utf8Value());
  return info.Env().Undefined();
}

}  // namespace

void register_runtime(Napi::Env env, Napi::Object exports) {
  exports.Set("capabilities", Napi::Function::New<guarded<Capabilities>>(env, "capabilities"));
  exports.Set("setThreads", Napi::Function::New<guarded<SetThreads>>(env, "setThreads"));
  exports.Set("setIsa", Napi::Function::New<guarded<SetIsa>>(env, "setIsa"));
}

}  // namespace quorum::napi
