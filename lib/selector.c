/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal core — the device selector (selector.h; docs/reference.md, "Choosing
 * devices").  ONEAPI_DEVICE_SELECTOR's grammar over hdal's backend names:
 *
 *   selector := term (';' term)*         blank: everything
 *   term     := ['!'] backend ':' device (',' device)*
 *   backend  := '*' | a backend's name
 *   device   := '*' | ordinal | cpu | gpu | accelerator | uuid=PREFIX | pci=BUS_ID
 *
 * A backend ends at the term's first ':', so a PCI bus id keeps its own. */
#include "config.h"
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "backend_list.h"
#include "selector.h"

typedef enum { ITEM_ALL, ITEM_ORDINAL, ITEM_KIND, ITEM_UUID, ITEM_PCI } item_kind;

typedef struct {
  item_kind kind;
  int ordinal;
  char *text; /* KIND: lower case; UUID: the prefix; PCI: lower case, with its domain */
} item;

typedef struct {
  bool discard;
  char *backend; /* NULL: '*' */
  item *items;
  size_t nitems;
  size_t index, at; /* 1-based: which term, and the character where it starts */
  char *spelling;   /* as written, escaped, for messages */
} term;

struct hdal__selector {
  char *who;
  char *spelling; /* the whole text as written, escaped, for messages */
  term *terms;
  size_t nterms;
  bool accepts; /* some term accepts: a device no accept term matches is dropped */
};

static void term_free(term *t) {
  for (size_t i = 0; i < t->nitems; i++) free(t->items[i].text);
  free(t->items);
  free(t->backend);
  free(t->spelling);
}

void hdal__selector_free(hdal__selector *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nterms; i++) term_free(&s->terms[i]);
  free(s->terms);
  free(s->who);
  free(s->spelling);
  free(s);
}

const char *hdal__selector_who(const hdal__selector *s) { return s->who; }

