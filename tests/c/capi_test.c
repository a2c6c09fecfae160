/* The C API of unigpu (include/unigpu.h), called from C: every function and
 * every error path, with random inputs checked element by element against a
 * host reference.
 *
 * Built by .ci/capi-tests.sh and crates/capi/tests/c_program.rs as C11
 * (-std=c11 -Wall -Wextra -Werror -pedantic) and as C++17, linked against
 * libunigpu.a, and run plainly, under valgrind and with ASan + UBSan.
 *
 * The backend under test is the first argument ("cpu", "cuda", "torch") or
 * $UNIGPU_BACKEND, else cpu: `UNIGPU_BACKEND=cuda ./capi_test` on a GPU
 * machine. $UNIGPU_TEST_SEED fixes the random inputs (the seed is printed).
 *
 * Prints one line per failed check and ends with "capi_test: N passed, N failed";
 * exits 1 if any check failed. */
#include "unigpu.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- checks */

static int g_passed, g_failed;
static uint32_t g_backend = UG_BACKEND_CPU;

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (cond) {                                                                    \
      g_passed++;                                                                  \
    } else {                                                                       \
      g_failed++;                                                                  \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
    }                                                                              \
  } while (0)

/* A call that must return `want`; on a mismatch prints the last error. */
#define EXPECT(call, want) expect_status((call), (want), #call, __LINE__)

static void expect_status(ug_status got, ug_status want, const char *what, int line) {
  if (got == want) {
    g_passed++;
    return;
  }
  char msg[512];
  ug_last_error_message(msg, sizeof msg);
  g_failed++;
  printf("FAIL %s:%d: %s returned %s, expected %s (last error: %s)\n", __FILE__, line, what,
         ug_status_name((int32_t)got), ug_status_name((int32_t)want), msg);
}

#define OK(call) EXPECT(call, UG_OK)

/* The last error message (truncated to 1023 bytes). */
static const char *last_error(void) {
  static char buf[1024];
  ug_last_error_message(buf, sizeof buf);
  return buf;
}

/* The last error contains `part`. */
#define ERROR_HAS(part) error_has((part), __LINE__)

static void error_has(const char *part, int line) {
  const char *msg = last_error();
  if (strstr(msg, part) != NULL) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL %s:%d: last error \"%s\" lacks \"%s\"\n", __FILE__, line, msg, part);
  }
}

/* The last error does not contain `part` (a C caller reads no Rust names). */
#define ERROR_LACKS(part) error_lacks((part), __LINE__)

static void error_lacks(const char *part, int line) {
  const char *msg = last_error();
  if (strstr(msg, part) == NULL) {
    g_passed++;
  } else {
    g_failed++;
    printf("FAIL %s:%d: last error \"%s\" has \"%s\"\n", __FILE__, line, msg, part);
  }
}

/* Sentinels: out-parameters must keep them when a call fails. */
static int g_sentinel_object;
#define SENTINEL ((void *)&g_sentinel_object)

/* ---------------------------------------------------------------- random */

static uint64_t g_rng;

static uint64_t next_u64(void) {
  /* xorshift64* */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545F4914F6CDD1DULL;
}

static double uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)(next_u64() >> 11) / 9007199254740992.0);
}

static size_t rand_len(size_t lo, size_t hi) { return lo + (size_t)(next_u64() % (hi - lo + 1)); }

/* ---------------------------------------------------------------- dtypes */

static const uint32_t ALL_DTYPES[9] = {UG_DTYPE_F32, UG_DTYPE_F64, UG_DTYPE_F16,
                                       UG_DTYPE_BF16, UG_DTYPE_I32, UG_DTYPE_U32,
                                       UG_DTYPE_I64, UG_DTYPE_U64, UG_DTYPE_U8};
static const uint32_t FLOAT_DTYPES[4] = {UG_DTYPE_F32, UG_DTYPE_F64, UG_DTYPE_F16, UG_DTYPE_BF16};
static const char *DTYPE_NAMES[9] = {"f32", "f64", "f16", "bf16", "i32", "u32", "i64", "u64", "u8"};

static int is_float(uint32_t d) { return d <= UG_DTYPE_BF16; }

/* `v` rounded to dtype `d` through the library (as Rust's `as`). */
static ug_scalar scalar_of(uint32_t d, double v) {
  ug_scalar s = ug_scalar_u8(0);
  ug_status st = ug_scalar_from_f64(d, v, &s);
  if (st != UG_OK) {
    printf("FAIL ug_scalar_from_f64(%u) failed\n", d);
    g_failed++;
  }
  return s;
}

static double value_of(ug_scalar s) {
  double v = NAN;
  if (ug_scalar_to_f64(&s, &v) != UG_OK) {
    printf("FAIL ug_scalar_to_f64 failed\n");
    g_failed++;
  }
  return v;
}

/* `v` rounded to dtype `d`, as a double. */
static double round_to(uint32_t d, double v) {
  switch (d) {
  case UG_DTYPE_F32: return (double)(float)v;
  case UG_DTYPE_F64: return v;
  default: return value_of(scalar_of(d, v));
  }
}

/* Element `i` of a host buffer of dtype `d`. */
static double get_elem(uint32_t d, const void *buf, size_t i) {
  switch (d) {
  case UG_DTYPE_F32: return ((const float *)buf)[i];
  case UG_DTYPE_F64: return ((const double *)buf)[i];
  case UG_DTYPE_F16: return value_of(ug_scalar_f16_bits(((const uint16_t *)buf)[i]));
  case UG_DTYPE_BF16: return value_of(ug_scalar_bf16_bits(((const uint16_t *)buf)[i]));
  case UG_DTYPE_I32: return ((const int32_t *)buf)[i];
  case UG_DTYPE_U32: return ((const uint32_t *)buf)[i];
  case UG_DTYPE_I64: return (double)((const int64_t *)buf)[i];
  case UG_DTYPE_U64: return (double)((const uint64_t *)buf)[i];
  default: return ((const uint8_t *)buf)[i];
  }
}

/* Sets element `i` to `v` rounded to dtype `d`. */
static void set_elem(uint32_t d, void *buf, size_t i, double v) {
  switch (d) {
  case UG_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
  case UG_DTYPE_F64: ((double *)buf)[i] = v; break;
  case UG_DTYPE_F16: ((uint16_t *)buf)[i] = scalar_of(d, v).value.f16; break;
  case UG_DTYPE_BF16: ((uint16_t *)buf)[i] = scalar_of(d, v).value.bf16; break;
  case UG_DTYPE_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case UG_DTYPE_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case UG_DTYPE_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case UG_DTYPE_U64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  default: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  }
}

/* A host buffer of `n` random values of dtype `d` in [lo, hi). */
static void *random_buf(uint32_t d, size_t n, double lo, double hi) {
  void *buf = malloc(n * ug_dtype_size(d) + 1);
  for (size_t i = 0; i < n; i++) {
    set_elem(d, buf, i, is_float(d) ? uniform(lo, hi) : floor(uniform(0, 200)));
  }
  return buf;
}

/* Machine epsilon of dtype `d` (its rounding unit times two). */
static double eps_of(uint32_t d) {
  switch (d) {
  case UG_DTYPE_F64: return 2.3e-16;
  case UG_DTYPE_F16: return 9.8e-4;
  case UG_DTYPE_BF16: return 7.9e-3;
  default: return 1.2e-7;
  }
}

/* The spacing of `d`'s subnormals: a result rounded into that range is
 * off by up to half of it, whatever its relative error bound says (an f16
 * matmul entry of -2.74e-5 came back 2.9e-8 away). Only f16's matters
 * beside the checks' 1e-12. */
static double subnormal_step_of(uint32_t d) {
  return d == UG_DTYPE_F16 ? ldexp(1.0, -24) : 0.0;
}

/* Downloads `a` (of `n` elements of `d`) into a new buffer. */
static void *download(const ug_array *a, uint32_t d, size_t n) {
  void *buf = malloc(n * ug_dtype_size(d) + 1);
  OK(ug_array_download(a, buf, n * ug_dtype_size(d)));
  return buf;
}

static ug_array *upload(const ug_context *ctx, uint32_t d, const void *data, size_t n) {
  ug_array *a = NULL;
  OK(ug_array_upload(ctx, d, data, n, &a));
  return a;
}

/* ---------------------------------------------------------------- version, statuses, errors */

static void test_version(void) {
  char want[64];
  snprintf(want, sizeof want, "%u.%u.%u", ug_version_major(), ug_version_minor(),
           ug_version_patch());
  CHECK(strcmp(ug_version(), want) == 0);
  CHECK(strlen(ug_version()) >= 5);
}

static void test_status_names(void) {
  CHECK(strcmp(ug_status_name(UG_OK), "UG_OK") == 0);
  CHECK(strcmp(ug_status_name(UG_PANIC), "UG_PANIC") == 0);
  CHECK(strcmp(ug_status_name(UG_SIZE_MISMATCH), "UG_SIZE_MISMATCH") == 0);
  CHECK(strcmp(ug_status_name(UG_OTHER), "UG_OTHER") == 0);
  CHECK(strcmp(ug_status_name(-1), "UG_UNKNOWN_STATUS") == 0);
  CHECK(strcmp(ug_status_name(1000), "UG_UNKNOWN_STATUS") == 0);
}

/* snprintf semantics: length first, truncation with a NUL, cleared on success. */
static void test_last_error(void) {
  ug_context *ctx = (ug_context *)SENTINEL;
  EXPECT(ug_context_new(UG_BACKEND_CPU, 1, &ctx), UG_INVALID_DEVICE);
  CHECK(ctx == SENTINEL);
  const char *want = "cpu device 1 does not exist (1 available)";
  size_t len = ug_last_error_message(NULL, 0);
  CHECK(len == strlen(want));
  char small[8];
  memset(small, 'x', sizeof small);
  CHECK(ug_last_error_message(small, sizeof small) == len);
  CHECK(memcmp(small, want, 7) == 0 && small[7] == '\0');
  char one[1] = {'x'};
  CHECK(ug_last_error_message(one, 1) == len && one[0] == '\0');
  char zero[1] = {'x'};
  CHECK(ug_last_error_message(zero, 0) == len && zero[0] == 'x');
  char *exact = (char *)malloc(len + 1);
  CHECK(ug_last_error_message(exact, len + 1) == len && strcmp(exact, want) == 0);
  free(exact);
  /* Frees leave the message alone. */
  ug_context_free(NULL);
  CHECK(ug_last_error_message(NULL, 0) == len);
  /* A successful call clears it. */
  CHECK(ug_dtype_size(UG_DTYPE_F32) == 4); /* infallible: leaves it */
  double v = 0;
  ug_scalar s = ug_scalar_f32(1.5f);
  OK(ug_scalar_to_f64(&s, &v));
  char buf[16] = "junk";
  CHECK(ug_last_error_message(buf, sizeof buf) == 0 && buf[0] == '\0');
}

/* The message is per thread. */
static void *thread_sees_no_error(void *arg) {
  size_t *len = (size_t *)arg;
  *len = ug_last_error_message(NULL, 0);
  ug_context *ctx = NULL;
  ug_status st = ug_context_new(UG_BACKEND_CPU, 7, &ctx);
  if (st != UG_INVALID_DEVICE) *len = 9999;
  return NULL;
}

static void test_threads(void) {
  ug_context *ctx = NULL;
  EXPECT(ug_context_new(99, 0, &ctx), UG_INVALID_ARGUMENT);
  size_t mine = ug_last_error_message(NULL, 0);
  size_t theirs = 1234;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, thread_sees_no_error, &theirs) == 0);
  pthread_join(t, NULL);
  CHECK(theirs == 0);
  CHECK(ug_last_error_message(NULL, 0) == mine);
  ERROR_HAS("not a ug_backend value");
}

static void test_panic(void) {
  EXPECT(ug_test_panic("boom from C"), UG_PANIC);
  ERROR_HAS("a Rust panic was caught at the C boundary: boom from C");
  EXPECT(ug_test_panic(NULL), UG_PANIC);
  ERROR_HAS("ug_test_panic");
  /* The library still works afterwards. */
  ug_context *ctx = NULL;
  OK(ug_context_new(UG_BACKEND_CPU, 0, &ctx));
  ug_array *a = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 3, &a));
  size_t n = 0;
  OK(ug_array_len(a, &n));
  CHECK(n == 3);
  ug_array_free(a);
  ug_context_free(ctx);
  const char bad[] = {(char)0xff, (char)0xfe, 0};
  EXPECT(ug_test_panic(bad), UG_INVALID_UTF8);
}

/* ---------------------------------------------------------------- scalars */

static void test_scalars(void) {
  for (int i = 0; i < 9; i++) CHECK(ug_dtype_size(ALL_DTYPES[i]) > 0);
  CHECK(ug_dtype_size(UG_DTYPE_F64) == 8 && ug_dtype_size(UG_DTYPE_BF16) == 2 &&
        ug_dtype_size(UG_DTYPE_U8) == 1);
  CHECK(ug_dtype_size(9) == 0 && ug_dtype_size(0xffffffffu) == 0);

  CHECK(ug_scalar_f32(1.0f).dtype == UG_DTYPE_F32 && ug_scalar_f32(2.5f).value.f32 == 2.5f);
  CHECK(ug_scalar_f64(-3.25).dtype == UG_DTYPE_F64 && ug_scalar_f64(-3.25).value.f64 == -3.25);
  CHECK(ug_scalar_f16_bits(0x3c00).dtype == UG_DTYPE_F16);
  CHECK(ug_scalar_bf16_bits(0x3f80).dtype == UG_DTYPE_BF16);
  CHECK(ug_scalar_i32(-7).value.i32 == -7 && ug_scalar_i32(-7).dtype == UG_DTYPE_I32);
  CHECK(ug_scalar_u32(7u).value.u32 == 7u && ug_scalar_u32(7).dtype == UG_DTYPE_U32);
  CHECK(ug_scalar_i64(-(1LL << 40)).value.i64 == -(1LL << 40) && ug_scalar_i64(0).dtype == UG_DTYPE_I64);
  CHECK(ug_scalar_u64(1ULL << 63).value.u64 == 1ULL << 63 && ug_scalar_u64(0).dtype == UG_DTYPE_U64);
  CHECK(ug_scalar_u8(200).value.u8 == 200 && ug_scalar_u8(0).dtype == UG_DTYPE_U8);

  /* f16 1.0 is 0x3c00, bf16 1.0 is 0x3f80. */
  CHECK(value_of(ug_scalar_f16_bits(0x3c00)) == 1.0);
  CHECK(value_of(ug_scalar_bf16_bits(0x3f80)) == 1.0);
  CHECK(scalar_of(UG_DTYPE_F16, 1.0).value.f16 == 0x3c00);
  CHECK(scalar_of(UG_DTYPE_BF16, -2.0).value.bf16 == 0xc000);
  CHECK(scalar_of(UG_DTYPE_U8, 300.0).value.u8 == 255); /* saturates */
  CHECK(scalar_of(UG_DTYPE_I32, -2.7).value.i32 == -2);
  CHECK(value_of(ug_scalar_u64(12345)) == 12345.0);

  ug_scalar s = ug_scalar_u8(1);
  EXPECT(ug_scalar_from_f64(9, 1.0, &s), UG_INVALID_ARGUMENT);
  CHECK(s.dtype == UG_DTYPE_U8);
  EXPECT(ug_scalar_from_f64(UG_DTYPE_F32, 1.0, NULL), UG_NULL_ARGUMENT);
  ERROR_HAS("`out` is NULL");
  double v = 42;
  EXPECT(ug_scalar_to_f64(NULL, &v), UG_NULL_ARGUMENT);
  EXPECT(ug_scalar_to_f64(&s, NULL), UG_NULL_ARGUMENT);
  ug_scalar bad = ug_scalar_f32(1);
  bad.dtype = 77;
  EXPECT(ug_scalar_to_f64(&bad, &v), UG_INVALID_ARGUMENT);
  ERROR_HAS("not a ug_dtype value");
  CHECK(v == 42);
}

/* ---------------------------------------------------------------- info */

