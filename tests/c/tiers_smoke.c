/* The generated tiers linked into the same libunigpu (features `torch` and
 * `cuda`): all three headers in one translation unit, one call into each
 * tier, and the one per-thread last error they share with ug_*.
 * Built and run by .ci/capi-tests.sh against libunigpu.so built with
 * `--features torch,cuda`, on a machine with or without a GPU. */
#include "ug_cuda_rt.h"
#include "ug_torch.h"
#include "unigpu.h"

#include <stdio.h>
#include <string.h>

static int failed;
#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);          \
      failed++;                                                    \
    }                                                              \
  } while (0)

int main(void) {
  printf("tiers_smoke: unigpu %s\n", ug_version());

  /* torch tier: 0 devices without a GPU, never an abort. */
  int64_t torch_devices = -1;
  CHECK(ug_torch_cuda_device_count(&torch_devices) == UG_TORCH_OK);
  CHECK(torch_devices >= 0);
  char *why = NULL;
  CHECK(ug_torch_cuda_status(&why) == UG_TORCH_OK && why != NULL);
  printf("tiers_smoke: torch sees %lld CUDA device(s): %s\n", (long long)torch_devices,
         why ? why : "?");
  ug_torch_string_free(why);

  /* cuda tier: a device count, or the runtime's error without a driver. */
  int32_t cuda_devices = -1;
  ug_cuda_rt_status st = ug_cuda_rt_device_count(&cuda_devices);
  if (st == UG_CUDA_RT_OK) {
    printf("tiers_smoke: cudart sees %d device(s)\n", cuda_devices);
  } else {
    char tier[256], ug[256];
    size_t a = ug_cuda_rt_last_error_message(tier, sizeof tier);
    size_t b = ug_last_error_message(ug, sizeof ug);
    printf("tiers_smoke: cudart: %s\n", tier);
    /* One last-error slot for every tier of the library. */
    CHECK(a > 0 && a == b && strcmp(tier, ug) == 0);
    CHECK(cuda_devices == -1);
  }

  /* The unified API in the same library. */
  ug_context *ctx = NULL;
  CHECK(ug_context_new(UG_BACKEND_CPU, 0, &ctx) == UG_OK);
  CHECK(ug_last_error_message(NULL, 0) == 0); /* cleared by a success */
  ug_context_free(ctx);

  printf("tiers_smoke: %d passed, %d failed\n", failed ? 0 : 1, failed);
  return failed ? 1 : 0;
}
