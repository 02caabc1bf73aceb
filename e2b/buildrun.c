/*
 * e2b/buildrun.c - a template build's run (buildrun.h): spaced's events as E2B's log entries,
 * a step's output line by line, and the reason a failed build gives the SDK.
 */
#include "e2b/buildrun.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Appends a log entry (level "info" or "error") to b; lock held. */
static void log_add(struct gw_build *b, const char *level, const char *text, size_t len)
{
	if (b->cut)
		return;
	char now[40], msg[GW_BUILD_LINE_MAX + 1];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t k = strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(now + k, sizeof(now) - k, ".%03ldZ", ts.tv_nsec / 1000000);
	if (json_array_size(b->log) == GW_BUILD_LOG_MAX - 1) {
		b->cut = true;
		snprintf(msg, sizeof(msg), "(the log is cut here: a build keeps %d entries)", GW_BUILD_LOG_MAX);
		level = "warn";
	} else {
		if (len > GW_BUILD_LINE_MAX)
			len = GW_BUILD_LINE_MAX;
		memcpy(msg, text, len);
		msg[len] = '\0';
	}
	json_t *e = json_pack("{s:s, s:s, s:s}", "timestamp", now, "level", level, "message", msg);
	if (e && b->step >= 0) {
		char step[16];
		snprintf(step, sizeof(step), "%d", b->step);
		json_object_set_new(e, "step", json_string(b->step == 0 ? "base" : step));
	}
	json_array_append_new(b->log, e);
}

/* Each line of text (a message) as a log entry; lock held. */
static void log_lines(struct gw_build *b, const char *level, const char *text)
{
	while (text && *text) {
		size_t len = strcspn(text, "\n");
		log_add(b, level, text, len);
		text += len + (text[len] == '\n');
	}
}

/* The output kept after its last line break, as an entry of its own; lock held. */
static void output_flush(struct gw_build *b)
{
	if (b->partial_len)
		log_add(b, b->partial_err ? "error" : "info", b->partial, b->partial_len);
	b->partial_len = 0;
	b->partial_cut = false;
}

/* A piece of a step's output: each line an entry, as it ends (a line over GW_BUILD_LINE_MAX
 * bytes is cut there, the rest of it dropped); lock held. */
static void output_add(struct gw_build *b, bool err, const char *data)
{
	if (err != b->partial_err)
		output_flush(b);
	b->partial_err = err;
	for (; data && *data; data++) {
		if (*data == '\n') {
			if (!b->partial_cut)
				log_add(b, err ? "error" : "info", b->partial, b->partial_len);
			b->partial_len = 0;
			b->partial_cut = false;
		} else if (!b->partial_cut) {
			b->partial[b->partial_len++] = *data;
			if (b->partial_len == GW_BUILD_LINE_MAX) {
				log_add(b, err ? "error" : "info", b->partial, b->partial_len);
				b->partial_len = 0;
				b->partial_cut = true;
			}
		}
	}
}