static void test_probe(void) {
  ug_fallback_chain *chain = NULL;
  OK(ug_probe(&chain));
  size_t n = 0;
  OK(ug_fallback_chain_len(chain, &n));
  CHECK(n == 4);
  int chosen = 0;
  for (size_t i = 0; i < n; i++) {
    ug_backend b;
    ug_outcome o;
    const char *reason = NULL;
    OK(ug_fallback_chain_get(chain, i, &b, &o, &reason));
    CHECK(reason != NULL);
    if (o == UG_OUTCOME_CHOSEN) chosen++;
    if (o == UG_OUTCOME_SKIPPED) CHECK(reason != NULL && strlen(reason) > 0);
    if (o != UG_OUTCOME_SKIPPED) CHECK(reason != NULL && reason[0] == '\0');
    if (i == 0) CHECK(b == UG_BACKEND_TORCH);
    if (i == 2) CHECK(b == UG_BACKEND_VULKAN);
    if (i == 3) CHECK(b == UG_BACKEND_CPU);
  }
  CHECK(chosen == 1);
  ug_backend b = UG_BACKEND_CUDA;
  ug_outcome o = UG_OUTCOME_NOT_TRIED;
  const char *reason = (const char *)SENTINEL;
  EXPECT(ug_fallback_chain_get(chain, n, &b, &o, &reason), UG_INVALID_ARGUMENT);
  ERROR_HAS("past the end of the fallback chain");
  CHECK(b == UG_BACKEND_CUDA && o == UG_OUTCOME_NOT_TRIED && reason == SENTINEL);
  EXPECT(ug_fallback_chain_get(NULL, 0, &b, &o, &reason), UG_NULL_ARGUMENT);
  EXPECT(ug_fallback_chain_get(chain, 0, NULL, &o, &reason), UG_NULL_ARGUMENT);
  EXPECT(ug_fallback_chain_get(chain, 0, &b, NULL, &reason), UG_NULL_ARGUMENT);
  EXPECT(ug_fallback_chain_get(chain, 0, &b, &o, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_fallback_chain_len(NULL, &n), UG_NULL_ARGUMENT);
  EXPECT(ug_fallback_chain_len(chain, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_probe(NULL), UG_NULL_ARGUMENT);
  ug_fallback_chain_free(chain);
  ug_fallback_chain_free(NULL);
}

static void test_devices(void) {
  ug_device_list *list = NULL;
  OK(ug_device_list_new(UG_BACKEND_CPU, &list));
  size_t n = 0;
  OK(ug_device_list_len(list, &n));
  CHECK(n == 1);
  ug_device_info info;
  OK(ug_device_list_get(list, 0, &info));
  CHECK(info.backend == UG_BACKEND_CPU && info.ordinal == 0);
  CHECK(info.name != NULL && strlen(info.name) > 0);
  CHECK(info.compute_capability_major == -1 && info.compute_capability_minor == -1);
  CHECK(info.memory_total > 0 && info.memory_free <= info.memory_total);
  info.ordinal = 77;
  EXPECT(ug_device_list_get(list, 1, &info), UG_INVALID_ARGUMENT);
  CHECK(info.ordinal == 77);
  EXPECT(ug_device_list_get(NULL, 0, &info), UG_NULL_ARGUMENT);
  EXPECT(ug_device_list_get(list, 0, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_device_list_len(NULL, &n), UG_NULL_ARGUMENT);
  EXPECT(ug_device_list_len(list, NULL), UG_NULL_ARGUMENT);
  ug_device_list_free(list);
  ug_device_list_free(NULL);

  /* The backend under test lists at least one device with a name. */
  list = NULL;
  OK(ug_device_list_new(g_backend, &list));
  OK(ug_device_list_len(list, &n));
  CHECK(n >= 1);
  for (size_t i = 0; i < n; i++) {
    OK(ug_device_list_get(list, i, &info));
    CHECK(info.ordinal == i && info.name != NULL && strlen(info.name) > 0);
    CHECK(info.memory_total > 0);
  }
  ug_device_list_free(list);

  /* Vulkan: its adapters, or why there are none (the C runs of CI and
     of crates/capi/tests hide the loader: see .ci/capi-tests.sh). */
  list = NULL;
  ug_status vk = ug_device_list_new(UG_BACKEND_VULKAN, &list);
  if (vk == UG_OK) {
    OK(ug_device_list_len(list, &n));
    CHECK(n >= 1);
    ug_device_list_free(list);
  } else {
    EXPECT(vk, UG_BACKEND_UNAVAILABLE);
    ERROR_HAS("vulkan backend is unavailable");
  }
  list = (ug_device_list *)SENTINEL;
  EXPECT(ug_device_list_new(4, &list), UG_INVALID_ARGUMENT);
  EXPECT(ug_device_list_new(UG_BACKEND_CPU, NULL), UG_NULL_ARGUMENT);
  CHECK(list == SENTINEL);
  if (g_backend == UG_BACKEND_CPU) {
    /* No GPU here (the CPU run): cuda says why it cannot run. */
    ug_status st = ug_device_list_new(UG_BACKEND_CUDA, &list);
    if (st == UG_OK) {
      ug_device_list_free(list);
    } else {
      EXPECT(st, UG_BACKEND_UNAVAILABLE);
      ERROR_HAS("cuda backend is unavailable");
    }
  }
}

/* ---------------------------------------------------------------- contexts */

static const char *backend_name(uint32_t b) {
  return b == UG_BACKEND_CUDA ? "cuda" : b == UG_BACKEND_TORCH ? "torch" : "cpu";
}

static char *write_temp(const char *text) {
  static int counter;
  char *path = (char *)malloc(256);
  snprintf(path, 256, "/tmp/unigpu_capi_test_%016llx_%d.toml", (unsigned long long)next_u64(),
           counter++);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

static void test_contexts(ug_context *ctx) {
  ug_context *dflt = NULL;
  OK(ug_context_default(&dflt));
  ug_backend b;
  OK(ug_context_backend(dflt, &b));
  if (getenv("UNIGPU_BACKEND") == NULL && g_backend == UG_BACKEND_CPU) {
    /* Without a GPU or a config, the default falls back to cpu. */
    const char *cfg = getenv("UNIGPU_CONFIG");
    if (cfg == NULL) CHECK(b == UG_BACKEND_CPU || b == UG_BACKEND_CUDA);
  }
  ug_fallback_chain *chain = NULL;
  OK(ug_context_fallback_chain(dflt, &chain));
  size_t n = 0;
  OK(ug_fallback_chain_len(chain, &n));
  CHECK(n == 4);
  for (size_t i = 0; i < n; i++) {
    ug_backend eb;
    ug_outcome o;
    const char *reason;
    OK(ug_fallback_chain_get(chain, i, &eb, &o, &reason));
    if (o == UG_OUTCOME_CHOSEN) CHECK(eb == b);
  }
  ug_fallback_chain_free(chain);
  EXPECT(ug_context_fallback_chain(NULL, &chain), UG_NULL_ARGUMENT);
  EXPECT(ug_context_fallback_chain(dflt, NULL), UG_NULL_ARGUMENT);
  ug_context_free(dflt);

  OK(ug_context_backend(ctx, &b));
  CHECK(b == g_backend);
  size_t id = 99;
  OK(ug_context_device_id(ctx, &id));
  CHECK(id == 0);
  char *name = NULL;
  OK(ug_context_device_name(ctx, &name));
  CHECK(name != NULL && strlen(name) > 0);
  ug_string_free(name);
  ug_string_free(NULL);
  size_t free_b = 0, total_b = 0;
  OK(ug_context_memory_info(ctx, &free_b, &total_b));
  CHECK(total_b > 0 && free_b <= total_b);
  OK(ug_context_sync(ctx));

  EXPECT(ug_context_backend(NULL, &b), UG_NULL_ARGUMENT);
  ERROR_HAS("`ctx` is NULL");
  EXPECT(ug_context_backend(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_device_id(NULL, &id), UG_NULL_ARGUMENT);
  EXPECT(ug_context_device_id(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_device_name(NULL, &name), UG_NULL_ARGUMENT);
  EXPECT(ug_context_device_name(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_memory_info(NULL, &free_b, &total_b), UG_NULL_ARGUMENT);
  EXPECT(ug_context_memory_info(ctx, NULL, &total_b), UG_NULL_ARGUMENT);
  EXPECT(ug_context_memory_info(ctx, &free_b, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_sync(NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_default(NULL), UG_NULL_ARGUMENT);

  /* new: exact backend and device, or why not. */
  ug_context *c = (ug_context *)SENTINEL;
  EXPECT(ug_context_new(UG_BACKEND_CPU, 1, &c), UG_INVALID_DEVICE);
  EXPECT(ug_context_new(g_backend, 4096, &c), UG_INVALID_DEVICE);
  ERROR_HAS("device 4096 does not exist");
  ug_status vk = ug_context_new(UG_BACKEND_VULKAN, 0, &c);
  if (vk == UG_OK) {
    ug_context_free(c);
  } else {
    EXPECT(vk, UG_BACKEND_UNAVAILABLE);
    ERROR_HAS("the vulkan backend is unavailable");
  }
  c = (ug_context *)SENTINEL;
  EXPECT(ug_context_new(4, 0, &c), UG_INVALID_ARGUMENT);
  EXPECT(ug_context_new(0xffffffffu, 0, &c), UG_INVALID_ARGUMENT);
  EXPECT(ug_context_new(UG_BACKEND_CPU, 0, NULL), UG_NULL_ARGUMENT);
  if (g_backend == UG_BACKEND_CPU) {
    ug_status st = ug_context_new(UG_BACKEND_TORCH, 0, &c);
    if (st == UG_OK) {
      ug_context_free(c);
      c = (ug_context *)SENTINEL;
    } else {
      EXPECT(st, UG_BACKEND_UNAVAILABLE);
      ERROR_HAS("torch backend is unavailable");
    }
  }
  CHECK(c == SENTINEL);

  /* Config files: a good one, a bad value, bad syntax, a missing file. */
  char text[128];
  snprintf(text, sizeof text, "backend = \"%s\"\ndtype = \"f64\"\n", backend_name(g_backend));
  char *good = write_temp(text);
  c = NULL;
  OK(ug_context_from_config_file(good, &c));
  OK(ug_context_backend(c, &b));
  CHECK(b == g_backend);
  ug_context_free(c);
  remove(good);
  free(good);

  char *bad = write_temp("backend = \"gpu\"\n");
  c = (ug_context *)SENTINEL;
  EXPECT(ug_context_from_config_file(bad, &c), UG_CONFIG);
  ERROR_HAS(":1:");
  ERROR_HAS("allowed values: \"auto\", \"torch\", \"cuda\", \"vulkan\", \"cpu\"");
  remove(bad);
  free(bad);
  char *syntax = write_temp("backend = = 3\n");
  EXPECT(ug_context_from_config_file(syntax, &c), UG_CONFIG);
  remove(syntax);
  free(syntax);
  char *unknown = write_temp("colour = \"red\"\n");
  EXPECT(ug_context_from_config_file(unknown, &c), UG_CONFIG);
  ERROR_HAS("colour");
  remove(unknown);
  free(unknown);
  EXPECT(ug_context_from_config_file("/nonexistent/dir/unigpu.toml", &c), UG_CONFIG);
  const char not_utf8[] = {'/', 't', 'm', 'p', '/', (char)0xc3, (char)0x28, 0};
  EXPECT(ug_context_from_config_file(not_utf8, &c), UG_INVALID_UTF8);
  EXPECT(ug_context_from_config_file(NULL, &c), UG_NULL_ARGUMENT);
  ERROR_HAS("`path` is NULL");
  EXPECT(ug_context_from_config_file("/tmp/x.toml", NULL), UG_NULL_ARGUMENT);
  CHECK(c == SENTINEL);
  ug_context_free(NULL);
}

/* ---------------------------------------------------------------- arrays */

static void test_arrays(ug_context *ctx) {
  for (int t = 0; t < 9; t++) {
    uint32_t d = ALL_DTYPES[t];
    size_t es = ug_dtype_size(d);
    size_t n = rand_len(1, 700);
    void *host = random_buf(d, n, -100, 100);
    ug_array *a = upload(ctx, d, host, n);
    size_t len = 0, bytes = 0;
    ug_dtype dt = UG_DTYPE_U8;
    OK(ug_array_len(a, &len));
    OK(ug_array_size_bytes(a, &bytes));
    OK(ug_array_dtype(a, &dt));
    CHECK(len == n && bytes == n * es && (uint32_t)dt == d);
    void *back = download(a, d, n);
    if (memcmp(back, host, n * es) != 0) printf("FAIL round trip of %s\n", DTYPE_NAMES[t]);
    CHECK(memcmp(back, host, n * es) == 0);

    /* Unaligned host memory works both ways. */
    unsigned char *odd = (unsigned char *)malloc(n * es + 1);
    memcpy(odd + 1, host, n * es);
    ug_array *u = upload(ctx, d, odd + 1, n);
    memset(odd, 0, n * es + 1);
    OK(ug_array_download(u, odd + 1, n * es));
    CHECK(memcmp(odd + 1, host, n * es) == 0);
    ug_array_free(u);
    free(odd);

    /* zeros, alloc, upload_from, copy. */
    ug_array *z = NULL;
    OK(ug_array_zeros(ctx, d, n, &z));
    void *zb = download(z, d, n);
    int all_zero = 1;
    for (size_t i = 0; i < n * es; i++) all_zero &= ((unsigned char *)zb)[i] == 0;
    CHECK(all_zero);
    free(zb);
    ug_array *al = NULL;
    OK(ug_array_alloc(ctx, d, n, &al));
    OK(ug_array_len(al, &len));
    CHECK(len == n);
    void *host2 = random_buf(d, n, -50, 50);
    OK(ug_array_upload_from(al, host2, n * es));
    OK(ug_array_copy(al, z));
    void *zc = download(z, d, n);
    CHECK(memcmp(zc, host2, n * es) == 0);
    free(zc);

    /* Size checks: nothing is written on failure. */
    memset(back, 0x5a, n * es);
    /* Byte counts are called bytes, and the call is the C function
       (issue 25: "AnyArray::download_bytes (bytes): expected 16 elements"). */
    char want[200];
    EXPECT(ug_array_download(a, back, n * es - 1), UG_SIZE_MISMATCH);
    snprintf(want, sizeof want,
             "size mismatch in ug_array_download (`size_bytes`): expected %zu bytes, got %zu",
             n * es, n * es - 1);
    ERROR_HAS(want);
    ERROR_LACKS("::");
    CHECK(((unsigned char *)back)[0] == 0x5a);
    EXPECT(ug_array_download(a, back, n * es + es), UG_SIZE_MISMATCH);
    EXPECT(ug_array_upload_from(a, host2, n * es + 1), UG_SIZE_MISMATCH);
    snprintf(want, sizeof want,
             "size mismatch in ug_array_upload_from (`size_bytes`): expected %zu bytes, got %zu",
             n * es, n * es + 1);
    ERROR_HAS(want);
    ERROR_LACKS("::");
    EXPECT(ug_array_upload_from(a, NULL, n * es), UG_NULL_ARGUMENT);
    ERROR_HAS("`data` is NULL");
    EXPECT(ug_array_download(a, NULL, n * es), UG_NULL_ARGUMENT);
    ERROR_HAS("`dst` is NULL");
    void *still = download(a, d, n);
    CHECK(memcmp(still, host, n * es) == 0);
    free(still);

    /* copy: another dtype, another length, the same array. */
    uint32_t other = ALL_DTYPES[(t + 1) % 9];
    ug_array *o = NULL;
    OK(ug_array_zeros(ctx, other, n, &o));
    EXPECT(ug_array_copy(a, o), UG_DTYPE_MISMATCH);
    ERROR_HAS("dtype mismatch in ug_array_copy (dst)");
    ERROR_LACKS("::");
    ug_array *shorter = NULL;
    OK(ug_array_zeros(ctx, d, n + 1, &shorter));
    EXPECT(ug_array_copy(a, shorter), UG_SIZE_MISMATCH);
    ERROR_HAS("size mismatch in ug_array_copy");
    ERROR_HAS(" elements, got ");
    ERROR_LACKS("::");
    /* The same array as src and dst: left as it is (the bindings' one
     * aliasing rule, facade::binding). */
    OK(ug_array_copy(a, a));
    void *same = download(a, d, n);
    CHECK(memcmp(same, host, n * es) == 0);
    free(same);

    /* to_context and context. */
    ug_context *cpu = NULL;
    OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
    ug_array *moved = NULL;
    OK(ug_array_to_context(a, cpu, &moved));
    void *mb = download(moved, d, n);
    CHECK(memcmp(mb, host, n * es) == 0);
    free(mb);
    ug_context *actx = NULL;
    OK(ug_array_context(moved, &actx));
    ug_backend b;
    OK(ug_context_backend(actx, &b));
    CHECK(b == UG_BACKEND_CPU);
    ug_context_free(actx);
    OK(ug_array_context(a, &actx));
    OK(ug_context_backend(actx, &b));
    CHECK(b == g_backend);
    ug_context_free(actx);
    ug_array_free(moved);
    ug_context_free(cpu);

    ug_array_free(shorter);
    ug_array_free(o);
    ug_array_free(al);
    ug_array_free(z);
    ug_array_free(a);
    free(host2);
    free(back);
    free(host);
  }

  /* Empty arrays, NULL data with len 0. */
  ug_array *e = NULL;
  OK(ug_array_upload(ctx, UG_DTYPE_F32, NULL, 0, &e));
  size_t len = 9;
  OK(ug_array_len(e, &len));
  CHECK(len == 0);
  OK(ug_array_download(e, NULL, 0));
  OK(ug_array_upload_from(e, NULL, 0));
  ug_array_free(e);

  /* Argument errors; out-parameters keep their value. */
  ug_array *a = (ug_array *)SENTINEL;
  float host[4] = {1, 2, 3, 4};
  EXPECT(ug_array_upload(ctx, 9, host, 4, &a), UG_INVALID_ARGUMENT);
  ERROR_HAS("`dtype` is 9, not a ug_dtype value");
  EXPECT(ug_array_upload(ctx, UG_DTYPE_F32, NULL, 4, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_upload(NULL, UG_DTYPE_F32, host, 4, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_upload(ctx, UG_DTYPE_F32, host, 4, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_upload(ctx, UG_DTYPE_F64, host, SIZE_MAX / 4, &a), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_zeros(ctx, 100, 4, &a), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_zeros(NULL, UG_DTYPE_F32, 4, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_zeros(ctx, UG_DTYPE_F32, 4, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_alloc(ctx, 100, 4, &a), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_alloc(NULL, UG_DTYPE_F32, 4, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_alloc(ctx, UG_DTYPE_F32, 4, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_zeros(ctx, UG_DTYPE_F64, SIZE_MAX / 16, &a), UG_OUT_OF_MEMORY);
  ERROR_HAS("out of memory");
  /* A length whose byte count passes PTRDIFF_MAX is a wrong argument, not
     a shortage of memory (issue 25: UG_OUT_OF_MEMORY "asked for
     18446744073709551615 bytes", a count that had wrapped). */
  EXPECT(ug_array_zeros(ctx, UG_DTYPE_F32, SIZE_MAX, &a), UG_INVALID_ARGUMENT);
  ERROR_HAS("more than PTRDIFF_MAX");
  ERROR_LACKS("18446744073709551615 bytes");
  EXPECT(ug_array_zeros(ctx, UG_DTYPE_F64, SIZE_MAX / 4, &a), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_alloc(ctx, UG_DTYPE_U8, (size_t)PTRDIFF_MAX + 1, &a), UG_INVALID_ARGUMENT);
  ERROR_HAS("`len` is ");
  ug_pinned *pn = (ug_pinned *)SENTINEL;
  EXPECT(ug_pinned_new(ctx, UG_DTYPE_F32, SIZE_MAX / 2, &pn), UG_INVALID_ARGUMENT);
  CHECK(pn == (ug_pinned *)SENTINEL);
  CHECK(a == SENTINEL);

  ug_array *x = upload(ctx, UG_DTYPE_F32, host, 4);
  size_t n = 0;
  ug_dtype dt;
  ug_context *c = NULL;
  EXPECT(ug_array_len(NULL, &n), UG_NULL_ARGUMENT);
  ERROR_HAS("`array` is NULL");
  EXPECT(ug_array_len(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_size_bytes(NULL, &n), UG_NULL_ARGUMENT);
  EXPECT(ug_array_size_bytes(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_dtype(NULL, &dt), UG_NULL_ARGUMENT);
  EXPECT(ug_array_dtype(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_context(NULL, &c), UG_NULL_ARGUMENT);
  EXPECT(ug_array_context(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_upload_from(NULL, host, 16), UG_NULL_ARGUMENT);
  EXPECT(ug_array_download(NULL, host, 16), UG_NULL_ARGUMENT);
  EXPECT(ug_array_copy(NULL, x), UG_NULL_ARGUMENT);
  EXPECT(ug_array_copy(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_to_context(NULL, ctx, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_to_context(x, NULL, &a), UG_NULL_ARGUMENT);
  EXPECT(ug_array_to_context(x, ctx, NULL), UG_NULL_ARGUMENT);
  CHECK(a == SENTINEL);
  ug_array_free(x);
  ug_array_free(NULL);
}

/* ---------------------------------------------------------------- streams and events */

static void test_streams(ug_context *ctx) {
  ug_stream *s = NULL, *s2 = NULL, *dflt = NULL;
  OK(ug_stream_create(ctx, &s));
  OK(ug_stream_create(ctx, &s2));
  OK(ug_context_default_stream(ctx, &dflt));

  size_t n = rand_len(1000, 5000);
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -1, 1);
  ug_array *x = upload(ctx, UG_DTYPE_F32, host, n);
  ug_array *y = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &y));

  /* On a GPU, tens of milliseconds of matmuls on s before `end`, so that
     s2's work after `mid` would finish first if the wait did nothing. (On
     the CPU backend test_event_orders_streams holds s back with a gate.) */
  const size_t big = g_backend == UG_BACKEND_CPU ? 0 : 4096;
  ug_array *ma = NULL, *mc = NULL;
  if (big > 0) {
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, big * big, &ma));
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, big * big, &mc));
    OK(ug_op_matmul(s, ma, ma, mc, big, big, big)); /* any first-use loading */
    OK(ug_stream_sync(s));
  }
  /* s2's arrays are its own: only the event orders it after s. */
  float *host2 = (float *)random_buf(UG_DTYPE_F32, n, -1, 1);
  ug_array *z = upload(ctx, UG_DTYPE_F32, host2, n);
  ug_array *w = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &w));
  OK(ug_op_copy(s2, z, w));
  OK(ug_stream_sync(s2));

  ug_event *start = NULL, *end = NULL, *mid = NULL;
  OK(ug_stream_record_timed(s, &start));
  OK(ug_op_copy(s, x, y));
  OK(ug_op_scale(s, ug_scalar_f32(2.0f), y));
  for (int i = 0; big > 0 && i < 8; i++) OK(ug_op_matmul(s, ma, ma, mc, big, big, big));
  OK(ug_stream_record_timed(s, &end));
  /* s2 waits for s's work, then scales its own array on its own queue. */
  OK(ug_stream_wait(s2, end));
  OK(ug_op_scale(s2, ug_scalar_f32(0.5f), w));
  OK(ug_context_create_event(ctx, &mid));
  bool done = false;
  OK(ug_event_query(mid, &done));
  CHECK(done); /* unrecorded */
  OK(ug_event_record(mid, s2));
  OK(ug_event_sync(mid));
  OK(ug_event_query(mid, &done));
  CHECK(done);
  /* s2's work came after `end`, so `end` is done by now. */
  OK(ug_event_query(end, &done));
  CHECK(done);
  float *back2 = (float *)download(w, UG_DTYPE_F32, n);
  int same2 = 1;
  for (size_t i = 0; i < n; i++) same2 &= back2[i] == host2[i] * 0.5f;
  CHECK(same2);
  free(back2);
  free(host2);
  ug_array_free(z);
  ug_array_free(w);
  ug_array_free(ma);
  ug_array_free(mc);
  OK(ug_stream_sync(s2));
  bool idle = false;
  OK(ug_stream_query(s2, &idle));
  CHECK(idle);
  OK(ug_event_sync(end));
  float ms = -1;
  OK(ug_event_elapsed_ms(start, end, &ms));
  CHECK(ms >= 0);
  /* An untimed event is refused, naming the timed constructors, and `ms`
     is left alone. */
  ug_event *untimed = NULL, *timing = NULL;
  OK(ug_stream_record(s, &untimed));
  ms = -1;
  EXPECT(ug_event_elapsed_ms(start, untimed, &ms), UG_UNSUPPORTED);
  ERROR_HAS("record_timed");
  CHECK(ms == -1);
  OK(ug_context_create_timing_event(ctx, &timing));
  OK(ug_event_record(timing, s));
  OK(ug_event_elapsed_ms(start, timing, &ms));
  CHECK(ms >= 0);
  ug_event_free(untimed);
  ug_event_free(timing);
  float *back = (float *)download(y, UG_DTYPE_F32, n);
  int same = 1;
  for (size_t i = 0; i < n; i++) same &= back[i] == host[i] * 2.0f;
  CHECK(same);
  free(back);
  OK(ug_stream_sync(s));
  OK(ug_stream_query(s, &idle));
  CHECK(idle);
  OK(ug_stream_sync(dflt));

  /* NULL arguments. */
  ug_stream *ns = (ug_stream *)SENTINEL;
  ug_event *ne = (ug_event *)SENTINEL;
  EXPECT(ug_stream_create(NULL, &ns), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_create(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_sync(NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_query(NULL, &idle), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_query(s, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_wait(NULL, end), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_wait(s, NULL), UG_NULL_ARGUMENT);
  ERROR_HAS("`event` is NULL");
  EXPECT(ug_stream_record(NULL, &ne), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_record(s, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_record_timed(NULL, &ne), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_record_timed(s, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_event_sync(NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_event_query(NULL, &done), UG_NULL_ARGUMENT);
  EXPECT(ug_event_query(end, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_event_elapsed_ms(NULL, end, &ms), UG_NULL_ARGUMENT);
  EXPECT(ug_event_elapsed_ms(start, NULL, &ms), UG_NULL_ARGUMENT);
  EXPECT(ug_event_elapsed_ms(start, end, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_event_record(NULL, s), UG_NULL_ARGUMENT);
  EXPECT(ug_event_record(end, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_default_stream(NULL, &ns), UG_NULL_ARGUMENT);
  EXPECT(ug_context_default_stream(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_create_event(NULL, &ne), UG_NULL_ARGUMENT);
  EXPECT(ug_context_create_event(ctx, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_context_create_timing_event(NULL, &ne), UG_NULL_ARGUMENT);
  EXPECT(ug_context_create_timing_event(ctx, NULL), UG_NULL_ARGUMENT);
  CHECK(ns == SENTINEL && ne == SENTINEL);

  /* A stream and an event of another backend do not mix. */
  if (g_backend != UG_BACKEND_CPU) {
    ug_context *cpu = NULL;
    ug_stream *cs = NULL;
    OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
    OK(ug_stream_create(cpu, &cs));
    EXPECT(ug_stream_wait(cs, end), UG_CONTEXT_MISMATCH);
    EXPECT(ug_event_record(mid, cs), UG_CONTEXT_MISMATCH);
    ug_stream_free(cs);
    ug_context_free(cpu);
  }

  ug_event_free(start);
  ug_event_free(end);
  ug_event_free(mid);
  ug_event_free(NULL);
  ug_array_free(x);
  ug_array_free(y);
  ug_stream_free(s);
  ug_stream_free(s2);
  ug_stream_free(dflt);
  ug_stream_free(NULL);
  free(host);
}

/* A cross-stream event on a CPU context (whatever the backend under test):
   a C kernel holds the producer stream until the test opens its gate. The
   consumer's array is its own, so nothing but the event orders it after the
   producer: per-array tracking would order a consumer that touched the
   producer's array even if ug_stream_wait did nothing. A mutex and a
   condition variable rather than atomics: this file is also C++17. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int open;      /* set by the test */
  int produced;  /* set by the producer's kernel once through the gate */
  int timed_out; /* the gate gave up waiting for the test */
} event_gate;

static int32_t gated_producer(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                              void *user_data, char *message, size_t message_len) {
  (void)grid;
  (void)message;
  (void)message_len;
  event_gate *g = (event_gate *)user_data;
  struct timespec until;
  timespec_get(&until, TIME_UTC); /* the clock pthread_cond_timedwait uses */
  until.tv_sec += 30;
  pthread_mutex_lock(&g->lock);
  while (!g->open) {
    if (pthread_cond_timedwait(&g->changed, &g->lock, &until) != 0 && !g->open) {
      g->timed_out = 1;
      break;
    }
  }
  g->produced = 1;
  pthread_mutex_unlock(&g->lock);
  for (size_t a = 0; a < n_args; a++) {
    float *out = (float *)args[a].data_mut;
    for (size_t i = 0; out != NULL && i < args[a].len; i++) out[i] = 1.0f;
  }
  return UG_OK;
}

/* Writes 1 into its array if the producer has run, else -1. */
static int32_t observer(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                        void *user_data, char *message, size_t message_len) {
  (void)grid;
  (void)message;
  (void)message_len;
  event_gate *g = (event_gate *)user_data;
  pthread_mutex_lock(&g->lock);
  float v = g->produced ? 1.0f : -1.0f;
  pthread_mutex_unlock(&g->lock);
  for (size_t a = 0; a < n_args; a++) {
    float *out = (float *)args[a].data_mut;
    for (size_t i = 0; out != NULL && i < args[a].len; i++) out[i] = v;
  }
  return UG_OK;
}

static void no_free(void *user_data) { (void)user_data; }

/* Sleeps with C11's clock and pthreads only (nanosleep is POSIX, hidden by
   -std=c11): a timed wait on a condition nobody signals. */
static void sleep_ms(long ms) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  struct timespec until;
  timespec_get(&until, TIME_UTC);
  until.tv_nsec += (ms % 1000) * 1000000L;
  until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&m);
  while (pthread_cond_timedwait(&c, &m, &until) == 0) {
  }
  pthread_mutex_unlock(&m);
}

static void test_event_orders_streams(void) {
  event_gate g;
  memset(&g, 0, sizeof g);
  pthread_mutex_init(&g.lock, NULL);
  pthread_cond_init(&g.changed, NULL);
  ug_context *cpu = NULL;
  OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
  ug_kernel *produce = NULL, *observe = NULL;
  OK(ug_kernel_cpu("gated_producer", gated_producer, &g, no_free, &produce));
  OK(ug_kernel_cpu("observer", observer, &g, no_free, &observe));
  ug_stream *producer = NULL, *consumer = NULL;
  OK(ug_stream_create(cpu, &producer));
  OK(ug_stream_create(cpu, &consumer));
  size_t n = rand_len(1, 5000);
  ug_array *p = NULL, *q = NULL;
  OK(ug_array_zeros(cpu, UG_DTYPE_F32, n, &p));
  OK(ug_array_zeros(cpu, UG_DTYPE_F32, n, &q));
  ug_grid grid = ug_grid_for_elems(n);
  ug_arg pa = ug_arg_out(p), qa = ug_arg_out(q);
  OK(ug_kernel_launch(produce, NULL, producer, &grid, &pa, 1));
  ug_event *done = NULL;
  OK(ug_stream_record(producer, &done));
  OK(ug_stream_wait(consumer, done));
  OK(ug_kernel_launch(observe, NULL, consumer, &grid, &qa, 1));
  sleep_ms(200);
  bool idle = true;
  OK(ug_stream_query(consumer, &idle));
  CHECK(!idle); /* the consumer waits for the gated producer */
  pthread_mutex_lock(&g.lock);
  g.open = 1;
  pthread_cond_broadcast(&g.changed);
  pthread_mutex_unlock(&g.lock);
  OK(ug_stream_sync(consumer));
  float *got = (float *)download(q, UG_DTYPE_F32, n);
  size_t early = 0;
  for (size_t i = 0; i < n; i++) early += got[i] != 1.0f;
  CHECK(early == 0); /* -1: the consumer ran before the event */
  free(got);
  OK(ug_stream_sync(producer));
  CHECK(!g.timed_out);
  got = (float *)download(p, UG_DTYPE_F32, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += got[i] != 1.0f;
  CHECK(bad == 0);
  free(got);
  ug_event_free(done);
  ug_array_free(p);
  ug_array_free(q);
  ug_stream_free(producer);
  ug_stream_free(consumer);
  ug_kernel_free(produce);
  ug_kernel_free(observe);
  ug_context_free(cpu);
  pthread_cond_destroy(&g.changed);
  pthread_mutex_destroy(&g.lock);
}

/* ---------------------------------------------------------------- kernels */

static const char *SAXPY_SRC =
    "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned int n) {\n"
    "  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void no_cpu(float* y) { y[0] = 1.0f; }\n";

typedef struct {
  int calls;
  int freed;
  ug_grid last_grid;
} kernel_state;

/* saxpy on the host: args (f32 a, in f32 x, out f32 y, u32 n). */
static int32_t saxpy_cpu(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                         void *user_data, char *message, size_t message_len) {
  kernel_state *state = (kernel_state *)user_data;
  state->calls++;
  state->last_grid = *grid;
  if (n_args != 4 || args[0].kind != UG_ARG_KIND_SCALAR || args[0].dtype != UG_DTYPE_F32 ||
      args[1].kind != UG_ARG_KIND_ARRAY_IN || args[1].data_mut != NULL ||
      args[2].kind != UG_ARG_KIND_ARRAY_OUT || args[2].data_mut == NULL ||
      args[3].dtype != UG_DTYPE_U32) {
    snprintf(message, message_len, "unexpected arguments");
    return UG_INVALID_ARGUMENT;
  }
  float a = args[0].value.f32;
  const float *x = (const float *)args[1].data;
  float *y = (float *)args[2].data_mut;
  size_t n = args[3].value.u32;
  if (args[1].len < n || args[2].len < n) {
    snprintf(message, message_len, "arrays shorter than n");
    return UG_SIZE_MISMATCH;
  }
  for (size_t i = 0; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
  return UG_OK;
}

static int32_t failing_cpu(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                           void *user_data, char *message, size_t message_len) {
  (void)args;
  (void)n_args;
  (void)grid;
  (void)user_data;
  snprintf(message, message_len, "boom in C (%s)", "saxpy");
  return 3;
}

static void free_state(void *user_data) { ((kernel_state *)user_data)->freed++; }

/* y = a * x + y through `k` on `ctx`'s default stream (or `stream`),
 * checked element by element. */
static void run_saxpy(ug_context *ctx, ug_stream *stream, const ug_kernel *k, int exact) {
  size_t n = rand_len(1, 3000);
  float a = (float)uniform(-3, 3);
  float *x = (float *)random_buf(UG_DTYPE_F32, n, -10, 10);
  float *y = (float *)random_buf(UG_DTYPE_F32, n, -10, 10);
  ug_array *dx = upload(ctx, UG_DTYPE_F32, x, n);
  ug_array *dy = upload(ctx, UG_DTYPE_F32, y, n);
  ug_arg args[4];
  args[0] = ug_arg_scalar(ug_scalar_f32(a));
  args[1] = ug_arg_in(dx);
  args[2] = ug_arg_out(dy);
  args[3] = ug_arg_scalar(ug_scalar_u32((uint32_t)n));
  ug_grid grid = ug_grid_for_elems(n);
  if (stream != NULL) {
    OK(ug_kernel_launch(k, NULL, stream, &grid, args, 4));
    OK(ug_stream_sync(stream));
  } else {
    OK(ug_kernel_launch(k, ctx, NULL, &grid, args, 4));
    OK(ug_context_sync(ctx));
  }
  float *got = (float *)download(dy, UG_DTYPE_F32, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float want = fmaf(a, x[i], y[i]);
    float err = fabsf(got[i] - want);
    if (exact ? got[i] != want : err > 1e-6f * (fabsf(want) + fabsf(a * x[i]) + fabsf(y[i]))) {
      if (bad++ < 3) printf("FAIL saxpy[%zu] = %.9g, want %.9g\n", i, got[i], want);
    }
  }
  CHECK(bad == 0);
  free(got);
  free(x);
  free(y);
  ug_array_free(dx);
  ug_array_free(dy);
}

static void test_kernels(ug_context *ctx) {
  ug_grid g = ug_grid_for_elems(1000);
  CHECK(g.grid[0] == 4 && g.grid[1] == 1 && g.grid[2] == 1 && g.block[0] == 256 &&
        g.block[1] == 1 && g.shared_mem_bytes == 0);
  CHECK(ug_grid_for_elems(0).grid[0] == 1);

  kernel_state state;
  memset(&state, 0, sizeof state);

  /* A kernel written in C, CPU only. */
  ug_context *cpu = NULL;
  OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
  ug_kernel *cpu_saxpy = NULL;
  OK(ug_kernel_cpu("saxpy", saxpy_cpu, &state, free_state, &cpu_saxpy));
  run_saxpy(cpu, NULL, cpu_saxpy, 1);
  CHECK(state.calls == 1);
  CHECK(state.last_grid.block[0] == 256);
  ug_stream *cs = NULL;
  OK(ug_stream_create(cpu, &cs));
  run_saxpy(cpu, cs, cpu_saxpy, 1);
  CHECK(state.calls == 2);
  ug_stream_free(cs);

  /* The compiled kernel, with the C function as its CPU implementation. */
  ug_module *m = NULL;
  OK(ug_module_compile(ctx, SAXPY_SRC, &m));
  ug_kernel *k = NULL;
  OK(ug_module_kernel(m, "saxpy", &k));
  ug_kernel *kc = NULL;
  OK(ug_kernel_with_cpu(k, saxpy_cpu, &state, NULL, &kc));
  run_saxpy(ctx, NULL, kc, g_backend == UG_BACKEND_CPU);
  ug_stream *s = NULL;
  OK(ug_stream_create(ctx, &s));
  run_saxpy(ctx, s, kc, g_backend == UG_BACKEND_CPU);
  if (g_backend == UG_BACKEND_CPU) CHECK(state.calls == 4);

  /* compile_with options; a module lists what it has. */
  const char *opts[2] = {"-DUNUSED=1", "--std=c++17"};
  ug_module *m2 = NULL;
  OK(ug_module_compile_with(ctx, SAXPY_SRC, opts, 2, &m2));
  ug_kernel *k2 = NULL;
  OK(ug_module_kernel(m2, "saxpy", &k2));
  ug_kernel_free(k2);
  ug_module *m3 = NULL;
  OK(ug_module_compile_with(ctx, SAXPY_SRC, NULL, 0, &m3));
  ug_module_free(m3);

  /* Launches with wrong arguments: count, kind, dtype; nothing runs. */
  size_t n = 64;
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -1, 1);
  ug_array *x = upload(ctx, UG_DTYPE_F32, host, n);
  ug_array *y = upload(ctx, UG_DTYPE_F32, host, n);
  ug_array *xd = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F64, n, &xd));
  ug_grid grid = ug_grid_for_elems(n);
  ug_arg args[4];
  args[0] = ug_arg_scalar(ug_scalar_f32(2.0f));
  args[1] = ug_arg_in(x);
  args[2] = ug_arg_out(y);
  args[3] = ug_arg_scalar(ug_scalar_u32((uint32_t)n));
  int calls = state.calls;
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, args, 3), UG_KERNEL_ARGS);
  ERROR_HAS("declared with 4 parameters");
  ug_arg wrong_kind[4] = {args[0], args[1], args[2], args[1]};
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, wrong_kind, 4), UG_KERNEL_ARGS);
  ERROR_HAS("parameter 3 is declared `u32`");
  ug_arg wrong_dtype[4] = {ug_arg_scalar(ug_scalar_f64(2.0)), args[1], args[2], args[3]};
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, wrong_dtype, 4), UG_KERNEL_ARGS);
  ERROR_HAS("parameter 0 is declared `f32` but a f64 value was passed");
  ug_arg wrong_array[4] = {args[0], ug_arg_in(xd), args[2], args[3]};
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, wrong_array, 4), UG_KERNEL_ARGS);
  ug_arg bad_kind[4] = {args[0], args[1], args[2], args[3]};
  bad_kind[1].kind = 7;
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, bad_kind, 4), UG_INVALID_ARGUMENT);
  ERROR_HAS("`args[1].kind` is 7");
  ug_arg bad_scalar[4] = {args[0], args[1], args[2], args[3]};
  bad_scalar[0].scalar.dtype = 42;
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, bad_scalar, 4), UG_INVALID_ARGUMENT);
  ug_arg null_array[4] = {args[0], ug_arg_in(NULL), args[2], args[3]};
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, null_array, 4), UG_NULL_ARGUMENT);
  ERROR_HAS("`args[1].array` is NULL");
  /* One array written twice: refused by the bindings' one rule, with
   * Python's words. */
  ug_arg aliased[4] = {args[0], ug_arg_out(y), args[2], args[3]};
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, aliased, 4), UG_INVALID_ARGUMENT);
  ERROR_HAS("`args[1]` and `args[2]` are the same array, and both are written; pass separate arrays");
  ug_grid zero = grid;
  zero.block[1] = 0;
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &zero, args, 4), UG_INVALID_ARGUMENT);
  EXPECT(ug_kernel_launch(kc, ctx, NULL, NULL, args, 4), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_launch(kc, ctx, NULL, &grid, NULL, 4), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_launch(NULL, ctx, NULL, &grid, args, 4), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_launch(kc, NULL, NULL, &grid, args, 4), UG_NULL_ARGUMENT);
  OK(ug_context_sync(ctx));
  if (g_backend == UG_BACKEND_CPU) CHECK(state.calls == calls);
  float *yb = (float *)download(y, UG_DTYPE_F32, n);
  CHECK(memcmp(yb, host, n * sizeof(float)) == 0);
  free(yb);

  /* A valid launch after the failed ones still runs. */
  ug_arg twice[4] = {args[0], ug_arg_in(x), ug_arg_out(y), args[3]};
  OK(ug_kernel_launch(kc, ctx, NULL, &grid, twice, 4));
  OK(ug_context_sync(ctx));

  /* The same array in and out: the input is read from a copy taken first,
   * so y = 2 * y + y. */
  float *before = (float *)download(y, UG_DTYPE_F32, n);
  ug_arg inout[4] = {args[0], ug_arg_in(y), ug_arg_out(y), args[3]};
  OK(ug_kernel_launch(kc, ctx, NULL, &grid, inout, 4));
  OK(ug_context_sync(ctx));
  float *after = (float *)download(y, UG_DTYPE_F32, n);
  for (size_t i = 0; i < n; i++) {
    CHECK(fabsf(after[i] - 3.0f * before[i]) <= 1e-5f * fabsf(3.0f * before[i]) + 1e-6f);
  }
  free(before);
  free(after);

  /* On the CPU backend a kernel needs a CPU implementation. */
  ug_module *mc = NULL;
  OK(ug_module_compile(cpu, SAXPY_SRC, &mc));
  ug_kernel *plain = NULL;
  OK(ug_module_kernel(mc, "no_cpu", &plain));
  ug_array *cy = NULL;
  OK(ug_array_zeros(cpu, UG_DTYPE_F32, 1, &cy));
  ug_arg one[1];
  one[0] = ug_arg_out(cy);
  EXPECT(ug_kernel_launch(plain, cpu, NULL, &grid, one, 1), UG_UNSUPPORTED);
  ERROR_HAS("has no CPU implementation");

  /* A C implementation that fails: the next sync says so. */
  ug_kernel *failing = NULL;
  OK(ug_kernel_with_cpu(plain, failing_cpu, NULL, NULL, &failing));
  OK(ug_kernel_launch(failing, cpu, NULL, &grid, one, 1));
  EXPECT(ug_context_sync(cpu), UG_STREAM_WORK);
  ERROR_HAS("kernel `no_cpu`");
  ERROR_HAS("returned 3 (UG_INVALID_UTF8): boom in C (saxpy)");
  OK(ug_context_sync(cpu));
  ug_kernel_free(failing);
  ug_array_free(cy);
  ug_kernel_free(plain);
  ug_module_free(mc);

  /* A CPU-only kernel on another backend cannot run. */
  if (g_backend != UG_BACKEND_CPU) {
    EXPECT(ug_kernel_launch(cpu_saxpy, ctx, NULL, &grid, args, 4), UG_UNSUPPORTED);
  }

  /* Lookup and construction errors. */
  ug_kernel *nk = (ug_kernel *)SENTINEL;
  ug_module *nm = (ug_module *)SENTINEL;
  EXPECT(ug_module_kernel(m, "nope", &nk), UG_KERNEL_ARGS);
  ERROR_HAS("no such kernel in this module (found: saxpy, no_cpu)");
  EXPECT(ug_module_kernel(NULL, "saxpy", &nk), UG_NULL_ARGUMENT);
  EXPECT(ug_module_kernel(m, NULL, &nk), UG_NULL_ARGUMENT);
  EXPECT(ug_module_kernel(m, "saxpy", NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_module_compile(NULL, SAXPY_SRC, &nm), UG_NULL_ARGUMENT);
  EXPECT(ug_module_compile(ctx, NULL, &nm), UG_NULL_ARGUMENT);
  EXPECT(ug_module_compile(ctx, SAXPY_SRC, NULL), UG_NULL_ARGUMENT);
  const char not_utf8[] = {'x', (char)0xff, 0};
  EXPECT(ug_module_compile(ctx, not_utf8, &nm), UG_INVALID_UTF8);
  EXPECT(ug_module_compile_with(ctx, SAXPY_SRC, NULL, 1, &nm), UG_NULL_ARGUMENT);
  const char *null_opt[1] = {NULL};
  EXPECT(ug_module_compile_with(ctx, SAXPY_SRC, null_opt, 1, &nm), UG_NULL_ARGUMENT);
  ERROR_HAS("`options[0]` is NULL");
  if (g_backend != UG_BACKEND_CPU) {
    /* NVRTC's log comes back in the message. */
    EXPECT(ug_module_compile(ctx, "extern \"C\" __global__ void k() { undeclared(); }", &nm),
           UG_COMPILE);
    ERROR_HAS("undeclared");
  }
  kernel_state unused;
  memset(&unused, 0, sizeof unused);
  EXPECT(ug_kernel_cpu("k", NULL, &unused, free_state, &nk), UG_NULL_ARGUMENT);
  ERROR_HAS("`func` is NULL");
  EXPECT(ug_kernel_cpu(NULL, saxpy_cpu, &unused, free_state, &nk), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_cpu("k", saxpy_cpu, &unused, free_state, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_with_cpu(NULL, saxpy_cpu, &unused, free_state, &nk), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_with_cpu(k, NULL, &unused, free_state, &nk), UG_NULL_ARGUMENT);
  EXPECT(ug_kernel_with_cpu(k, saxpy_cpu, &unused, free_state, NULL), UG_NULL_ARGUMENT);
  CHECK(unused.freed == 0); /* a failed call takes nothing */
  CHECK(nk == SENTINEL && nm == SENTINEL);

  ug_array_free(x);
  ug_array_free(y);
  ug_array_free(xd);
  free(host);
  ug_stream_free(s);
  ug_kernel_free(kc);
  ug_kernel_free(k);
  ug_module_free(m);
  ug_module_free(m2);
  ug_module_free(NULL);
  ug_kernel_free(NULL);
  /* The user data is freed once, when the last kernel handle is gone. */
  CHECK(state.freed == 0);
  ug_kernel_free(cpu_saxpy);
  CHECK(state.freed == 1);
  ug_context_free(cpu);
}

/* ---------------------------------------------------------------- ops */

typedef enum { ADD, SUB, MUL, RELU, SIGMOID, TANH } elementwise;

static double ref_elementwise(uint32_t d, elementwise op, double a, double b) {
  if (d == UG_DTYPE_F64) {
    switch (op) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    case RELU: return a > 0 ? a : 0;
    case SIGMOID: return 1.0 / (1.0 + exp(-a));
    default: return tanh(a);
    }
  }
  /* f32, and f16/bf16 computed in f32 then rounded once. */
  float fa = (float)a, fb = (float)b, r;
  switch (op) {
  case ADD: r = fa + fb; break;
  case SUB: r = fa - fb; break;
  case MUL: r = fa * fb; break;
  case RELU: r = fa > 0 ? fa : 0; break;
  case SIGMOID: r = 1.0f / (1.0f + expf(-fa)); break;
  default: r = tanhf(fa); break;
  }
  return round_to(d, r);
}

/* Compares `got` with `want`: exactly, or within `tol` relative. */
static int close_to(double got, double want, double tol) {
  if (tol == 0) return got == want;
  return fabs(got - want) <= tol * (fabs(want) + 1e-30) || fabs(got - want) <= tol;
}

static void check_elementwise(ug_context *ctx, ug_stream *s, uint32_t d, elementwise op) {
  size_t n = rand_len(1, 2000);
  void *a = random_buf(d, n, -4, 4);
  void *b = random_buf(d, n, -4, 4);
  ug_array *da = upload(ctx, d, a, n);
  ug_array *db = upload(ctx, d, b, n);
  ug_array *out = NULL;
  OK(ug_array_alloc(ctx, d, n, &out));
  switch (op) {
  case ADD: OK(ug_op_add(s, da, db, out)); break;
  case SUB: OK(ug_op_sub(s, da, db, out)); break;
  case MUL: OK(ug_op_mul(s, da, db, out)); break;
  case RELU: OK(ug_op_relu(s, da, out)); break;
  case SIGMOID: OK(ug_op_sigmoid(s, da, out)); break;
  default: OK(ug_op_tanh(s, da, out)); break;
  }
  void *got = download(out, d, n);
  /* add/sub/mul/relu are exact (one rounding); the transcendental ones
   * may differ from libm by a few ulps (more on CUDA). */
  double tol = 0;
  if (op == SIGMOID || op == TANH) {
    tol = d == UG_DTYPE_F64 ? 1e-13 : d == UG_DTYPE_F32 ? 1e-6 : 2 * eps_of(d);
    if (g_backend != UG_BACKEND_CPU && d == UG_DTYPE_F32) tol = 1e-5;
  }
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double want = ref_elementwise(d, op, get_elem(d, a, i), get_elem(d, b, i));
    double g = get_elem(d, got, i);
    if (!close_to(g, want, tol)) {
      if (bad++ < 3)
        printf("FAIL op %d on %s: [%zu] = %.17g, want %.17g\n", (int)op, DTYPE_NAMES[d], i, g, want);
    }
  }
  CHECK(bad == 0);
  free(got);
  free(a);
  free(b);
  ug_array_free(da);
  ug_array_free(db);
  ug_array_free(out);
}

static void check_axpy_scale(ug_context *ctx, ug_stream *s, uint32_t d) {
  size_t n = rand_len(1, 2000);
  double alpha = round_to(d, uniform(-2, 2));
  void *x = random_buf(d, n, -4, 4);
  void *y = random_buf(d, n, -4, 4);
  ug_array *dx = upload(ctx, d, x, n);
  ug_array *dy = upload(ctx, d, y, n);
  OK(ug_op_axpy(s, scalar_of(d, alpha), dx, dy));
  void *got = download(dy, d, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double xi = get_elem(d, x, i), yi = get_elem(d, y, i);
    double want = d == UG_DTYPE_F64 ? fma(alpha, xi, yi)
                                    : round_to(d, fmaf((float)alpha, (float)xi, (float)yi));
    if (get_elem(d, got, i) != want && bad++ < 3)
      printf("FAIL axpy %s [%zu] = %.17g, want %.17g\n", DTYPE_NAMES[d], i, get_elem(d, got, i), want);
  }
  CHECK(bad == 0);
  free(got);

  OK(ug_op_scale(s, scalar_of(d, alpha), dx));
  got = download(dx, d, n);
  bad = 0;
  for (size_t i = 0; i < n; i++) {
    double xi = get_elem(d, x, i);
    double want = d == UG_DTYPE_F64 ? alpha * xi : round_to(d, (float)alpha * (float)xi);
    if (get_elem(d, got, i) != want && bad++ < 3)
      printf("FAIL scale %s [%zu] = %.17g, want %.17g\n", DTYPE_NAMES[d], i, get_elem(d, got, i), want);
  }
  CHECK(bad == 0);
  free(got);
  free(x);
  free(y);
  ug_array_free(dx);
  ug_array_free(dy);
}

static void check_reductions(ug_context *ctx, ug_stream *s, uint32_t d) {
  size_t n = rand_len(1, 3000);
  void *x = random_buf(d, n, -4, 4);
  void *y = random_buf(d, n, -4, 4);
  ug_array *dx = upload(ctx, d, x, n);
  ug_array *dy = upload(ctx, d, y, n);
  double sum = 0, sum_abs = 0, dot = 0, dot_abs = 0, max = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double xi = get_elem(d, x, i), yi = get_elem(d, y, i);
    sum += xi;
    sum_abs += fabs(xi);
    dot += xi * yi;
    dot_abs += fabs(xi * yi);
    if (xi > max) max = xi;
  }
  double acc_eps = d == UG_DTYPE_F64 ? 1e-15 : 1e-6;
  ug_scalar r = ug_scalar_u8(0);
  OK(ug_op_sum(s, dx, &r));
  CHECK(r.dtype == d);
  double got = value_of(r);
  CHECK(fabs(got - sum) <= acc_eps * sum_abs + eps_of(d) * fabs(sum) + 1e-12);
  OK(ug_op_dot(s, dx, dy, &r));
  CHECK(r.dtype == d);
  got = value_of(r);
  CHECK(fabs(got - dot) <= acc_eps * dot_abs + eps_of(d) * fabs(dot) + 1e-12);
  OK(ug_op_max(s, dx, &r));
  CHECK(r.dtype == d && value_of(r) == max);
  /* dot(x, x) reads one array twice. */
  OK(ug_op_dot(s, dx, dx, &r));
  CHECK(value_of(r) >= 0);
  free(x);
  free(y);
  ug_array_free(dx);
  ug_array_free(dy);
}

static void check_matmul(ug_context *ctx, ug_stream *s, uint32_t d) {
  size_t m = rand_len(1, 33), k = rand_len(1, 33), n = rand_len(1, 33);
  void *a = random_buf(d, m * k, -2, 2);
  void *b = random_buf(d, k * n, -2, 2);
  ug_array *da = upload(ctx, d, a, m * k);
  ug_array *db = upload(ctx, d, b, k * n);
  ug_array *dc = NULL;
  OK(ug_array_zeros(ctx, d, m * n, &dc));
  OK(ug_op_matmul(s, da, db, dc, m, k, n));
  void *c = download(dc, d, m * n);
  double acc_eps = d == UG_DTYPE_F64 ? 1e-15 : 1e-6;
  size_t bad = 0;
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) {
      double want = 0, mag = 0;
      for (size_t p = 0; p < k; p++) {
        double t = get_elem(d, a, i * k + p) * get_elem(d, b, p * n + j);
        want += t;
        mag += fabs(t);
      }
      double g = get_elem(d, c, i * n + j);
      double tol = (double)k * acc_eps * mag + eps_of(d) * fabs(want) + subnormal_step_of(d) + 1e-12;
      if (fabs(g - want) > tol && bad++ < 3)
        printf("FAIL matmul %s [%zu,%zu] = %.17g, want %.17g\n", DTYPE_NAMES[d], i, j, g, want);
    }
  }
  CHECK(bad == 0);
  EXPECT(ug_op_matmul(s, da, db, dc, m, k + 1, n), UG_SIZE_MISMATCH);
  ERROR_HAS("matmul");
  free(a);
  free(b);
  free(c);
  ug_array_free(da);
  ug_array_free(db);
  ug_array_free(dc);
}

