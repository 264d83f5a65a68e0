/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal fault injection — the walk driver (see walk.h). */
#include "config.h"
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "walk.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || __has_feature(address_sanitizer) || \
    __has_feature(thread_sanitizer)
#define WALK_SANITIZED 1
#else
#define WALK_SANITIZED 0
#endif

static hdalfi_start_fn *fi_start;
static hdalfi_stop_injecting_fn *fi_stop_injecting;
static hdalfi_get_report_fn *fi_get_report;
static hdalfi_stop_fn *fi_stop;

static const char *const kind_names[HDALFI_NKINDS] = {"memory", "thread", "hwloc", "opencl", "driver", "loader"};

void walk_bootstrap(char **argv) {
  /* Every walk runs on the backends it asks for, on the same synthetic machine
   * (two NUMA nodes), whatever the caller's environment says. */
  unsetenv("HDAL_BACKENDS");
  unsetenv("HDAL_DEBUG");
  unsetenv("HWLOC_XMLFILE");
  setenv("HWLOC_SYNTHETIC", "pack:1 numa:2 core:2 pu:1", 1);
  fi_start = (hdalfi_start_fn *)dlsym(RTLD_DEFAULT, "hdalfi_start");
  if (fi_start) {
    fi_stop_injecting = (hdalfi_stop_injecting_fn *)dlsym(RTLD_DEFAULT, "hdalfi_stop_injecting");
    fi_get_report = (hdalfi_get_report_fn *)dlsym(RTLD_DEFAULT, "hdalfi_get_report");
    fi_stop = (hdalfi_stop_fn *)dlsym(RTLD_DEFAULT, "hdalfi_stop");
    return;
  }
  if (getenv("HDALFI_SKIP")) { /* debian/rules: see docs/hardening.md */
    printf("HDALFI_SKIP is set: fault-injection walks skipped\n");
    exit(77);
  }
  /* Sanitizers and valgrind replace malloc themselves: the interposer cannot stack on them. */
  const char *pre = getenv("LD_PRELOAD");
  if (WALK_SANITIZED || (pre && strstr(pre, "vgpreload"))) {
    printf("fault injection needs a build without sanitizers and no valgrind: skipped\n");
    exit(77);
  }
  if (getenv("HDALFI_REEXEC")) {
    fprintf(stderr, "the interposer was preloaded but is not there (LD_PRELOAD=%s)\n", pre ? pre : "");
    exit(99);
  }
  const char *shim = getenv("HDALFI_SHIM");
  if (!shim) shim = HDALFI_SHIM_PATH;
  if (access(shim, R_OK) != 0) {
    fprintf(stderr, "%s: %s (build it with make -C tests check)\n", shim, strerror(errno));
    exit(99);
  }
  char *preload;
  if (asprintf(&preload, "%s%s%s", shim, pre && *pre ? ":" : "", pre ? pre : "") < 0) exit(99);
  setenv("LD_PRELOAD", preload, 1);
  setenv("HDALFI_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "re-executing with the interposer: %s\n", strerror(errno));
  exit(99);
}

void walk_arm(long n) { fi_start(n); }
void walk_disarm(void) {
  if (fi_stop_injecting) fi_stop_injecting();
}

bool walk_injected_report(hdalfi_report *rep) {
  fi_get_report(rep);
  return rep->injected_at != 0;
}

bool walk_injected(hdalfi_kind *kind) {
  hdalfi_report rep;
  bool injected = walk_injected_report(&rep);
  if (kind) *kind = rep.kind;
  return injected;
}

void walk_leaks(walk_result *r) {
  fi_get_report(&r->rep);
  fi_stop();
  if (r->ok && (r->rep.live_allocations || r->rep.live_objects)) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "leak: hdal still holds %ld allocation(s) and %ld hwloc/OpenCL/driver object(s)",
             r->rep.live_allocations, r->rep.live_objects);
  }
}

