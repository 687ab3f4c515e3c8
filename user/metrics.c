// SPDX-License-Identifier: MIT
/* Prometheus counters and gauges with labels, and their text exposition. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metrics_series {
	char **label_values;
	double value;
};

struct metrics_family {
	struct metrics_registry *registry;
	char *name;
	char *help;
	enum metrics_type type;
	size_t label_count;
	char *label_names[METRICS_MAX_LABELS];
	struct metrics_series *series;
	size_t series_count;
	size_t series_capacity;
};

struct metrics_registry {
	pthread_mutex_t lock;
	struct metrics_family **families;
	size_t family_count;
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
}

static void free_family(struct metrics_family *family)
{
	for (size_t i = 0; i < family->series_count; i++)
		free_series(&family->series[i], family->label_count);
	for (size_t i = 0; i < family->label_count; i++)
		free(family->label_names[i]);
	free(family->series);
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

static bool declaration_valid(const char *name, enum metrics_type type,
			      const char *const label_names[], size_t label_count)
{
	size_t length = name ? strlen(name) : 0;

	if (!valid_name(name, true) || label_count > METRICS_MAX_LABELS)
		return false;
	if (type == METRICS_COUNTER && (length < 6 || strcmp(name + length - 6, "_total") != 0))
		return false;
	for (size_t i = 0; i < label_count; i++)
		if (!valid_name(label_names[i], false) || strncmp(label_names[i], "__", 2) == 0)
			return false;
	return true;
}

static struct metrics_family *new_family(struct metrics_registry *registry, const char *name,
					 const char *help, enum metrics_type type,
					 const char *const label_names[], size_t label_count)
{
	struct metrics_family *family = calloc(1, sizeof(*family)), **grown;
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
	grown = failed ? NULL
		       : realloc(registry->families,
				 (registry->family_count + 1) * sizeof(*registry->families));
	if (!grown) {
		free_family(family);
		return NULL;
	}
	registry->families = grown;
	registry->families[registry->family_count++] = family;
	return family;
}

struct metrics_family *metrics_declare(struct metrics_registry *registry, const char *name,
				       const char *help, enum metrics_type type,
				       const char *const label_names[], size_t label_count)
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
		if (family->type != type || !same_labels(family, label_names, label_count)) {
			family = NULL;
			errno = EINVAL;
		}
		pthread_mutex_unlock(&registry->lock);
		return family;
	}
	family = new_family(registry, name, help, type, label_names, label_count);
	pthread_mutex_unlock(&registry->lock);
	if (!family)
		errno = ENOMEM;
	return family;
}

static struct metrics_series *find_series(struct metrics_family *family, const char *const values[])
{
	for (size_t i = 0; i < family->series_count; i++) {
		size_t label = 0;

		while (label < family->label_count &&
		       strcmp(family->series[i].label_values[label], values[label]) == 0)
			label++;
		if (label == family->label_count)
			return &family->series[i];
	}
	return NULL;
}

static struct metrics_series *find_or_add_series(struct metrics_family *family,
						 const char *const values[])
{
	struct metrics_series *series = find_series(family, values);

	if (series)
		return series;
	if (family->series_count == family->series_capacity) {
		size_t capacity = family->series_capacity ? 2 * family->series_capacity : 8;
		struct metrics_series *grown =
			realloc(family->series, capacity * sizeof(*family->series));

		if (!grown)
			return NULL;
		family->series = grown;
		family->series_capacity = capacity;
	}
	series = &family->series[family->series_count];
	series->value = 0;
	series->label_values = calloc(family->label_count ? family->label_count : 1,
				      sizeof(*series->label_values));
	if (!series->label_values)
		return NULL;
	for (size_t i = 0; i < family->label_count; i++) {
		series->label_values[i] = strdup(values[i] ? values[i] : "");
		if (!series->label_values[i]) {
			free_series(series, i);
			return NULL;
		}
	}
	family->series_count++;
	return series;
}

static int update(struct metrics_family *family, const char *const values[], double value, bool add)
{
	struct metrics_series *series;
	int err = 0;

	if (add && family->type == METRICS_COUNTER && !(value >= 0))
		return -EINVAL;
	pthread_mutex_lock(&family->registry->lock);
	series = find_or_add_series(family, values);
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
	return update(family, label_values, value, false);
}

int metrics_add(struct metrics_family *family, const char *const label_values[], double delta)
{
	return update(family, label_values, delta, true);
}

double metrics_get(struct metrics_family *family, const char *const label_values[])
{
	struct metrics_series *series;
	double value;

	pthread_mutex_lock(&family->registry->lock);
	series = find_series(family, label_values);
	value = series ? series->value : 0;
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
	if (text->length + length + 1 > text->capacity) {
		size_t capacity = text->capacity ? text->capacity : 4096;
		char *grown;

		while (text->length + length + 1 > capacity)
			capacity *= 2;
		grown = realloc(text->data, capacity);
		if (!grown) {
			text->failed = true;
			return;
		}
		text->data = grown;
		text->capacity = capacity;
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

static void render_family(struct text *text, const struct metrics_family *family)
{
	append_string(text, "# HELP ");
	append_string(text, family->name);
	append_string(text, " ");
	append_escaped(text, family->help, false);
	append_string(text, "\n# TYPE ");
	append_string(text, family->name);
	append_string(text, family->type == METRICS_COUNTER ? " counter\n" : " gauge\n");
	for (size_t i = 0; i < family->series_count; i++) {
		const struct metrics_series *series = &family->series[i];

		append_string(text, family->name);
		for (size_t label = 0; label < family->label_count; label++) {
			append_string(text, label ? "," : "{");
			append_string(text, family->label_names[label]);
			append_string(text, "=\"");
			append_escaped(text, series->label_values[label], true);
			append_string(text, "\"");
		}
		append_string(text, family->label_count ? "} " : " ");
		append_value(text, series->value);
		append_string(text, "\n");
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