static void check_fill_copy(ug_context *ctx, ug_stream *s, uint32_t d) {
  size_t n = rand_len(1, 1000);
  double v = is_float(d) ? round_to(d, uniform(-100, 100)) : floor(uniform(0, 200));
  ug_array *x = NULL, *y = NULL;
  OK(ug_array_alloc(ctx, d, n, &x));
  OK(ug_array_alloc(ctx, d, n, &y));
  OK(ug_op_fill(s, x, scalar_of(d, v)));
  OK(ug_op_copy(s, x, y));
  void *got = download(y, d, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += get_elem(d, got, i) != v;
  CHECK(bad == 0);
  free(got);
  /* A scalar of another dtype. */
  uint32_t other = d == UG_DTYPE_F32 ? UG_DTYPE_F64 : UG_DTYPE_F32;
  EXPECT(ug_op_fill(s, x, scalar_of(other, 1)), UG_DTYPE_MISMATCH);
  ERROR_HAS("dtype mismatch in fill value");
  ug_array_free(x);
  ug_array_free(y);
}

static void test_ops(ug_context *ctx) {
  ug_stream *s = NULL;
  OK(ug_stream_create(ctx, &s));
  for (int t = 0; t < 9; t++) {
    check_fill_copy(ctx, NULL, ALL_DTYPES[t]);
    check_fill_copy(ctx, s, ALL_DTYPES[t]);
  }
  for (int t = 0; t < 4; t++) {
    uint32_t d = FLOAT_DTYPES[t];
    for (int op = ADD; op <= TANH; op++) {
      check_elementwise(ctx, op % 2 ? s : NULL, d, (elementwise)op);
    }
    check_axpy_scale(ctx, NULL, d);
    check_axpy_scale(ctx, s, d);
    check_reductions(ctx, NULL, d);
    check_reductions(ctx, s, d);
    check_matmul(ctx, t % 2 ? s : NULL, d);
  }

  /* Error paths. */
  float host[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  ug_array *a = upload(ctx, UG_DTYPE_F32, host, 8);
  ug_array *b = upload(ctx, UG_DTYPE_F32, host, 8);
  ug_array *out = NULL, *shorter = NULL, *d64 = NULL, *i32 = NULL, *i32b = NULL, *empty = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 8, &out));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 7, &shorter));
  OK(ug_array_zeros(ctx, UG_DTYPE_F64, 8, &d64));
  OK(ug_array_zeros(ctx, UG_DTYPE_I32, 8, &i32));
  OK(ug_array_zeros(ctx, UG_DTYPE_I32, 8, &i32b));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 0, &empty));
  ug_scalar r = ug_scalar_u8(77);

  EXPECT(ug_op_add(NULL, a, d64, out), UG_DTYPE_MISMATCH);
  ERROR_HAS("dtype mismatch in add (b)");
  EXPECT(ug_op_sub(NULL, a, shorter, out), UG_SIZE_MISMATCH);
  EXPECT(ug_op_mul(NULL, a, b, shorter), UG_SIZE_MISMATCH);
  EXPECT(ug_op_add(NULL, i32, i32b, i32), UG_UNSUPPORTED);
  EXPECT(ug_op_add(NULL, i32, i32b, out), UG_UNSUPPORTED);
  ERROR_HAS("add on i32 arrays");
  /* An output may be one of the inputs, read from a copy taken first (the
   * bindings' one rule, as in Python). */
  OK(ug_op_add(NULL, a, b, a)); /* a += b */
  float got[8];
  OK(ug_array_download(a, got, sizeof got));
  for (int i = 0; i < 8; i++) CHECK(got[i] == 2 * host[i]);
  OK(ug_op_relu(NULL, a, a));
  OK(ug_array_download(a, got, sizeof got));
  for (int i = 0; i < 8; i++) CHECK(got[i] == (host[i] > 0 ? 2 * host[i] : 0));
  OK(ug_op_copy(NULL, a, a));
  OK(ug_array_upload_from(a, host, sizeof host));
  OK(ug_op_add(NULL, a, a, out)); /* a + a: one array read twice */
  float twice[8];
  OK(ug_array_download(out, twice, sizeof twice));
  for (int i = 0; i < 8; i++) CHECK(twice[i] == 2 * host[i]);
  EXPECT(ug_op_axpy(NULL, ug_scalar_f64(1), a, b), UG_DTYPE_MISMATCH);
  ERROR_HAS("axpy alpha");
  EXPECT(ug_op_axpy(NULL, ug_scalar_f32(1), a, shorter), UG_SIZE_MISMATCH);
  EXPECT(ug_op_scale(NULL, ug_scalar_i32(2), a), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_scale(NULL, ug_scalar_i32(2), i32), UG_UNSUPPORTED);
  ug_scalar bad = ug_scalar_f32(1);
  bad.dtype = 12;
  EXPECT(ug_op_scale(NULL, bad, a), UG_INVALID_ARGUMENT);
  EXPECT(ug_op_fill(NULL, a, bad), UG_INVALID_ARGUMENT);
  EXPECT(ug_op_axpy(NULL, bad, a, b), UG_INVALID_ARGUMENT);
  EXPECT(ug_op_copy(NULL, a, d64), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_copy(NULL, a, shorter), UG_SIZE_MISMATCH);
  EXPECT(ug_op_sigmoid(NULL, a, d64), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_tanh(NULL, a, shorter), UG_SIZE_MISMATCH);
  EXPECT(ug_op_max(NULL, empty, &r), UG_SIZE_MISMATCH);
  ERROR_HAS("max of an empty array");
  EXPECT(ug_op_dot(NULL, a, shorter, &r), UG_SIZE_MISMATCH);
  EXPECT(ug_op_dot(NULL, a, d64, &r), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_sum(NULL, i32, &r), UG_UNSUPPORTED);
  CHECK(r.dtype == UG_DTYPE_U8 && r.value.u8 == 77);
  OK(ug_op_sum(NULL, empty, &r));
  /* +0.0, as the header says: the sign bit is clear (issue 25: -0.0). */
  CHECK(r.dtype == UG_DTYPE_F32 && r.value.f32 == 0.0f && !signbit(r.value.f32));
  OK(ug_op_dot(NULL, empty, empty, &r));
  CHECK(r.dtype == UG_DTYPE_F32 && r.value.f32 == 0.0f && !signbit(r.value.f32));
  EXPECT(ug_op_matmul(NULL, a, d64, out, 2, 4, 2), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_matmul(NULL, a, b, out, 3, 3, 3), UG_SIZE_MISMATCH);

  /* NULL for every array and out-pointer (a NULL stream is the default). */
  EXPECT(ug_op_fill(NULL, NULL, ug_scalar_f32(1)), UG_NULL_ARGUMENT);
  ERROR_HAS("`x` is NULL");
  EXPECT(ug_op_copy(NULL, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_copy(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_add(NULL, NULL, b, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_add(NULL, a, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_add(NULL, a, b, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sub(NULL, NULL, b, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sub(NULL, a, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sub(NULL, a, b, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_mul(NULL, NULL, b, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_mul(NULL, a, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_mul(NULL, a, b, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_axpy(NULL, ug_scalar_f32(1), NULL, b), UG_NULL_ARGUMENT);
  EXPECT(ug_op_axpy(NULL, ug_scalar_f32(1), a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_scale(NULL, ug_scalar_f32(1), NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_relu(NULL, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_relu(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sigmoid(NULL, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sigmoid(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_tanh(NULL, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_tanh(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sum(NULL, NULL, &r), UG_NULL_ARGUMENT);
  EXPECT(ug_op_sum(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_max(NULL, NULL, &r), UG_NULL_ARGUMENT);
  EXPECT(ug_op_max(NULL, a, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_dot(NULL, NULL, b, &r), UG_NULL_ARGUMENT);
  EXPECT(ug_op_dot(NULL, a, NULL, &r), UG_NULL_ARGUMENT);
  EXPECT(ug_op_dot(NULL, a, b, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_matmul(NULL, NULL, b, out, 2, 4, 2), UG_NULL_ARGUMENT);
  EXPECT(ug_op_matmul(NULL, a, NULL, out, 2, 4, 2), UG_NULL_ARGUMENT);
  EXPECT(ug_op_matmul(NULL, a, b, NULL, 2, 4, 2), UG_NULL_ARGUMENT);
  CHECK(r.dtype == UG_DTYPE_F32 && r.value.f32 == 0.0f);

  ug_array_free(a);
  ug_array_free(b);
  ug_array_free(out);
  ug_array_free(shorter);
  ug_array_free(d64);
  ug_array_free(i32);
  ug_array_free(i32b);
  ug_array_free(empty);
  ug_stream_free(s);
}

/* ---------------------------------------------------------------- main */


/* ---------------------------------------------------------------- DLPack */

/* A producer of host tensors written in C, as a C library would export
 * them: the data and shape are malloc'd, the deleter frees them and counts. */
typedef struct {
  float *data;
  int64_t shape[2];
  int64_t strides[2];
  int deleted;
} c_producer;

static c_producer g_producer;

static void c_deleter_versioned(DLManagedTensorVersioned *t) {
  c_producer *p = (c_producer *)t->manager_ctx;
  free(p->data);
  p->data = NULL;
  p->deleted++;
  free(t);
}

static void c_deleter_legacy(DLManagedTensor *t) {
  c_producer *p = (c_producer *)t->manager_ctx;
  free(p->data);
  p->data = NULL;
  p->deleted++;
  free(t);
}

/* A 2-D [rows, cols] float32 host tensor of random values (kept in `host`). */
static DLTensor c_tensor(size_t rows, size_t cols, float *host) {
  g_producer.data = (float *)malloc(rows * cols * sizeof(float) + 1);
  for (size_t i = 0; i < rows * cols; i++) {
    host[i] = (float)uniform(-100, 100);
    g_producer.data[i] = host[i];
  }
  g_producer.shape[0] = (int64_t)rows;
  g_producer.shape[1] = (int64_t)cols;
  g_producer.strides[0] = (int64_t)cols;
  g_producer.strides[1] = 1;
  g_producer.deleted = 0;
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = g_producer.data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = g_producer.shape;
  t.strides = g_producer.strides;
  t.byte_offset = 0;
  return t;
}

static DLManagedTensorVersioned *c_versioned(size_t rows, size_t cols, float *host) {
  DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)malloc(sizeof *m);
  m->version.major = 1;
  m->version.minor = 0;
  m->manager_ctx = &g_producer;
  m->deleter = c_deleter_versioned;
  m->flags = 0;
  m->dl_tensor = c_tensor(rows, cols, host);
  return m;
}

static DLManagedTensor *c_legacy(size_t rows, size_t cols, float *host) {
  DLManagedTensor *m = (DLManagedTensor *)malloc(sizeof *m);
  m->manager_ctx = &g_producer;
  m->deleter = c_deleter_legacy;
  m->dl_tensor = c_tensor(rows, cols, host);
  return m;
}

static void test_dlpack(ug_context *ctx) {
  int32_t dev_type = -7, dev_id = -7;
  OK(ug_context_dlpack_device(ctx, &dev_type, &dev_id));
  CHECK(dev_type == (int32_t)(g_backend == UG_BACKEND_CPU ? kDLCPU : kDLCUDA));
  CHECK(dev_id == 0);
  EXPECT(ug_context_dlpack_device(NULL, &dev_type, &dev_id), UG_NULL_ARGUMENT);
  EXPECT(ug_context_dlpack_device(ctx, NULL, &dev_id), UG_NULL_ARGUMENT);
  EXPECT(ug_context_dlpack_device(ctx, &dev_type, NULL), UG_NULL_ARGUMENT);

  /* Export, then import again: the same memory, alive after the free. */
  size_t n = rand_len(1, 5000);
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -1e3, 1e3);
  ug_array *a = upload(ctx, UG_DTYPE_F32, host, n);
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)SENTINEL;
  EXPECT(ug_array_to_dlpack(NULL, UG_DLPACK_SYNC_HOST, &t), UG_NULL_ARGUMENT);
  EXPECT(ug_array_to_dlpack(a, UG_DLPACK_SYNC_HOST, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_to_dlpack(a, -5, &t), UG_INVALID_ARGUMENT);
  if (g_backend == UG_BACKEND_CPU) EXPECT(ug_array_to_dlpack(a, 7, &t), UG_INVALID_ARGUMENT);
  CHECK(t == (DLManagedTensorVersioned *)SENTINEL);
  int64_t stream = g_backend == UG_BACKEND_CPU ? UG_DLPACK_SYNC_HOST : 1; /* CUDA: legacy stream */
  OK(ug_array_to_dlpack(a, stream, &t));
  CHECK(t->version.major == 1 && t->dl_tensor.ndim == 1 && t->dl_tensor.shape[0] == (int64_t)n);
  CHECK(t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 32 &&
        t->dl_tensor.dtype.lanes == 1);
  CHECK((int32_t)t->dl_tensor.device.device_type == dev_type && t->flags == 0);
  ug_array_free(a);
  if (g_backend == UG_BACKEND_CPU) {
    /* The export keeps the memory after the array is freed (valgrind checks the reads). */
    CHECK(memcmp(t->dl_tensor.data, host, n * sizeof(float)) == 0);
  }
  ug_array *b = NULL;
  OK(ug_array_from_dlpack(ctx, t, &b));
  float *back = (float *)download(b, UG_DTYPE_F32, n);
  CHECK(memcmp(back, host, n * sizeof(float)) == 0);
  free(back);
  ug_array_free(b);
  free(host);

  /* Our own export, through the consumer's deleter without an import. */
  a = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_U8, 16, &a));
  OK(ug_array_to_dlpack(a, UG_DLPACK_NO_SYNC, &t));
  ug_array_free(a);
  t->deleter(t);

  /* A C producer's tensors: wrong device on a GPU context, shared memory on the CPU. */
  size_t rows = rand_len(1, 40), cols = rand_len(1, 40);
  /* Also holds the 2x3 and 4x4 tensors of the rejection cases below. */
  size_t cap = rows * cols > 16 ? rows * cols : 16;
  float *expect = (float *)malloc(cap * sizeof(float));
  DLManagedTensorVersioned *ct = c_versioned(rows, cols, expect);
  b = (ug_array *)SENTINEL;
  if (g_backend != UG_BACKEND_CPU) {
    EXPECT(ug_array_from_dlpack(ctx, ct, &b), UG_DLPACK);
    CHECK(g_producer.deleted == 1 && b == (ug_array *)SENTINEL);
  } else {
    OK(ug_array_from_dlpack(ctx, ct, &b));
    size_t len = 0;
    OK(ug_array_len(b, &len));
    CHECK(len == rows * cols);
    float *seen = (float *)download(b, UG_DTYPE_F32, len);
    CHECK(memcmp(seen, expect, len * sizeof(float)) == 0);
    free(seen);
    /* Zero copy: an op on the imported array writes the producer's memory. */
    OK(ug_op_scale(NULL, ug_scalar_f32(2.0f), b));
    OK(ug_context_sync(ctx));
    int same = 1;
    for (size_t i = 0; i < len; i++) same &= g_producer.data[i] == 2.0f * expect[i];
    CHECK(same);
    CHECK(g_producer.deleted == 0);
    ug_array_free(b);
    CHECK(g_producer.deleted == 1);

    DLManagedTensor *lt = c_legacy(rows, cols, expect);
    OK(ug_array_from_dlpack_legacy(ctx, lt, &b));
    seen = (float *)download(b, UG_DTYPE_F32, rows * cols);
    CHECK(memcmp(seen, expect, rows * cols * sizeof(float)) == 0);
    free(seen);
    ug_array_free(b);
    CHECK(g_producer.deleted == 1);
  }

  /* Rejected tensors are consumed: deleted exactly once, nothing written. */
  EXPECT(ug_array_from_dlpack(ctx, NULL, &b), UG_NULL_ARGUMENT);
  EXPECT(ug_array_from_dlpack_legacy(ctx, NULL, &b), UG_NULL_ARGUMENT);
  for (int c = 0; c < 6; c++) {
    ct = c_versioned(2, 3, expect);
    ug_status want = UG_DLPACK;
    switch (c) {
      case 0: ct->version.major = 2; break;                    /* unknown major version */
      case 1: g_producer.strides[0] = -3; break;                 /* a negative stride */
      case 2: ct->flags = DLPACK_FLAG_BITMASK_READ_ONLY; break;  /* read-only */
      case 3: ct->dl_tensor.dtype.lanes = 4; break;            /* vector dtype */
      case 4: want = UG_NULL_ARGUMENT; break;                    /* NULL out */
      default: want = UG_NULL_ARGUMENT; break;                   /* NULL ctx */
    }
    b = (ug_array *)SENTINEL;
    EXPECT(ug_array_from_dlpack(c == 5 ? NULL : ctx, ct, c == 4 ? NULL : &b), want);
    CHECK(g_producer.deleted == 1 && b == (ug_array *)SENTINEL);
  }
  /* Column-major (strides 1, 2): taken with its strides, no copy (host
     memory: the CPU backend's). */
  if (g_backend == UG_BACKEND_CPU) {
    ct = c_versioned(2, 3, expect);
    g_producer.strides[0] = 1;
    g_producer.strides[1] = 2;
    OK(ug_array_from_dlpack(ctx, ct, &b));
    {
      size_t sh[2] = {0, 0};
      ptrdiff_t st[2] = {0, 0};
      OK(ug_array_shape(b, sh, 2));
      OK(ug_array_strides(b, st, 2));
      CHECK(sh[0] == 2 && sh[1] == 3 && st[0] == 1 && st[1] == 2);
      float *cm = (float *)download(b, UG_DTYPE_F32, 6);
      int ok = 1;
      for (size_t i = 0; i < 2; i++)
        for (size_t j = 0; j < 3; j++) ok &= cm[i * 3 + j] == expect[i + 2 * j];
      CHECK(ok);
      free(cm);
    }
    ug_array_free(b);
    CHECK(g_producer.deleted == 1);
  }
  DLManagedTensor *lt = c_legacy(4, 4, expect);
  lt->dl_tensor.dtype.bits = 64; /* claims f64 over f32 data of the same byte size: fine */
  lt->dl_tensor.shape[1] = 2;
  g_producer.strides[0] = 2;
  b = NULL;
  if (g_backend == UG_BACKEND_CPU) {
    OK(ug_array_from_dlpack_legacy(ctx, lt, &b));
    ug_dtype d = UG_DTYPE_F32;
    OK(ug_array_dtype(b, &d));
    CHECK(d == UG_DTYPE_F64);
    ug_array_free(b);
  } else {
    EXPECT(ug_array_from_dlpack_legacy(ctx, lt, &b), UG_DLPACK);
  }
  CHECK(g_producer.deleted == 1);
  free(expect);
}

/* DLPack re-import ordering: an array and its own export imported again are one array to the
 * ordering rules. The writing stream is held back by a kernel that touches only a scratch
 * array of its own: on the CPU a C kernel that spins until the test opens g_hold, on a GPU a
 * kernel that spins about a second of clock cycles. The write (a copy) is queued behind it, so
 * a read on another stream that does not wait sees the old data, every time. */
static const char *HOLD_SRC =
    "extern \"C\" __global__ void hold(float* scratch, long long cycles) {\n"
    "  long long t0 = clock64();\n"
    "  while (clock64() - t0 < cycles) {}\n"
    "  scratch[0] = 0.0f;\n"
    "}\n";

static int g_hold;           /* set (atomically) by the test to let hold_cpu go on */
static int g_hold_timed_out; /* hold_cpu gave up waiting for the test */

/* Seconds since an arbitrary start (C11 timespec_get: no POSIX sleep under -pedantic). */
static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits without sleeping (no POSIX sleep under -pedantic), yielding the CPU on each turn: under
 * valgrind, which runs one thread at a time, a spinning thread that never yields can keep the
 * thread it waits for from running at all. */
static void busy_wait_s(double seconds) {
  double end = now_s() + seconds;
  while (now_s() < end) sched_yield();
}

/* hold on the host: args (out f32 scratch, i64 cycles); waits for g_hold (30 s at most, then
 * records the timeout). */
static int32_t hold_cpu(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                        void *user_data, char *message, size_t message_len) {
  (void)grid;
  (void)user_data;
  if (n_args != 2 || args[0].len < 1) {
    snprintf(message, message_len, "hold takes a scratch array and a cycle count");
    return UG_INVALID_ARGUMENT;
  }
  double give_up = now_s() + 30.0;
  while (!__atomic_load_n(&g_hold, __ATOMIC_ACQUIRE)) {
    if (now_s() > give_up) {
      __atomic_store_n(&g_hold_timed_out, 1, __ATOMIC_RELEASE);
      break;
    }
    sched_yield(); /* lets the test's thread run under valgrind (see busy_wait_s) */
  }
  ((float *)args[0].data_mut)[0] = 0.0f;
  return UG_OK;
}

/* Copies `src` into `dst` on `s`, behind the hold kernel (the gate closed again first). */
static void held_copy(const ug_kernel *k, ug_stream *s, ug_array *scratch, const ug_array *src,
                      ug_array *dst) {
  __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
  ug_arg args[2];
  args[0] = ug_arg_out(scratch);
  args[1] = ug_arg_scalar(ug_scalar_i64(2000000000LL)); /* about 1 s on a GPU */
  ug_grid grid = ug_grid_for_elems(1);
  OK(ug_kernel_launch(k, NULL, s, &grid, args, 2));
  OK(ug_op_copy(s, src, dst));
}

/* Writes fresh data into `writer` on a held-back stream, then reads `reader` (the same memory
 * through the other handle) on a second stream and through a download: both must see it. */
static void held_write_then_read(ug_context *ctx, const ug_kernel *k, ug_array *writer,
                                 const ug_array *reader, size_t n, const char *what) {
  float *fresh = (float *)random_buf(UG_DTYPE_F32, n, -1e3, 1e3);
  ug_array *src = upload(ctx, UG_DTYPE_F32, fresh, n);
  ug_array *copy = NULL, *scratch = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &copy));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 1, &scratch));
  ug_stream *s1 = NULL, *s2 = NULL;
  OK(ug_stream_create(ctx, &s1));
  OK(ug_stream_create(ctx, &s2));
  OK(ug_context_sync(ctx));
  held_copy(k, s1, scratch, src, writer);
  OK(ug_op_copy(s2, reader, copy));
  busy_wait_s(0.2);
  bool idle = true;
  OK(ug_stream_query(s2, &idle));
  if (idle) printf("FAIL dlpack %s: the read finished while the write was held back\n", what);
  CHECK(!idle);
  __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
  float *seen = (float *)download(copy, UG_DTYPE_F32, n);
  float *direct = (float *)download(reader, UG_DTYPE_F32, n);
  size_t stale = 0;
  for (size_t i = 0; i < n; i++) stale += (seen[i] != fresh[i]) + (direct[i] != fresh[i]);
  if (stale) printf("FAIL dlpack %s: %zu stale elements\n", what, stale);
  CHECK(stale == 0);
  OK(ug_stream_sync(s1));
  CHECK(!__atomic_load_n(&g_hold_timed_out, __ATOMIC_ACQUIRE));
  free(seen);
  free(direct);
  free(fresh);
  ug_stream_free(s1);
  ug_stream_free(s2);
  ug_array_free(src);
  ug_array_free(copy);
  ug_array_free(scratch);
}

/* Opens g_hold after 0.2 s, from another thread (the main one is blocked in an export). */
static void *open_hold_later(void *unused) {
  (void)unused;
  busy_wait_s(0.2);
  __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void test_dlpack_ordering(ug_context *ctx) {
  ug_module *m = NULL;
  OK(ug_module_compile(ctx, HOLD_SRC, &m));
  ug_kernel *k = NULL, *hold = NULL;
  OK(ug_module_kernel(m, "hold", &k));
  OK(ug_kernel_with_cpu(k, hold_cpu, NULL, NULL, &hold));
  __atomic_store_n(&g_hold_timed_out, 0, __ATOMIC_RELEASE);

  size_t n = rand_len(1, 1 << 16);
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -1e3, 1e3);
  ug_array *a = upload(ctx, UG_DTYPE_F32, host, n);
  DLManagedTensorVersioned *t = NULL;
  OK(ug_array_to_dlpack(a, UG_DLPACK_SYNC_HOST, &t));
  ug_array *b = NULL;
  OK(ug_array_from_dlpack(ctx, t, &b));
  held_write_then_read(ctx, hold, b, a, n, "write through the re-import, read the original");
  held_write_then_read(ctx, hold, a, b, n, "write through the original, read the re-import");
  ug_array_free(b);

  /* UG_DLPACK_SYNC_HOST with a held-back write pending: the export returns once the write is
   * done, and a host consumer reads the tensor's memory directly (CPU: host memory). */
  if (g_backend == UG_BACKEND_CPU) {
    float *fresh = (float *)random_buf(UG_DTYPE_F32, n, -1e3, 1e3);
    ug_array *src = upload(ctx, UG_DTYPE_F32, fresh, n);
    ug_array *scratch = NULL;
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, 1, &scratch));
    ug_stream *s1 = NULL;
    OK(ug_stream_create(ctx, &s1));
    OK(ug_context_sync(ctx));
    held_copy(hold, s1, scratch, src, a);
    pthread_t opener;
    CHECK(pthread_create(&opener, NULL, open_hold_later, NULL) == 0);
    t = NULL;
    OK(ug_array_to_dlpack(a, UG_DLPACK_SYNC_HOST, &t));
    if (t != NULL) {
      int same = memcmp(t->dl_tensor.data, fresh, n * sizeof(float)) == 0;
      if (!same) printf("FAIL dlpack: a host export read stale data\n");
      CHECK(same);
      t->deleter(t);
    }
    pthread_join(opener, NULL);
    OK(ug_stream_sync(s1));
    CHECK(!__atomic_load_n(&g_hold_timed_out, __ATOMIC_ACQUIRE));
    ug_stream_free(s1);
    ug_array_free(src);
    ug_array_free(scratch);
    free(fresh);
  }
  ug_array_free(a);
  free(host);
  ug_kernel_free(hold);
  ug_kernel_free(k);
  ug_module_free(m);
}

/* Graphs: ops captured from a stream, replayed twice with new input in
   between; the input array is freed before the replays (the graph keeps
   its memory); work a replay cannot repeat is refused while capturing.
   The torch backend cannot capture and says so. */
static void test_graphs(ug_context *ctx) {
  ug_stream *s = NULL;
  OK(ug_stream_create(ctx, &s));
  ug_graph *g = (ug_graph *)SENTINEL;
  if (g_backend == UG_BACKEND_TORCH) {
    EXPECT(ug_stream_begin_capture(s), UG_UNSUPPORTED);
    ERROR_HAS("CUDAGraph");
    ug_stream_free(s);
    return;
  }
  EXPECT(ug_stream_end_capture(s, &g), UG_UNSUPPORTED);
  CHECK(g == SENTINEL);
  size_t n = rand_len(1000, 50000);
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -1, 1);
  ug_array *x = upload(ctx, UG_DTYPE_F32, host, n);
  ug_array *y = NULL, *z = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &y));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &z));
  OK(ug_context_sync(ctx));
  bool capturing = false;
  OK(ug_stream_begin_capture(s));
  OK(ug_stream_is_capturing(s, &capturing));
  CHECK(capturing);
  EXPECT(ug_stream_begin_capture(s), UG_UNSUPPORTED);
  ug_scalar total;
  EXPECT(ug_op_sum(s, x, &total), UG_UNSUPPORTED);
  OK(ug_op_relu(s, x, y));
  OK(ug_op_scale(s, ug_scalar_f32(2.0f), y));
  OK(ug_op_add(s, y, x, z));
  OK(ug_stream_end_capture(s, &g));
  OK(ug_stream_is_capturing(s, &capturing));
  CHECK(!capturing);
  size_t len = 0;
  OK(ug_graph_len(g, &len));
  CHECK(len >= 3);
  ug_array_free(x); /* the graph keeps x's memory */
  for (int round = 0; round < 2; round++) {
    OK(ug_graph_launch(g, s));
    OK(ug_stream_sync(s));
    float *back = (float *)download(z, UG_DTYPE_F32, n);
    int same = 1;
    for (size_t i = 0; i < n; i++) {
      float r = host[i] > 0 ? host[i] : 0.0f;
      same &= back[i] == r * 2.0f + host[i];
    }
    CHECK(same);
    free(back);
  }
  EXPECT(ug_graph_launch(NULL, s), UG_NULL_ARGUMENT);
  EXPECT(ug_graph_launch(g, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_graph_len(g, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_begin_capture(NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_end_capture(s, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_stream_is_capturing(s, NULL), UG_NULL_ARGUMENT);
  ug_graph_free(g);
  ug_graph_free(NULL);
  ug_array_free(y);
  ug_array_free(z);
  free(host);
  ug_stream_free(s);
}

/* ---------------------------------------------------------------- pinned buffers */
static void test_pinned(ug_context *ctx) {
  for (int t = 0; t < 9; t++) {
    uint32_t d = ALL_DTYPES[t];
    size_t es = ug_dtype_size(d);
    size_t n = rand_len(1, 3000);
    ug_pinned *src = NULL, *dst = NULL;
    OK(ug_pinned_new(ctx, d, n, &src));
    OK(ug_pinned_new(ctx, d, n, &dst));
    size_t len = 0;
    ug_dtype dt = UG_DTYPE_U8;
    OK(ug_pinned_len(src, &len));
    OK(ug_pinned_dtype(src, &dt));
    CHECK(len == n && (uint32_t)dt == d);
    const void *ro = NULL;
    OK(ug_pinned_data(src, &ro));
    int all_zero = 1;
    for (size_t i = 0; i < n * es; i++) all_zero &= ((const unsigned char *)ro)[i] == 0;
    CHECK(all_zero);
    void *host = random_buf(d, n, -100, 100);
    void *rw = NULL;
    OK(ug_pinned_data_mut(src, &rw));
    memcpy(rw, host, n * es);
    ug_stream *s = NULL;
    OK(ug_stream_create(ctx, &s));
    ug_array *a = NULL;
    OK(ug_array_zeros(ctx, d, n, &a));
    OK(ug_stream_upload_pinned(s, src, a));
    ug_array *b = NULL;
    OK(ug_array_zeros(ctx, d, n, &b));
    OK(ug_op_copy(s, a, b));
    OK(ug_stream_download_pinned(t % 2 ? s : NULL, b, dst));
    /* No sync: a download on b's default stream is ordered after the copy
       on s, and ug_pinned_data waits for the download. */
    OK(ug_pinned_data(dst, &ro));
    if (memcmp(ro, host, n * es) != 0) printf("FAIL pinned round trip of %s\n", DTYPE_NAMES[t]);
    CHECK(memcmp(ro, host, n * es) == 0);
    /* Writing the source waits for the upload; the array keeps what was uploaded. */
    OK(ug_pinned_data_mut(src, &rw));
    memset(rw, 0x5a, n * es);
    void *back = download(a, d, n);
    CHECK(memcmp(back, host, n * es) == 0);
    free(back);

    /* Mismatches are refused; nothing is copied. */
    uint32_t other = ALL_DTYPES[(t + 1) % 9];
    ug_pinned *wrong = NULL, *shorter = NULL;
    OK(ug_pinned_new(ctx, other, n, &wrong));
    OK(ug_pinned_new(ctx, d, n + 1, &shorter));
    EXPECT(ug_stream_upload_pinned(s, wrong, a), UG_DTYPE_MISMATCH);
    EXPECT(ug_stream_download_pinned(s, a, shorter), UG_SIZE_MISMATCH);
    EXPECT(ug_stream_upload_pinned(s, NULL, a), UG_NULL_ARGUMENT);
    ERROR_HAS("`src` is NULL");
    EXPECT(ug_stream_download_pinned(s, a, NULL), UG_NULL_ARGUMENT);
    EXPECT(ug_pinned_data(src, NULL), UG_NULL_ARGUMENT);
    EXPECT(ug_pinned_data_mut(NULL, &rw), UG_NULL_ARGUMENT);
    EXPECT(ug_pinned_len(NULL, &len), UG_NULL_ARGUMENT);
    EXPECT(ug_pinned_dtype(src, NULL), UG_NULL_ARGUMENT);
    ug_pinned *none = (ug_pinned *)SENTINEL;
    EXPECT(ug_pinned_new(ctx, 99, 4, &none), UG_INVALID_ARGUMENT);
    CHECK(none == (ug_pinned *)SENTINEL);
    EXPECT(ug_pinned_new(NULL, d, 4, &none), UG_NULL_ARGUMENT);

    free(host);
    ug_pinned_free(wrong);
    ug_pinned_free(shorter);
    ug_pinned_free(src);
    ug_pinned_free(dst);
    ug_array_free(a);
    ug_array_free(b);
    ug_stream_free(s);
  }
  ug_pinned_free(NULL);
}

/* ---------------------------------------------------------------- unified memory */
static void test_unified(ug_context *ctx) {
  ug_array *x = NULL;
  size_t n = rand_len(1, 5000);
  ug_status st = ug_array_alloc_unified(ctx, UG_DTYPE_F32, n, &x);
  if (g_backend == UG_BACKEND_TORCH) {
    /* torch's caching allocator has no managed memory: refused, with the way out. */
    EXPECT(st, UG_UNSUPPORTED);
    ERROR_HAS("alloc_unified");
    CHECK(x == NULL);
    return;
  }
  EXPECT(st, UG_OK);
  bool unified = false;
  OK(ug_array_is_unified(x, &unified));
  CHECK(unified);

  /* Zeroed; written in place from the host; used by ops on a stream. */
  const void *ro = NULL;
  OK(ug_array_host_view(x, &ro));
  int all_zero = 1;
  for (size_t i = 0; i < n; i++) all_zero &= ((const float *)ro)[i] == 0.0f;
  CHECK(all_zero);
  void *rw = NULL;
  OK(ug_array_host_view_mut(x, &rw));
  float *hx = (float *)random_buf(UG_DTYPE_F32, n, -100, 100);
  float *hy = (float *)random_buf(UG_DTYPE_F32, n, -100, 100);
  memcpy(rw, hx, n * sizeof(float));
  ug_array *y = upload(ctx, UG_DTYPE_F32, hy, n);
  ug_array *out = NULL;
  OK(ug_array_alloc_unified(ctx, UG_DTYPE_F32, n, &out));
  ug_stream *s = NULL;
  OK(ug_stream_create(ctx, &s));
  OK(ug_stream_prefetch(s, x, UG_LOCATION_DEVICE));
  OK(ug_stream_prefetch(NULL, out, UG_LOCATION_DEVICE));
  OK(ug_op_add(s, x, y, out));
  OK(ug_stream_prefetch(s, out, UG_LOCATION_HOST));
  /* No sync: the view waits for the add. */
  OK(ug_array_host_view(out, &ro));
  int same = 1;
  for (size_t i = 0; i < n; i++) same &= ((const float *)ro)[i] == hx[i] + hy[i];
  CHECK(same);

  /* An ordinary array has no host view; nothing is written on failure. */
  ro = SENTINEL;
  EXPECT(ug_array_host_view(y, &ro), UG_UNSUPPORTED);
  ERROR_HAS("alloc_unified");
  CHECK(ro == SENTINEL);
  OK(ug_array_is_unified(y, &unified));
  CHECK(!unified);
  EXPECT(ug_array_host_view_mut(y, &rw), UG_UNSUPPORTED);
  EXPECT(ug_stream_prefetch(s, y, UG_LOCATION_HOST), UG_UNSUPPORTED);
  EXPECT(ug_stream_prefetch(s, x, 7), UG_INVALID_ARGUMENT);
  ERROR_HAS("ug_location");
  EXPECT(ug_stream_prefetch(s, NULL, UG_LOCATION_HOST), UG_NULL_ARGUMENT);
  EXPECT(ug_array_host_view(x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_host_view_mut(NULL, &rw), UG_NULL_ARGUMENT);
  EXPECT(ug_array_alloc_unified(ctx, 99, 4, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_alloc_unified(NULL, UG_DTYPE_F32, 4, &out), UG_NULL_ARGUMENT);

  /* More than the device has free: refused, with the free bytes. */
  size_t free_bytes = 0, total = 0;
  OK(ug_context_memory_info(ctx, &free_bytes, &total));
  ug_array *huge = NULL;
  EXPECT(ug_array_alloc_unified(ctx, UG_DTYPE_U8, total + 1, &huge), UG_OUT_OF_MEMORY);
  ERROR_HAS("bytes free");
  CHECK(huge == NULL);

  free(hx);
  free(hy);
  ug_stream_free(s);
  ug_array_free(x);
  ug_array_free(y);
  ug_array_free(out);
}

/* ----------------------------------------------------------- error texts */

/* The same mistakes give the same text through Rust, C and Python:
 * tests/error_texts.txt (beside this file's folder) lists each one; its
 * format is in crates/unigpu/tests/error_texts.rs. */
static void test_error_texts(void) {
  char path[4096], line[4096], file[160], want[4096], got[4096];
  const char *src = __FILE__, *slash = strrchr(src, '/');
  if (slash == NULL) snprintf(path, sizeof path, "../error_texts.txt");
  else snprintf(path, sizeof path, "%.*s/../error_texts.txt", (int)(slash - src), src);
  FILE *cases = fopen(path, "r");
  if (cases == NULL) {
    printf("FAIL cannot open %s\n", path);
    g_failed++;
    return;
  }
  int n = 0;
  while (fgets(line, sizeof line, cases) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0' || line[0] == '#') continue;
    char *name = line, *given = strchr(name, '\t'), *text = NULL;
    if (given != NULL) {
      *given++ = '\0';
      text = strchr(given, '\t');
    }
    if (text == NULL) {
      printf("FAIL %s: a line without three tab-separated fields\n", path);
      g_failed++;
      continue;
    }
    *text++ = '\0';
    n++;
    ug_context *ctx = (ug_context *)SENTINEL;
    ug_status st;
    file[0] = '\0';
    if (strncmp(name, "config_", 7) == 0) {
      snprintf(file, sizeof file, "/tmp/unigpu-error-texts-%llu-%.64s.toml",
               (unsigned long long)(next_u64() % 1000000007u), name);
      FILE *f = fopen(file, "w");
      if (f == NULL) {
        printf("FAIL cannot write %s\n", file);
        g_failed++;
        continue;
      }
      for (const char *c = given; *c != '\0'; c++) {
        if (c[0] == '\\' && c[1] == 'n') {
          fputc('\n', f);
          c++;
        } else {
          fputc(*c, f);
        }
      }
      fclose(f);
      st = ug_context_from_config_file(file, &ctx);
      remove(file);
    } else if (strcmp(name, "cpu_device_1") == 0) {
      st = ug_context_new(UG_BACKEND_CPU, 1, &ctx);
    } else {
      printf("FAIL unknown case %s: add it to every binding's test\n", name);
      g_failed++;
      continue;
    }
    /* The listed text with {file} replaced by the file's path. */
    size_t w = 0;
    for (const char *c = text; *c != '\0' && w + 1 < sizeof want;) {
      if (strncmp(c, "{file}", 6) == 0) {
        w += (size_t)snprintf(want + w, sizeof want - w, "%s", file);
        c += 6;
      } else {
        want[w++] = *c++;
      }
    }
    want[w < sizeof want ? w : sizeof want - 1] = '\0';
    ug_last_error_message(got, sizeof got);
    if (st == UG_OK || ctx != (ug_context *)SENTINEL || strcmp(got, want) != 0) {
      printf("FAIL error text of %s: status %s, got\n  %s\nlisted\n  %s\n", name,
             ug_status_name(st), got, want);
      g_failed++;
    } else {
      g_passed++;
    }
  }
  fclose(cases);
  if (n < 4) {
    printf("FAIL %s lists %d cases\n", path, n);
    g_failed++;
  }
}

/* Shapes and views (issue 28): arrays of a shape, views that share the
   memory (reshape, transpose, slice with a step, index), ops on views with
   broadcasting, mm with a transposed operand; every element against the
   host's own indexing. */
static void test_shapes(ug_context *ctx) {
  size_t r = rand_len(2, 9), c = rand_len(2, 17);
  float *h = (float *)random_buf(UG_DTYPE_F32, r * c, -10, 10);
  ug_array *flat = upload(ctx, UG_DTYPE_F32, h, r * c);
  size_t shape[2] = {r, c}, got[2] = {0, 0}, ndim = 0;
  ptrdiff_t strides[2] = {0, 0};
  ug_array *a = NULL, *t = NULL, *s = NULL, *row = NULL, *tc = NULL;
  OK(ug_array_reshape(flat, shape, 2, &a));
  OK(ug_array_ndim(a, &ndim));
  OK(ug_array_shape(a, got, 2));
  OK(ug_array_strides(a, strides, 2));
  CHECK(ndim == 2 && got[0] == r && got[1] == c && strides[0] == (ptrdiff_t)c && strides[1] == 1);
  EXPECT(ug_array_shape(a, got, 1), UG_INVALID_ARGUMENT);

  /* Transposed: element (j, i) is h[i*c + j]. */
  OK(ug_array_transpose(a, NULL, 0, &t));
  OK(ug_array_shape(t, got, 2));
  CHECK(got[0] == c && got[1] == r);
  float *tb = (float *)download(t, UG_DTYPE_F32, r * c);
  int ok = 1;
  for (size_t j = 0; j < c; j++)
    for (size_t i = 0; i < r; i++) ok &= tb[j * r + i] == h[i * c + j];
  CHECK(ok);
  int contiguous = 1;
  OK(ug_array_is_contiguous(t, &contiguous));
  CHECK(contiguous == 0);
  /* A transposed view cannot be flattened without a copy: both shapes named. */
  size_t n1 = r * c;
  ug_array *bad = NULL;
  EXPECT(ug_array_reshape(t, &n1, 1, &bad), UG_SIZE_MISMATCH);
  CHECK(bad == NULL);
  char want[64];
  snprintf(want, sizeof want, "[%zu, %zu]", c, r);
  ERROR_HAS(want);
  OK(ug_array_contiguous(t, &tc));
  OK(ug_array_is_contiguous(tc, &contiguous));
  CHECK(contiguous == 1);
  float *tcb = (float *)download(tc, UG_DTYPE_F32, r * c);
  CHECK(memcmp(tcb, tb, r * c * sizeof(float)) == 0);

  /* Columns c-1, c-3, ... (a negative step) of row r-1. */
  OK(ug_array_index(a, 0, r - 1, &row));
  OK(ug_array_slice(row, 0, 0, c, -2, &s));
  size_t ns = (c + 1) / 2;
  float *sb = (float *)download(s, UG_DTYPE_F32, ns);
  ok = 1;
  for (size_t k = 0; k < ns; k++) ok &= sb[k] == h[(r - 1) * c + (c - 1 - 2 * k)];
  CHECK(ok);
  EXPECT(ug_array_slice(row, 0, 0, c, 0, &bad), UG_SIZE_MISMATCH);
  EXPECT(ug_array_index(a, 2, 0, &bad), UG_SIZE_MISMATCH);

  /* Broadcasting: a (r x c) + its own last row (1 x c) into a new array. */
  ug_array *out = NULL, *row2 = NULL;
  size_t one_row[2] = {1, c};
  OK(ug_array_reshape(row, one_row, 2, &row2));
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_F32, shape, 2, &out));
  OK(ug_op_add(NULL, a, row2, out));
  float *ob = (float *)download(out, UG_DTYPE_F32, r * c);
  ok = 1;
  for (size_t i = 0; i < r; i++)
    for (size_t j = 0; j < c; j++) ok &= ob[i * c + j] == h[i * c + j] + h[(r - 1) * c + j];
  CHECK(ok);
  /* Writing through a view reaches the array: relu into the transpose. */
  ug_array *outt = NULL;
  OK(ug_array_transpose(out, NULL, 0, &outt));
  OK(ug_op_relu(NULL, t, outt));
  float *rb = (float *)download(out, UG_DTYPE_F32, r * c);
  ok = 1;
  for (size_t i = 0; i < r * c; i++) ok &= rb[i] == (h[i] > 0 ? h[i] : 0.0f);
  CHECK(ok);

  /* mm: a (r x c) times a^T (c x r) through the view, against doubles. */
  ug_array *m = NULL;
  size_t mshape[2] = {r, r};
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_F32, mshape, 2, &m));
  OK(ug_op_mm(NULL, a, t, m));
  float *mb = (float *)download(m, UG_DTYPE_F32, r * r);
  ok = 1;
  for (size_t i = 0; i < r; i++)
    for (size_t j = 0; j < r; j++) {
      double want_ij = 0, scale = 0;
      for (size_t k = 0; k < c; k++) {
        want_ij += (double)h[i * c + k] * h[j * c + k];
        scale += fabs((double)h[i * c + k] * h[j * c + k]);
      }
      ok &= fabs(mb[i * r + j] - want_ij) <= 1e-5 * scale + 1e-30;
    }
  CHECK(ok);
  EXPECT(ug_op_mm(NULL, a, a, m), r == c ? UG_OK : UG_SIZE_MISMATCH);

  /* Batched: x (g+1, r, c); out[z] = x[z+1] · x[z+1]^T for z < g, through a
     batch slice (an offset) and its transposed matrices (no copy), against
     doubles. A 3-D out of the wrong shape names the shapes. */
  size_t g = rand_len(1, 4), x3[3] = {g + 1, r, c}, perm[3] = {0, 2, 1}, o3[3] = {g, r, r};
  float *hx = (float *)random_buf(UG_DTYPE_F32, (g + 1) * r * c, -10, 10);
  ug_array *xflat = upload(ctx, UG_DTYPE_F32, hx, (g + 1) * r * c);
  ug_array *x = NULL, *xs = NULL, *xst = NULL, *bo = NULL, *bad3 = NULL;
  OK(ug_array_reshape(xflat, x3, 3, &x));
  OK(ug_array_slice(x, 0, 1, g + 1, 1, &xs));
  OK(ug_array_transpose(xs, perm, 3, &xst));
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_F32, o3, 3, &bo));
  OK(ug_op_mm(NULL, xs, xst, bo));
  float *bb = (float *)download(bo, UG_DTYPE_F32, g * r * r);
  ok = 1;
  for (size_t z = 0; z < g; z++)
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < r; j++) {
        const float *xi = hx + ((z + 1) * r + i) * c, *xj = hx + ((z + 1) * r + j) * c;
        double want_ij = 0, scale = 0;
        for (size_t k = 0; k < c; k++) {
          want_ij += (double)xi[k] * xj[k];
          scale += fabs((double)xi[k] * xj[k]);
        }
        ok &= fabs(bb[(z * r + i) * r + j] - want_ij) <= 1e-5 * scale + 1e-30;
      }
  CHECK(ok);
  size_t o3bad[3] = {g, r + 1, r}; /* m is r, not r + 1 (a batch of one would broadcast) */
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_F32, o3bad, 3, &bad3));
  EXPECT(ug_op_mm(NULL, xs, xst, bad3), UG_SIZE_MISMATCH);
  ERROR_HAS("bmm");

  free(h), free(tb), free(tcb), free(sb), free(ob), free(rb), free(mb), free(hx), free(bb);
  ug_array *all[] = {flat, a, t, s, row, tc, out, row2, outt, m, xflat, x, xs, xst, bo, bad3};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ug_array_free(all[i]);
}

/* Reductions over axes, softmax and the generator (issue 28), against the
   host's own loops. */
static void test_reductions_and_random(ug_context *ctx) {
  size_t r = rand_len(1, 6), c = rand_len(1, 400);
  size_t shape[2] = {r, c};
  ug_generator *g = NULL, *g2 = NULL;
  OK(ug_generator_new(42, &g));
  ug_array *x = NULL, *again = NULL;
  OK(ug_generator_normal(g, ctx, UG_DTYPE_F32, shape, 2, 0.0, 2.0, &x));
  uint64_t off = 0;
  OK(ug_generator_offset(g, &off));
  CHECK(off >= r * c);
  OK(ug_generator_set_offset(g, 0));
  OK(ug_generator_normal(g, ctx, UG_DTYPE_F32, shape, 2, 0.0, 2.0, &again));
  float *h = (float *)download(x, UG_DTYPE_F32, r * c);
  float *h2 = (float *)download(again, UG_DTYPE_F32, r * c);
  CHECK(memcmp(h, h2, r * c * sizeof(float)) == 0);
  OK(ug_generator_new(42, &g2));
  ug_array *u = NULL;
  OK(ug_generator_uniform(g2, ctx, UG_DTYPE_F64, shape, 2, &u));
  double *hu = (double *)download(u, UG_DTYPE_F64, r * c);
  int ok = 1;
  for (size_t i = 0; i < r * c; i++) ok &= hu[i] >= 0.0 && hu[i] < 1.0;
  CHECK(ok);
  EXPECT(ug_generator_randint(g2, ctx, UG_DTYPE_I32, shape, 2, 5, 5, &u), UG_KERNEL_ARGS);

  /* Sums over axis 1, argmax over axis 1. */
  ug_array *s = NULL, *am = NULL, *sm = NULL;
  size_t axis1 = 1;
  OK(ug_op_reduce_axes(NULL, UG_AXES_OP_SUM, x, &axis1, 1, 0, &s));
  OK(ug_op_reduce_axes(NULL, UG_AXES_OP_ARG_MAX, x, &axis1, 1, 0, &am));
  float *hs = (float *)download(s, UG_DTYPE_F32, r);
  uint32_t *ham = (uint32_t *)download(am, UG_DTYPE_U32, r);
  ok = 1;
  for (size_t i = 0; i < r; i++) {
    double want = 0, scale = 0;
    size_t best = 0;
    for (size_t j = 0; j < c; j++) {
      want += h[i * c + j];
      scale += fabs(h[i * c + j]);
      if (h[i * c + j] > h[i * c + best]) best = j;
    }
    ok &= fabs(hs[i] - want) <= 1e-6 * scale * (double)c + 1e-30;
    ok &= ham[i] == best;
  }
  CHECK(ok);
  size_t bad_axis = 2;
  EXPECT(ug_op_reduce_axes(NULL, UG_AXES_OP_SUM, x, &bad_axis, 1, 0, &sm), UG_SIZE_MISMATCH);
  EXPECT(ug_op_reduce_axes(NULL, 9, x, NULL, 0, 0, &sm), UG_INVALID_ARGUMENT);

  /* Softmax rows sum to 1. */
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_F32, shape, 2, &sm));
  OK(ug_op_softmax(NULL, x, 1, 0, sm));
  float *hsm = (float *)download(sm, UG_DTYPE_F32, r * c);
  ok = 1;
  for (size_t i = 0; i < r; i++) {
    double m = -INFINITY, total = 0;
    for (size_t j = 0; j < c; j++) m = fmax(m, h[i * c + j]);
    for (size_t j = 0; j < c; j++) total += exp(h[i * c + j] - m);
    for (size_t j = 0; j < c; j++) {
      double want = exp(h[i * c + j] - m) / total;
      ok &= fabs(hsm[i * c + j] - want) <= 1e-5 * want + 1e-7;
    }
  }
  CHECK(ok);

  free(h), free(h2), free(hu), free(hs), free(ham), free(hsm);
  ug_array *all[] = {x, again, u, s, am, sm};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ug_array_free(all[i]);
  ug_generator_free(g);
  ug_generator_free(g2);
  ug_generator_free(NULL);
}

/* ---------------------------------------------------------------- math ops, creators, casts (issue 28) */

/* Whether `got` is within the math ops' bound of the exact `want`: k ulps
 * of d (f16/bf16: one of their ulps, the final rounding, plus k of the f32
 * they are computed in), relative to |want| + mag (mag: the scale of the
 * op's absolute error, e.g. |x| for gelu's cancellation near 0). */
static int math_close(uint32_t d, double got, double want, double mag) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  double k = g_backend == UG_BACKEND_CPU ? 8 : 32;
  double tol = (d == UG_DTYPE_F16 || d == UG_DTYPE_BF16) ? eps_of(d) + k * eps_of(UG_DTYPE_F32)
                                                         : k * eps_of(d);
  return fabs(got - want) <= tol * (fabs(want) + mag) + subnormal_step_of(d);
}