bool walk_error_acceptable(walk_result *r, hdal_error *err) {
  hdalfi_kind kind;
  bool injected = walk_injected(&kind);
  hdal_code code = hdal_error_code(err);
  snprintf(r->outcome, sizeof r->outcome, "error %s", hdal_code_name(code));
  const char *msg = hdal_error_message(err);
  if (!injected) {
    snprintf(r->why, sizeof r->why, "error without an injected failure: %s: %s", hdal_code_name(code), msg);
    return false;
  }
  if (kind == HDALFI_MEMORY && code != HDAL_RESOURCE_EXHAUSTED) {
    snprintf(r->why, sizeof r->why, "out of memory gave %s: %s (expected RESOURCE_EXHAUSTED)", hdal_code_name(code),
             msg);
    return false;
  }
  if (code == HDAL_OK || !msg || !*msg) {
    snprintf(r->why, sizeof r->why, "error %s without a message", hdal_code_name(code));
    return false;
  }
  return true;
}

void walk_known_bug(walk_result *r, const char *what) {
  if (!r->known[0]) snprintf(r->known, sizeof r->known, "%s", what);
}

/* ---- contexts ---- */

static void append(char *out, size_t size, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *out, size_t size, size_t *len, const char *fmt, ...) {
  if (*len >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + *len, size - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len += (size_t)n;
}

void walk_describe_context(const hdal_context *ctx, char *out, size_t size) {
  size_t len = 0;
  out[0] = 0;
  for (size_t i = 0; i < hdal_context_backend_count(ctx); i++)
    append(out, size, &len, "B %s|%s\n", hdal_context_backend_name(ctx, i), hdal_context_backend_status(ctx, i));
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++) {
    const hdal_device *d = hdal_context_device(ctx, i);
    DLDevice dl = hdal_device_dlpack_device(d);
    const char *reason = hdal_device_runtime_class_reason(d);
    append(out, size, &len, "D %s|%s|%d|%d|%d|%s|%d|%llu|%d|%d:%d|", hdal_device_platform(d), hdal_device_kind(d),
           hdal_device_local_hardware_id(d), hdal_device_process_index(d), (int)hdal_device_runtime_class(d),
           reason ? reason : "-", (int)hdal_device_is_addressable(d),
           (unsigned long long)hdal_device_memory_bytes(d), hdal_device_numa_node(d), (int)dl.device_type,
           (int)dl.device_id);
    for (size_t a = 0; a < hdal_device_attribute_count(d); a++) {
      const char *k, *v;
      if (hdal_device_attribute(d, a, &k, &v)) append(out, size, &len, "%s=%s;", k, v);
    }
    append(out, size, &len, "\n");
  }
}

/* The next line of *p (without its newline) into line; false at the end. */
static bool next_line(const char **p, char *line, size_t size) {
  if (!**p) return false;
  size_t n = strcspn(*p, "\n");
  snprintf(line, size, "%.*s", (int)n, *p);
  *p += n + ((*p)[n] == '\n');
  return true;
}

/* Whether device line `line` ("D platform|...") belongs to one of the names in `gone` ("|a|b|"). */
static bool platform_gone(const char *line, const char *gone) {
  char key[160];
  size_t n = strcspn(line + 2, "|");
  snprintf(key, sizeof key, "|%.*s|", (int)n, line + 2);
  return strstr(gone, key) != NULL;
}

/* Whether both device lines are of the OpenCL backend. */
static bool both_opencl(const char *a, const char *b) {
  return !strncmp(a, "D opencl|", 9) && !strncmp(b, "D opencl|", 9);
}

/* Whether device line b is line a with its NUMA node (the 9th field) unknown. */
static bool numa_lost(const char *a, const char *b) {
  const char *pa = a, *pb = b;
  for (int field = 0; field < 8; field++) {
    size_t na = strcspn(pa, "|"), nb = strcspn(pb, "|");
    if (na != nb || strncmp(pa, pb, na) || !pa[na]) return false;
    pa += na + 1;
    pb += nb + 1;
  }
  if (strncmp(pb, "-1|", 3)) return false;
  pa += strcspn(pa, "|");
  return !strcmp(pa, pb + 2);
}

