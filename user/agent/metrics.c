// SPDX-License-Identifier: MIT
/* Prometheus counters, gauges and histograms with labels, and their text exposition. */
#include "agent/metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "base/u64_map.h"

struct metrics_series {
	char **label_values;
	uint64_t labels_hash; /* of label_values (labels_hash): most look-ups compare only this */
	double value;	      /* a histogram's: the sum of its observations */
	uint64_t *counts;     /* a histogram's observations per bucket, +Inf last; else NULL */
};

struct metrics_family {
	struct metrics_registry *registry;
	char *name;
	char *help;
	enum metrics_type type;
	size_t label_count;
	char *label_names[METRICS_MAX_LABELS];
	double bounds[METRICS_MAX_BUCKETS]; /* a histogram's bucket upper bounds */
	size_t bound_count;
	struct metrics_series *series;
	size_t series_count;
	size_t series_capacity;
	/*
	 * labels_hash -> 1 + the position of a series with it (built again when
	 * series are removed); two series with one hash: the scan finds the other.
	 */
	struct u64_map index;
	/* Changes whenever series move (the array reallocated, one removed): handles check it. */
	unsigned long layout;
};

struct metrics_registry {
	pthread_mutex_t lock;
	struct metrics_family **families;
	size_t family_count, family_capacity;
};

/* A growing text buffer; 'failed' sticks once memory runs out. */
struct text {
	char *data;
	size_t length;
	size_t capacity;
	bool failed;
};

struct metrics_registry *metrics_registry_new(void)
{
	struct metrics_registry *registry = calloc(1, sizeof(*registry));

	if (registry)
		pthread_mutex_init(&registry->lock, NULL);
	return registry;
}

static void free_series(struct metrics_series *series, size_t label_count)
{
	for (size_t i = 0; i < label_count; i++)
		free(series->label_values[i]);
	free(series->label_values);
	free(series->counts);
}

static void free_family(struct metrics_family *family)
{
	for (size_t i = 0; i < family->series_count; i++)
		free_series(&family->series[i], family->label_count);
	for (size_t i = 0; i < family->label_count; i++)
		free(family->label_names[i]);
	free(family->series);
	u64_map_free(&family->index);
	free(family->name);
	free(family->help);
	free(family);
}

void metrics_registry_free(struct metrics_registry *registry)
{
	if (!registry)
		return;
	for (size_t i = 0; i < registry->family_count; i++)
		free_family(registry->families[i]);
	free(registry->families);
	pthread_mutex_destroy(&registry->lock);
	free(registry);
}

static bool valid_name(const char *name, bool colons)
{
	if (!name || !*name || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *c = name; *c; c++) {
		bool letter = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
		bool digit = *c >= '0' && *c <= '9';

		if (!letter && !digit && *c != '_' && !(colons && *c == ':'))
			return false;
	}
	return true;
}

static bool same_labels(const struct metrics_family *family, const char *const names[],
			size_t count)
{
	if (family->label_count != count)
		return false;
	for (size_t i = 0; i < count; i++)
		if (strcmp(family->label_names[i], names[i]) != 0)
			return false;
	return true;
}

static bool ends_with(const char *name, const char *suffix)
{
	size_t length = strlen(name), suffix_length = strlen(suffix);

	return length >= suffix_length && strcmp(name + length - suffix_length, suffix) == 0;
}

static bool declaration_valid(const char *name, enum metrics_type type,
			      const char *const label_names[], size_t label_count)
{
	if (!valid_name(name, true) || label_count > METRICS_MAX_LABELS)
		return false;
	if (type == METRICS_COUNTER && !ends_with(name, "_total"))
		return false;
	/* A histogram's own series take these suffixes. */
	if (type == METRICS_HISTOGRAM && (ends_with(name, "_total") || ends_with(name, "_bucket") ||
					  ends_with(name, "_sum") || ends_with(name, "_count")))
		return false;
	for (size_t i = 0; i < label_count; i++)
		if (!valid_name(label_names[i], false) || strncmp(label_names[i], "__", 2) == 0 ||
		    (type == METRICS_HISTOGRAM && strcmp(label_names[i], "le") == 0))
			return false;
	return true;
}

