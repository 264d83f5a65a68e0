/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal fault injection — the walk: runs one scenario in a child process for
 * N = 1, 2, ... with the Nth fallible call of hdal failing, until a run
 * completes without reaching an injected failure, and fails the test on the
 * first N whose child crashed or whose checks did not hold.
 *
 * A scenario sets up its state (nothing injected), calls walk_arm(n), performs
 * the one operation under test, calls walk_disarm(), checks what it got, cleans
 * up, and ends with walk_leaks().  Memory and hwloc/OpenCL objects that hdal
 * takes after walk_arm() and still holds at walk_leaks() are leaks.
 */
#ifndef HDAL_FI_WALK_H
#define HDAL_FI_WALK_H

#include <stdio.h>
#include <hdal.h>
#include "fi.h"

typedef struct {
  int ok;
  char why[1024];      /* the check that failed */
  char outcome[96];
  char known[256];     /* a known bug in hdal this run ran into (the walk goes on) */    /* class of result: "error RESOURCE_EXHAUSTED", "degraded", "absorbed", "completed" */
  char text[16384];    /* scenario output (the dry run's is the baseline of the others) */
  hdalfi_report rep;
} walk_result;

/* Runs in the child.  `baseline` is the dry run's text ("" during the dry run). */
typedef void walk_fn(walk_result *r, long n, const char *baseline);

/* Walks the scenario; fails the current Check test on any failed N. */
void walk_run(const char *name, walk_fn *fn);

/* Runs the scenario once in a child, failing the N-th call; the result in *out. */
void walk_child(walk_fn *fn, long n, const char *baseline, walk_result *out);

/* Sets the walks' environment (no HDAL_BACKENDS or HDAL_DEBUG, a synthetic
 * two-node machine); exits 77 (skip) when the interposer cannot be used
 * (sanitizer or valgrind run); otherwise re-executes the program with it
 * preloaded if needed. */
void walk_bootstrap(char **argv);

void walk_arm(long n);
void walk_disarm(void);
/* Ends tracking: fails the result when hdal still holds memory or objects. */
void walk_leaks(walk_result *r);
/* Marks the run as hitting a known bug of hdal: reported, not failed, unless
 * HDALFI_STRICT is set.  Only for bugs that would stop the walk; each one is
 * written down in docs/hardening.md. */
void walk_known_bug(walk_result *r, const char *what);
/* Whether a failure was injected, and of which kind. */
bool walk_injected(hdalfi_kind *kind);
/* The same, with the interposer's whole report (which call, where). */
bool walk_injected_report(hdalfi_report *rep);

/* Records a failed check and returns from the scenario. */
#define WALK_CHECK(r, cond, ...)                                      \
  do {                                                                \
    if (!(cond)) {                                                    \
      (r)->ok = 0;                                                    \
      int walk_n_ = snprintf((r)->why, sizeof (r)->why, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      if (walk_n_ > 0 && (size_t)walk_n_ < sizeof (r)->why)           \
        snprintf((r)->why + walk_n_, sizeof (r)->why - (size_t)walk_n_, __VA_ARGS__); \
      walk_disarm();                                                  \
      return;                                                         \
    }                                                                 \
  } while (0)

/* An operation's error under injection: RESOURCE_EXHAUSTED for memory, any
 * error with a message for the other kinds.  Sets r->outcome; false (and
 * r->why) when the error is not acceptable. */
bool walk_error_acceptable(walk_result *r, hdal_error *err);

/* The operation's error under injection, destroyed: false (and r->ok cleared)
 * when it is not an acceptable one (walk_error_acceptable). */
bool walk_accept(walk_result *r, hdal_error *err);

/* A copy (HDAL_COPY_ALWAYS) of the first n (<= 256) floats of a fixed host
 * array onto dev, in tensor slot `which` (0 to 2), its values read back and
 * compared; NULL on an error (r->ok cleared unless acceptable).  The pool walks'
 * step: its block comes from, or goes back to, dev's pool. */
hdal_buffer *walk_copy_onto(walk_result *r, hdal_context *ctx, hdal_device *dev, int which, int64_t n);

/* hdal_buffer_from_dlpack(ctx, cap, dev, o) under the walk: *out is the
 * buffer.  After an acceptable failure the capsule must be untouched (still
 * named `name`, its deleter not run: *deleted == 0, the caller's count) and
 * import, unarmed, at a second try.  r->ok cleared when anything fails. */
void walk_import(walk_result *r, long n, hdal_context *ctx, hdal_capsule *cap, hdal_device *dev,
                 const hdal_import_options *o, const char *name, const int *deleted, hdal_buffer **out);

/* hdal_buffer_copy_to_device(src, dst) under the walk: *out is the copy on
 * dst, or NULL after an acceptable failure that left it NULL; r->ok cleared
 * (and *out not to be used) when the failure or the copy's device is wrong. */
void walk_copy_to(walk_result *r, long n, hdal_buffer *src, hdal_device *dst, hdal_buffer **out);

/* The pool walks' round on dev: a block cached before the walk; under it, two
 * copies (one from the cache, one afresh), their release and a trim; then
 * nothing in use or reserved and at most one pool hit.  `keeper` (NULL: none):
 * who owns a pool of its own that may keep memory when an injected driver
 * failure stops the trim, which is then "degraded (<keeper> kept its pool's
 * memory)".  r->ok says whether the round held. */
void walk_pool_round(walk_result *r, long n, hdal_context *ctx, hdal_device *dev, const char *keeper);

/* One line per backend and device of a context, for comparison with a baseline. */
void walk_describe_context(const hdal_context *ctx, char *out, size_t size);
/* A context made under injection against the baseline: a backend may be
 * "unavailable: ..." (its devices gone), everything else must be the same. */
void walk_compare_context(walk_result *r, const hdal_context *ctx, const char *baseline);

/* hdal_context_create(o) under the walk, the walks of context creation: *out
 * is the context, described into r->text on the dry run (baseline "") and
 * compared with the baseline after, or NULL after an acceptable failure that
 * left it NULL; r->ok cleared when the failure is not acceptable. */
void walk_create_context(walk_result *r, long n, const char *baseline, const hdal_context_options *o,
                         hdal_context **out);

#endif