void walk_compare_context(walk_result *r, const hdal_context *ctx, const char *baseline) {
  static char now[16384];
  walk_describe_context(ctx, now, sizeof now);
  bool injected = walk_injected(NULL);
  for (size_t i = 0; i < hdal_context_device_count(ctx); i++)
    if (hdal_device_id(hdal_context_device(ctx, i)) != (int)i) {
      r->ok = 0;
      snprintf(r->why, sizeof r->why, "device %zu has id %d", i, hdal_device_id(hdal_context_device(ctx, i)));
      return;
    }
  /* Backends: the same, or unavailable because of the injected failure. */
  char gone[1024] = "|", a[2048], b[2048];
  const char *pa = baseline, *pb;
  bool degraded = false;
  size_t nbaseline = 0;
  while (next_line(&pa, a, sizeof a)) {
    if (a[0] != 'B') continue;
    nbaseline++;
    size_t n = strcspn(a + 2, "|");
    bool found = false;
    for (pb = now; next_line(&pb, b, sizeof b) && b[0] == 'B';)
      if (!strncmp(a, b, n + 3)) {
        found = true;
        break;
      }
    if (found && !strcmp(a, b)) continue;
    hdalfi_kind kind;
    walk_injected(&kind);
    if (found && injected && kind == HDALFI_OPENCL && !strncmp(b + n + 3, "ok: 0 devices", 13)) {
      /* The OpenCL backend skips a platform whose device query fails (a
       * broken platform must not hide the others); with one platform that
       * leaves none.  Accepted as degradation. */
    } else if (!found || !injected || strncmp(b + n + 3, "unavailable: ", 13)) {
      r->ok = 0;
      if (!found) snprintf(r->why, sizeof r->why, "backend missing: %.900s", a);
      else snprintf(r->why, sizeof r->why, "backend status changed: '%.400s' became '%.400s'", a, b);
      return;
    }
    degraded = true;
    size_t g = strlen(gone);
    snprintf(gone + g, sizeof gone - g, "%.*s|", (int)n, a + 2);
  }
  size_t nnow = 0;
  for (pb = now; next_line(&pb, b, sizeof b) && b[0] == 'B';) nnow++;
  if (nnow > nbaseline) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "%zu backends, %zu without injection", nnow, nbaseline);
    return;
  }
  /* Devices: the baseline's, less those of the degraded backends. */
  pa = baseline;
  pb = now;
  bool more_b;
  while ((more_b = next_line(&pb, b, sizeof b)) && (b[0] == 'B' || platform_gone(b, gone))) {}
  while (next_line(&pa, a, sizeof a)) {
    if (a[0] != 'D' || platform_gone(a, gone)) continue;
    hdalfi_kind kind = HDALFI_MEMORY;
    if (more_b && strcmp(a, b) && injected && walk_injected(&kind) && kind == HDALFI_HWLOC && numa_lost(a, b)) {
      /* hwloc could not load the I/O topology: NUMA locality unknown (-1), as documented. */
      degraded = true;
    } else if (more_b && strcmp(a, b) && both_opencl(a, b)) {
      /* The OpenCL backend documents placeholders ("", "OpenCL device") for
       * a query that fails; the same from an allocation failure is a bug. */
      if (injected && walk_injected(&kind) && kind == HDALFI_OPENCL) {
        degraded = true;
      } else {
        r->ok = 0;
        snprintf(r->why, sizeof r->why, "device changed: expected '%.450s', got '%.450s'", a, b);
        return;
      }
    } else if (!more_b || strcmp(a, b)) {
      r->ok = 0;
      snprintf(r->why, sizeof r->why, "device changed under injection: expected '%.450s', got '%.450s'", a,
               more_b ? b : "(none)");
      return;
    }
    while ((more_b = next_line(&pb, b, sizeof b)) && platform_gone(b, gone)) {}
  }
  if (more_b) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "unexpected device: '%.900s'", b);
    return;
  }
  /* A degraded backend must have no device left. */
  for (pb = now; next_line(&pb, b, sizeof b);) {
    if (b[0] != 'D' || !platform_gone(b, gone)) continue;
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "device of a degraded backend still listed: '%.900s'", b);
    return;
  }
  if (r->known[0]) snprintf(r->outcome, sizeof r->outcome, "known bug");
  else if (degraded) snprintf(r->outcome, sizeof r->outcome, "degraded (backend unavailable)");
  else snprintf(r->outcome, sizeof r->outcome, injected ? "absorbed" : "completed");
}