static bool bounds_valid(const double bounds[], size_t count)
{
	if (!count || count > METRICS_MAX_BUCKETS)
		return false;
	for (size_t i = 0; i < count; i++)
		if (!isfinite(bounds[i]) || (i && !(bounds[i] > bounds[i - 1])))
			return false;
	return true;
}

static struct metrics_family *new_family(struct metrics_registry *registry, const char *name,
					 const char *help, enum metrics_type type,
					 const char *const label_names[], size_t label_count)
{
	struct metrics_family *family = calloc(1, sizeof(*family));
	bool failed;

	if (!family)
		return NULL;
	family->registry = registry;
	family->type = type;
	family->name = strdup(name);
	family->help = strdup(help ? help : "");
	failed = !family->name || !family->help;
	for (size_t i = 0; i < label_count; i++) {
		family->label_names[i] = strdup(label_names[i]);
		family->label_count = i + 1;
		failed |= !family->label_names[i];
	}
	if (failed ||
	    growable_array_room_for_one((void **)&registry->families, registry->family_count,
					&registry->family_capacity, sizeof(*registry->families))) {
		free_family(family);
		return NULL;
	}
	registry->families[registry->family_count++] = family;
	return family;
}

static bool same_bounds(const struct metrics_family *family, const double bounds[], size_t count)
{
	if (family->bound_count != count)
		return false;
	for (size_t i = 0; i < count; i++)
		if (family->bounds[i] != bounds[i])
			return false;
	return true;
}

static struct metrics_family *declare(struct metrics_registry *registry, const char *name,
				      const char *help, enum metrics_type type,
				      const char *const label_names[], size_t label_count,
				      const double bounds[], size_t bound_count)
{
	struct metrics_family *family = NULL;

	if (!declaration_valid(name, type, label_names, label_count)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&registry->lock);
	for (size_t i = 0; i < registry->family_count; i++) {
		if (strcmp(registry->families[i]->name, name) != 0)
			continue;
		family = registry->families[i];
		if (family->type != type || !same_labels(family, label_names, label_count) ||
		    !same_bounds(family, bounds, bound_count)) {
			family = NULL;
			errno = EINVAL;
		}
		pthread_mutex_unlock(&registry->lock);
		return family;
	}
	family = new_family(registry, name, help, type, label_names, label_count);
	if (family) {
		for (size_t i = 0; i < bound_count; i++)
			family->bounds[i] = bounds[i];
		family->bound_count = bound_count;
	}
	pthread_mutex_unlock(&registry->lock);
	if (!family)
		errno = ENOMEM;
	return family;
}

struct metrics_family *metrics_declare(struct metrics_registry *registry, const char *name,
				       const char *help, enum metrics_type type,
				       const char *const label_names[], size_t label_count)
{
	if (type == METRICS_HISTOGRAM) {
		errno = EINVAL; /* it needs its buckets */
		return NULL;
	}
	return declare(registry, name, help, type, label_names, label_count, NULL, 0);
}

struct metrics_family *metrics_declare_histogram(struct metrics_registry *registry,
						 const char *name, const char *help,
						 const char *const label_names[],
						 size_t label_count, const double bucket_bounds[],
						 size_t bucket_count)
{
	if (!bounds_valid(bucket_bounds, bucket_count)) {
		errno = EINVAL;
		return NULL;
	}
	return declare(registry, name, help, METRICS_HISTOGRAM, label_names, label_count,
		       bucket_bounds, bucket_count);
}

/* The hash of a series' label values, each with its NUL (NULL reads as ""). */
static uint64_t labels_hash(const struct metrics_family *family, const char *const values[])
{
	uint64_t hash = FNV1A_OFFSET_BASIS;

	for (size_t label = 0; label < family->label_count; label++) {
		const char *value = values[label] ? values[label] : "";

		hash = fnv1a_add_bytes(hash, value, strlen(value) + 1);
	}
	return hash;
}

