/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — host kernels that compact strided arrays into row-major order.
 *
 * The shape is first squeezed (size-1 dimensions dropped) and coalesced
 * (dimensions that are contiguous in the source merged), so most layouts
 * become one of: one block (memcpy), rows (memcpy per row), a transposition
 * (tiled kernels, AVX2 when the CPU has it, chosen at run time), or the general
 * odometer walk.  Packed sub-byte elements take an element-wise path. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "layout.h"
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HDAL_X86 1
#endif

void hdal__copy_bytes(void *dst, const void *src, size_t n) {
  if (n) memcpy(dst, src, n);
}

/* ---- transposition: d[i*di + j] = s[j*sj + i] for i < ni, j < nj ---- */

#define TILE_BLOCK 64 /* elements per block side: keeps both sides of a block in L1/L2 */

/* Elements are moved with memcpy of a constant size (one load and one store):
 * imported data need not be aligned to its element size. */
#define DEFINE_SCALAR_TRANSPOSE(NAME, ES)                                                          \
  static void NAME(void *dv, int64_t di, const void *sv, int64_t sj, int64_t ni, int64_t nj) {    \
    char *d = dv;                                                                                 \
    const char *s = sv;                                                                           \
    for (int64_t i0 = 0; i0 < ni; i0 += TILE_BLOCK)                                               \
      for (int64_t j0 = 0; j0 < nj; j0 += TILE_BLOCK) {                                           \
        int64_t ie = i0 + TILE_BLOCK < ni ? i0 + TILE_BLOCK : ni;                                 \
        int64_t je = j0 + TILE_BLOCK < nj ? j0 + TILE_BLOCK : nj;                                 \
        for (int64_t i = i0; i < ie; i++)                                                         \
          for (int64_t j = j0; j < je; j++) memcpy(d + (i * di + j) * ES, s + (j * sj + i) * ES, ES); \
      }                                                                                           \
  }
DEFINE_SCALAR_TRANSPOSE(transpose_u8, 1)
DEFINE_SCALAR_TRANSPOSE(transpose_u16, 2)
DEFINE_SCALAR_TRANSPOSE(transpose_u32, 4)
DEFINE_SCALAR_TRANSPOSE(transpose_u64, 8)

#ifdef HDAL_X86
/* One 8x8 tile of 32-bit elements, transposed in registers: eight source rows
 * in, o[k] the k-th destination row. */
