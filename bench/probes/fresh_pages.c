// How fast can fresh (never touched) host memory be filled? A download into
// a new Vec pays the kernel's page faults; this measures the ways to pay
// them (one thread, many threads, MADV_POPULATE_WRITE, transparent huge
// pages) beside a copy into memory already touched.
// Build: cc -O2 -pthread fresh_pages.c -o fresh_pages; run: ./fresh_pages [MiB]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum how { TOUCH, POPULATE, COPY };
struct job { char *dst; const char *src; size_t len; enum how how; };

static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *work(void *p) {
  struct job *j = p;
  if (j->how == TOUCH) memset(j->dst, 1, j->len);
  else if (j->how == POPULATE) { if (madvise(j->dst, j->len, MADV_POPULATE_WRITE)) perror("madvise"); }
  else memcpy(j->dst, j->src, j->len);
  return NULL;
}

static double run(char *dst, const char *src, size_t len, int threads, enum how how) {
  pthread_t t[64]; struct job j[64];
  size_t step = (len / threads + 4095) & ~(size_t)4095;
  double t0 = now();
  for (int i = 0; i < threads; i++) {
    size_t off = step * i; if (off > len) off = len;
    size_t n = off + step > len ? len - off : step;
    j[i] = (struct job){dst + off, src ? src + off : NULL, n, how};
    pthread_create(&t[i], NULL, work, &j[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  return len / (now() - t0) / 1e9;
}

static char *fresh(size_t len, int huge) {
  size_t a = 2 << 20;
  char *p = mmap(NULL, len + a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); exit(1); }
  p = (char *)(((size_t)p + a - 1) & ~(a - 1));
  if (huge && madvise(p, len, MADV_HUGEPAGE)) perror("MADV_HUGEPAGE");
  if (!huge && madvise(p, len, MADV_NOHUGEPAGE)) perror("MADV_NOHUGEPAGE");
  return p;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, len = mib << 20;
  char *src = fresh(len, 0); memset(src, 3, len);
  int ts[] = {1, 4, 8, 16};
  for (int r = 0; r < 3; r++) {
    for (unsigned k = 0; k < sizeof ts / sizeof *ts; k++) {
      int n = ts[k];
      char *a = fresh(len, 0), *b = fresh(len, 0), *c = fresh(len, 1), *d = fresh(len, 1), *e = fresh(len, 0);
      double touch = run(a, NULL, len, n, TOUCH);
      double pop = run(b, NULL, len, n, POPULATE);
      double thp_touch = run(c, NULL, len, n, TOUCH);
      double thp_copy = run(d, src, len, n, COPY);
      memset(e, 0, len);
      double touched_copy = run(e, src, len, n, COPY);
      printf("%zu MiB, %2d threads: fresh 4K touch %.1f GB/s, populate_write %.1f, THP touch %.1f, "
             "THP fresh copy %.1f, copy into touched %.1f\n",
             mib, n, touch, pop, thp_touch, thp_copy, touched_copy);
      munmap(a, len); munmap(b, len); munmap(c, len); munmap(d, len); munmap(e, len);
    }
  }
  return 0;
}
