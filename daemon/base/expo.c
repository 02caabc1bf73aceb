/*
 * daemon/base/expo.c - Prometheus' text exposition format (see expo.h): label values escaped,
 * numbers as Prometheus reads them (integers without a fraction, NaN, +Inf and -Inf by name),
 * histograms made cumulative.
 */
#include "daemon/base/expo.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a number's text: "%.17g" of a double and a sign fit. */
#define EXPO_NUMBER_MAX 32

static int put(struct buf *b, const char *s)
{
	return buf_put(b, s, strlen(s));
}

static void number(char *out, size_t n, double v)
{
	if (isnan(v))
		snprintf(out, n, "NaN");
	else if (isinf(v))
		snprintf(out, n, "%s", v > 0 ? "+Inf" : "-Inf");
	else if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
		snprintf(out, n, "%.0f", v);
	else /* the shortest of 15 to 17 digits that reads back as v */
		for (int digits = 15; digits <= 17; digits++) {
			snprintf(out, n, "%.*g", digits, v);
			if (strtod(out, NULL) == v)
				break;
		}
}

/* A label value between double quotes, with \, " and line feeds escaped. */
static int put_value(struct buf *b, const char *v)
{
	int rc = put(b, "\"");
	for (const char *p = v; *p && rc == 0; p++) {
		if (*p == '\\')
			rc = put(b, "\\\\");
		else if (*p == '"')
			rc = put(b, "\\\"");
		else if (*p == '\n')
			rc = put(b, "\\n");
		else
			rc = buf_put(b, p, 1);
	}
	return rc ? rc : put(b, "\"");
}

/* {a="x",b="y"[,extra="v"]}, or nothing when there are no labels at all. */
static int put_labels(struct buf *b, const char *const *labels, const char *extra, const char *extra_value)
{
	bool any = (labels && labels[0]) || extra;
	if (!any)
		return 0;
	int rc = put(b, "{");
	const char *sep = "";
	for (size_t i = 0; labels && labels[i] && rc == 0; i += 2) {
		if ((rc = put(b, sep)) == 0 && (rc = put(b, labels[i])) == 0 && (rc = put(b, "=")) == 0)
			rc = put_value(b, labels[i + 1] ? labels[i + 1] : "");
		sep = ",";
	}
	if (extra && rc == 0 && (rc = put(b, sep)) == 0 && (rc = put(b, extra)) == 0 && (rc = put(b, "=")) == 0)
		rc = put_value(b, extra_value);
	return rc ? rc : put(b, "}");
}

static int line(struct buf *b, const char *name, const char *suffix, const char *const *labels,
		const char *extra, const char *extra_value, double v)
{
	char num[EXPO_NUMBER_MAX];
	number(num, sizeof(num), v);
	int rc = put(b, name);
	if (rc == 0)
		rc = put(b, suffix);
	if (rc == 0)
		rc = put_labels(b, labels, extra, extra_value);
	if (rc == 0)
		rc = put(b, " ");
	if (rc == 0)
		rc = put(b, num);
	return rc ? rc : put(b, "\n");
}

int expo_family(struct buf *b, const char *name, const char *type, const char *help)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -EINVAL;
	return buf_put(b, head, (size_t)n);
}

int expo_sample(struct buf *b, const char *name, const char *const *labels, double value)
{
	return line(b, name, "", labels, NULL, NULL, value);
}

int expo_histogram(struct buf *b, const char *name, const char *const *labels, const double *bounds,
		   size_t nbounds, const uint64_t *per_bucket, double sum)
{
	uint64_t cumulative = 0;
	int rc = 0;
	for (size_t i = 0; i < nbounds && rc == 0; i++) {
		char le[EXPO_NUMBER_MAX];
		number(le, sizeof(le), bounds[i]);
		cumulative += per_bucket[i];
		rc = line(b, name, "_bucket", labels, "le", le, (double)cumulative);
	}
	cumulative += per_bucket[nbounds];
	if (rc == 0)
		rc = line(b, name, "_bucket", labels, "le", "+Inf", (double)cumulative);
	if (rc == 0)
		rc = line(b, name, "_sum", labels, NULL, NULL, sum);
	if (rc == 0)
		rc = line(b, name, "_count", labels, NULL, NULL, (double)cumulative);
	return rc;
}
