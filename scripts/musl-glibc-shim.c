/*
 * Test-only compatibility shim; never part of the image.
 *
 * The image runs the musl build of the binary with Alpine's musl-linked libstdc++. Debian has
 * musl (the loader) but no musl-linked libstdc++, so tests/image.test.ts runs the very same
 * binary under the very same loader with Debian's glibc-linked libstdc++ and libgcc_s instead.
 * musl's loader already maps libc.so.6 and libm.so.6 onto itself; what those two libraries
 * still need from glibc is the handful of symbols below. The shim is built under the name
 * ld-linux-x86-64.so.2 because libstdc++ lists that as NEEDED, so it loads without LD_PRELOAD.
 */
#define _GNU_SOURCE
#include <locale.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

uint32_t arc4random(void) {
  uint32_t x = 0;
  while (getrandom(&x, sizeof x, 0) != sizeof x) {
  }
  return x;
}

size_t __strftime_l(char *s, size_t n, const char *f, const struct tm *t, locale_t l) {
  return strftime_l(s, n, f, t, l);
}

/* thread_local destructors are not run at thread exit; a short-lived test process only leaks. */
int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso) {
  (void)dtor;
  (void)obj;
  (void)dso;
  return 0;
}

/* 0 = "may be multi-threaded": libstdc++ then always uses atomic reference counts. */
char __libc_single_threaded = 0;

/* -1 makes libgcc's unwinder fall back to dl_iterate_phdr, which musl has. */
int _dl_find_object(void *pc, void *result) {
  (void)pc;
  (void)result;
  return -1;
}

/* Zeroed CPU model = "unknown CPU": libgcc takes its generic code paths. */
struct {
  unsigned vendor, type, subtype, features[1];
} __cpu_model;
int __cpu_indicator_init(void) { return 0; }
