// Runs one avta program on upstream VTA's C++ behavioral simulator (sim_driver.cc, compiled
// unmodified beside this file; avta.sim.upstream.build). The Python side (avta.sim.upstream.run)
// speaks to it over stdin and stdout:
//
//   upstream_fsim IMAGE_IN IMAGE_OUT INSN_COUNT
//
// 1. It checks that upstream's instruction and micro-op structs lay out every field where
//    avta's encoder puts it (the AVTA_*_SHIFT/_BITS macros of avta_expect.h), and aborts naming
//    the first field that differs.
// 2. It allocates the DRAM image and the instruction buffer through upstream's VTAMemAlloc and
//    prints their physical addresses: "alloc IMAGE_PHYS INSN_PHYS".
// 3. It reads INSN_COUNT instructions (16 bytes each) from stdin: avta's stream with every
//    dram_base rebased to where the image landed, which only the caller can do, knowing the
//    memory types (avta.sim.upstream.rebase).
// 4. Copies IMAGE_IN into the image buffer, runs VTADeviceRun and prints "run CPU_SECONDS"
//    (getrusage of this process around the run alone).
// 5. Writes the image buffer after the run to IMAGE_OUT.
// One run a process: upstream's scheduler (sim_tlpp.cc) is a process-wide singleton that keeps
// the dependency tokens a program leaves unpopped, and hands them to the next run.
#include <sys/resource.h>
#include <vta/driver.h>
#include <vta/hw_spec.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "avta_expect.h"

