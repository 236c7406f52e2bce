{
  "targets": [
    {
      "target_name": "quorum_core",
      "includes": ["native/core_sources.gypi"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_CPP_EXCEPTIONS", "NODE_ADDON_API_CPP_EXCEPTIONS_ALL"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-pthread", "-Wno-uninitialized", "-Wno-maybe-uninitialized"],
      "ldflags": ["-pthread"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "OTHER_CPLUSPLUSFLAGS": ["-O3"]
      }
    }
  ]
}
