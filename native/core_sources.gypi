{
  "sources": [
    "common/cpu_features.cc",
    "common/thread_pool.cc",
    "kernels/dense_dot_scalar.cc",
    "kernels/dense_dot_avx2.cc",
    "kernels/dense_dot_avx512.cc",
    "kernels/dispatch.cc",
    "kernels/topk.cc",
    "kernels/dense_search.cc",
    "napi/errors.cc",
    "napi/tensor_object.cc",
    "napi/kernel_call.cc",
    "napi/dense_bindings.cc",
    "napi/runtime_bindings.cc",
    "napi/addon_core.cc"
  ]
}
