/*
 * lib/host/dockerfile_canon.c - a step's canonical text (dockerfile_canonical), what a
 * build's cache key hashes: each of its fields as name=LENGTH:value, so no two different steps
 * read the same; and the names of the instructions.
 */
#include "lib/host/dockerfile_int.h"

#include <stdio.h>

/* The canonical text */

struct out {
	char *s;
	size_t n, len;
};

static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->len < o->n) {
		size_t k = o->n - 1 - o->len < n ? o->n - 1 - o->len : n;
		memcpy(o->s + o->len, s, k);
		o->s[o->len + k] = '\0';
	}
	o->len += n;
}

static void field(struct out *o, const char *name, const char *v)
{
	char num[32];
	int k = snprintf(num, sizeof(num), "=%zu:", strlen(v));
	out_put(o, name, strlen(name));
	out_put(o, num, (size_t)k);
	out_put(o, v, strlen(v));
	out_put(o, "\n", 1);
}

size_t dockerfile_canonical(const struct dockerfile_step *s, char *buf, size_t n)
{
	static const char *const bases[] = { "default", "scratch", "template", "image" };
	struct out o = { buf, n, 0 };
	char mode[8];
	if (n)
		buf[0] = '\0';
	field(&o, "kind", dockerfile_kind_name(s->kind));
	switch (s->kind) {
	case DOCKERFILE_FROM: {
		const char *const names[] = { "ref", "registry", "name", "tag", "digest" };
		const char *const parts[] = { s->from.ref, s->from.registry, s->from.name, s->from.tag,
					      s->from.digest };
		field(&o, "base", bases[s->from.base]);
		for (size_t i = 0; i < 5; i++)
			if (parts[i])
				field(&o, names[i], parts[i]);
		break;
	}
	case DOCKERFILE_RUN:
		if (s->run.shell)
			field(&o, "shell", s->run.shell);
		for (size_t i = 0; i < s->run.argc; i++)
			field(&o, "arg", s->run.argv[i]);
		for (size_t i = 0; i < s->ctx.n_env; i++) {
			field(&o, "env", s->ctx.env[i]->key);
			field(&o, "value", s->ctx.env[i]->value);
		}
		field(&o, "workdir", s->ctx.workdir);
		if (s->ctx.user)
			field(&o, "user", s->ctx.user);
		break;
	case DOCKERFILE_COPY:
	case DOCKERFILE_ADD:
		for (size_t i = 0; i < s->copy.n_src; i++)
			field(&o, "src", s->copy.src[i]);
		field(&o, "dest", s->copy.dest);
		field(&o, "dest_dir", s->copy.dest_dir ? "1" : "0");
		if (s->copy.chown)
			field(&o, "chown", s->copy.chown);
		if (s->copy.chmod >= 0) {
			snprintf(mode, sizeof(mode), "%04o", (unsigned)s->copy.chmod & 07777);
			field(&o, "chmod", mode);
		}
		break;
	case DOCKERFILE_ENV:
	case DOCKERFILE_ARG:
	case DOCKERFILE_LABEL:
		for (size_t i = 0; i < s->pairs.n; i++) {
			field(&o, "key", s->pairs.kv[i].key);
			const char *v = s->pairs.kv[i].value;
			field(&o, v ? "value" : "unset", v ? v : "");
		}
		break;
	case DOCKERFILE_WORKDIR:
		field(&o, "path", s->workdir);
		break;
	case DOCKERFILE_USER:
		field(&o, "user", s->user.user);
		if (s->user.group)
			field(&o, "group", s->user.group);
		break;
	}
	return o.len;
}

const char *dockerfile_kind_name(enum dockerfile_kind k)
{
	static const char *const names[] = { [DOCKERFILE_FROM] = "FROM",       [DOCKERFILE_RUN] = "RUN",
					     [DOCKERFILE_COPY] = "COPY",       [DOCKERFILE_ADD] = "ADD",
					     [DOCKERFILE_ENV] = "ENV",         [DOCKERFILE_ARG] = "ARG",
					     [DOCKERFILE_WORKDIR] = "WORKDIR", [DOCKERFILE_USER] = "USER",
					     [DOCKERFILE_LABEL] = "LABEL" };
	return k <= DOCKERFILE_LABEL ? names[k] : "?";
}
