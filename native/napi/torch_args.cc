#include "torch_args.h"

#include <cstring>

#include "scalar_args.h"

namespace quorum::napi {

Napi::Object object_arg(const Napi::Value& v, const char* what) {
  if (!v.IsObject()) throw Error("ERR_ARG", std::string(what) + " must be an object");
  return v.As<Napi::Object>();
}

double field(const Napi::Object& o, const char* key, double fallback) {
  Napi::Value v = o.Get(key);
  return v.IsUndefined() ? fallback : number_arg(v, key);
}

int64_t int_field(const Napi::Object& o, const char* key, int64_t fallback) {
  const double d = field(o, key, double(fallback));
  if (d != double(int64_t(d))) throw Error("ERR_ARG", std::string(key) + " must be an integer");
  return int64_t(d);
}

std::string string_field(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsString()) throw Error("ERR_ARG", std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

torch::Tensor long_tensor(const Napi::Int32Array& a, std::vector<int64_t> shape, int64_t lo, int64_t hi, const char* what) {
  torch::Tensor t =
      torch::from_blob(const_cast<int32_t*>(a.Data()), {int64_t(a.ElementLength())}, torch::kInt).to(torch::kLong);
  if (t.numel() > 0) {
    const int64_t mn = t.min().item<int64_t>(), mx = t.max().item<int64_t>();
    if (mn < lo || mx >= hi)
      throw Error("ERR_RANGE", std::string(what) + " holds " + std::to_string(mn < lo ? mn : mx) + ", outside [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + ")");
  }
  return t.view(shape);
}

Napi::Float32Array float_array_of(Napi::Env env, const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kFloat).contiguous();
  Napi::Float32Array a = Napi::Float32Array::New(env, size_t(c.numel()));
  if (c.numel()) std::memcpy(a.Data(), c.data_ptr<float>(), size_t(c.numel()) * sizeof(float));
  return a;
}

Napi::Array parameter_list(Napi::Env env, const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  Napi::Array out = Napi::Array::New(env, params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", params[i].first);
    Napi::Array shape = Napi::Array::New(env, size_t(params[i].second.dim()));
    for (int64_t d = 0; d < params[i].second.dim(); ++d) shape.Set(uint32_t(d), double(params[i].second.size(d)));
    o.Set("shape", shape);
    out.Set(uint32_t(i), o);
  }
  return out;
}

torch::Tensor parameter_values(const Napi::Value& v, const torch::Tensor& target, const std::string& name) {
  auto values = typed_array<Napi::Float32Array>(v, "values");
  if (int64_t(values.ElementLength()) != target.numel())
    throw Error("ERR_SHAPE", "parameter " + name + " has " + std::to_string(target.numel()) + " values, got " +
                                 std::to_string(values.ElementLength()));
  torch::Tensor t = torch::from_blob(values.Data(), target.sizes(), torch::kFloat);
  if (!torch::isfinite(t).all().item<bool>()) throw Error("ERR_NONFINITE", "values for " + name + " are not finite");
  return t;
}

}  // namespace quorum::napi
