/* docs/c-api.md's example: saxpy written in C as a CPU kernel, then the
 * built-in ops, with every status checked. Built and run by
 * .ci/capi-tests.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "unigpu.h"

/* Prints the failed call and the last error, then exits. */
static void check(ug_status st, const char *what) {
  if (st == UG_OK) return;
  char msg[512];
  ug_last_error_message(msg, sizeof msg);
  fprintf(stderr, "%s: %s: %s\n", what, ug_status_name(st), msg);
  exit(1);
}

/* The CPU implementation of saxpy: y = a * x + y. */
static int32_t saxpy_cpu(const ug_cpu_arg *args, size_t n_args, const ug_grid *grid,
                         void *user_data, char *message, size_t message_len) {
  (void)grid;
  (void)user_data;
  if (n_args != 4) {
    snprintf(message, message_len, "expected 4 arguments, got %zu", n_args);
    return UG_KERNEL_ARGS;
  }
  float a = args[0].value.f32;
  const float *x = (const float *)args[1].data;
  float *y = (float *)args[2].data_mut;
  for (uint32_t i = 0; i < args[3].value.u32; i++) y[i] = a * x[i] + y[i];
  return UG_OK;
}

static const char *SAXPY =
    "extern \"C\" __global__ void saxpy(float a, const float* x, float* y, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

int main(void) {
  /* The config file and UNIGPU_* variables, then torch, cuda, vulkan, cpu. */
  ug_context *ctx = NULL;
  check(ug_context_default(&ctx), "ug_context_default");
  ug_backend backend;
  check(ug_context_backend(ctx, &backend), "ug_context_backend");

  enum { N = 1000 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  ug_array *dx = NULL, *dy = NULL;
  check(ug_array_upload(ctx, UG_DTYPE_F32, x, N, &dx), "upload x");
  check(ug_array_upload(ctx, UG_DTYPE_F32, y, N, &dy), "upload y");

  /* NVRTC on CUDA; on the CPU backend the C function runs instead. */
  ug_module *module = NULL;
  ug_kernel *compiled = NULL, *saxpy = NULL;
  check(ug_module_compile(ctx, SAXPY, &module), "compile");
  check(ug_module_kernel(module, "saxpy", &compiled), "kernel");
  check(ug_kernel_with_cpu(compiled, saxpy_cpu, NULL, NULL, &saxpy), "with_cpu");

  ug_arg args[4];
  args[0] = ug_arg_scalar(ug_scalar_f32(2.0f));
  args[1] = ug_arg_in(dx);
  args[2] = ug_arg_out(dy);
  args[3] = ug_arg_scalar(ug_scalar_u32(N));
  ug_grid grid = ug_grid_for_elems(N);
  check(ug_kernel_launch(saxpy, ctx, NULL, &grid, args, 4), "launch");

  /* Built-in ops on a stream of our own, ordered after the kernel. */
  ug_stream *stream = NULL;
  check(ug_stream_create(ctx, &stream), "stream");
  check(ug_op_scale(stream, ug_scalar_f32(0.5f), dy), "scale");
  ug_scalar sum;
  check(ug_op_sum(stream, dy, &sum), "sum");

  check(ug_array_download(dy, y, sizeof y), "download");
  printf("backend %d: y[10] = %g, sum = %g\n", (int)backend, y[10], sum.value.f32);
  int ok = y[10] == 10.5f && sum.value.f32 == 0.5f * (2.0f * (N - 1) * N / 2 + N);

  ug_stream_free(stream);
  ug_kernel_free(saxpy);
  ug_kernel_free(compiled);
  ug_module_free(module);
  ug_array_free(dx);
  ug_array_free(dy);
  ug_context_free(ctx);
  return ok ? 0 : 1;
}
