// avta's stand-in for TVM's tvm/runtime/registry.h: just enough for upstream VTA's simulator to
// compile without TVM. TVM_REGISTER_GLOBAL registers nothing (the harness calls the driver's C
// functions directly, and the profiler functions it would register are not used); the
// argument and return types accept what the registered bodies do with them. Written for this
// project, not copied from TVM.
#ifndef AVTA_SHIM_TVM_RUNTIME_REGISTRY_H_
#define AVTA_SHIM_TVM_RUNTIME_REGISTRY_H_

#include <dmlc/logging.h>

namespace tvm {
namespace runtime {

// A value the body may assign anything to; it is dropped.
struct TVMRetValue {
  template <typename T>
  TVMRetValue& operator=(const T&) { return *this; }
};

// An argument the body may read as any type; bodies are never called, so it is never read.
struct TVMArgValue {
  template <typename T>
  operator T() const { return T(); }
};

struct TVMArgs {
  TVMArgValue operator[](int) const { return TVMArgValue(); }
};

// What TVM_REGISTER_GLOBAL yields: set_body keeps nothing.
struct NoRegistry {
  template <typename F>
  NoRegistry& set_body(F) { return *this; }
};

}  // namespace runtime
}  // namespace tvm

#define AVTA_SHIM_CONCAT_(a, b) a##b
#define AVTA_SHIM_CONCAT(a, b) AVTA_SHIM_CONCAT_(a, b)
#define TVM_REGISTER_GLOBAL(name)                                                      \
  static __attribute__((unused))::tvm::runtime::NoRegistry AVTA_SHIM_CONCAT(           \
      avta_shim_registry_, __COUNTER__) = ::tvm::runtime::NoRegistry()

#endif  // AVTA_SHIM_TVM_RUNTIME_REGISTRY_H_
