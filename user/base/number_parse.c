// SPDX-License-Identifier: MIT
/* Numbers from the command line and config files, checked whole and within bounds. */
#include "base/number_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"

/* Digits, one point, an exponent: what strtod takes beyond that (nan, inf, hex) is refused. */
static bool plain_decimal(const char *text)
{
	const char *at = text;
	bool digits = false;

	if (*at == '-' || *at == '+')
		at++;
	while (isdigit((unsigned char)*at) || *at == '.') {
		digits |= isdigit((unsigned char)*at) != 0;
		at++;
	}
	if (digits && (*at == 'e' || *at == 'E')) {
		at++;
		if (*at == '-' || *at == '+')
			at++;
		if (!isdigit((unsigned char)*at))
			return false;
		while (isdigit((unsigned char)*at))
			at++;
	}
	return digits && *at == '\0';
}

static void describe_bounds(const struct number_bounds *bounds, char *text, size_t size)
{
	const char *kind = bounds->whole ? "a whole number" : "a number";

	if (bounds->above_minimum)
		snprintf(text, size, "%s above %.10g and at most %.10g", kind, bounds->minimum,
			 bounds->maximum);
	else
		snprintf(text, size, "%s from %.10g to %.10g", kind, bounds->minimum,
			 bounds->maximum);
}

int number_parse(const char *name, const char *text, const struct number_bounds *bounds,
		 double *value, char *error, size_t error_size)
{
	char wanted[128];
	double number;
	char *end;

	describe_bounds(bounds, wanted, sizeof(wanted));
	if (!text || !plain_decimal(text))
		return error_fail(error, error_size, EINVAL, "%s needs %s, not '%s'", name, wanted,
				  text ? text : "");
	errno = 0;
	number = strtod(text, &end);
	if (errno == ERANGE || *end || !isfinite(number) ||
	    (bounds->whole && number != floor(number)) || number < bounds->minimum ||
	    (bounds->above_minimum && number == bounds->minimum) || number > bounds->maximum)
		return error_fail(error, error_size, EINVAL, "%s needs %s, not '%s'", name, wanted,
				  text);
	*value = number;
	return 0;
}

int number_parse_size(const char *name, const char *text, double minimum, double maximum,
		      unsigned long long *bytes, char *error, size_t error_size)
{
	static const char units[] = "KMG";
	const struct number_bounds bounds = { .minimum = 0, .maximum = maximum };
	size_t length = text ? strlen(text) : 0;
	const char *unit = length ? strchr(units, toupper((unsigned char)text[length - 1])) : NULL;
	double number = 0, scale = 1;
	char digits[64];

	if (unit && *unit) {
		for (const char *at = units; at <= unit; at++)
			scale *= 1024;
		length--;
	}
	if (length >= sizeof(digits) ||
	    !snprintf(digits, sizeof(digits), "%.*s", (int)length, text ? text : "") ||
	    number_parse(name, digits, &bounds, &number, NULL, 0) ||
	    number * scale != floor(number * scale) || number * scale < minimum ||
	    number * scale > maximum)
		return error_fail(error, error_size, EINVAL,
				  "%s needs a size in bytes from %.0f to %.0f, or with K, M or G "
				  "(powers of 1024: 64M), not '%s'",
				  name, minimum, maximum, text ? text : "");
	*bytes = (unsigned long long)(number * scale);
	return 0;
}
