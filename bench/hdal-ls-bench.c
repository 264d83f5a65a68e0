/* SPDX-License-Identifier: BSD-3-Clause */
/* hdal-ls as bench/hdal-ls-time.sh times it: the tool's own source, linked
 * with -no-install so that it finds the build tree's libhdal through its
 * RUNPATH.  Run through libtool's wrapper or LD_LIBRARY_PATH instead, every
 * library PoCL loads would first be looked for in the build tree too, and
 * hdal-ls would pay for hundreds of failed opens that clinfo does not. */
#include "../tools/hdal-ls.c"
#include "../tools/json.c"
#include "../tools/ls_json.c"
#include "../tools/ls_text.c"
#include "../tools/ls_hardware.c"
#include "../tools/ls_view.c"
#include "../tools/ls_xml.c"
#include "../tools/ls_csv.c"
#include "../tools/text.c"