/* ---- the driver ---- */

static void on_crash(int sig) {
  /* Best effort: name the injected site before dying. */
  hdalfi_report rep;
  if (fi_get_report) {
    fi_get_report(&rep);
    char msg[400];
    int n = snprintf(msg, sizeof msg, "walk child: signal %d after the injected failure #%ld (%s from %s)\n", sig,
                     rep.injected_at, rep.function, rep.caller);
    if (n > 0) (void)!write(2, msg, (size_t)n);
  }
  /* Where it died: addresses with their objects (addr2line -e finds the lines). */
  void *frames[48];
  backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

void walk_child(walk_fn *fn, long n, const char *baseline, walk_result *out) {
  int fd[2];
  ck_assert_int_eq(pipe(fd), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    static walk_result r;
    memset(&r, 0, sizeof r);
    r.ok = 1;
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_crash);
    fn(&r, n, baseline);
    if (r.ok && !r.outcome[0]) snprintf(r.outcome, sizeof r.outcome, "%s", "completed");
    if (!r.rep.calls && fi_get_report) fi_get_report(&r.rep);
    for (const char *p = (const char *)&r, *end = p + sizeof r; p < end;) {
      ssize_t w = write(fd[1], p, (size_t)(end - p));
      if (w <= 0) _exit(3);
      p += w;
    }
    _exit(0);
  }
  close(fd[1]);
  size_t got = 0;
  memset(out, 0, sizeof *out);
  while (got < sizeof *out) {
    ssize_t k = read(fd[0], (char *)out + got, sizeof *out - got);
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd[0]);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    ck_abort_msg("N=%ld: the child died of signal %d (%s) after the injected failure", n, WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == sizeof *out,
                "N=%ld: the child exited with status %d before reporting", n,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

enum { MAX_SITES = 512, MAX_STEPS = 20000 };

void walk_run(const char *name, walk_fn *fn) {
  static walk_result r;
  static char baseline[sizeof r.text];
  static char sites[MAX_SITES][160 + 32];
  size_t nsites = 0;
  long per_kind[HDALFI_NKINDS] = {0};
  long errors = 0, degraded = 0, absorbed = 0, known = 0;
  static char bugs[8][256];
  size_t nbugs = 0;
  time_t t0 = time(NULL);
  const char *only = getenv("HDALFI_ONLY"); /* one walk, by name, when debugging */
  if (only && strcmp(only, name)) return;

  /* Dry run: nothing fails; its text is the baseline. */
  walk_child(fn, 0, "", &r);
  ck_assert_msg(r.ok, "%s, dry run: %s", name, r.why);
  memcpy(baseline, r.text, sizeof baseline);
  long calls = r.rep.calls;

  long n;
  for (n = 1; n <= MAX_STEPS; n++) {
    walk_child(fn, n, baseline, &r);
    ck_assert_msg(r.ok, "%s, N=%ld (%s %s from %s): %s", name, n, kind_names[r.rep.kind % HDALFI_NKINDS],
                  r.rep.function, r.rep.caller, r.why);
    if (!r.rep.injected_at) { /* the operation no longer reaches the Nth call */
      if (getenv("HDALFI_VERBOSE")) printf("  N=%ld not reached: %ld calls\n", n, r.rep.calls);
      break;
    }
    per_kind[r.rep.kind % HDALFI_NKINDS]++;
    if (r.known[0]) {
      known++;
      size_t i = 0;
      while (i < nbugs && strcmp(bugs[i], r.known)) i++;
      if (i == nbugs && nbugs < 8) memcpy(bugs[nbugs++], r.known, sizeof r.known);
      ck_assert_msg(!getenv("HDALFI_STRICT"), "%s, N=%ld (%s from %s): %s", name, n, r.rep.function, r.rep.caller,
                    r.known);
    } else if (!strncmp(r.outcome, "error", 5)) errors++;
    else if (!strncmp(r.outcome, "degraded", 8)) degraded++;
    else absorbed++;
    char site[sizeof sites[0]];
    snprintf(site, sizeof site, "%s@%s", r.rep.function, r.rep.caller);
    size_t i = 0;
    while (i < nsites && strcmp(sites[i], site)) i++;
    if (i == nsites && nsites < MAX_SITES) memcpy(sites[nsites++], site, sizeof site);
    if (getenv("HDALFI_VERBOSE")) printf("  N=%ld %s %s: %s\n", n, r.rep.function, r.rep.caller, r.outcome);
  }
  ck_assert_msg(n <= MAX_STEPS, "%s: still injecting after %d steps", name, MAX_STEPS);
  long injected = n - 1;
  printf("fault-injection walk %s: %ld sites injected (memory %ld, thread %ld, hwloc %ld, opencl %ld, driver %ld, "
         "loader %ld) "
         "at %zu distinct call sites; %ld errors, %ld degraded, %ld absorbed, %ld known bugs; %ld fallible calls in "
         "the dry run; %lds\n",
         name, injected, per_kind[0], per_kind[1], per_kind[2], per_kind[3], per_kind[4], per_kind[5], nsites, errors,
         degraded,
         absorbed, known, calls, (long)(time(NULL) - t0));
  for (size_t i = 0; i < nbugs; i++) printf("  KNOWN BUG (HDALFI_STRICT=1 fails on it): %s\n", bugs[i]);
  const char *summary = getenv("HDALFI_SUMMARY");
  if (summary) {
    FILE *f = fopen(summary, "a");
    if (f) {
      fprintf(f, "%s sites=%ld distinct=%zu errors=%ld degraded=%ld absorbed=%ld known=%ld\n", name, injected,
              nsites, errors, degraded, absorbed, known);
      fclose(f);
    }
  }
  fflush(stdout);
  ck_assert_msg(injected == calls, "%s: %ld injections but %ld fallible calls in the dry run", name, injected, calls);
}

bool walk_accept(walk_result *r, hdal_error *err) {
  bool fine = walk_error_acceptable(r, err);
  hdal_error_destroy(err);
  if (!fine) r->ok = 0;
  return fine;
}

static float copy_data[256];
static DLManagedTensor copy_tensors[3];
static int64_t copy_shapes[3][1];

static void no_deleter(DLManagedTensor *t) { (void)t; }

hdal_buffer *walk_copy_onto(walk_result *r, hdal_context *ctx, hdal_device *dev, int which, int64_t n) {
  for (int i = 0; i < 256; i++) copy_data[i] = (float)i; /* values a lost copy would not have */
  copy_shapes[which][0] = n;
  copy_tensors[which] = (DLManagedTensor){.dl_tensor = {.data = copy_data,
                                                        .device = {kDLCPU, 0},
                                                        .ndim = 1,
                                                        .dtype = {kDLFloat, 32, 1},
                                                        .shape = copy_shapes[which]},
                                          .deleter = no_deleter};
  hdal_capsule *c = hdal_capsule_wrap(&copy_tensors[which]);
  if (!c) return NULL;
  hdal_import_options o = {.struct_size = sizeof o, .copy = HDAL_COPY_ALWAYS};
  hdal_buffer *b = NULL;
  hdal_error *err = hdal_buffer_from_dlpack(ctx, c, dev, &o, &b);
  hdal_capsule_destroy(c);
  if (err) {
    walk_accept(r, err);
    return NULL;
  }
  float back[256];
  err = hdal_buffer_copy_to_host(b, back, (size_t)n * sizeof(float));
  if (err) {
    walk_accept(r, err); /* the read failed, not the pool */
  } else if (memcmp(back, copy_data, (size_t)n * sizeof(float))) {
    r->ok = 0;
    snprintf(r->why, sizeof r->why, "the copy's values differ from the tensor's");
  }
  return b;
}

void walk_pool_round(walk_result *r, long n, hdal_context *ctx, hdal_device *dev, const char *keeper) {
  hdal_buffer *a = walk_copy_onto(r, ctx, dev, 0, 256); /* a cached block before the walk */
  WALK_CHECK(r, a != NULL, "the setup's import failed");
  hdal_buffer_release(a);

  walk_arm(n);
  hdal_buffer *b = walk_copy_onto(r, ctx, dev, 1, 256); /* from the cache (once its fence, if any, is done) */
  hdal_buffer *c = walk_copy_onto(r, ctx, dev, 2, 100); /* afresh */
  hdal_buffer_release(b);
  hdal_buffer_release(c);
  hdal_error *err = hdal_device_trim(dev);
  walk_disarm();
  WALK_CHECK(r, err == NULL, "hdal_device_trim: %s", hdal_error_message(err));
  if (!r->ok) return;
  hdal_memory_stats s = {.struct_size = sizeof s};
  WALK_CHECK(r, hdal_device_memory_stats(dev, &s) == NULL, "no statistics");
  WALK_CHECK(r, s.bytes_in_use == 0, "%llu bytes in use after every release", (unsigned long long)s.bytes_in_use);
  hdalfi_kind kind;
  if (keeper && s.bytes_reserved && walk_injected(&kind) && kind == HDALFI_DRIVER)
    snprintf(r->outcome, sizeof r->outcome, "degraded (%s kept its pool's memory)", keeper);
  else
    WALK_CHECK(r, s.bytes_reserved == 0, "%llu bytes reserved after trim", (unsigned long long)s.bytes_reserved);
  WALK_CHECK(r, s.num_pool_hits <= 1, "%llu pool hits", (unsigned long long)s.num_pool_hits);
}

void walk_copy_to(walk_result *r, long n, hdal_buffer *src, hdal_device *dst, hdal_buffer **out) {
  *out = (hdal_buffer *)&dst; /* a failed copy must set it to NULL */
  walk_arm(n);
  hdal_error *err = hdal_buffer_copy_to_device(src, dst, out);
  walk_disarm();
  if (err) {
    if (walk_accept(r, err)) WALK_CHECK(r, *out == NULL, "failed copy left *out = %p", (void *)*out);
    return;
  }
  WALK_CHECK(r, hdal_buffer_device(*out) == dst, "copy on the wrong device");
}

void walk_create_context(walk_result *r, long n, const char *baseline, const hdal_context_options *o,
                         hdal_context **out) {
  *out = (hdal_context *)o; /* not NULL: a failed create must set it to NULL */
  walk_arm(n);
  hdal_error *err = hdal_context_create(o, out);
  walk_disarm();
  if (err) {
    if (walk_accept(r, err)) WALK_CHECK(r, *out == NULL, "failed hdal_context_create left *out = %p", (void *)*out);
    return;
  }
  if (!baseline[0])
    walk_describe_context(*out, r->text, sizeof r->text);
  else
    walk_compare_context(r, *out, baseline);
}

void walk_import(walk_result *r, long n, hdal_context *ctx, hdal_capsule *cap, hdal_device *dev,
                 const hdal_import_options *o, const char *name, const int *deleted, hdal_buffer **out) {
  *out = (hdal_buffer *)o; /* not NULL: a failed import must set it to NULL */
  walk_arm(n);
  hdal_error *err = hdal_buffer_from_dlpack(ctx, cap, dev, o, out);
  walk_disarm();
  if (!err) return;
  if (!walk_accept(r, err)) return;
  WALK_CHECK(r, *out == NULL, "failed import left *out = %p", (void *)*out);
  WALK_CHECK(r, !strcmp(hdal_capsule_name(cap), name), "failed import renamed the capsule \"%s\"",
             hdal_capsule_name(cap));
  WALK_CHECK(r, *deleted == 0, "failed import ran the deleter %d time(s)", *deleted);
  err = hdal_buffer_from_dlpack(ctx, cap, dev, o, out);
  WALK_CHECK(r, err == NULL, "the capsule could not be imported after the failure: %s", hdal_error_message(err));
}