/* ug_unary_op `op` of `x`, exactly (in double). */
static double ref_unary(uint32_t op, double x) {
  switch (op) {
  case UG_UNARY_OP_RELU: return x > 0 ? x : 0;
  case UG_UNARY_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case UG_UNARY_OP_TANH: return tanh(x);
  case UG_UNARY_OP_NEG: return -x;
  case UG_UNARY_OP_ABS: return fabs(x);
  case UG_UNARY_OP_FLOOR: return floor(x);
  case UG_UNARY_OP_CEIL: return ceil(x);
  case UG_UNARY_OP_ROUND: return nearbyint(x); /* halves to even */
  case UG_UNARY_OP_EXP: return exp(x);
  case UG_UNARY_OP_LOG: return log(x);
  case UG_UNARY_OP_SQRT: return sqrt(x);
  case UG_UNARY_OP_RSQRT: return 1.0 / sqrt(x);
  case UG_UNARY_OP_SIN: return sin(x);
  case UG_UNARY_OP_COS: return cos(x);
  case UG_UNARY_OP_GELU:
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  default: return x / (1.0 + exp(-x)); /* silu */
  }
}

/* The ops whose result is exact (the input itself, or one rounding that
 * every backend does the same). */
static int unary_exact(uint32_t op) {
  return op == UG_UNARY_OP_RELU || op == UG_UNARY_OP_NEG || op == UG_UNARY_OP_ABS ||
         op == UG_UNARY_OP_FLOOR || op == UG_UNARY_OP_CEIL || op == UG_UNARY_OP_ROUND;
}

