/*
 * kws: the static memory pools, sized by armgen from the program's memory plan
 * (generated; see armgen.toml [[pools]] for sizes and regions).
 */
#ifndef ARMGEN_POOLS_H
#define ARMGEN_POOLS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* planned pool: 20464 bytes in DTCM (.armgen_pool.planned_1) */
#define ARMGEN_POOL_PLANNED_1_SIZE 20464u
extern uint8_t armgen_pool_planned_1[ARMGEN_POOL_PLANNED_1_SIZE];
/* method pool: 5120 bytes in DTCM (.armgen_pool.method) */
#define ARMGEN_POOL_METHOD_SIZE 5120u
extern uint8_t armgen_pool_method[ARMGEN_POOL_METHOD_SIZE];
/* No temp pool: the program asks nothing of the temp allocator while it runs. */
#define ARMGEN_POOL_TEMP_SIZE 0u
/* The operator-lookup scratch of load_method (ExecuTorch's temp allocator while operators are
 * resolved): the first 448 bytes of pool planned_1, idle until the first execute. */
#define ARMGEN_LOAD_SCRATCH_SIZE 448u
#define ARMGEN_LOAD_SCRATCH_BASE armgen_pool_planned_1

/* Planned pools by ExecuTorch memory id (index i here = memory id i + 1 = MethodMeta index i). */
#define ARMGEN_NUM_PLANNED_POOLS 1
typedef struct {
  const char* name;
  uint8_t* base;
  size_t size;
} armgen_pool_t;
extern const armgen_pool_t armgen_planned_pools[];

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_POOLS_H */
