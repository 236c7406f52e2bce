# Cross-compiling the addons for linux-arm64 on an x86-64 Debian 12 host (docs/building.md#linux-arm64):
# g++-aarch64-linux-gnu, and for DenseIndex the arm64 faiss and OpenBLAS from multiarch (:arm64 packages).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Libraries and packages only from the arm64 side: the host's x86-64 faiss or libtorch must not be found.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Debian's arm64 faiss config lives in the multiarch directory, outside the roots above.
set(faiss_DIR /usr/lib/aarch64-linux-gnu/cmake/faiss CACHE PATH "arm64 faiss (libfaiss-dev:arm64)")
