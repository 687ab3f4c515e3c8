// SPDX-License-Identifier: MIT
/* Prometheus HTTP API queries over libcurl, answers parsed with jansson. */
#include "diagnose/prometheus_query.h"

#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"

/* An answer larger than this is refused: a bound on what a server can make us hold. */
#define MAX_ANSWER_BYTES (256U << 20)

struct answer {
	char *data;
	size_t length, capacity;
	int too_large;
};

static size_t collect(char *bytes, size_t size, size_t count, void *context)
{
	struct answer *answer = context;
	size_t more = size * count;

	if (answer->length + more > MAX_ANSWER_BYTES) {
		answer->too_large = 1;
		return 0;
	}
	/* The bytes and the closing NUL. */
	if (growable_array_reserve((void **)&answer->data, answer->length, &answer->capacity,
				   more + 1, 1))
		return 0;
	memcpy(answer->data + answer->length, bytes, more);
	answer->length += more;
	answer->data[answer->length] = '\0';
	return more;
}

static json_t *parse_answer(const struct answer *answer, long status, const char *url, char *error,
			    size_t error_size)
{
	json_error_t parse_error;
	json_t *document = json_loadb(answer->data, answer->length, 0, &parse_error), *result;
	const char *state, *message;

	if (!document) {
		error_format(error, error_size,
			     "%s answered HTTP %ld with something that is not JSON (%s): is it a "
			     "Prometheus server?",
			     url, status, parse_error.text);
		return NULL;
	}
	state = json_string_value(json_object_get(document, "status"));
	if (!state || strcmp(state, "success") != 0) {
		message = json_string_value(json_object_get(document, "error"));
		error_format(error, error_size, "Prometheus refused the query (HTTP %ld): %s",
			     status, message ? message : "no reason given");
		json_decref(document);
		return NULL;
	}
	result = json_object_get(json_object_get(document, "data"), "result");
	if (!json_is_array(result)) {
		error_format(error, error_size, "Prometheus answered without a result vector");
		json_decref(document);
		return NULL;
	}
	json_incref(result);
	json_decref(document);
	return result;
}

json_t *prometheus_query_vector(const char *base_url, const char *query, double timeout_seconds,
				char *error, size_t error_size)
{
	struct answer answer = { 0 };
	CURL *curl = curl_easy_init();
	char *escaped = NULL, *url = NULL;
	json_t *result = NULL;
	long status = 0;
	CURLcode code;

	if (!curl) {
		error_format(error, error_size, "cannot start libcurl");
		return NULL;
	}
	escaped = curl_easy_escape(curl, query, 0);
	if (!escaped || asprintf(&url, "%s/api/v1/query?query=%s", base_url, escaped) < 0) {
		url = NULL;
		error_format(error, error_size, "out of memory");
		goto out;
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(timeout_seconds * 1000));
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "tcheck-bpf");
	code = curl_easy_perform(curl);
	if (code != CURLE_OK) {
		error_format(error, error_size, "cannot query Prometheus at %s: %s%s", base_url,
			     curl_easy_strerror(code),
			     answer.too_large ? " (the answer is too large)" : "");
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	result = parse_answer(&answer, status, base_url, error, error_size);
out:
	free(url);
	curl_free(escaped);
	free(answer.data);
	curl_easy_cleanup(curl);
	return result;
}

double prometheus_sample_time(const json_t *sample)
{
	return json_number_value(json_array_get(json_object_get(sample, "value"), 0));
}

double prometheus_sample_value(const json_t *sample)
{
	const char *text = json_string_value(json_array_get(json_object_get(sample, "value"), 1));

	return text ? strtod(text, NULL) : NAN;
}

const char *prometheus_sample_label(const json_t *sample, const char *name)
{
	const char *value =
		json_string_value(json_object_get(json_object_get(sample, "metric"), name));

	return value ? value : "";
}