/* A new (rows x cols) array of dtype d holding `host`. */
static ug_array *upload_2d(const ug_context *ctx, uint32_t d, const void *host, size_t rows,
                           size_t cols) {
  ug_array *flat = upload(ctx, d, host, rows * cols), *a = NULL;
  size_t shape[2] = {rows, cols};
  OK(ug_array_reshape(flat, shape, 2, &a));
  ug_array_free(flat);
  return a;
}

/* Every ug_unary_op, clamp and pow_scalar, of a transposed view into a new
 * array, every element against the host. */
static void check_unary_ops(ug_context *ctx, uint32_t d) {
  for (uint32_t op = 0; op <= (uint32_t)UG_UNARY_OP_SILU + 2; op++) {
    /* op SILU + 1 is clamp, SILU + 2 pow_scalar. */
    int clamp = op == (uint32_t)UG_UNARY_OP_SILU + 1, pw = op == (uint32_t)UG_UNARY_OP_SILU + 2;
    size_t r = rand_len(1, 12), c = rand_len(1, 40), n = r * c;
    int positive = op == UG_UNARY_OP_LOG || op == UG_UNARY_OP_SQRT || op == UG_UNARY_OP_RSQRT || pw;
    void *h = random_buf(d, n, positive ? 0.05 : -4, positive ? 8 : 4);
    ug_array *x = upload_2d(ctx, d, h, r, c), *xt = NULL, *out = NULL;
    OK(ug_array_transpose(x, NULL, 0, &xt));
    size_t tshape[2] = {c, r};
    OK(ug_array_zeros_nd(ctx, d, tshape, 2, &out));
    double lo = round_to(d, uniform(-3, 0)), hi = round_to(d, uniform(0, 3));
    double p = round_to(d, uniform(-3, 3));
    if (clamp) OK(ug_op_clamp(NULL, xt, scalar_of(d, lo), scalar_of(d, hi), out));
    else if (pw) OK(ug_op_pow_scalar(NULL, xt, scalar_of(d, p), out));
    else OK(ug_op_unary(NULL, op, xt, out));
    void *got = download(out, d, n);
    size_t bad = 0;
    for (size_t j = 0; j < c; j++)
      for (size_t i = 0; i < r; i++) {
        double xv = get_elem(d, h, i * c + j), g = get_elem(d, got, j * r + i);
        int ok;
        if (clamp) ok = g == fmin(fmax(xv, lo), hi);
        else if (pw) ok = math_close(d, g, pow(xv, p), 0);
        else if (unary_exact(op)) ok = g == ref_unary(op, xv);
        else if (op == UG_UNARY_OP_SQRT && g_backend == UG_BACKEND_CPU)
          ok = g == (d == UG_DTYPE_F64 ? sqrt(xv) : round_to(d, sqrtf((float)xv)));
        else {
          double mag = op == UG_UNARY_OP_GELU || op == UG_UNARY_OP_SILU ? fabs(xv)
                       : op == UG_UNARY_OP_LOG || op == UG_UNARY_OP_SIN || op == UG_UNARY_OP_COS ? 1
                                                                                                 : 0;
          ok = math_close(d, g, ref_unary(op, xv), mag);
        }
        if (!ok && bad++ < 3)
          printf("FAIL unary op %u on %s: x = %.17g gave %.17g\n", op, DTYPE_NAMES[d], xv, g);
      }
    CHECK(bad == 0);
    free(h), free(got);
    ug_array_free(x), ug_array_free(xt), ug_array_free(out);
  }
}