__attribute__((target("avx2"), always_inline)) static inline void transpose8x8(const float *s, int64_t sj, __m256 o[8]) {
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + sj), r2 = _mm256_loadu_ps(s + 2 * sj),
         r3 = _mm256_loadu_ps(s + 3 * sj), r4 = _mm256_loadu_ps(s + 4 * sj), r5 = _mm256_loadu_ps(s + 5 * sj),
         r6 = _mm256_loadu_ps(s + 6 * sj), r7 = _mm256_loadu_ps(s + 7 * sj);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
         t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
         t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
         u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
         u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
         u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  o[0] = _mm256_permute2f128_ps(u0, u4, 0x20), o[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  o[2] = _mm256_permute2f128_ps(u2, u6, 0x20), o[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  o[4] = _mm256_permute2f128_ps(u0, u4, 0x31), o[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  o[6] = _mm256_permute2f128_ps(u2, u6, 0x31), o[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Two tiles side by side in the destination (source rows j..j+15): each of
 * the eight destination rows gets 64 contiguous bytes, a whole line for a
 * streaming store.  `nt`: streaming stores (destination 32-byte aligned), for
 * outputs too large to stay in cache, whose lines would otherwise be read
 * before written. */
__attribute__((target("avx2"), always_inline)) static inline void tile8x16(float *d, int64_t di, const float *s,
                                                                           int64_t sj, bool nt) {
  __m256 a[8], b[8];
  transpose8x8(s, sj, a);
  transpose8x8(s + 8 * sj, sj, b);
  for (int k = 0; k < 8; k++) {
    if (nt) {
      _mm256_stream_ps(d + k * di, a[k]);
      _mm256_stream_ps(d + k * di + 8, b[k]);
    } else {
      _mm256_storeu_ps(d + k * di, a[k]);
      _mm256_storeu_ps(d + k * di + 8, b[k]);
    }
  }
}

__attribute__((target("avx2"), always_inline)) static inline void tile8x8(float *d, int64_t di, const float *s,
                                                                          int64_t sj) {
  __m256 o[8];
  transpose8x8(s, sj, o);
  for (int k = 0; k < 8; k++) _mm256_storeu_ps(d + k * di, o[k]);
}

#define AVX_BLOCK 64
#define STREAM_MIN_BYTES ((int64_t)8 << 20)
#define PREFETCH_AHEAD 32 /* elements: two lines ahead along each source row */

/* Blocks of 64x64; inside one, sixteen source rows at a time, walked along
 * the row: the sixteen rows are sixteen sequential streams, and the next
 * lines of each are prefetched (the hardware does not follow a stride of a
 * whole row, pages apart).  This order measured 1.4x the one with the
 * destination row outermost. */
__attribute__((target("avx2"))) static void transpose_u32_avx2(void *dv, int64_t di, const void *sv, int64_t sj,
                                                              int64_t ni, int64_t nj) {
  float *d = dv; /* only loadu/storeu/memcpy touch them: no alignment assumed */
  const float *s = sv;
  int64_t ni8 = ni & ~(int64_t)7, nj8 = nj & ~(int64_t)7, nj16 = nj & ~(int64_t)15;
  bool nt = ((uintptr_t)d & 31) == 0 && (di & 7) == 0 && ni * di * 4 >= STREAM_MIN_BYTES;
  for (int64_t i0 = 0; i0 < ni8; i0 += AVX_BLOCK)
    for (int64_t j0 = 0; j0 < nj16; j0 += AVX_BLOCK) {
      int64_t ie = i0 + AVX_BLOCK < ni8 ? i0 + AVX_BLOCK : ni8;
      int64_t je = j0 + AVX_BLOCK < nj16 ? j0 + AVX_BLOCK : nj16;
      for (int64_t j = j0; j < je; j += 16)
        for (int64_t i = i0; i < ie; i += 8) {
          if (!(i & 15))
            for (int r = 0; r < 16; r++) _mm_prefetch((const char *)(s + (j + r) * sj + i + PREFETCH_AHEAD), _MM_HINT_T0);
          if (nt) tile8x16(d + i * di + j, di, s + j * sj + i, sj, true);
          else tile8x16(d + i * di + j, di, s + j * sj + i, sj, false);
        }
    }
  if (nt) _mm_sfence(); /* streaming stores are visible before we return */
  /* Ragged edges: a last tile column (nj % 16 >= 8), then the last ni % 8
   * rows and nj % 8 columns. */
  for (int64_t i = 0; i < ni8 && nj16 < nj8; i += 8) tile8x8(d + i * di + nj16, di, s + nj16 * sj + i, sj);
  for (int64_t i = ni8; i < ni; i++)
    for (int64_t j = 0; j < nj; j++) memcpy(d + i * di + j, s + j * sj + i, 4);
  for (int64_t i = 0; i < ni8; i++)
    for (int64_t j = nj8; j < nj; j++) memcpy(d + i * di + j, s + j * sj + i, 4);
}
#endif

#ifdef HDAL_X86
/* Whether the CPU has AVX2 (CPUID 7.0:EBX bit 5) and the OS saves the YMM
 * registers (OSXSAVE, and XCR0's SSE and AVX bits).  Asked at the first
 * transposition, not at load: __builtin_cpu_supports would link libgcc's
 * constructor, which runs a dozen CPUID leaves in every process that loads
 * libhdal, and CPUID traps to the hypervisor in a VM (85 us of hdal-ls's
 * start on this one). */
static bool avx2_usable(void) {
  static int known = -1; /* -1: not asked yet; racing first callers ask twice, alike */
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (v >= 0) return v;
  unsigned a, b, c, d;
  v = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    v = (lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
  }
  __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  return v;
}
#endif

typedef void (*transpose_fn)(void *d, int64_t di, const void *s, int64_t sj, int64_t ni, int64_t nj);

static transpose_fn pick_transpose(size_t es) {
  switch (es) {
    case 1: return transpose_u8;
    case 2: return transpose_u16;
    case 4:
#ifdef HDAL_X86
      if (avx2_usable()) return transpose_u32_avx2;
#endif
      return transpose_u32;
    case 8: return transpose_u64;
    default: return NULL;
  }
}

/* ---- the general walk ---- */

static void copy_elem(char *d, const char *s, size_t es) {
  switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es);
  }
}

/* Innermost run of n elements at source stride st (in elements). */
#define RUN(ES)                                                                           \
  for (int64_t k = 0; k < n; k++) memcpy(d + k * ES, s + k * st * ES, ES);                \
  break;
static char *copy_run(char *d, const char *s, int64_t n, int64_t st, size_t es) {
  switch (es) {
    case 1: RUN(1)
    case 2: RUN(2)
    case 4: RUN(4)
    case 8: RUN(8)
    default:
      for (int64_t k = 0; k < n; k++) copy_elem(d + (size_t)k * es, s + k * st * (int64_t)es, es);
  }
  return d + (size_t)n * es;
}

/* Squeezes size-1 dimensions and merges dimensions contiguous in the source.
 * Returns the count; -1 for a zero-size shape. */
static int simplify(int32_t ndim, const int64_t *shape, const int64_t *strides, int64_t *sh, int64_t *st) {
  int n = 0;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] == 0) return -1;
    if (shape[i] == 1) continue;
    int64_t stride = strides ? strides[i] : 0;
    if (n > 0 && strides && st[n - 1] == stride * shape[i]) {
      sh[n - 1] *= shape[i];
      st[n - 1] = stride;
      continue;
    }
    sh[n] = shape[i];
    st[n] = stride;
    n++;
  }
  if (!strides) { /* row-major: one block */
    int64_t total = 1;
    for (int k = 0; k < n; k++) total *= sh[k];
    sh[0] = total;
    st[0] = 1;
    n = n ? 1 : 0;
  }
  return n;
}

