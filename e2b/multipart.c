/*
 * e2b/multipart.c - multipart/form-data files on libmicrohttpd's post processor (multipart.h).
 *
 * The post processor calls back with each field's bytes and their offset in the field; a new
 * part starts at offset 0, and so may a first call that carries no byte yet, which is told
 * apart by the part having had none and the same filename.
 */
#include "e2b/multipart.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct multipart {
	struct MHD_PostProcessor *pp;
	const struct mp_sink *sink;
	void *arg;
	bool open;                           /* a part is under way */
	uint64_t given;                      /* its bytes so far */
	char filename[MULTIPART_NAME_MAX];   /* its filename as sent */
};

void multipart_filename(const char *in, char *out, size_t n)
{
	size_t k = 0;
	for (const char *c = in; *c && k + 1 < n; c++) {
		if (c[0] == '%' && c[1] == '2' && c[2] == '2')
			out[k++] = '"', c += 2;
		else if (c[0] == '%' && c[1] == '0' && (c[2] == 'D' || c[2] == 'd'))
			out[k++] = '\r', c += 2;
		else if (c[0] == '%' && c[1] == '0' && (c[2] == 'A' || c[2] == 'a'))
			out[k++] = '\n', c += 2;
		else
			out[k++] = *c;
	}
	out[k] = '\0';
}

static enum MHD_Result on_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
				const char *content_type, const char *transfer_encoding, const char *data, uint64_t off,
				size_t size)
{
	struct multipart *m = cls;
	if (!key || strcmp(key, "file") != 0)
		return MHD_YES; /* other fields are not files */
	const char *name = filename ? filename : "";
	bool same = m->open && m->given == 0 && strcmp(m->filename, name) == 0;
	if (off == 0 && !same) {
		if (m->open)
			m->sink->end(m->arg);
		char plain[MULTIPART_NAME_MAX];
		strncpy(m->filename, name, sizeof(m->filename) - 1);
		multipart_filename(m->filename, plain, sizeof(plain));
		m->open = true;
		m->given = 0;
		m->sink->begin(m->arg, plain);
	}
	if (m->open && size) {
		m->given += size;
		m->sink->data(m->arg, data, size);
	}
	return MHD_YES;
}

struct multipart *multipart_new(struct MHD_Connection *conn, const struct mp_sink *sink, void *arg)
{
	const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0)
		return NULL;
	struct multipart *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->sink = sink;
	m->arg = arg;
	m->pp = MHD_create_post_processor(conn, 64 * 1024, on_field, m);
	if (!m->pp) {
		free(m);
		return NULL;
	}
	return m;
}

int multipart_feed(struct multipart *m, const char *data, size_t n)
{
	return MHD_post_process(m->pp, data, n) == MHD_YES ? 0 : -EINVAL;
}

void multipart_finish(struct multipart *m)
{
	if (!m)
		return;
	MHD_destroy_post_processor(m->pp);
	if (m->open)
		m->sink->end(m->arg);
	free(m);
}