/* ug_binary_op `op` of a and b, as the library computes it: add, sub, mul
 * and div in the dtype's precision (f32 for f16/bf16, then rounded once). */
static double ref_binary(uint32_t d, uint32_t op, double a, double b) {
  if (op == UG_BINARY_OP_MINIMUM) return fmin(a, b);
  if (op == UG_BINARY_OP_MAXIMUM) return fmax(a, b);
  if (op == UG_BINARY_OP_POW) return pow(a, b);
  if (d == UG_DTYPE_F64) {
    switch (op) {
    case UG_BINARY_OP_ADD: return a + b;
    case UG_BINARY_OP_SUB: return a - b;
    case UG_BINARY_OP_MUL: return a * b;
    default: return a / b;
    }
  }
  float fa = (float)a, fb = (float)b, r;
  switch (op) {
  case UG_BINARY_OP_ADD: r = fa + fb; break;
  case UG_BINARY_OP_SUB: r = fa - fb; break;
  case UG_BINARY_OP_MUL: r = fa * fb; break;
  default: r = fa / fb; break;
  }
  return round_to(d, r);
}

/* Every ug_binary_op of a (r x c) and b (c), broadcast along the rows. */
static void check_binary_ops(ug_context *ctx, uint32_t d) {
  for (uint32_t op = 0; op <= (uint32_t)UG_BINARY_OP_POW; op++) {
    size_t r = rand_len(1, 12), c = rand_len(1, 40);
    int pw = op == UG_BINARY_OP_POW, dv = op == UG_BINARY_OP_DIV;
    void *ha = random_buf(d, r * c, pw ? 0.1 : -4, 4);
    void *hb = random_buf(d, c, pw ? -3 : dv ? 0.25 : -4, pw ? 3 : 4);
    if (dv)
      for (size_t j = 0; j < c; j += 2) set_elem(d, hb, j, -get_elem(d, hb, j));
    ug_array *a = upload_2d(ctx, d, ha, r, c), *b = upload(ctx, d, hb, c), *out = NULL;
    size_t shape[2] = {r, c};
    OK(ug_array_zeros_nd(ctx, d, shape, 2, &out));
    OK(ug_op_binary(NULL, op, a, b, out));
    void *got = download(out, d, r * c);
    int exact = !pw && !(dv && g_backend != UG_BACKEND_CPU);
    size_t bad = 0;
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < c; j++) {
        double av = get_elem(d, ha, i * c + j), bv = get_elem(d, hb, j);
        double g = get_elem(d, got, i * c + j), want = ref_binary(d, op, av, bv);
        int ok = exact ? g == want : math_close(d, g, want, 0);
        if (!ok && bad++ < 3)
          printf("FAIL binary op %u on %s: %.17g, %.17g gave %.17g, want %.17g\n", op,
                 DTYPE_NAMES[d], av, bv, g, want);
      }
    CHECK(bad == 0);
    free(ha), free(hb), free(got);
    ug_array_free(a), ug_array_free(b), ug_array_free(out);
  }
}

/* Every ug_compare_op of a (r x c) and b (c) with ties and a NaN, then
 * where(mask, a, b2) with b2 (r x 1) broadcast along the columns. */
static void check_compare_where(ug_context *ctx, uint32_t d) {
  size_t r = rand_len(2, 12), c = rand_len(1, 40);
  void *ha = random_buf(d, r * c, -4, 4), *hb = random_buf(d, c, -4, 4);
  for (size_t j = 0; j < c; j += 2) set_elem(d, hb, j, get_elem(d, ha, j)); /* ties in row 0 */
  set_elem(d, ha, r * c - 1, NAN);
  void *hb2 = random_buf(d, r, -4, 4);
  ug_array *a = upload_2d(ctx, d, ha, r, c), *b = upload(ctx, d, hb, c);
  ug_array *b2 = upload_2d(ctx, d, hb2, r, 1);
  ug_array *mask = NULL, *out = NULL;
  size_t shape[2] = {r, c};
  OK(ug_array_zeros_nd(ctx, UG_DTYPE_U8, shape, 2, &mask));
  OK(ug_array_zeros_nd(ctx, d, shape, 2, &out));
  for (uint32_t op = 0; op <= (uint32_t)UG_COMPARE_OP_NE; op++) {
    OK(ug_op_compare(NULL, op, a, b, mask));
    uint8_t *m = (uint8_t *)download(mask, UG_DTYPE_U8, r * c);
    size_t bad = 0;
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < c; j++) {
        double av = get_elem(d, ha, i * c + j), bv = get_elem(d, hb, j);
        int want;
        switch (op) {
        case UG_COMPARE_OP_LT: want = av < bv; break;
        case UG_COMPARE_OP_LE: want = av <= bv; break;
        case UG_COMPARE_OP_GT: want = av > bv; break;
        case UG_COMPARE_OP_GE: want = av >= bv; break;
        case UG_COMPARE_OP_EQ: want = av == bv; break;
        default: want = av != bv; break;
        }
        if (m[i * c + j] != want && bad++ < 3)
          printf("FAIL compare op %u on %s: %g, %g gave %u\n", op, DTYPE_NAMES[d], av, bv,
                 m[i * c + j]);
      }
    CHECK(bad == 0);
    if (op == UG_COMPARE_OP_GT) {
      OK(ug_op_where(NULL, mask, a, b2, out));
      void *got = download(out, d, r * c);
      bad = 0;
      for (size_t i = 0; i < r; i++)
        for (size_t j = 0; j < c; j++) {
          double want = m[i * c + j] ? get_elem(d, ha, i * c + j) : get_elem(d, hb2, i);
          double g = get_elem(d, got, i * c + j);
          if (!(g == want || (isnan(g) && isnan(want)))) bad++;
        }
      CHECK(bad == 0);
      free(got);
    }
    free(m);
  }
  free(ha), free(hb), free(hb2);
  ug_array_free(a), ug_array_free(b), ug_array_free(b2), ug_array_free(mask), ug_array_free(out);
}

