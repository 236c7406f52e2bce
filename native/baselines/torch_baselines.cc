// Benchmark-only libtorch contenders (Debian's libtorch 1.13, CPU), measured in the same process as Quorum's kernels
// so that ratios are fair. Each kernel is written the way its reference implementation writes it:
//   maxSim      ColBERT's padded late-interaction score
//   spladePool  SPLADE's max-pooled log-saturated logits
//   infoNce     in-batch InfoNCE forward + backward through autograd
//   ensembleMI  DPR-MUF's mutual-information confidence over an ensemble
//   setThreads / threads  ATen's intra-op thread count
//   setBlasThreads / blasThreads  the thread count of the OpenBLAS behind libtorch's matmuls
// Each kernel takes `iters`, runs once to warm up, then `iters` times, and returns
// { ms: median milliseconds per iteration, out: the last iteration's result }.
// Inputs are borrowed from the JS typed arrays (torch::from_blob), so only the computation is timed.
// Not shipped: built by CMake only when libtorch is found, for `npm run bench`.
#include <napi.h>
#include <torch/torch.h>

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// Everything thrown below is either a c10::Error from torch or a std::invalid_argument from argument checks;
// JS callers match on `code` only.
Napi::Error native_error(Napi::Env env, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("code", Napi::String::New(env, "ERR_NATIVE"));
  return e;
}

template <Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value guarded(const Napi::CallbackInfo& info) {
  try {
    return F(info);
  } catch (const c10::Error& e) {
    // what() carries a C++ backtrace that is useless in a JS stack.
    throw native_error(info.Env(), e.what_without_backtrace());
  } catch (const Napi::Error& e) {
    throw native_error(info.Env(), e.Message());
  } catch (const std::exception& e) {
    throw native_error(info.Env(), e.what());
  } catch (...) {
    throw native_error(info.Env(), "unknown native error");
  }
}

int64_t int_arg(const Napi::CallbackInfo& info, size_t i, const char* name, int64_t min = 1) {
  if (!info[i].IsNumber()) throw std::invalid_argument(std::string(name) + " must be a number");
  double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= double(min)) || v != std::floor(v) || v > 9.007199254740991e15)
    throw std::invalid_argument(std::string(name) + " must be an integer >= " + std::to_string(min));
  return int64_t(v);
}

double num_arg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (!info[i].IsNumber()) throw std::invalid_argument(std::string(name) + " must be a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

template <class T>
constexpr napi_typedarray_type typed_array_type();
template <>
constexpr napi_typedarray_type typed_array_type<float>() { return napi_float32_array; }
template <>
constexpr napi_typedarray_type typed_array_type<int32_t>() { return napi_int32_array; }
template <>
constexpr napi_typedarray_type typed_array_type<uint8_t>() { return napi_uint8_array; }

template <class T>
constexpr torch::Dtype torch_dtype();
template <>
constexpr torch::Dtype torch_dtype<float>() { return torch::kFloat32; }
template <>
constexpr torch::Dtype torch_dtype<int32_t>() { return torch::kInt32; }
template <>
constexpr torch::Dtype torch_dtype<uint8_t>() { return torch::kUInt8; }

// A view of the JS array's memory; valid for the duration of the call, which is all the kernels need.
template <class T>
torch::Tensor borrow(const Napi::CallbackInfo& info, size_t i, const char* name, std::vector<int64_t> shape) {
  int64_t want = 1;
  for (int64_t s : shape) want *= s;
  if (!info[i].IsTypedArray() || info[i].As<Napi::TypedArray>().TypedArrayType() != typed_array_type<T>())
    throw std::invalid_argument(std::string(name) + " has the wrong array type");
  auto a = info[i].As<Napi::TypedArrayOf<T>>();
  if (int64_t(a.ElementLength()) != want)
    throw std::invalid_argument(std::string(name) + " must have " + std::to_string(want) + " elements, got " +
                                std::to_string(a.ElementLength()));
  return torch::from_blob(a.Data(), shape, torch::TensorOptions().dtype(torch_dtype<T>()));
}

Napi::Float32Array to_js(Napi::Env env, const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat32).contiguous();
  auto out = Napi::Float32Array::New(env, size_t(c.numel()));
  std::memcpy(out.Data(), c.data_ptr<float>(), size_t(c.numel()) * sizeof(float));
  return out;
}

