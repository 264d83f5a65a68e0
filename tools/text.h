/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls — text for a terminal.  Device names come from drivers and modules,
 * statuses echo HDAL_BACKEND_PATH: any of them may hold ESC sequences, CR or
 * LF that recolour the terminal or forge rows.  They are shown escaped, as ls
 * and systemctl do: \\, \n, \r, \t, \xNN for other control characters and
 * for bytes that are not UTF-8, \uNNNN for C1 controls and the code points
 * that reorder or break lines (U+2028, U+2029, U+202A-U+202E, U+2066-U+2069). */
#ifndef HDAL_LS_TEXT_H
#define HDAL_LS_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* A malloc'ed escaped copy (NULL: ""); NULL when out of memory. */
char *text_escape(const char *s);
/* Columns an escaped string takes: its code points. */
size_t text_width(const char *s);
/* Prints s escaped ("?" when out of memory). */
void text_print(FILE *out, const char *s);

#endif