namespace {

[[noreturn]] void Fail(const char* what, const char* detail) {
  std::fprintf(stderr, "upstream harness: %s%s\n", what, detail);
  std::exit(3);
}

// Sets one field of a zeroed instruction (or micro-op) to all ones and checks that exactly the
// bits avta's encoder gives that field are set.
template <typename T, typename Set>
void CheckField(const char* name, unsigned shift, unsigned bits, Set set) {
  T value;
  std::memset(&value, 0, sizeof(value));
  set(&value, ~0ull);
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  for (unsigned bit = 0; bit < 8 * sizeof(T); ++bit) {
    bool want = bit >= shift && bit < shift + bits;
    bool got = (raw[bit / 8] >> (bit % 8)) & 1;
    if (want != got) {
      char where[160];
      std::snprintf(where, sizeof(where), "%s: bit %u is %s in upstream's struct but %s in "
                    "avta's encoding (bits %u..%u)", name, bit, got ? "set" : "clear",
                    want ? "set" : "clear", shift, shift + bits - 1);
      Fail("field layouts differ: ", where);
    }
  }
}

#define AVTA_CHECK(T, FMT, FIELD, member)                                             \
  CheckField<T>(#T "." #member, AVTA_##FMT##_##FIELD##_SHIFT, AVTA_##FMT##_##FIELD##_BITS, \
                [](T* insn, uint64_t ones) { insn->member = ones; })

void CheckLayouts() {
  AVTA_CHECK(VTAMemInsn, MEM, OPCODE, opcode);
  AVTA_CHECK(VTAMemInsn, MEM, POP_PREV, pop_prev_dep);
  AVTA_CHECK(VTAMemInsn, MEM, POP_NEXT, pop_next_dep);
  AVTA_CHECK(VTAMemInsn, MEM, PUSH_PREV, push_prev_dep);
  AVTA_CHECK(VTAMemInsn, MEM, PUSH_NEXT, push_next_dep);
  AVTA_CHECK(VTAMemInsn, MEM, MEMORY_TYPE, memory_type);
  AVTA_CHECK(VTAMemInsn, MEM, SRAM_BASE, sram_base);
  AVTA_CHECK(VTAMemInsn, MEM, DRAM_BASE, dram_base);
  AVTA_CHECK(VTAMemInsn, MEM, Y_SIZE, y_size);
  AVTA_CHECK(VTAMemInsn, MEM, X_SIZE, x_size);
  AVTA_CHECK(VTAMemInsn, MEM, X_STRIDE, x_stride);
  AVTA_CHECK(VTAMemInsn, MEM, Y_PAD_0, y_pad_0);
  AVTA_CHECK(VTAMemInsn, MEM, Y_PAD_1, y_pad_1);
  AVTA_CHECK(VTAMemInsn, MEM, X_PAD_0, x_pad_0);
  AVTA_CHECK(VTAMemInsn, MEM, X_PAD_1, x_pad_1);
  AVTA_CHECK(VTAGemInsn, GEM, RESET, reset_reg);
  AVTA_CHECK(VTAGemInsn, GEM, UOP_BGN, uop_bgn);
  AVTA_CHECK(VTAGemInsn, GEM, UOP_END, uop_end);
  AVTA_CHECK(VTAGemInsn, GEM, ITER_OUT, iter_out);
  AVTA_CHECK(VTAGemInsn, GEM, ITER_IN, iter_in);
  AVTA_CHECK(VTAGemInsn, GEM, DST_FACTOR_OUT, dst_factor_out);
  AVTA_CHECK(VTAGemInsn, GEM, DST_FACTOR_IN, dst_factor_in);
  AVTA_CHECK(VTAGemInsn, GEM, SRC_FACTOR_OUT, src_factor_out);
  AVTA_CHECK(VTAGemInsn, GEM, SRC_FACTOR_IN, src_factor_in);
  AVTA_CHECK(VTAGemInsn, GEM, WGT_FACTOR_OUT, wgt_factor_out);
  AVTA_CHECK(VTAGemInsn, GEM, WGT_FACTOR_IN, wgt_factor_in);
  AVTA_CHECK(VTAAluInsn, ALU, RESET, reset_reg);
  AVTA_CHECK(VTAAluInsn, ALU, DST_FACTOR_OUT, dst_factor_out);
  AVTA_CHECK(VTAAluInsn, ALU, DST_FACTOR_IN, dst_factor_in);
  AVTA_CHECK(VTAAluInsn, ALU, SRC_FACTOR_OUT, src_factor_out);
  AVTA_CHECK(VTAAluInsn, ALU, SRC_FACTOR_IN, src_factor_in);
  AVTA_CHECK(VTAAluInsn, ALU, ALU_OPCODE, alu_opcode);
  AVTA_CHECK(VTAAluInsn, ALU, USE_IMM, use_imm);
  AVTA_CHECK(VTAAluInsn, ALU, IMM, imm);
  AVTA_CHECK(VTAUop, UOP, DST_IDX, dst_idx);
  AVTA_CHECK(VTAUop, UOP, SRC_IDX, src_idx);
  AVTA_CHECK(VTAUop, UOP, WGT_IDX, wgt_idx);
}

double CpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) Fail("usage: upstream_fsim IMAGE_IN IMAGE_OUT INSN_COUNT", "");
  CheckLayouts();
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) Fail("cannot read the image ", argv[1]);
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint32_t count = std::strtoul(argv[3], nullptr, 10);
  if (image.empty() || count == 0) Fail("empty image or program", "");

  void* dram = VTAMemAlloc(image.size(), VTA_NOT_CACHED);
  size_t insn_bytes = static_cast<size_t>(count) * sizeof(VTAGenericInsn);
  void* insns = VTAMemAlloc(insn_bytes, VTA_NOT_CACHED);
  vta_phy_addr_t insn_phys = VTAMemGetPhyAddr(insns);
  std::printf("alloc %llu %llu\n", static_cast<unsigned long long>(VTAMemGetPhyAddr(dram)),
              static_cast<unsigned long long>(insn_phys));
  std::fflush(stdout);
  if (std::fread(insns, 1, insn_bytes, stdin) != insn_bytes) Fail("short instruction stream", "");

  VTAMemCopyFromHost(dram, image.data(), image.size());
  VTADeviceHandle device = VTADeviceAlloc();
  double start = CpuSeconds();
  int status = VTADeviceRun(device, insn_phys, count, 0);
  double spent = CpuSeconds() - start;
  VTADeviceFree(device);
  if (status != 0) Fail("VTADeviceRun failed", "");
  std::printf("run %.6f\n", spent);
  VTAMemCopyToHost(image.data(), dram, image.size());
  std::ofstream out(argv[2], std::ios::binary);
  out.write(image.data(), image.size());
  if (!out) Fail("cannot write the image ", argv[2]);
  return 0;
}
