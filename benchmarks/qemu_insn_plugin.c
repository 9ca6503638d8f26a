/*
 * Exact guest instruction counts per address, for benchmarks/insn_profile.py.
 *
 * A QEMU TCG plugin (plugin API version 1, as QEMU 7.2 loads it). Every translated instruction gets
 * an inline "add 1" on its own counter, which QEMU runs only when the instruction itself runs. That
 * makes the count exact even under -icount, where a translated block may be entered and left again
 * before its first instruction (QEMU's `-d exec` log still lists such a block as executed).
 *
 * Arguments: out=FILE (required), mark=0xADDR (optional), split=0xADDR (optional, repeatable). Each
 * execution of the instruction at mark's ADDR takes a snapshot of all counters (the first 8 are kept).
 * FILE gets one line per instruction address, "ADDR COUNT S1 S2 ...": the final count, then its value
 * at each snapshot. Each execution of an instruction at a split ADDR appends "split ADDR TOTAL" to FILE
 * (in execution order; TOTAL: instructions run before it): the instructions between two splits, e.g.
 * between two entries into ExecuTorch's Method::execute_instruction, are one kernel call's.
 *
 * Build: cc -shared -fPIC -O2 -o libqemu_insn_plugin.so benchmarks/qemu_insn_plugin.c
 * The declarations below are the few entry points of QEMU's include/qemu/qemu-plugin.h (GPL-2.0-or-
 * later) this file calls, written out so that no QEMU headers are needed.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, struct qemu_plugin_tb*));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb*);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb*, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn*);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn*, enum qemu_plugin_op, void*, uint64_t);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn*, void (*)(unsigned int, void*),
                                            enum qemu_plugin_cb_flags, void*);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, void*), void*);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_SNAPSHOTS 8
#define TABLE_BITS 19 /* 512 Ki slots, half of them usable: more instructions than a 512 KB image holds */

typedef struct {
  uint64_t addr; /* 0: free slot (address 0 holds the vector table, never code) */
  uint64_t count;
  uint64_t snap[MAX_SNAPSHOTS];
} counter_t;

static counter_t* table;
static size_t used;
static uint64_t mark_addr = UINT64_MAX;
static unsigned snapshots;
static const char* out_path;
#define MAX_SPLIT_ADDRS 256
static uint64_t split_addr[MAX_SPLIT_ADDRS];
static unsigned n_split_addrs;
static uint64_t total; /* every instruction run */
typedef struct {
  uint64_t addr, total;
} split_t;
static split_t* splits;
static size_t n_splits, cap_splits;

static counter_t* counter_for(uint64_t addr) {
  size_t mask = ((size_t)1 << TABLE_BITS) - 1;
  for (size_t i = (size_t)(addr * 0x9E3779B97F4A7C15ull >> 40) & mask;; i = (i + 1) & mask) {
    if (table[i].addr == addr) return &table[i];
    if (table[i].addr == 0) {
      if (++used > mask / 2) abort();
      table[i].addr = addr;
      return &table[i];
    }
  }
}

static void on_mark(unsigned int vcpu, void* userdata) {
  (void)vcpu;
  (void)userdata;
  if (snapshots >= MAX_SNAPSHOTS) return;
  for (size_t i = 0; i < ((size_t)1 << TABLE_BITS); ++i) table[i].snap[snapshots] = table[i].count;
  snapshots++;
}

static void on_split(unsigned int vcpu, void* userdata) {
  (void)vcpu;
  if (n_splits == cap_splits) {
    cap_splits = cap_splits ? 2 * cap_splits : 4096;
    splits = realloc(splits, cap_splits * sizeof *splits);
    if (!splits) abort();
  }
  splits[n_splits].addr = (uint64_t)(uintptr_t)userdata;
  splits[n_splits++].total = total;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  for (size_t i = 0, n = qemu_plugin_tb_n_insns(tb); i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    uint64_t addr = qemu_plugin_insn_vaddr(insn);
    if (addr == mark_addr) qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
    for (unsigned s = 0; s < n_split_addrs; ++s)
      if (addr == split_addr[s])
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_split, QEMU_PLUGIN_CB_NO_REGS, (void*)(uintptr_t)addr);
    if (n_split_addrs) qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &total, 1);
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &counter_for(addr)->count, 1);
  }
}

static void write_counts(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  FILE* f = fopen(out_path, "w");
  if (!f) return;
  for (size_t i = 0; i < ((size_t)1 << TABLE_BITS); ++i) {
    if (!table[i].addr || !table[i].count) continue;
    fprintf(f, "%" PRIx64 " %" PRIu64, table[i].addr, table[i].count);
    for (unsigned s = 0; s < snapshots; ++s) fprintf(f, " %" PRIu64, table[i].snap[s]);
    fputc('\n', f);
  }
  for (size_t i = 0; i < n_splits; ++i) fprintf(f, "split %" PRIx64 " %" PRIu64 "\n", splits[i].addr, splits[i].total);
  fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info,
                                                             int argc, char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0) out_path = argv[i] + 4;
    if (strncmp(argv[i], "mark=", 5) == 0) mark_addr = strtoull(argv[i] + 5, NULL, 0);
    if (strncmp(argv[i], "split=", 6) == 0 && n_split_addrs < MAX_SPLIT_ADDRS)
      split_addr[n_split_addrs++] = strtoull(argv[i] + 6, NULL, 0);
  }
  if (!out_path) return -1;
  table = calloc((size_t)1 << TABLE_BITS, sizeof *table);
  if (!table) return -1;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, write_counts, NULL);
  return 0;
}