/* The errors of the element-wise ops: each leaves `out` as it was. */
static void check_math_errors(ug_context *ctx) {
  size_t n = rand_len(2, 50);
  float *h = (float *)random_buf(UG_DTYPE_F32, n, -4, 4);
  ug_array *x = upload(ctx, UG_DTYPE_F32, h, n), *out = upload(ctx, UG_DTYPE_F32, h, n);
  ug_array *x64 = NULL, *xi = NULL, *mask = NULL, *longer = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F64, n, &x64));
  OK(ug_array_zeros(ctx, UG_DTYPE_I32, n, &xi));
  OK(ug_array_zeros(ctx, UG_DTYPE_U8, n, &mask));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n + 1, &longer));
  EXPECT(ug_op_unary(NULL, 16, x, out), UG_INVALID_ARGUMENT);
  ERROR_HAS("ug_unary_op");
  EXPECT(ug_op_binary(NULL, 7, x, x, out), UG_INVALID_ARGUMENT);
  ERROR_HAS("ug_binary_op");
  EXPECT(ug_op_compare(NULL, 6, x, x, mask), UG_INVALID_ARGUMENT);
  ERROR_HAS("ug_compare_op");
  EXPECT(ug_op_unary(NULL, UG_UNARY_OP_EXP, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_unary(NULL, UG_UNARY_OP_EXP, x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_binary(NULL, UG_BINARY_OP_DIV, x, NULL, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_compare(NULL, UG_COMPARE_OP_LT, x, x, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_op_where(NULL, NULL, x, x, out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_clamp(NULL, NULL, ug_scalar_f32(0), ug_scalar_f32(1), out), UG_NULL_ARGUMENT);
  EXPECT(ug_op_pow_scalar(NULL, x, ug_scalar_f32(2), NULL), UG_NULL_ARGUMENT);
  /* Integers are not taken by the math ops. */
  EXPECT(ug_op_unary(NULL, UG_UNARY_OP_NEG, xi, xi), UG_UNSUPPORTED);
  /* Every operand, scalars included, has the first one's dtype. */
  EXPECT(ug_op_binary(NULL, UG_BINARY_OP_DIV, x, x64, out), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_unary(NULL, UG_UNARY_OP_SIN, x, x64), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_clamp(NULL, x, ug_scalar_f64(0), ug_scalar_f64(1), out), UG_DTYPE_MISMATCH);
  EXPECT(ug_op_pow_scalar(NULL, x, ug_scalar_i32(2), out), UG_DTYPE_MISMATCH);
  ug_scalar bad_scalar = ug_scalar_f32(1);
  bad_scalar.dtype = 77;
  EXPECT(ug_op_clamp(NULL, x, ug_scalar_f32(0), bad_scalar, out), UG_INVALID_ARGUMENT);
  EXPECT(ug_op_compare(NULL, UG_COMPARE_OP_EQ, x, x, out), UG_DTYPE_MISMATCH); /* f32 mask */
  EXPECT(ug_op_where(NULL, x, x, x, out), UG_DTYPE_MISMATCH);                  /* f32 mask */
  /* Shapes that do not broadcast: both named. */
  EXPECT(ug_op_binary(NULL, UG_BINARY_OP_MAXIMUM, x, longer, out), UG_SIZE_MISMATCH);
  char want[64];
  snprintf(want, sizeof want, "[%zu]", n + 1);
  ERROR_HAS(want);
  EXPECT(ug_op_where(NULL, mask, x, longer, out), UG_SIZE_MISMATCH);
  EXPECT(ug_op_unary(NULL, UG_UNARY_OP_COS, longer, out), UG_SIZE_MISMATCH);
  float *after = (float *)download(out, UG_DTYPE_F32, n);
  CHECK(memcmp(after, h, n * sizeof(float)) == 0);
  /* In place: out may be an input. */
  OK(ug_op_binary(NULL, UG_BINARY_OP_MINIMUM, out, x, out));
  OK(ug_op_unary(NULL, UG_UNARY_OP_NEG, out, out));
  float *neg = (float *)download(out, UG_DTYPE_F32, n);
  int ok = 1;
  for (size_t i = 0; i < n; i++) ok &= neg[i] == -h[i];
  CHECK(ok);
  free(h), free(after), free(neg);
  ug_array *all[] = {x, out, x64, xi, mask, longer};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) ug_array_free(all[i]);
}

static void test_math_ops(ug_context *ctx) {
  for (size_t k = 0; k < 4; k++) {
    uint32_t d = FLOAT_DTYPES[k];
    check_unary_ops(ctx, d);
    check_binary_ops(ctx, d);
    check_compare_where(ctx, d);
  }
  check_math_errors(ctx);
}

/* `v` cast to dtype `to` by the library's rule (Rust's `as`): toward zero
 * and saturating for integers, NaN to 0; f16/bf16 through f32. Only for
 * values a double holds exactly. */
static double cast_ref(uint32_t to, double v) {
  switch (to) {
  case UG_DTYPE_F64: return v;
  case UG_DTYPE_F32: return (double)(float)v;
  case UG_DTYPE_F16:
  case UG_DTYPE_BF16: return isnan(v) ? v : round_to(to, (double)(float)v);
  default: break;
  }
  if (isnan(v)) return 0;
  double lo, hi;
  switch (to) {
  case UG_DTYPE_I32: lo = -2147483648.0, hi = 2147483647.0; break;
  case UG_DTYPE_U32: lo = 0, hi = 4294967295.0; break;
  case UG_DTYPE_I64: lo = -9223372036854775808.0, hi = 9223372036854775807.0; break;
  case UG_DTYPE_U64: lo = 0, hi = 18446744073709551615.0; break;
  default: lo = 0, hi = 255; break;
  }
  return fmin(fmax(trunc(v), lo), hi);
}

/* An integer value wrapped into dtype `to` (two's complement). */
static double wrap_ref(uint32_t to, int64_t v) {
  switch (to) {
  case UG_DTYPE_I32: return (double)(int32_t)(uint32_t)v;
  case UG_DTYPE_U32: return (double)(uint32_t)v;
  case UG_DTYPE_I64: return (double)v;
  case UG_DTYPE_U64: return (double)(uint64_t)v;
  case UG_DTYPE_U8: return (double)(uint8_t)v;
  default: return cast_ref(to, (double)v);
  }
}

/* astype between every pair of dtypes, from a reversed view. */
static void check_astype(ug_context *ctx) {
  for (size_t fi = 0; fi < 9; fi++)
    for (size_t ti = 0; ti < 9; ti++) {
      uint32_t from = ALL_DTYPES[fi], to = ALL_DTYPES[ti];
      size_t n = rand_len(4, 40);
      void *h = random_buf(from, n, -300, 300);
      if (is_float(from)) set_elem(from, h, 0, NAN);
      /* Integers that wrap in the narrower types (exact in a double). */
      if (from == UG_DTYPE_I32 || from == UG_DTYPE_I64) {
        set_elem(from, h, 1, -1);
        set_elem(from, h, 2, -129);
        set_elem(from, h, 3, from == UG_DTYPE_I64 ? -5000000300.0 : 300);
      }
      if (from == UG_DTYPE_U32 || from == UG_DTYPE_U64)
        set_elem(from, h, 1, from == UG_DTYPE_U64 ? 1099511627776.0 + 300 : 4000000000.0);
      ug_array *x = upload(ctx, from, h, n), *rev = NULL, *y = NULL;
      OK(ug_array_slice(x, 0, 0, n, -1, &rev));
      OK(ug_array_astype(rev, to, &y));
      size_t len = 0;
      uint32_t dt = 99;
      OK(ug_array_len(y, &len));
      OK(ug_array_dtype(y, (ug_dtype *)&dt));
      CHECK(len == n && dt == to);
      void *got = download(y, to, n);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) {
        double v = get_elem(from, h, n - 1 - i), g = get_elem(to, got, i);
        double want = is_float(from) ? cast_ref(to, v) : wrap_ref(to, (int64_t)v);
        if (!(g == want || (isnan(g) && isnan(want))) && bad++ < 3)
          printf("FAIL astype %s -> %s: %.17g gave %.17g, want %.17g\n", DTYPE_NAMES[from],
                 DTYPE_NAMES[to], v, g, want);
      }
      CHECK(bad == 0);
      free(h), free(got);
      ug_array_free(x), ug_array_free(rev), ug_array_free(y);
    }
}

/* Downloads `a` and checks its shape is `shape` (ndim axes) and its dtype d. */
static void *download_shaped(const ug_array *a, uint32_t d, const size_t *shape, size_t ndim) {
  size_t got_ndim = 99, got[4] = {0, 0, 0, 0}, n = 1;
  uint32_t dt = 99;
  OK(ug_array_ndim(a, &got_ndim));
  OK(ug_array_shape(a, got, 4));
  OK(ug_array_dtype(a, (ug_dtype *)&dt));
  CHECK(got_ndim == ndim && dt == d);
  for (size_t i = 0; i < ndim; i++) {
    CHECK(got[i] == shape[i]);
    n *= shape[i];
  }
  return download(a, d, n);
}

static void test_creators(ug_context *ctx) {
  for (size_t k = 0; k < 9; k++) {
    uint32_t d = ALL_DTYPES[k];
    size_t shape[3] = {2, rand_len(1, 7), rand_len(0, 9)}, n = shape[0] * shape[1] * shape[2];
    double v = is_float(d) ? round_to(d, uniform(-100, 100)) : floor(uniform(0, 200));
    ug_array *ones = NULL, *full = NULL, *eye = NULL;
    OK(ug_array_ones(ctx, d, shape, 3, &ones));
    OK(ug_array_full(ctx, shape, 3, scalar_of(d, v), &full));
    size_t rows = rand_len(0, 7), cols = rand_len(0, 7);
    OK(ug_array_eye(ctx, d, rows, cols, &eye));
    void *ho = download_shaped(ones, d, shape, 3), *hf = download_shaped(full, d, shape, 3);
    size_t eshape[2] = {rows, cols};
    void *he = download_shaped(eye, d, eshape, 2);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= get_elem(d, ho, i) == 1 && get_elem(d, hf, i) == v;
    for (size_t i = 0; i < rows; i++)
      for (size_t j = 0; j < cols; j++) ok &= get_elem(d, he, i * cols + j) == (i == j);
    if (!ok) printf("FAIL ones/full/eye of %s\n", DTYPE_NAMES[d]);
    CHECK(ok);

    /* arange and linspace, computed in double as numpy does, then cast. */
    double start = floor(uniform(-20, 20)) + (is_float(d) ? uniform(0, 1) : 0);
    double step = (next_u64() & 1 ? 1 : -1) * uniform(0.25, 3), stop = start + step * uniform(0, 30);
    ug_array *ar = NULL, *ls = NULL;
    OK(ug_array_arange(ctx, d, start, stop, step, &ar));
    double cnt = ceil((stop - start) / step);
    size_t na = cnt > 0 ? (size_t)cnt : 0, len = 99;
    OK(ug_array_len(ar, &len));
    CHECK(len == na);
    void *ha = download(ar, d, na);
    double second = start + step, dd = second - start;
    size_t bad = 0;
    for (size_t i = 0; i < na; i++) {
      double x = i == 0 ? start : i == 1 ? second : (double)i * dd + start;
      if (get_elem(d, ha, i) != cast_ref(d, x) && bad++ < 3)
        printf("FAIL arange(%.17g, %.17g, %.17g) of %s: [%zu] = %.17g\n", start, stop, step,
               DTYPE_NAMES[d], i, get_elem(d, ha, i));
    }
    CHECK(bad == 0);
    size_t num = rand_len(1, 60);
    OK(ug_array_linspace(ctx, d, start, stop, num, &ls));
    void *hl = download(ls, d, num);
    double lstep = num > 1 ? (stop - start) / (double)(num - 1) : 0;
    bad = 0;
    for (size_t i = 0; i < num; i++) {
      double x = num > 1 && i == num - 1 ? stop : (double)i * lstep + start;
      if (!is_float(d)) x = floor(x);
      if (get_elem(d, hl, i) != cast_ref(d, x) && bad++ < 3)
        printf("FAIL linspace(%.17g, %.17g, %zu) of %s: [%zu] = %.17g\n", start, stop, num,
               DTYPE_NAMES[d], i, get_elem(d, hl, i));
    }
    CHECK(bad == 0);

    /* *_like of a transposed view: new contiguous arrays of its shape. */
    ug_array *t = NULL, *zl = NULL, *ol = NULL, *fl = NULL, *el = NULL;
    OK(ug_array_transpose(eye, NULL, 0, &t));
    OK(ug_array_zeros_like(t, &zl));
    OK(ug_array_ones_like(t, &ol));
    OK(ug_array_full_like(t, scalar_of(d, v), &fl));
    OK(ug_array_empty_like(t, &el));
    size_t tshape[2] = {cols, rows};
    void *hz = download_shaped(zl, d, tshape, 2), *hol = download_shaped(ol, d, tshape, 2);
    void *hfl = download_shaped(fl, d, tshape, 2), *hel = download_shaped(el, d, tshape, 2);
    int contiguous = 0;
    OK(ug_array_is_contiguous(el, &contiguous));
    CHECK(contiguous == 1);
    ok = 1;
    for (size_t i = 0; i < rows * cols; i++)
      ok &= get_elem(d, hz, i) == 0 && get_elem(d, hol, i) == 1 && get_elem(d, hfl, i) == v;
    CHECK(ok);
    free(ho), free(hf), free(he), free(ha), free(hl), free(hz), free(hol), free(hfl), free(hel);
    ug_array *all[] = {ones, full, eye, ar, ls, t, zl, ol, fl, el};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) ug_array_free(all[i]);
  }

  /* A 0-d array (ndim 0, shape NULL) of one element. */
  ug_array *scalar = NULL;
  OK(ug_array_ones(ctx, UG_DTYPE_F64, NULL, 0, &scalar));
  double one = 0;
  OK(ug_array_download(scalar, &one, sizeof one));
  CHECK(one == 1.0);

  /* Errors: each leaves the out-parameter as it was. */
  ug_array *out = (ug_array *)SENTINEL;
  size_t shape[2] = {3, 4};
  EXPECT(ug_array_ones(NULL, UG_DTYPE_F32, shape, 2, &out), UG_NULL_ARGUMENT);
  EXPECT(ug_array_ones(ctx, UG_DTYPE_F32, NULL, 2, &out), UG_NULL_ARGUMENT);
  EXPECT(ug_array_ones(ctx, 9, shape, 2, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_ones(ctx, UG_DTYPE_F32, shape, 2, NULL), UG_NULL_ARGUMENT);
  size_t huge[2] = {SIZE_MAX / 2, 4};
  EXPECT(ug_array_ones(ctx, UG_DTYPE_F32, huge, 2, &out), UG_INVALID_ARGUMENT);
  ug_scalar bad_scalar = ug_scalar_f32(1);
  bad_scalar.dtype = 42;
  EXPECT(ug_array_full(ctx, shape, 2, bad_scalar, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_arange(ctx, UG_DTYPE_F32, 0, 10, 0, &out), UG_KERNEL_ARGS);
  ERROR_HAS("step");
  EXPECT(ug_array_arange(ctx, UG_DTYPE_F32, NAN, 10, 1, &out), UG_KERNEL_ARGS);
  EXPECT(ug_array_linspace(ctx, UG_DTYPE_F64, 0, INFINITY, 5, &out), UG_KERNEL_ARGS);
  EXPECT(ug_array_linspace(ctx, 12, 0, 1, 5, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_eye(ctx, UG_DTYPE_F32, SIZE_MAX, 2, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_zeros_like(NULL, &out), UG_NULL_ARGUMENT);
  EXPECT(ug_array_ones_like(scalar, NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_array_empty_like(NULL, &out), UG_NULL_ARGUMENT);
  EXPECT(ug_array_full_like(scalar, ug_scalar_f32(2), &out), UG_DTYPE_MISMATCH);
  ERROR_HAS("f32");
  EXPECT(ug_array_astype(scalar, 9, &out), UG_INVALID_ARGUMENT);
  EXPECT(ug_array_astype(NULL, UG_DTYPE_F32, &out), UG_NULL_ARGUMENT);
  EXPECT(ug_array_astype(scalar, UG_DTYPE_F32, NULL), UG_NULL_ARGUMENT);
  CHECK(out == SENTINEL);
  ug_array_free(scalar);

  check_astype(ctx);
}

/* ------------------------------------------------------ precompiled code */

/* saxpy(float a, const float* x, float* y, unsigned n) as nvcc writes it, for sm_52 and PTX
 * 7.0 (crates/unigpu/tests/data/saxpy.ptx), so that any driver compiles it for its device. */
static const char *SAXPY_PTX =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry saxpy(\n"
    "\t.param .f32 saxpy_param_0,\n"
    "\t.param .u64 saxpy_param_1,\n"
    "\t.param .u64 saxpy_param_2,\n"
    "\t.param .u32 saxpy_param_3\n"
    ")\n"
    "{\n"
    "\t.reg .pred %p<2>;\n"
    "\t.reg .f32 %f<5>;\n"
    "\t.reg .b32 %r<6>;\n"
    "\t.reg .b64 %rd<8>;\n"
    "\tld.param.f32 %f1, [saxpy_param_0];\n"
    "\tld.param.u64 %rd1, [saxpy_param_1];\n"
    "\tld.param.u64 %rd2, [saxpy_param_2];\n"
    "\tld.param.u32 %r2, [saxpy_param_3];\n"
    "\tmov.u32 %r3, %ctaid.x;\n"
    "\tmov.u32 %r4, %ntid.x;\n"
    "\tmov.u32 %r5, %tid.x;\n"
    "\tmad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "\tsetp.ge.u32 %p1, %r1, %r2;\n"
    "\t@%p1 bra $L__BB0_2;\n"
    "\tcvta.to.global.u64 %rd3, %rd1;\n"
    "\tmul.wide.u32 %rd4, %r1, 4;\n"
    "\tadd.s64 %rd5, %rd3, %rd4;\n"
    "\tcvta.to.global.u64 %rd6, %rd2;\n"
    "\tadd.s64 %rd7, %rd6, %rd4;\n"
    "\tld.global.f32 %f2, [%rd5];\n"
    "\tld.global.f32 %f3, [%rd7];\n"
    "\tfma.rn.f32 %f4, %f1, %f2, %f3;\n"
    "\tst.global.f32 [%rd7], %f4;\n"
    "$L__BB0_2:\n"
    "\tret;\n"
    "}\n";

/* The 64-byte header of an ELF file for the CUDA machine (EM_CUDA, 190), no sections: passes
 * the CUBIN format check. */
static void empty_cubin(unsigned char b[64]) {
  memset(b, 0, 64);
  memcpy(b, "\x7f" "ELF", 4);
  b[4] = 2; /* 64-bit */
  b[5] = 1; /* little-endian */
  b[18] = 190;
}

/* A fatbin header (magic 0xBA55ED50, version 1, header size 16, no payload). */
static void empty_fatbin(unsigned char b[16]) {
  static const unsigned char h[16] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(b, h, 16);
}

/* A SPIR-V header: the magic number, version 1.0, no instructions. */
static const uint32_t SPIRV_HEADER[5] = {0x07230203u, 0x00010000u, 0, 1, 0};

/* Precompiled code on a CPU context: what the C API refuses, with which status and words,
 * whatever the backend under test. Then, on cuda and torch, the hand-written PTX saxpy
 * launched with the kernel API and checked element by element. */
static void test_precompiled(ug_context *ctx) {
  ug_context *cpu = NULL;
  OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
  size_t ptx_len = strlen(SAXPY_PTX);
  ug_module *m = (ug_module *)SENTINEL;

  /* CUDA code on the host: UG_UNSUPPORTED, saying what to do instead. */
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, NULL, 0, &m), UG_UNSUPPORTED);
  ERROR_HAS("a CUDA image cannot run");
  ERROR_HAS("give the kernel a CPU implementation");
  CHECK(m == SENTINEL);
  unsigned char cubin[64], fatbin[16];
  empty_cubin(cubin);
  empty_fatbin(fatbin);
  EXPECT(ug_module_load(cpu, cubin, sizeof cubin, UG_IMAGE_KIND_CUBIN, NULL, 0, &m),
         UG_UNSUPPORTED);
  ERROR_HAS("CUBIN");
  EXPECT(ug_module_load(cpu, fatbin, sizeof fatbin, UG_IMAGE_KIND_FATBIN, NULL, 0, &m),
         UG_UNSUPPORTED);
  ERROR_HAS("fatbin");
  /* SPIR-V runs on vulkan only. */
  EXPECT(ug_module_load(cpu, SPIRV_HEADER, sizeof SPIRV_HEADER, UG_IMAGE_KIND_SPIRV, NULL, 0, &m),
         UG_UNSUPPORTED);
  ERROR_HAS("SPIR-V: a compute shader runs on the vulkan backend only");
  CHECK(m == SENTINEL);

  /* Code that is not what its kind says: UG_IMAGE, on every backend. */
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_CUBIN, NULL, 0, &m), UG_IMAGE);
  ERROR_HAS("look like a PTX");
  EXPECT(ug_module_load(cpu, cubin, sizeof cubin, UG_IMAGE_KIND_FATBIN, NULL, 0, &m), UG_IMAGE);
  ERROR_HAS("look like a CUBIN");
  EXPECT(ug_module_load(cpu, "// nothing\n", 11, UG_IMAGE_KIND_PTX, NULL, 0, &m), UG_IMAGE);
  ERROR_HAS(".version");
  CHECK(strcmp(ug_status_name(UG_IMAGE), "UG_IMAGE") == 0);
  CHECK(strcmp(ug_status_name(UG_COLLECTIVE), "UG_COLLECTIVE") == 0);

  /* Declarations that disagree with the PTX: found before the device is asked. */
  ug_param three[3];
  three[0] = ug_param_scalar(UG_DTYPE_F32);
  three[1] = ug_param_pointer(UG_DTYPE_F32, 0);
  three[2] = ug_param_pointer(UG_DTYPE_F32, 1);
  ug_kernel_decl short_decl = {"saxpy", three, 3};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &short_decl, 1, &m),
         UG_KERNEL_ARGS);
  ERROR_HAS("declared with 3 parameters");
  ug_param four[4];
  memcpy(four, three, sizeof three);
  four[3] = ug_param_scalar(UG_DTYPE_U32);
  ug_kernel_decl nope = {"nope", four, 4};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &nope, 1, &m), UG_KERNEL_ARGS);
  ERROR_HAS("the PTX has no such kernel (it has: saxpy)");
  /* One that agrees (untyped pointers, a signed n): past the checks, the host refuses the code. */
  ug_param untyped[4] = {ug_param_scalar(UG_DTYPE_F32), ug_param_void_pointer(0),
                         ug_param_void_pointer(1), ug_param_scalar(UG_DTYPE_I32)};
  ug_kernel_decl untyped_decl = {"saxpy", untyped, 4};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &untyped_decl, 1, &m),
         UG_UNSUPPORTED);
  ug_param f64_n[4];
  memcpy(f64_n, four, sizeof four);
  f64_n[3] = ug_param_scalar(UG_DTYPE_F64);
  ug_kernel_decl wrong_type = {"saxpy", f64_n, 4};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &wrong_type, 1, &m),
         UG_KERNEL_ARGS);
  ERROR_HAS("parameter 3 is declared `f64`");

  /* Malformed arguments. */
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, 4, NULL, 0, &m), UG_INVALID_ARGUMENT);
  ERROR_HAS("not a ug_image_kind value");
  ug_param bad[1];
  bad[0] = ug_param_scalar(UG_DTYPE_F32);
  bad[0].kind = 9;
  ug_kernel_decl bad_kind = {"saxpy", bad, 1};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &bad_kind, 1, &m),
         UG_INVALID_ARGUMENT);
  ERROR_HAS("`decls[0].params[0].kind` is 9");
  bad[0] = ug_param_pointer(42, 1);
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &bad_kind, 1, &m),
         UG_INVALID_ARGUMENT);
  ERROR_HAS("`decls[0].params[0].dtype` is 42");
  bad[0] = ug_param_bytes(0);
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &bad_kind, 1, &m),
         UG_INVALID_ARGUMENT);
  ug_kernel_decl null_name = {NULL, four, 4};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &null_name, 1, &m),
         UG_NULL_ARGUMENT);
  ERROR_HAS("`decls[0].name` is NULL");
  ug_kernel_decl null_params = {"saxpy", NULL, 4};
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &null_params, 1, &m),
         UG_NULL_ARGUMENT);
  EXPECT(ug_module_load(cpu, NULL, ptx_len, UG_IMAGE_KIND_PTX, NULL, 0, &m), UG_NULL_ARGUMENT);
  EXPECT(ug_module_load(NULL, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, NULL, 0, &m),
         UG_NULL_ARGUMENT);
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, NULL, 1, &m),
         UG_NULL_ARGUMENT);
  EXPECT(ug_module_load(cpu, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, NULL, 0, NULL),
         UG_NULL_ARGUMENT);
  CHECK(m == SENTINEL);
  ug_context_free(cpu);

  if (g_backend != UG_BACKEND_CUDA && g_backend != UG_BACKEND_TORCH) return;

  /* On a GPU: the PTX's own parameter list checks the launches. */
  OK(ug_module_load(ctx, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, NULL, 0, &m));
  ug_kernel *k = NULL;
  OK(ug_module_kernel(m, "saxpy", &k));
  for (int round = 0; round < 3; round++) run_saxpy(ctx, NULL, k, 1);
  ug_kernel *nk = (ug_kernel *)SENTINEL;
  EXPECT(ug_module_kernel(m, "axpy", &nk), UG_KERNEL_ARGS);
  ERROR_HAS("no such kernel in this PTX code (found: saxpy)");
  CHECK(nk == SENTINEL);

  size_t n = rand_len(1, 2000);
  float *host = (float *)random_buf(UG_DTYPE_F32, n, -10, 10);
  ug_array *x = upload(ctx, UG_DTYPE_F32, host, n);
  ug_array *y = upload(ctx, UG_DTYPE_F32, host, n);
  ug_grid grid = ug_grid_for_elems(n);
  ug_arg args[4];
  args[0] = ug_arg_scalar(ug_scalar_f32(2.0f));
  args[1] = ug_arg_in(x);
  args[2] = ug_arg_out(y);
  args[3] = ug_arg_scalar(ug_scalar_u32((uint32_t)n));
  /* PTX's `.u32` takes a 32-bit integer of either sign, nothing else. */
  ug_arg wrong_n[4] = {args[0], args[1], args[2], ug_arg_scalar(ug_scalar_u64(n))};
  EXPECT(ug_kernel_launch(k, ctx, NULL, &grid, wrong_n, 4), UG_KERNEL_ARGS);
  ERROR_HAS("parameter 3");
  ug_arg wrong_a[4] = {ug_arg_scalar(ug_scalar_f64(2.0)), args[1], args[2], args[3]};
  EXPECT(ug_kernel_launch(k, ctx, NULL, &grid, wrong_a, 4), UG_KERNEL_ARGS);
  EXPECT(ug_kernel_launch(k, ctx, NULL, &grid, args, 3), UG_KERNEL_ARGS);
  /* Nothing ran: y is as uploaded. */
  float *seen = (float *)download(y, UG_DTYPE_F32, n);
  CHECK(memcmp(seen, host, n * sizeof(float)) == 0);
  free(seen);
  ug_kernel_free(k);
  ug_module_free(m);

  /* Declared: the declaration checks the launches (an i32 array where `const f32*` is
   * declared is refused). */
  ug_kernel_decl saxpy_decl = {"saxpy", four, 4};
  OK(ug_module_load(ctx, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &saxpy_decl, 1, &m));
  OK(ug_module_kernel(m, "saxpy", &k));
  run_saxpy(ctx, NULL, k, 1);
  ug_array *xi = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_I32, n, &xi));
  ug_arg wrong_x[4] = {args[0], ug_arg_in(xi), args[2], args[3]};
  EXPECT(ug_kernel_launch(k, ctx, NULL, &grid, wrong_x, 4), UG_KERNEL_ARGS);
  ERROR_HAS("parameter 1");
  ug_array_free(xi);
  ug_kernel_free(k);
  ug_module_free(m);

  /* Untyped pointers take arrays of any dtype; a signed 32-bit n. */
  OK(ug_module_load(ctx, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &untyped_decl, 1, &m));
  OK(ug_module_kernel(m, "saxpy", &k));
  ug_arg signed_n[4] = {args[0], args[1], args[2], ug_arg_scalar(ug_scalar_i32((int32_t)n))};
  OK(ug_kernel_launch(k, ctx, NULL, &grid, signed_n, 4));
  OK(ug_context_sync(ctx));
  float *twice = (float *)download(y, UG_DTYPE_F32, n);
  size_t off = 0;
  for (size_t i = 0; i < n; i++) off += twice[i] != fmaf(2.0f, host[i], host[i]);
  CHECK(off == 0);
  free(twice);
  ug_kernel_free(k);
  ug_module_free(m);

  /* Width-only declarations (what PTX says of integers and pointers) take an array at 8 bytes
   * and an integer scalar of the width. */
  ug_param widths[4] = {ug_param_scalar(UG_DTYPE_F32), ug_param_integer(8), ug_param_integer(8),
                        ug_param_integer(4)};
  ug_kernel_decl width_decl = {"saxpy", widths, 4};
  OK(ug_module_load(ctx, SAXPY_PTX, ptx_len, UG_IMAGE_KIND_PTX, &width_decl, 1, &m));
  OK(ug_module_kernel(m, "saxpy", &k));
  run_saxpy(ctx, NULL, k, 1);
  ug_kernel_free(k);
  ug_module_free(m);

  /* PTX of a version no driver knows: UG_IMAGE naming the device's architecture. */
  const char *old = ".version 7.0\n";
  CHECK(strncmp(SAXPY_PTX, old, strlen(old)) == 0);
  char *future = (char *)malloc(ptx_len + 16);
  snprintf(future, ptx_len + 16, ".version 99.9\n%s", SAXPY_PTX + strlen(old));
  EXPECT(ug_module_load(ctx, future, strlen(future), UG_IMAGE_KIND_PTX, NULL, 0, &m), UG_IMAGE);
  ERROR_HAS("sm_");
  ERROR_HAS("99.9");
  free(future);
  /* SPIR-V on a CUDA context. */
  EXPECT(ug_module_load(ctx, SPIRV_HEADER, sizeof SPIRV_HEADER, UG_IMAGE_KIND_SPIRV, NULL, 0, &m),
         UG_UNSUPPORTED);
  ERROR_HAS("load PTX, a CUBIN or a fatbin");
  free(host);
  ug_array_free(x);
  ug_array_free(y);
}

