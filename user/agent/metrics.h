/* SPDX-License-Identifier: MIT */
/*
 * A registry of Prometheus metrics (counters, gauges and histograms with labels) and
 * their text exposition (format 0.0.4). Updates and rendering may come
 * from different threads: the registry locks itself. Series of a process
 * that ended can be removed by a label value, so label sets stay bounded.
 * Functions return 0 or a negative errno.
 */
#ifndef TCHECK_METRICS_H
#define TCHECK_METRICS_H

#include <stddef.h>

enum metrics_type {
	METRICS_COUNTER,
	METRICS_GAUGE,
	METRICS_HISTOGRAM, /* declared with metrics_declare_histogram */
};

/* At most this many labels per metric. */
#define METRICS_MAX_LABELS 8
/* At most this many buckets per histogram, +Inf not counted. */
#define METRICS_MAX_BUCKETS 32

struct metrics_registry;
struct metrics_family;

struct metrics_registry *metrics_registry_new(void);
void metrics_registry_free(struct metrics_registry *registry);

/*
 * Declares a metric: name ([a-zA-Z_:][a-zA-Z0-9_:]*, a counter's ending in
 * _total), its help text, and its label names. Declaring the same name
 * again returns the same family if type and labels agree, else NULL with
 * errno EINVAL; NULL with errno EINVAL for a malformed name too.
 */
struct metrics_family *metrics_declare(struct metrics_registry *registry, const char *name,
				       const char *help, enum metrics_type type,
				       const char *const label_names[], size_t label_count);

/*
 * Declares a histogram: as metrics_declare, with the upper bounds of its
 * buckets (at most METRICS_MAX_BUCKETS, increasing; +Inf is added). Its
 * name must not end in _total, _bucket, _sum or _count, nor a label be "le".
 */
struct metrics_family *metrics_declare_histogram(struct metrics_registry *registry,
						 const char *name, const char *help,
						 const char *const label_names[],
						 size_t label_count, const double bucket_bounds[],
						 size_t bucket_count);

/* Counts one observation into a histogram series, creating it. -EINVAL for other metrics. */
int metrics_observe(struct metrics_family *family, const char *const label_values[], double value);

/* Sets a series (the label values in declaration order) to value. */
int metrics_set(struct metrics_family *family, const char *const label_values[], double value);
/* Adds delta to a series, creating it at 0; a counter refuses a negative delta (-EINVAL). */
int metrics_add(struct metrics_family *family, const char *const label_values[], double delta);
/*
 * A series a caller updates often, remembered so that the next update finds
 * it without hashing and comparing its labels. It stays right while the
 * family's series have not moved (another added past its capacity, one
 * removed): the update checks that and looks the series up again if they
 * have. Zero-initialised it remembers nothing. The caller owns the key: a
 * handle serves one set of label values, and is zeroed when they change.
 */
struct metrics_handle {
	size_t position; /* 1 + the series' place in its family; 0 none */
	unsigned long layout;
};

/* metrics_add and metrics_set through a handle (found and remembered on first use). */
int metrics_add_remembered(struct metrics_family *family, struct metrics_handle *handle,
			   const char *const label_values[], double delta);
int metrics_set_remembered(struct metrics_family *family, struct metrics_handle *handle,
			   const char *const label_values[], double value);

/*
 * The value of a series, 0 when it does not exist (for tests and reports);
 * of a histogram series, its count of observations.
 */
double metrics_get(struct metrics_family *family, const char *const label_values[]);

/* Removes the one series with these label values, if it exists; 1 removed, 0 none. */
size_t metrics_unset(struct metrics_family *family, const char *const label_values[]);

/* Removes every series, of every family, whose label 'label_name' equals 'value'. */
size_t metrics_remove_series(struct metrics_registry *registry, const char *label_name,
			     const char *value);

/* The same, in one family only. */
size_t metrics_family_remove_series(struct metrics_family *family, const char *label_name,
				    const char *value);

/* The text exposition of every family, malloc'ed and NUL-ended; NULL when out of memory. */
char *metrics_render(struct metrics_registry *registry, size_t *length);

#endif /* TCHECK_METRICS_H */