char *hdal__selector_describe(const hdal__selector *s) {
  return hdal__strdup_printf("the device selector \"%s\" (%s)", s->spelling, s->who);
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* [*b, *e) without the blanks around it. */
static void trim(const char **b, const char **e) {
  while (*b < *e && blank(**b)) ++*b;
  while (*e > *b && blank((*e)[-1])) --*e;
}

/* A term as written, for a message: printable ASCII kept, the rest \xNN, at most 64 characters. */
static char *spelling_of(const char *b, const char *e) {
  char out[64 * 4 + 4];
  size_t n = 0, shown = 0;
  for (const char *p = b; p < e && shown < 64; p++, shown++) {
    unsigned char c = (unsigned char)*p;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') out[n++] = (char)c;
    else n += (size_t)snprintf(out + n, sizeof out - n, "\\x%02x", c);
  }
  if (b + shown < e) memcpy(out + n, "...", 3), n += 3;
  out[n] = '\0';
  return strdup(out);
}

static hdal_error *term_error(const char *who, const term *t, const char *fmt, const char *what) {
  char problem[192];
  snprintf(problem, sizeof problem, fmt, what);
  return hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: term %zu (\"%s\", at character %zu): %s", who, t->index,
                         t->spelling ? t->spelling : "", t->at, problem);
}

static char *lower_dup(const char *b, const char *e) {
  char *s = strndup(b, (size_t)(e - b));
  for (char *p = s; p && *p; p++) *p = (char)tolower((unsigned char)*p);
  return s;
}

/* One device of a term, [b, e) trimmed; NULL, or what is wrong with it (static text), or "" out of memory. */
static const char *item_parse(const char *b, const char *e, item *it) {
  size_t n = (size_t)(e - b);
  if (!n) return "an empty device (between ',' or after ':')";
  if (n == 1 && *b == '*') return it->kind = ITEM_ALL, NULL;
  if (isdigit((unsigned char)*b)) {
    long v = 0;
    for (const char *p = b; p < e; p++) {
      if (!isdigit((unsigned char)*p)) return "an ordinal has only digits";
      if ((v = v * 10 + (*p - '0')) > INT_MAX) return "the ordinal is too large";
    }
    it->kind = ITEM_ORDINAL, it->ordinal = (int)v;
    return NULL;
  }
  if ((n == 3 && (!strncasecmp(b, "cpu", 3) || !strncasecmp(b, "gpu", 3))) ||
      (n == 11 && !strncasecmp(b, "accelerator", 11))) {
    it->kind = ITEM_KIND;
    return (it->text = lower_dup(b, e)) ? NULL : "";
  }
  if (n > 5 && !strncasecmp(b, "uuid=", 5)) {
    it->kind = ITEM_UUID;
    return (it->text = strndup(b + 5, n - 5)) ? NULL : "";
  }
  if (n > 4 && !strncasecmp(b, "pci=", 4)) {
    /* "bb:dd.f" is in PCI domain 0, as lspci shows it. */
    int colons = 0;
    for (const char *p = b + 4; p < e; p++) colons += *p == ':';
    if (colons < 1 || colons > 2) return "a PCI bus id reads [dddd:]bb:dd.f";
    char buf[64];
    if (n - 4 + 5 >= sizeof buf) return "a PCI bus id reads [dddd:]bb:dd.f";
    snprintf(buf, sizeof buf, "%s%.*s", colons == 1 ? "0000:" : "", (int)(n - 4), b + 4);
    it->kind = ITEM_PCI;
    return (it->text = lower_dup(buf, buf + strlen(buf))) ? NULL : "";
  }
  return "not a device: *, an ordinal, cpu, gpu, accelerator, uuid=PREFIX or pci=BUS_ID";
}

/* Term [b, e) (trimmed, not empty) into t; NULL or the error. */
static hdal_error *term_parse(const char *who, const char *b, const char *e, term *t) {
  for (const char *p = b; p < e; p++)
    if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
      if (!blank(*p)) return term_error(who, t, "%s", "a character that is not printable ASCII");
  if (*b == '!') {
    t->discard = true;
    b++;
  }
  const char *colon = memchr(b, ':', (size_t)(e - b));
  if (!colon) return term_error(who, t, "%s", "no ':' (a term reads BACKEND:DEVICES)");
  const char *nb = b, *ne = colon;
  trim(&nb, &ne);
  if (nb == ne) return term_error(who, t, "%s", "no backend before ':'");
  if (!(ne - nb == 1 && *nb == '*')) {
    for (const char *p = nb; p < ne; p++)
      if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
        return term_error(who, t, "%s", "a backend name has letters, digits, '_' and '-' only");
    if (!(t->backend = strndup(nb, (size_t)(ne - nb)))) return hdal__error_oom();
  }
  size_t cap = 1;
  for (const char *p = colon + 1; p < e; p++) cap += *p == ',';
  if (!(t->items = calloc(cap, sizeof *t->items))) return hdal__error_oom();
  for (const char *p = colon + 1;; p++) {
    const char *q = p;
    while (q < e && *q != ',') q++;
    const char *ib = p, *ie = q;
    trim(&ib, &ie);
    const char *why = item_parse(ib, ie, &t->items[t->nitems]);
    if (why && !*why) return hdal__error_oom();
    if (why) return term_error(who, t, "%s", why);
    t->nitems++;
    if ((p = q) >= e) break;
  }
  return NULL;
}

hdal_error *hdal__selector_parse(const char *text, const char *who, hdal__selector **out) {
  *out = NULL;
  const char *b = text ? text : "", *e = b + strlen(b);
  trim(&b, &e);
  if (b == e) return NULL;
  hdal__selector *s = calloc(1, sizeof *s);
  size_t cap = 1;
  for (const char *p = text; *p; p++) cap += *p == ';';
  if (!s || !(s->who = strdup(who)) || !(s->spelling = spelling_of(b, e)) ||
      !(s->terms = calloc(cap, sizeof *s->terms))) {
    hdal__selector_free(s);
    return hdal__error_oom();
  }
  hdal_error *err = NULL;
  for (const char *p = text;; p++) {
    const char *q = p;
    while (*q && *q != ';') q++;
    const char *tb = p, *te = q;
    trim(&tb, &te);
    term *t = &s->terms[s->nterms++];
    t->index = s->nterms;
    t->at = (size_t)(tb - text) + 1;
    if (!(t->spelling = spelling_of(tb, te))) err = hdal__error_oom();
    else if (tb == te) err = term_error(who, t, "%s", "an empty term (between ';')");
    else err = term_parse(who, tb, te, t);
    if (err) break;
    s->accepts |= !t->discard;
    if (!*(p = q)) break;
  }
  if (err) {
    hdal__selector_free(s);
    return err;
  }
  *out = s;
  return NULL;
}

hdal_error *hdal__selector_check_backends(const hdal__selector *s, const hdal_context *ctx) {
  for (size_t i = 0; s && i < s->nterms; i++) {
    const term *t = &s->terms[i];
    if (!t->backend) continue;
    hdal_error *e = hdal__backend_name_check(ctx, t->backend, NULL);
    if (!e) continue; /* known */
    if (hdal_error_code(e) != HDAL_INVALID_ARGUMENT) return e; /* out of memory */
    /* The same words as HDAL_BACKENDS', after the term's place (term_error's form). */
    hdal_error *named = hdal__error_new(HDAL_INVALID_ARGUMENT, "%s: term %zu (\"%s\", at character %zu): %s", s->who,
                                        t->index, t->spelling ? t->spelling : "", t->at, hdal_error_message(e));
    hdal_error_destroy(e);
    return named;
  }
  return NULL;
}

/* ---- matching ---- */

/* cpu, gpu, accelerator...: the device's "device_type" attribute where its
 * backend gives one (OpenCL), else what its DLPack device type is; NULL: none. */
const char *hdal__selector_kind_of(const hdal_device *d) {
  const char *k = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_DEVICE_TYPE);
  if (k) return k;
  switch ((int)d->dl.device_type) {
  case kDLCPU: return "cpu";
  case kDLCUDA:
  case kDLVulkan:
  case kDLMetal:
  case kDLROCM:
  case 14: /* kDLOneAPI */
  case 15: /* kDLWebGPU */ return "gpu";
  default: return NULL;
  }
}