/* ---------------------------------------------------------------- communicators */

/* `n` random small integers as f32 (sums of a few are exact in any order). */
static float *random_ints_f32(size_t n) {
  float *v = (float *)malloc(n * sizeof(float) + 1);
  for (size_t i = 0; i < n; i++) v[i] = (float)floor(uniform(-1000, 1000));
  return v;
}

/* Checks `n` elements of `a` (f32) against `want`, printing the first few misses. */
static void expect_f32(const ug_array *a, const float *want, size_t n, const char *what) {
  float *got = (float *)download(a, UG_DTYPE_F32, n);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want[i] && bad++ < 3) {
      printf("FAIL %s[%zu] = %.9g, want %.9g\n", what, i, got[i], want[i]);
    }
  }
  CHECK(bad == 0);
  free(got);
}

/* Two ranks on two GPUs of this process: every collective against the host. */
static void comm_two_ranks(ug_context *ctx) {
  ug_device_list *list = NULL;
  size_t devices = 0;
  OK(ug_device_list_new(UG_BACKEND_CUDA, &list));
  OK(ug_device_list_len(list, &devices));
  ug_device_list_free(list);
  if (devices < 2) {
    printf("SKIP 2-rank communicator: this machine has %zu CUDA device(s), the test needs 2\n",
           devices);
    return;
  }
  ug_context *c1 = NULL;
  OK(ug_context_new(UG_BACKEND_CUDA, 1, &c1));
  const ug_context *ctxs[2] = {ctx, c1};
  ug_comm *comm = NULL;
  OK(ug_comm_local(ctxs, 2, &comm));
  size_t world = 0;
  OK(ug_comm_world_size(comm, &world));
  CHECK(world == 2);
  size_t n = rand_len(1, 1 << 16);
  float *h0 = random_ints_f32(2 * n), *h1 = random_ints_f32(2 * n);
  float *want = (float *)malloc(4 * n * sizeof(float));

  /* all_reduce: sum, max, min; the arrays given in either rank order. */
  const uint32_t ops[3] = {UG_REDUCE_OP_SUM, UG_REDUCE_OP_MAX, UG_REDUCE_OP_MIN};
  for (int o = 0; o < 3; o++) {
    ug_array *a0 = upload(ctx, UG_DTYPE_F32, h0, n), *a1 = upload(c1, UG_DTYPE_F32, h1, n);
    ug_array *arrays[2] = {o == 1 ? a1 : a0, o == 1 ? a0 : a1};
    OK(ug_comm_all_reduce(comm, arrays, 2, ops[o]));
    OK(ug_comm_wait(comm));
    for (size_t i = 0; i < n; i++) {
      want[i] = o == 0 ? h0[i] + h1[i] : o == 1 ? fmaxf(h0[i], h1[i]) : fminf(h0[i], h1[i]);
    }
    expect_f32(a0, want, n, "all_reduce rank 0");
    expect_f32(a1, want, n, "all_reduce rank 1");
    ug_array_free(a0);
    ug_array_free(a1);
  }

  /* broadcast from rank 1. */
  ug_array *b0 = upload(ctx, UG_DTYPE_F32, h0, n), *b1 = upload(c1, UG_DTYPE_F32, h1, n);
  ug_array *bs[2] = {b0, b1};
  OK(ug_comm_broadcast(comm, bs, 2, 1));
  OK(ug_comm_wait(comm));
  expect_f32(b0, h1, n, "broadcast rank 0");
  expect_f32(b1, h1, n, "broadcast rank 1");

  /* all_gather: [h0[..n], h1[..n]] on both. */
  ug_array *g0 = NULL, *g1 = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 2 * n, &g0));
  OK(ug_array_zeros(c1, UG_DTYPE_F32, 2 * n, &g1));
  const ug_array *send[2] = {b0, b1};
  ug_array *s0 = upload(ctx, UG_DTYPE_F32, h0, n), *s1 = upload(c1, UG_DTYPE_F32, h1, n);
  send[0] = s0;
  send[1] = s1;
  ug_array *recv[2] = {g0, g1};
  OK(ug_comm_all_gather(comm, send, recv, 2));
  OK(ug_comm_wait(comm));
  memcpy(want, h0, n * sizeof(float));
  memcpy(want + n, h1, n * sizeof(float));
  expect_f32(g0, want, 2 * n, "all_gather rank 0");
  expect_f32(g1, want, 2 * n, "all_gather rank 1");

  /* reduce_scatter: rank r gets block r of h0 + h1 (2n each). */
  ug_array *r0 = NULL, *r1 = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &r0));
  OK(ug_array_zeros(c1, UG_DTYPE_F32, n, &r1));
  ug_array *w0 = upload(ctx, UG_DTYPE_F32, h0, 2 * n), *w1 = upload(c1, UG_DTYPE_F32, h1, 2 * n);
  const ug_array *wide[2] = {w0, w1};
  ug_array *rs[2] = {r0, r1};
  OK(ug_comm_reduce_scatter(comm, wide, rs, 2, UG_REDUCE_OP_SUM));
  OK(ug_comm_wait(comm));
  for (size_t i = 0; i < 2 * n; i++) want[i] = h0[i] + h1[i];
  expect_f32(r0, want, n, "reduce_scatter rank 0");
  expect_f32(r1, want + n, n, "reduce_scatter rank 1");

  /* send_recv: the ranks swap s0 and s1 into r0 and r1. */
  const ug_array *sends[2] = {s0, s1};
  size_t to[2] = {1, 0};
  ug_array *recvs[2] = {r1, r0};
  size_t from[2] = {0, 1};
  OK(ug_comm_send_recv(comm, sends, to, 2, recvs, from, 2));
  OK(ug_comm_wait(comm));
  expect_f32(r1, h0, n, "send_recv rank 1");
  expect_f32(r0, h1, n, "send_recv rank 0");

  /* Two arrays of one rank: refused before anything runs. */
  ug_array *same_rank[2] = {b0, g0};
  EXPECT(ug_comm_all_reduce(comm, same_rank, 2, UG_REDUCE_OP_SUM), UG_CONTEXT_MISMATCH);

  ug_array *all[10] = {b0, b1, g0, g1, s0, s1, r0, r1, w0, w1};
  for (int i = 0; i < 10; i++) ug_array_free(all[i]);
  free(h0);
  free(h1);
  free(want);
  ug_comm_free(comm);
  ug_context_free(c1);
}

/* Communicators: the clear errors everywhere; on cuda, one rank (the identity) with every
 * collective, a collective ordered after a held-back write, and two ranks where two GPUs are. */
static void test_comm(ug_context *ctx) {
  ug_context *cpu = NULL;
  OK(ug_context_new(UG_BACKEND_CPU, 0, &cpu));
  ug_comm *comm = (ug_comm *)SENTINEL;
  const ug_context *one[1] = {cpu};
  EXPECT(ug_comm_local(one, 1, &comm), UG_UNSUPPORTED);
  ERROR_HAS("collectives");
  ERROR_HAS("cuda backend");
  CHECK(comm == SENTINEL);
  EXPECT(ug_comm_local(one, 0, &comm), UG_SIZE_MISMATCH);
  EXPECT(ug_comm_local(NULL, 1, &comm), UG_NULL_ARGUMENT);
  const ug_context *null_ctx[1] = {NULL};
  EXPECT(ug_comm_local(null_ctx, 1, &comm), UG_NULL_ARGUMENT);
  ERROR_HAS("`contexts[0]` is NULL");
  EXPECT(ug_comm_local(one, 1, NULL), UG_NULL_ARGUMENT);
  CHECK(comm == SENTINEL);
  size_t world = 7;
  EXPECT(ug_comm_world_size(NULL, &world), UG_NULL_ARGUMENT);
  CHECK(world == 7);
  EXPECT(ug_comm_all_reduce(NULL, NULL, 0, UG_REDUCE_OP_SUM), UG_NULL_ARGUMENT);
  EXPECT(ug_comm_wait(NULL), UG_NULL_ARGUMENT);
  EXPECT(ug_comm_abort(NULL), UG_NULL_ARGUMENT);
  ug_comm_free(NULL);
  if (g_backend != UG_BACKEND_CPU) {
    /* Contexts of two backends. */
    const ug_context *mixed[2] = {ctx, cpu};
    EXPECT(ug_comm_local(mixed, 2, &comm), UG_CONTEXT_MISMATCH);
    CHECK(comm == SENTINEL);
  }
  if (g_backend == UG_BACKEND_TORCH) {
    /* The torch backend has no collectives of its own. */
    const ug_context *t[1] = {ctx};
    EXPECT(ug_comm_local(t, 1, &comm), UG_UNSUPPORTED);
  }
  if (g_backend != UG_BACKEND_CUDA) {
    ug_context_free(cpu);
    return;
  }

  /* One rank: every collective is the identity, into fresh (zeroed) outputs so that a call that
   * does nothing fails. */
  const ug_context *c[1] = {ctx};
  OK(ug_comm_local(c, 1, &comm));
  OK(ug_comm_world_size(comm, &world));
  CHECK(world == 1);
  for (int round = 0; round < 3; round++) {
    size_t n = rand_len(1, 1 << 16);
    float *h = random_ints_f32(n);
    ug_array *a = upload(ctx, UG_DTYPE_F32, h, n);
    const uint32_t ops[4] = {UG_REDUCE_OP_SUM, UG_REDUCE_OP_MAX, UG_REDUCE_OP_MIN,
                             UG_REDUCE_OP_AVG};
    ug_array *arrays[1] = {a};
    OK(ug_comm_all_reduce(comm, arrays, 1, ops[round]));
    OK(ug_comm_wait(comm));
    expect_f32(a, h, n, "1-rank all_reduce");
    ug_array *out = NULL;
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &out));
    const ug_array *send[1] = {a};
    ug_array *recv[1] = {out};
    OK(ug_comm_all_reduce_into(comm, send, recv, 1, ops[round + 1]));
    OK(ug_comm_wait(comm));
    expect_f32(out, h, n, "1-rank all_reduce_into");
    ug_array_free(out);
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &out));
    recv[0] = out;
    OK(ug_comm_all_gather(comm, send, recv, 1));
    OK(ug_comm_wait(comm));
    expect_f32(out, h, n, "1-rank all_gather");
    ug_array_free(out);
    OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &out));
    recv[0] = out;
    OK(ug_comm_reduce_scatter(comm, send, recv, 1, UG_REDUCE_OP_SUM));
    OK(ug_comm_wait_timeout(comm, 60000));
    expect_f32(out, h, n, "1-rank reduce_scatter");
    OK(ug_comm_broadcast(comm, arrays, 1, 0));
    OK(ug_comm_wait(comm));
    expect_f32(a, h, n, "1-rank broadcast");
    /* An i32 array: the dtype comes from the arrays. */
    int32_t *hi = (int32_t *)malloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) hi[i] = (int32_t)h[i];
    ug_array *ai = upload(ctx, UG_DTYPE_I32, hi, n);
    ug_array *ints[1] = {ai};
    OK(ug_comm_all_reduce(comm, ints, 1, UG_REDUCE_OP_AVG));
    OK(ug_comm_wait(comm));
    int32_t *gi = (int32_t *)download(ai, UG_DTYPE_I32, n);
    CHECK(memcmp(gi, hi, n * sizeof(int32_t)) == 0);
    free(gi);

    /* Refused: mixed dtypes, a view, an array of another context, a bad op, a wrong count. */
    ug_array *mixed_recv[1] = {ai};
    EXPECT(ug_comm_all_gather(comm, send, mixed_recv, 1), UG_DTYPE_MISMATCH);
    ug_array *v = NULL;
    size_t shape[2] = {1, n};
    OK(ug_array_reshape(a, shape, 2, &v));
    ug_array *t = NULL;
    size_t axes[2] = {1, 0};
    OK(ug_array_transpose(v, axes, 2, &t));
    ug_array *views[1] = {t};
    EXPECT(ug_comm_all_reduce(comm, views, 1, UG_REDUCE_OP_SUM), UG_INVALID_ARGUMENT);
    ERROR_HAS("`arrays[0]` is a view");
    ug_array *host_arr = NULL;
    OK(ug_array_zeros(cpu, UG_DTYPE_F32, n, &host_arr));
    ug_array *elsewhere[1] = {host_arr};
    EXPECT(ug_comm_all_reduce(comm, elsewhere, 1, UG_REDUCE_OP_SUM), UG_CONTEXT_MISMATCH);
    EXPECT(ug_comm_all_reduce(comm, arrays, 1, 9), UG_INVALID_ARGUMENT);
    ERROR_HAS("not a ug_reduce_op value");
    ug_array *two[2] = {a, out};
    EXPECT(ug_comm_all_reduce(comm, two, 2, UG_REDUCE_OP_SUM), UG_SIZE_MISMATCH);
    ug_array *null_arr[1] = {NULL};
    EXPECT(ug_comm_all_reduce(comm, null_arr, 1, UG_REDUCE_OP_SUM), UG_NULL_ARGUMENT);
    ERROR_HAS("`arrays[0]` is NULL");
    /* Received into twice in one call: the bindings' rule. */
    ug_array *twice[2] = {out, out};
    const ug_array *sends2[2] = {a, a};
    EXPECT(ug_comm_all_gather(comm, sends2, twice, 2), UG_INVALID_ARGUMENT);
    ERROR_HAS("are the same array, and both are written");
    expect_f32(a, h, n, "1-rank array after refused calls");

    ug_array_free(host_arr);
    ug_array_free(t);
    ug_array_free(v);
    ug_array_free(ai);
    free(hi);
    ug_array_free(out);
    ug_array_free(a);
    free(h);
  }

  /* Ordering: the collective reads `a` after a write to it that a kernel holds back on
   * another stream (about a second); a collective that did not wait would send the old data. */
  ug_module *hm = NULL;
  ug_kernel *hold = NULL;
  OK(ug_module_compile(ctx, HOLD_SRC, &hm));
  OK(ug_module_kernel(hm, "hold", &hold));
  size_t n = rand_len(1, 1 << 16);
  float *old = random_ints_f32(n), *fresh = random_ints_f32(n);
  ug_array *a = upload(ctx, UG_DTYPE_F32, old, n), *src = upload(ctx, UG_DTYPE_F32, fresh, n);
  ug_array *out = NULL, *scratch = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, n, &out));
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 1, &scratch));
  ug_stream *s1 = NULL;
  OK(ug_stream_create(ctx, &s1));
  OK(ug_context_sync(ctx));
  held_copy(hold, s1, scratch, src, a);
  const ug_array *send[1] = {a};
  ug_array *recv[1] = {out};
  OK(ug_comm_all_reduce_into(comm, send, recv, 1, UG_REDUCE_OP_SUM));
  OK(ug_comm_wait(comm));
  expect_f32(out, fresh, n, "all_reduce_into after a held-back write");
  OK(ug_stream_sync(s1));
  ug_stream_free(s1);
  ug_array_free(scratch);
  ug_array_free(out);
  ug_array_free(src);
  ug_array_free(a);
  free(old);
  free(fresh);
  ug_kernel_free(hold);
  ug_module_free(hm);

  /* Aborted: every later call fails with UG_COLLECTIVE, never hangs. */
  ug_comm *doomed = NULL;
  OK(ug_comm_local(c, 1, &doomed));
  OK(ug_comm_abort(doomed));
  ug_array *z = NULL;
  OK(ug_array_zeros(ctx, UG_DTYPE_F32, 16, &z));
  ug_array *zs[1] = {z};
  ug_status st = ug_comm_all_reduce(doomed, zs, 1, UG_REDUCE_OP_SUM);
  CHECK(st != UG_OK && st != UG_PANIC);
  ug_array_free(z);
  ug_comm_free(doomed);
  ug_comm_free(comm);
  ug_context_free(cpu);

  comm_two_ranks(ctx);
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : getenv("UNIGPU_BACKEND");
  if (backend != NULL && strcmp(backend, "cuda") == 0) g_backend = UG_BACKEND_CUDA;
  else if (backend != NULL && strcmp(backend, "torch") == 0) g_backend = UG_BACKEND_TORCH;
  else if (backend != NULL && strcmp(backend, "cpu") != 0 && strcmp(backend, "auto") != 0) {
    fprintf(stderr, "usage: capi_test [cpu|cuda|torch]\n");
    return 2;
  }
  const char *seed = getenv("UNIGPU_TEST_SEED");
  g_rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) * 2654435761u + (uint64_t)clock();
  if (g_rng == 0) g_rng = 88172645463325252ULL;
  printf("capi_test: unigpu %s, backend %s, seed %llu\n", ug_version(), backend_name(g_backend),
         (unsigned long long)g_rng);

  test_version();
  test_status_names();
  test_last_error();
  test_threads();
  test_panic();
  test_scalars();
  test_probe();
  test_devices();
  test_error_texts();
  test_event_orders_streams();

  ug_context *ctx = NULL;
  ug_status st = ug_context_new(g_backend, 0, &ctx);
  if (st != UG_OK) {
    printf("FAIL cannot open the %s backend: %s\n", backend_name(g_backend), last_error());
    g_failed++;
  } else {
    test_contexts(ctx);
    test_arrays(ctx);
    test_shapes(ctx);
    test_reductions_and_random(ctx);
    test_math_ops(ctx);
    test_creators(ctx);
    test_streams(ctx);
    test_graphs(ctx);
    test_kernels(ctx);
    test_precompiled(ctx);
    test_comm(ctx);
    test_ops(ctx);
    test_dlpack(ctx);
    test_dlpack_ordering(ctx);
    test_unified(ctx);
    test_pinned(ctx);
    OK(ug_context_sync(ctx));
    ug_context_free(ctx);
  }

  printf("capi_test: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
