// avta's stand-in for dmlc-core's logging.h: the CHECK_* and LOG(FATAL) macros that upstream
// VTA's simulator sources use, and nothing else. A failed check prints where and why on stderr
// and aborts the process, as dmlc's does; the harness's caller (avta.sim.upstream.run) reports
// it. Written for this project, not copied from dmlc-core.
#ifndef AVTA_SHIM_DMLC_LOGGING_H_
#define AVTA_SHIM_DMLC_LOGGING_H_

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace avta_shim {

// Collects a message and aborts when the statement that streamed into it ends.
class FatalMessage {
 public:
  FatalMessage(const char* file, int line) { stream_ << file << ":" << line << ": "; }
  std::ostringstream& stream() { return stream_; }
  ~FatalMessage() {
    std::cerr << "upstream simulator: " << stream_.str() << std::endl;
    std::abort();
  }

 private:
  std::ostringstream stream_;
};

}  // namespace avta_shim

#define LOG_FATAL ::avta_shim::FatalMessage(__FILE__, __LINE__).stream()
#define LOG(severity) LOG_##severity

// `if (ok) {} else` keeps a CHECK safe inside an unbraced if/else of the caller.
#define CHECK(cond) \
  if (cond) {} else LOG(FATAL) << "Check failed: " #cond " "
#define AVTA_SHIM_CHECK_OP(a, b, op) \
  if ((a) op (b)) {} else LOG(FATAL) << "Check failed: " #a " " #op " " #b \
                                     << " (" << (a) << " vs. " << (b) << ") "
#define CHECK_EQ(a, b) AVTA_SHIM_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) AVTA_SHIM_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) AVTA_SHIM_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) AVTA_SHIM_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) AVTA_SHIM_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) AVTA_SHIM_CHECK_OP(a, b, >=)

#endif  // AVTA_SHIM_DMLC_LOGGING_H_