static bool same_values(const struct metrics_family *family, const struct metrics_series *series,
			const char *const values[])
{
	for (size_t label = 0; label < family->label_count; label++)
		if (strcmp(series->label_values[label], values[label] ? values[label] : "") != 0)
			return false;
	return true;
}

/* Indexes every series again, after removals moved them. */
static void reindex(struct metrics_family *family)
{
	family->layout++;
	u64_map_free(&family->index);
	u64_map_init(&family->index);
	for (size_t i = 0; i < family->series_count; i++)
		if (!u64_map_get(&family->index, family->series[i].labels_hash))
			(void)u64_map_put(&family->index, family->series[i].labels_hash,
					  (void *)(uintptr_t)(i + 1));
}

/*
 * The series with these label values, or NULL; 'hash' is their labels_hash.
 * A family holds up to a few hundred series and every NCCL call updates
 * five: the index finds it, the strings confirm it; a scan of the hashes
 * is left for two label sets of one hash (or an index out of memory).
 */
static struct metrics_series *find_series(struct metrics_family *family, const char *const values[],
					  uint64_t hash)
{
	uintptr_t position = (uintptr_t)u64_map_get(&family->index, hash);

	if (position && position <= family->series_count &&
	    same_values(family, &family->series[position - 1], values))
		return &family->series[position - 1];
	for (size_t i = 0; i < family->series_count; i++)
		if (family->series[i].labels_hash == hash &&
		    same_values(family, &family->series[i], values))
			return &family->series[i];
	return NULL;
}

static struct metrics_series *find_or_add_series(struct metrics_family *family,
						 const char *const values[])
{
	uint64_t hash = labels_hash(family, values);
	struct metrics_series *series = find_series(family, values, hash);
	struct metrics_series *before = family->series;

	if (series)
		return series;
	if (growable_array_room_for_one((void **)&family->series, family->series_count,
					&family->series_capacity, sizeof(*family->series)))
		return NULL;
	if (family->series != before)
		family->layout++;
	series = &family->series[family->series_count];
	series->labels_hash = hash;
	series->value = 0;
	series->counts = NULL;
	series->label_values = calloc(family->label_count ? family->label_count : 1,
				      sizeof(*series->label_values));
	if (!series->label_values)
		return NULL;
	if (family->type == METRICS_HISTOGRAM) {
		series->counts = calloc(family->bound_count + 1, sizeof(*series->counts));
		if (!series->counts) {
			free_series(series, 0);
			return NULL;
		}
	}
	for (size_t i = 0; i < family->label_count; i++) {
		series->label_values[i] = strdup(values[i] ? values[i] : "");
		if (!series->label_values[i]) {
			free_series(series, i);
			return NULL;
		}
	}
	family->series_count++;
	if (!u64_map_get(&family->index, hash))
		(void)u64_map_put(&family->index, hash, (void *)(uintptr_t)family->series_count);
	return series;
}

/* The series a handle remembers, if the family's series have not moved since; else NULL. */
static struct metrics_series *remembered(const struct metrics_family *family,
					 const struct metrics_handle *handle)
{
	if (!handle || !handle->position || handle->layout != family->layout ||
	    handle->position > family->series_count)
		return NULL;
	return &family->series[handle->position - 1];
}

static int update(struct metrics_family *family, struct metrics_handle *handle,
		  const char *const values[], double value, bool add)
{
	struct metrics_series *series;
	int err = 0;

	if (family->type == METRICS_HISTOGRAM)
		return -EINVAL; /* observations only */
	if (add && family->type == METRICS_COUNTER && !(value >= 0))
		return -EINVAL;
	pthread_mutex_lock(&family->registry->lock);
	series = remembered(family, handle);
	if (!series) {
		series = find_or_add_series(family, values);
		if (series && handle)
			*handle = (struct metrics_handle){ (size_t)(series - family->series) + 1,
							   family->layout };
	}
	if (!series)
		err = -ENOMEM;
	else if (add)
		series->value += value;
	else
		series->value = value;
	pthread_mutex_unlock(&family->registry->lock);
	return err;
}

int metrics_set(struct metrics_family *family, const char *const label_values[], double value)
{
	return update(family, NULL, label_values, value, false);
}