// Returns (median ms per iteration, last result): the statistic bench/harness.ts's timeIt gives our kernels.
// The warm-up call pays for first-touch allocations and OpenMP/BLAS thread start-up, which every later call in
// a long-lived process skips too.
template <class F>
auto timed(int64_t iters, F&& step) {
  auto out = step();
  std::vector<double> ms(size_t(std::max<int64_t>(iters, 1)));
  for (double& m : ms) {
    auto t0 = std::chrono::steady_clock::now();
    out = step();
    m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::sort(ms.begin(), ms.end());
  return std::make_pair(ms[ms.size() / 2], std::move(out));
}

Napi::Object result(Napi::Env env, double ms, Napi::Value out) {
  Napi::Object r = Napi::Object::New(env);
  r.Set("ms", Napi::Number::New(env, ms));
  r.Set("out", out);
  return r;
}

// maxSim(q [Lq*d], docs [N*Ld*d] padded, lengths Int32Array [N], N, Ld, d, Lq, iters) -> out [N]
Napi::Value MaxSim(const Napi::CallbackInfo& info) {
  int64_t N = int_arg(info, 3, "N"), Ld = int_arg(info, 4, "Ld"), d = int_arg(info, 5, "d"),
          Lq = int_arg(info, 6, "Lq"), iters = int_arg(info, 7, "iters");
  torch::Tensor Q = borrow<float>(info, 0, "q", {Lq, d});
  torch::Tensor D = borrow<float>(info, 1, "docs", {N, Ld, d});
  torch::Tensor lengths = borrow<int32_t>(info, 2, "lengths", {N});
  torch::NoGradGuard no_grad;
  // ColBERT keeps the document mask with its padded batch, so building it is not part of scoring.
  torch::Tensor padding = torch::arange(Ld, torch::kInt32).unsqueeze(0).ge(lengths.unsqueeze(1)).unsqueeze(-1);
  auto [ms, out] = timed(iters, [&] {
    torch::Tensor S = D.matmul(Q.t());  // [N, Ld, Lq]
    // In place, as ColBERT's `scores_padded[D_padding] = -9999` is.
    S.masked_fill_(padding, -9999);
    return std::get<0>(S.max(1)).sum(-1);
  });
  return result(info.Env(), ms, to_js(info.Env(), out));
}

// spladePool(logits [B*L*V], mask Uint8Array [B*L], B, L, V, iters) -> out [B*V]
Napi::Value SpladePool(const Napi::CallbackInfo& info) {
  int64_t B = int_arg(info, 2, "B"), L = int_arg(info, 3, "L"), V = int_arg(info, 4, "V"),
          iters = int_arg(info, 5, "iters");
  torch::Tensor x = borrow<float>(info, 0, "logits", {B, L, V});
  torch::Tensor mask = borrow<uint8_t>(info, 1, "mask", {B, L});
  torch::NoGradGuard no_grad;
  // SPLADE gets the attention mask from the tokenizer already; only its use is timed.
  torch::Tensor maskf = mask.to(torch::kFloat32).unsqueeze(-1);
  auto [ms, out] = timed(iters, [&] { return std::get<0>(torch::max(torch::log1p(torch::relu(x)) * maskf, 1)); });
  return result(info.Env(), ms, to_js(info.Env(), out));
}

// infoNce(q [B*D], p [M*D], pos Int32Array [B], B, M, D, iters) -> out { loss, dq [B*D], dp [M*D] }
Napi::Value InfoNce(const Napi::CallbackInfo& info) {
  int64_t B = int_arg(info, 3, "B"), M = int_arg(info, 4, "M"), D = int_arg(info, 5, "D"),
          iters = int_arg(info, 6, "iters");
  torch::Tensor q = borrow<float>(info, 0, "q", {B, D});
  torch::Tensor p = borrow<float>(info, 1, "p", {M, D});
  torch::Tensor pos = borrow<int32_t>(info, 2, "pos", {B}).to(torch::kInt64);
  // Grad mode is thread-local and on by default; say so rather than depend on it.
  torch::AutoGradMode grad(true);
  // Leaves are made once (the copy is not the kernel); dropping .grad each step makes backward allocate fresh
  // gradients, as optimizer.zero_grad(set_to_none=True) does in a training loop.
  torch::Tensor Q = q.clone().requires_grad_(true);
  torch::Tensor P = p.clone().requires_grad_(true);
  auto [ms, loss] = timed(iters, [&] {
    Q.mutable_grad().reset();
    P.mutable_grad().reset();
    torch::Tensor S = Q.mm(P.t());
    torch::Tensor l = torch::nll_loss(torch::log_softmax(S, 1), pos);
    l.backward();
    return l;
  });
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out.Set("loss", Napi::Number::New(env, loss.item<double>()));
  out.Set("dq", to_js(env, Q.grad()));
  out.Set("dp", to_js(env, P.grad()));
  return result(env, ms, out);
}

// ensembleMI(z [B*K*L], B, K, L, temperature, eps, iters) -> out [B] confidence
Napi::Value EnsembleMI(const Napi::CallbackInfo& info) {
  int64_t B = int_arg(info, 1, "B"), K = int_arg(info, 2, "K"), L = int_arg(info, 3, "L");
  double temperature = num_arg(info, 4, "temperature"), eps = num_arg(info, 5, "eps");
  int64_t iters = int_arg(info, 6, "iters");
  torch::Tensor z = borrow<float>(info, 0, "z", {B, K, L});
  torch::NoGradGuard no_grad;
  const double logK = std::log(double(K));
  auto [ms, out] = timed(iters, [&] {
    torch::Tensor x = (z - z.amax(-1, true)) / temperature;
    torch::Tensor p = torch::softmax(x, -1);
    torch::Tensor Mx = p.mean(1);
    torch::Tensor HM = -(Mx * torch::log(Mx + eps)).sum(-1);
    torch::Tensor EH = (-(p * torch::log(p + eps)).sum(-1)).mean(1);
    return 1 - (HM - EH) / logK;
  });
  return result(info.Env(), ms, to_js(info.Env(), out));
}

Napi::Value SetThreads(const Napi::CallbackInfo& info) {
  at::set_num_threads(int(int_arg(info, 0, "threads")));
  return info.Env().Undefined();
}

Napi::Value Threads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), at::get_num_threads()); }