/* Packed sub-byte elements: element k of a packed array is nibble k % 2 of byte
 * k / 2, low nibble first.  src_bits 8 reads one element per byte (padded). */
static unsigned get_nibble(const uint8_t *s, int64_t off, unsigned src_bits) {
  if (src_bits == 8) return s[off] & 0xF;
  int64_t byte = off >= 0 ? off / 2 : -((-off + 1) / 2);
  return (s[byte] >> ((off & 1) ? 4 : 0)) & 0xF;
}

static void gather_subbyte(uint8_t *d, const uint8_t *s, int n, const int64_t *sh, const int64_t *st,
                           unsigned src_bits) {
  int64_t idx[64] = {0}, off = 0, k = 0;
  uint64_t total = 1;
  for (int i = 0; i < n; i++) total *= (uint64_t)sh[i];
  memset(d, 0, (size_t)((total + 1) / 2));
  for (uint64_t e = 0; e < total; e++, k++) {
    d[k / 2] |= (uint8_t)(get_nibble(s, off, src_bits) << ((k & 1) ? 4 : 0));
    for (int i = n - 1; i >= 0; i--) {
      off += st[i];
      if (++idx[i] < sh[i]) break;
      off -= st[i] * sh[i];
      idx[i] = 0;
    }
  }
}

void hdal__gather(void *dst, const void *src, int32_t ndim, const int64_t *shape, const int64_t *strides,
                  unsigned bits, unsigned src_bits) {
  int64_t sh[64], st[64];
  int n = simplify(ndim, shape, strides, sh, st);
  if (n < 0) return;
  if (bits < 8) {
    if (n == 0) {
      sh[0] = 1;
      st[0] = 0;
      n = 1;
    }
    gather_subbyte(dst, src, n, sh, st, src_bits);
    return;
  }
  size_t es = bits / 8;
  char *d = dst;
  const char *s = src;
  if (n == 0) {
    copy_elem(d, s, es);
    return;
  }
  if (n == 1 && st[0] == 1) {
    hdal__copy_bytes(d, s, (size_t)sh[0] * es);
    return;
  }
  /* A transposition: the innermost destination dimension is strided in the
   * source and another dimension is contiguous there. */
  int a = -1;
  for (int i = 0; i < n - 1 && st[n - 1] != 1; i++)
    if (st[i] == 1) a = i;
  transpose_fn tr = a >= 0 ? pick_transpose(es) : NULL;
  int64_t idx[64] = {0};
  if (tr) {
    int64_t di = 1; /* destination stride of dimension a */
    for (int i = a + 1; i < n; i++) di *= sh[i];
    /* Walk the other dimensions; each step is one 2-D slice. */
    for (;;) {
      int64_t off = 0, doff = 0, dstride = 1;
      for (int i = n - 1; i >= 0; i--) {
        if (i != a && i != n - 1) {
          off += idx[i] * st[i];
          doff += idx[i] * dstride;
        }
        dstride *= sh[i];
      }
      tr(d + doff * (int64_t)es, di, s + off * (int64_t)es, st[n - 1], sh[a], sh[n - 1]);
      int i = n - 2;
      for (; i >= 0; i--) {
        if (i == a) continue;
        if (++idx[i] < sh[i]) break;
        idx[i] = 0;
      }
      if (i < 0) return;
    }
  }
  /* General: walk the outer dimensions, copy the innermost run. */
  int64_t off = 0;
  for (;;) {
    if (st[n - 1] == 1)
      hdal__copy_bytes(d, s + off * (int64_t)es, (size_t)sh[n - 1] * es), d += (size_t)sh[n - 1] * es;
    else
      d = copy_run(d, s + off * (int64_t)es, sh[n - 1], st[n - 1], es);
    int i = n - 2;
    for (; i >= 0; i--) {
      off += st[i];
      if (++idx[i] < sh[i]) break;
      off -= st[i] * sh[i];
      idx[i] = 0;
    }
    if (i < 0) return;
  }
}
