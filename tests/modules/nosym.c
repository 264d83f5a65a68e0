/* SPDX-License-Identifier: BSD-3-Clause */
/* Test-only module that exports no descriptor: the loader must refuse it. */
int hdal_nosym_something(void);
__attribute__((visibility("default"))) int hdal_nosym_something(void) { return 42; }
