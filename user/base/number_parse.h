/* SPDX-License-Identifier: MIT */
/*
 * The one parser for numbers a user gives (command-line options and the
 * agent's config keys: seconds, counts, factors, sizes): the whole text is a
 * finite decimal number within the bounds the option documents, or it is
 * refused with a sentence that names the option. NaN, infinities, overflow,
 * hexadecimal, leading blanks and trailing junk are refused.
 */
#ifndef TCHECK_NUMBER_PARSE_H
#define TCHECK_NUMBER_PARSE_H

#include <stdbool.h>
#include <stddef.h>

struct number_bounds {
	double minimum;
	double maximum;
	bool above_minimum; /* the minimum itself is refused (a positive number: above 0) */
	bool whole;	    /* a whole number (counts, pids, ranks) */
};

/* The largest number of seconds an option takes: a year. */
#define NUMBER_MAX_SECONDS (365.0 * 24 * 3600)
/* The largest factor or ratio an option takes. */
#define NUMBER_MAX_FACTOR 1e6

/*
 * 'text' as a number within 'bounds' into *value; 0, or -EINVAL with a
 * sentence naming 'name' (the option or config key) in 'error'.
 */
int number_parse(const char *name, const char *text, const struct number_bounds *bounds,
		 double *value, char *error, size_t error_size);

/*
 * A size in bytes: a whole number, or a number followed by K, M or G
 * (powers of 1024; "1.5G" is allowed when it comes to whole bytes), from
 * 'minimum' to 'maximum' bytes. 0, or -EINVAL with a sentence naming
 * 'name' in 'error'.
 */
int number_parse_size(const char *name, const char *text, double minimum, double maximum,
		      unsigned long long *bytes, char *error, size_t error_size);

#endif /* TCHECK_NUMBER_PARSE_H */