static bool item_matches(const item *it, const hdal_device *d) {
  const char *v;
  switch (it->kind) {
  case ITEM_ALL: return true;
  case ITEM_ORDINAL: return d->local_hardware_id == it->ordinal;
  case ITEM_KIND: return (v = hdal__selector_kind_of(d)) && !strcasecmp(v, it->text);
  case ITEM_UUID: return (v = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_UUID)) &&
                         !strncasecmp(v, it->text, strlen(it->text));
  case ITEM_PCI: return (v = hdal_device_attribute_get(d, HDAL_ATTRIBUTE_PCI_BUS_ID)) && !strcasecmp(v, it->text);
  }
  return false;
}

static bool term_applies(const term *t, const hdal__backend *b) { return !t->backend || !strcmp(t->backend, b->name); }

static bool keeps(const hdal__selector *s, const hdal__backend *b, const hdal_device *d) {
  bool kept = !s->accepts;
  for (size_t i = 0; i < s->nterms; i++) {
    const term *t = &s->terms[i];
    if (!term_applies(t, b)) continue;
    bool hit = false;
    for (size_t j = 0; j < t->nitems && !hit; j++) hit = item_matches(&t->items[j], d);
    if (hit && t->discard) return false; /* a discard wins, wherever it stands */
    kept |= hit;
  }
  return kept;
}

hdal_error *hdal__selector_apply(const hdal__selector *s, hdal__backend *b, size_t *dropped) {
  *dropped = 0;
  if (!s) return NULL;
  /* A UUID prefix names one device of a backend, as CUDA_VISIBLE_DEVICES wants
   * (the same GPU seen by two backends is one device of each). */
  for (size_t i = 0; i < s->nterms; i++) {
    const term *t = &s->terms[i];
    if (!term_applies(t, b)) continue;
    for (size_t j = 0; j < t->nitems; j++) {
      if (t->items[j].kind != ITEM_UUID) continue;
      int first = -1, second = -1;
      for (size_t k = 0; k < b->ndevices && second < 0; k++)
        if (item_matches(&t->items[j], b->devices[k]))
          *(first < 0 ? &first : &second) = b->devices[k]->local_hardware_id;
      if (second >= 0) {
        char what[160];
        snprintf(what, sizeof what, "uuid=%.40s names two devices of backend %.32s (%d and %d): give more of it",
                 t->items[j].text, b->name, first, second);
        return term_error(s->who, t, "%s", what);
      }
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < b->ndevices; i++) {
    if (keeps(s, b, b->devices[i])) b->devices[kept++] = b->devices[i];
    else hdal__device_free(b->devices[i]), ++*dropped;
  }
  b->ndevices = kept;
  return NULL;
}
