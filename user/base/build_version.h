/* SPDX-License-Identifier: MIT */
/* What this binary is: its release and the git commit it was built from. */
#ifndef TCHECK_BUILD_VERSION_H
#define TCHECK_BUILD_VERSION_H

/* The release, e.g. "0.1.0". */
const char *build_version(void);
/* The commit the binary was built from (12 hex digits), or "unknown" outside a git checkout. */
const char *build_commit(void);

#endif /* TCHECK_BUILD_VERSION_H */