// libtorch's matmuls run in the OpenBLAS that Debian's libtorch links, on OpenBLAS's own threads (all cores by
// default), whatever ATen's count. Its functions are looked up in the copy already loaded with libtorch, so
// that the count set here is the one those matmuls use.
template <class Fn>
Fn openblas_fn(const char* name) {
  void* lib = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_NOLOAD);
  void* sym = lib ? dlsym(lib, name) : nullptr;
  if (lib) dlclose(lib);  // RTLD_NOLOAD took a reference; libtorch still holds the library
  if (!sym) throw std::invalid_argument(std::string("OpenBLAS's ") + name + " not found beside libtorch");
  return reinterpret_cast<Fn>(sym);
}

Napi::Value SetBlasThreads(const Napi::CallbackInfo& info) {
  openblas_fn<void (*)(int)>("openblas_set_num_threads")(int(int_arg(info, 0, "threads")));
  return info.Env().Undefined();
}

Napi::Value BlasThreads(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), openblas_fn<int (*)()>("openblas_get_num_threads")());
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("maxSim", Napi::Function::New<guarded<MaxSim>>(env, "maxSim"));
  exports.Set("spladePool", Napi::Function::New<guarded<SpladePool>>(env, "spladePool"));
  exports.Set("infoNce", Napi::Function::New<guarded<InfoNce>>(env, "infoNce"));
  exports.Set("ensembleMI", Napi::Function::New<guarded<EnsembleMI>>(env, "ensembleMI"));
  exports.Set("setThreads", Napi::Function::New<guarded<SetThreads>>(env, "setThreads"));
  exports.Set("threads", Napi::Function::New<guarded<Threads>>(env, "threads"));
  exports.Set("setBlasThreads", Napi::Function::New<guarded<SetBlasThreads>>(env, "setBlasThreads"));
  exports.Set("blasThreads", Napi::Function::New<guarded<BlasThreads>>(env, "blasThreads"));
  return exports;
}

}  // namespace

NODE_API_MODULE(quorum_torch_baselines, Init)
