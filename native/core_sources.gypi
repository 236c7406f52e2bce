{
  "sources": [
    "native/common/cpu_features.cc",
    "native/common/thread_pool.cc",
    "native/kernels/dense_dot_scalar.cc",
    "native/kernels/dense_dot_avx2.cc",
    "native/kernels/dense_dot_avx512.cc",
    "native/kernels/dispatch.cc",
    "native/kernels/topk.cc",
    "native/kernels/dense_search.cc",
    "native/napi/errors.cc",
    "native/napi/tensor_object.cc",
    "native/napi/kernel_call.cc",
    "native/napi/dense_bindings.cc",
    "native/napi/runtime_bindings.cc",
    "native/napi/addon_core.cc"
  ]
}