int metrics_add(struct metrics_family *family, const char *const label_values[], double delta)
{
	return update(family, NULL, label_values, delta, true);
}

int metrics_add_remembered(struct metrics_family *family, struct metrics_handle *handle,
			   const char *const label_values[], double delta)
{
	return update(family, handle, label_values, delta, true);
}

int metrics_set_remembered(struct metrics_family *family, struct metrics_handle *handle,
			   const char *const label_values[], double value)
{
	return update(family, handle, label_values, value, false);
}

int metrics_observe(struct metrics_family *family, const char *const label_values[], double value)
{
	struct metrics_series *series;
	size_t bucket = 0;
	int err = 0;

	if (family->type != METRICS_HISTOGRAM || isnan(value))
		return -EINVAL;
	while (bucket < family->bound_count && value > family->bounds[bucket])
		bucket++;
	pthread_mutex_lock(&family->registry->lock);
	series = find_or_add_series(family, label_values);
	if (!series || !series->counts) {
		err = -ENOMEM;
	} else {
		series->counts[bucket]++;
		series->value += value;
	}
	pthread_mutex_unlock(&family->registry->lock);
	return err;
}

static uint64_t observations(const struct metrics_family *family,
			     const struct metrics_series *series)
{
	uint64_t total = 0;

	for (size_t i = 0; i <= family->bound_count; i++)
		total += series->counts[i];
	return total;
}

double metrics_get(struct metrics_family *family, const char *const label_values[])
{
	struct metrics_series *series;
	double value;

	pthread_mutex_lock(&family->registry->lock);
	series = find_series(family, label_values, labels_hash(family, label_values));
	value = !series				    ? 0
		: family->type == METRICS_HISTOGRAM ? (double)observations(family, series)
						    : series->value;
	pthread_mutex_unlock(&family->registry->lock);
	return value;
}

/* Removes a family's series whose label_name is value; the registry is locked. */
static size_t remove_from_family(struct metrics_family *family, const char *label_name,
				 const char *value)
{
	size_t label = 0, kept = 0, removed = 0;

	while (label < family->label_count && strcmp(family->label_names[label], label_name) != 0)
		label++;
	if (label == family->label_count)
		return 0;
	for (size_t i = 0; i < family->series_count; i++) {
		if (strcmp(family->series[i].label_values[label], value) == 0) {
			free_series(&family->series[i], family->label_count);
			removed++;
		} else {
			family->series[kept++] = family->series[i];
		}
	}
	family->series_count = kept;
	if (removed)
		reindex(family);
	return removed;
}

size_t metrics_unset(struct metrics_family *family, const char *const label_values[])
{
	struct metrics_series *series;
	size_t removed = 0;

	pthread_mutex_lock(&family->registry->lock);
	series = find_series(family, label_values, labels_hash(family, label_values));
	if (series) {
		size_t last = family->series_count - 1;

		free_series(series, family->label_count);
		/* The order of the others is kept: the exposition stays stable between scrapes. */
		memmove(series, series + 1,
			(size_t)(&family->series[last] - series) * sizeof(*series));
		family->series_count--;
		reindex(family);
		removed = 1;
	}
	pthread_mutex_unlock(&family->registry->lock);
	return removed;
}

size_t metrics_remove_series(struct metrics_registry *registry, const char *label_name,
			     const char *value)
{
	size_t removed = 0;

	pthread_mutex_lock(&registry->lock);
	for (size_t f = 0; f < registry->family_count; f++)
		removed += remove_from_family(registry->families[f], label_name, value);
	pthread_mutex_unlock(&registry->lock);
	return removed;
}

size_t metrics_family_remove_series(struct metrics_family *family, const char *label_name,
				    const char *value)
{
	size_t removed;

	pthread_mutex_lock(&family->registry->lock);
	removed = remove_from_family(family, label_name, value);
	pthread_mutex_unlock(&family->registry->lock);
	return removed;
}

