// SPDX-License-Identifier: MIT
/* The release and commit, from the build (the Makefile writes build_commit.h). */
#include "base/build_version.h"

#include "build_commit.h"

#define TCHECK_VERSION "0.1.0"

const char *build_version(void)
{
	return TCHECK_VERSION;
}

const char *build_commit(void)
{
	return TCHECK_BUILD_COMMIT;
}