static int on_event(json_t *ev, void *arg)
{
	struct gw_build *b = arg;
	struct gw_builds *t = b->gw->builds;
	const char *type = json_string_value(json_object_get(ev, "type"));
	pthread_mutex_lock(&t->lock);
	if (type && strcmp(type, "output") != 0 && strcmp(type, "keepalive") != 0)
		output_flush(b);
	if (type && strcmp(type, "step") == 0) {
		json_int_t line = json_integer_value(json_object_get(ev, "line"));
		b->step = line >= 1 && (size_t)line <= b->recipe.n_lines ? b->recipe.step_of_line[line - 1] : -1;
		b->step_from = json_array_size(b->log);
		b->state = BUILDRUN_BUILDING;
		char text[GW_BUILD_LINE_MAX];
		snprintf(text, sizeof(text), "[%d/%d] %s%s", (int)json_integer_value(json_object_get(ev, "step")),
			 (int)json_integer_value(json_object_get(ev, "steps")),
			 json_string_value(json_object_get(ev, "text")) ?: "",
			 json_is_true(json_object_get(ev, "cached")) ? " (cached)" : "");
		log_add(b, "info", text, strlen(text));
	} else if (type && strcmp(type, "output") == 0) {
		const char *stream = json_string_value(json_object_get(ev, "stream"));
		output_add(b, stream && strcmp(stream, "stderr") == 0, json_string_value(json_object_get(ev, "data")));
	} else if (type && strcmp(type, "waiting") == 0) {
		b->state = BUILDRUN_WAITING;
		log_lines(b, "info", json_string_value(json_object_get(ev, "message")));
	} else if (type && strcmp(type, "error") == 0 && !b->reason) {
		const char *m = json_string_value(json_object_get(json_object_get(ev, "error"), "message"));
		log_lines(b, "error", m ? m : "the build failed");
		/* the failed step's error with its last lines of output, which the SDK's BuildError carries */
		size_t n = json_array_size(b->log), from = b->step_from;
		if (n - from > GW_BUILD_REASON_LINES)
			from = n - GW_BUILD_REASON_LINES;
		json_t *entries = json_array();
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (f)
			fprintf(f, "%s", m ? m : "the build failed");
		for (size_t i = from; i < n; i++) {
			json_t *e = json_array_get(b->log, i);
			json_array_append(entries, e);
			if (f && i + 1 < n) /* the last is the error itself */
				fprintf(f, "\n%s", json_string_value(json_object_get(e, "message")));
		}
		if (f)
			fclose(f);
		char step[16];
		snprintf(step, sizeof(step), "%d", b->step);
		b->reason = json_pack("{s:s, s:o}", "message", text ? text : "the build failed", "logEntries", entries);
		if (b->step >= 0)
			json_object_set_new(b->reason, "step", json_string(b->step == 0 ? "base" : step));
		free(text);
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static void *build_run(void *arg)
{
	struct gw_build *b = arg;
	struct gw_builds *t = b->gw->builds;
	struct client c = b->gw->up; /* as the administrator: a tenant's token cannot build */
	bool ok = true;
	size_t i;
	json_t *name;
	json_array_foreach(b->names, i, name) {
		char *q = client_escape(json_string_value(name)), path[256];
		snprintf(path, sizeof(path), "/v1/templates?name=%s", q ? q : "");
		free(q);
		pthread_mutex_lock(&t->lock);
		b->step = 0;
		char text[128];
		snprintf(text, sizeof(text), "building template %s", json_string_value(name));
		log_add(b, "info", text, strlen(text));
		pthread_mutex_unlock(&t->lock);
		struct client_err e = { 0 };
		struct client_stream_ops ops = { .event = on_event, .wake_fd = -1, .arg = b };
		int rc = lseek(b->context, 0, SEEK_SET) < 0 ? -errno
			 : client_stream_upload(&c, "POST", path, "application/x-tar", b->context, &ops, &e);
		pthread_mutex_lock(&t->lock);
		if (rc < 0 && !b->reason) {
			log_lines(b, "error", e.message[0] ? e.message : strerror(-rc));
			b->reason = json_pack("{s:s, s:[]}", "message", e.message[0] ? e.message : strerror(-rc), "logEntries");
		}
		ok = !b->reason;
		pthread_mutex_unlock(&t->lock);
		if (!ok)
			break;
	}
	close(b->context);
	pthread_mutex_lock(&t->lock);
	output_flush(b);
	b->step = -1;
	log_add(b, ok ? "info" : "error", ok ? "build finished" : "build failed", strlen(ok ? "build finished" : "build failed"));
	b->state = ok ? BUILDRUN_READY : BUILDRUN_FAILED;
	b->ended_ms = gw_mono_ms();
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int buildrun_start(struct gw_build *b)
{
	pthread_t th;
	int rc = pthread_create(&th, NULL, build_run, b);
	if (rc != 0)
		return -rc;
	pthread_detach(th); /* nobody joins it: it ends b, under the lock, as its last act */
	b->state = BUILDRUN_BUILDING;
	return 0;
}

void buildrun_fail(struct gw_build *b, const char *msg)
{
	b->step = -1;
	log_add(b, "error", msg, strlen(msg));
	b->reason = json_pack("{s:s, s:[]}", "message", msg, "logEntries");
	b->state = BUILDRUN_FAILED;
	b->ended_ms = gw_mono_ms();
}