static void append(struct text *text, const char *bytes, size_t length)
{
	if (text->failed)
		return;
	/* The text and its closing NUL. */
	if (growable_array_reserve((void **)&text->data, text->length, &text->capacity, length + 1,
				   1)) {
		text->failed = true;
		return;
	}
	memcpy(text->data + text->length, bytes, length);
	text->length += length;
	text->data[text->length] = '\0';
}

static void append_string(struct text *text, const char *string)
{
	append(text, string, strlen(string));
}

/* HELP text escapes backslash and newline; label values also the double quote. */
static void append_escaped(struct text *text, const char *string, bool quote)
{
	for (const char *c = string; *c; c++) {
		if (*c == '\\')
			append_string(text, "\\\\");
		else if (*c == '\n')
			append_string(text, "\\n");
		else if (quote && *c == '"')
			append_string(text, "\\\"");
		else
			append(text, c, 1);
	}
}

static void append_value(struct text *text, double value)
{
	char number[40];

	if (isnan(value))
		append_string(text, "NaN");
	else if (isinf(value))
		append_string(text, value > 0 ? "+Inf" : "-Inf");
	else {
		snprintf(number, sizeof(number), "%.17g", value);
		append_string(text, number);
	}
}

static const char *type_name(enum metrics_type type)
{
	switch (type) {
	case METRICS_COUNTER:
		return " counter\n";
	case METRICS_HISTOGRAM:
		return " histogram\n";
	default:
		return " gauge\n";
	}
}

/*
 * One sample line: the family's name with a suffix, its labels, and a
 * bucket's "le" label when le is not NULL.
 */
static void render_sample(struct text *text, const struct metrics_family *family,
			  const struct metrics_series *series, const char *suffix, const char *le,
			  double value)
{
	bool labelled = family->label_count || le;

	append_string(text, family->name);
	append_string(text, suffix);
	for (size_t label = 0; label < family->label_count; label++) {
		append_string(text, label ? "," : "{");
		append_string(text, family->label_names[label]);
		append_string(text, "=\"");
		append_escaped(text, series->label_values[label], true);
		append_string(text, "\"");
	}
	if (le) {
		append_string(text, family->label_count ? ",le=\"" : "{le=\"");
		append_string(text, le);
		append_string(text, "\"");
	}
	append_string(text, labelled ? "} " : " ");
	append_value(text, value);
	append_string(text, "\n");
}

/* Buckets count every observation up to their bound (cumulative), then _sum and _count. */
static void render_histogram(struct text *text, const struct metrics_family *family,
			     const struct metrics_series *series)
{
	uint64_t cumulative = 0;
	char le[40];

	for (size_t i = 0; i < family->bound_count; i++) {
		cumulative += series->counts[i];
		snprintf(le, sizeof(le), "%.15g", family->bounds[i]);
		render_sample(text, family, series, "_bucket", le, (double)cumulative);
	}
	cumulative += series->counts[family->bound_count];
	render_sample(text, family, series, "_bucket", "+Inf", (double)cumulative);
	render_sample(text, family, series, "_sum", NULL, series->value);
	render_sample(text, family, series, "_count", NULL, (double)cumulative);
}

static void render_family(struct text *text, const struct metrics_family *family)
{
	append_string(text, "# HELP ");
	append_string(text, family->name);
	append_string(text, " ");
	append_escaped(text, family->help, false);
	append_string(text, "\n# TYPE ");
	append_string(text, family->name);
	append_string(text, type_name(family->type));
	for (size_t i = 0; i < family->series_count; i++) {
		if (family->type == METRICS_HISTOGRAM)
			render_histogram(text, family, &family->series[i]);
		else
			render_sample(text, family, &family->series[i], "", NULL,
				      family->series[i].value);
	}
}

char *metrics_render(struct metrics_registry *registry, size_t *length)
{
	struct text text = { 0 };

	append_string(&text, "");
	pthread_mutex_lock(&registry->lock);
	for (size_t i = 0; i < registry->family_count; i++)
		render_family(&text, registry->families[i]);
	pthread_mutex_unlock(&registry->lock);
	if (text.failed) {
		free(text.data);
		return NULL;
	}
	if (length)
		*length = text.length;
	return text.data;
}
