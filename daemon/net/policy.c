/*
 * daemon/net/policy.c - egress policies: parsing, normal form, nftables rules (see policy.h).
 */
#include "daemon/net/policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODES[] = { [NET_EGRESS_NONE] = "none", [NET_EGRESS_OPEN] = "open",
				     [NET_EGRESS_ALLOW] = "allow" };

const char *net_egress_name(enum net_egress m)
{
	return m <= NET_EGRESS_ALLOW ? MODES[m] : "none";
}

int net_egress_parse(const char *s, enum net_egress *out)
{
	for (int m = NET_EGRESS_NONE; s && m <= NET_EGRESS_ALLOW; m++)
		if (strcmp(s, MODES[m]) == 0) {
			*out = (enum net_egress)m;
			return 0;
		}
	return -EINVAL;
}

bool net_is_name(const char *entry)
{
	return entry && strchr(entry, '/') == NULL && strspn(entry, "0123456789.") != strlen(entry);
}

int net_name_normal(const char *in, char *out, size_t n)
{
	const char *p = in;
	size_t used = 0, len = strlen(in);
	if (len > NET_NAME_MAX || len + 1 > n)
		return -EINVAL;
	if (!strncmp(p, "*.", 2)) {
		out[used++] = '*';
		out[used++] = '.';
		p += 2;
	}
	if (!*p)
		return -EINVAL;
	bool any_alpha = false;
	while (*p) {
		size_t l = strcspn(p, ".");
		if (l == 0 || l > 63 || p[0] == '-' || p[l - 1] == '-')
			return -EINVAL;
		for (size_t i = 0; i < l; i++) {
			char c = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
				return -EINVAL;
			any_alpha |= !(c >= '0' && c <= '9');
			out[used++] = c;
		}
		p += l;
		if (*p == '.') {
			if (!p[1])
				break; /* a final dot: the same name */
			out[used++] = '.';
			p++;
		}
	}
	out[used] = '\0';
	return any_alpha ? 0 : -EINVAL; /* all digits and dots: an address, not a name */
}

/* Whether name (lower case, no final dot) is entry, or under it for "*.suffix". */
static bool name_matches(const char *entry, const char *name)
{
	if (strncmp(entry, "*.", 2) != 0)
		return strcmp(entry, name) == 0;
	size_t el = strlen(entry + 1), nl = strlen(name); /* ".suffix" */
	return nl > el && strcmp(name + nl - el, entry + 1) == 0;
}

static bool listed(const json_t *arr, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (net_is_name(json_string_value(v)) && name_matches(json_string_value(v), name))
			return true;
	return false;
}

enum net_name_verdict net_policy_name(const json_t *policy, const char *name)
{
	enum net_egress m = net_policy_egress(policy);
	if (m == NET_EGRESS_NONE || listed(json_object_get(policy, "deny"), name))
		return NET_NAME_REFUSE;
	if (m == NET_EGRESS_OPEN)
		return NET_NAME_RESOLVE;
	return listed(json_object_get(policy, "allow"), name) ? NET_NAME_PIN : NET_NAME_REFUSE;
}

int net_cidr_normal(const char *in, char *out, size_t n)
{
	char addr[INET_ADDRSTRLEN + 1];
	const char *slash = strchr(in, '/');
	size_t alen = slash ? (size_t)(slash - in) : strlen(in);
	if (alen == 0 || alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, in, alen);
	addr[alen] = '\0';
	struct in_addr a;
	if (inet_pton(AF_INET, addr, &a) != 1)
		return -EINVAL;
	long len = 32;
	if (slash) {
		char *end;
		if (!slash[1] || slash[1] == '-' || slash[1] == '+' || strlen(slash + 1) > 2)
			return -EINVAL;
		len = strtol(slash + 1, &end, 10);
		if (*end || len < 0 || len > 32)
			return -EINVAL;
	}
	uint32_t mask = len == 0 ? 0 : 0xffffffffu << (32 - len);
	a.s_addr = htonl(ntohl(a.s_addr) & mask);
	char norm[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a, norm, sizeof(norm));
	int w = len == 32 ? snprintf(out, n, "%s", norm) : snprintf(out, n, "%s/%ld", norm, len);
	return w < 0 || (size_t)w >= n ? -EINVAL : 0;
}

/* The list `key` of in (or of base when in has none) in normal form, appended to *count. */
static json_t *list(const json_t *in, const json_t *base, const char *key, int *count, struct err *e)
{
	const json_t *src = json_object_get(in, key);
	if (!src)
		src = json_object_get(base, key);
	json_t *out = json_array();
	if (!src)
		return out;
	if (!json_is_array(src)) {
		json_decref(out);
		err_set(e, ERR_INVALID, EINVAL, "network.%s must be a list of addresses or CIDR blocks", key);
		return NULL;
	}
	size_t i;
	json_t *v;
	json_array_foreach(src, i, v) {
		char norm[NET_NAME_MAX + 1];
		const char *s = json_string_value(v);
		if (!s || (net_cidr_normal(s, norm, sizeof(norm)) < 0 && net_name_normal(s, norm, sizeof(norm)) < 0)) {
			json_decref(out);
			err_set(e, ERR_INVALID, EINVAL,
				"network.%s[%zu] is not an IPv4 address, a CIDR block (like 192.0.2.0/24) or a host name "
				"(like example.com or *.example.com)",
				key, i);
			return NULL;
		}
		bool dup = false;
		size_t j;
		json_t *w;
		json_array_foreach(out, j, w)
			dup |= strcmp(json_string_value(w), norm) == 0;
		if (dup)
			continue;
		if (++*count > NET_RULES_MAX) {
			json_decref(out);
			err_set(e, ERR_INVALID, E2BIG, "network.allow and network.deny hold at most %d entries",
				NET_RULES_MAX);
			return NULL;
		}
		json_array_append_new(out, json_string(norm));
	}
	return out;
}

json_t *net_policy_parse(const json_t *in, const json_t *base, enum net_egress dflt, struct err *e)
{
	if (!json_is_object(in)) {
		err_set(e, ERR_INVALID, EINVAL, "network must be an object: {\"egress\", \"allow\", \"deny\"}");
		return NULL;
	}
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)in, k, v) {
		if (strcmp(k, "egress") != 0 && strcmp(k, "allow") != 0 && strcmp(k, "deny") != 0) {
			err_set(e, ERR_INVALID, EINVAL, "unknown field network.%s", k);
			return NULL;
		}
	}
	enum net_egress m = base ? net_policy_egress(base) : dflt;
	const json_t *ev = json_object_get(in, "egress");
	if (ev && net_egress_parse(json_string_value(ev), &m) < 0) {
		err_set(e, ERR_INVALID, EINVAL, "network.egress must be \"none\", \"open\" or \"allow\"");
		return NULL;
	}
	int count = 0;
	json_t *allow = list(in, base, "allow", &count, e);
	json_t *deny = allow ? list(in, base, "deny", &count, e) : NULL;
	if (!deny) {
		json_decref(allow);
		return NULL;
	}
	/* a list given with a new mode replaces, a mode given alone keeps the lists; allow entries
	 * mean something only in allow mode, so another mode with them is a mistake said at once */
	if (m != NET_EGRESS_ALLOW && json_array_size(allow) > 0) {
		if (json_object_get(in, "allow") || !ev) {
			err_set(e, ERR_INVALID, EINVAL, "network.allow needs egress \"allow\" (it is \"%s\")",
				MODES[m]);
			json_decref(allow);
			json_decref(deny);
			return NULL;
		}
		json_array_clear(allow); /* a change of mode away from allow drops its list */
	}
	return json_pack("{s:s, s:o, s:o}", "egress", MODES[m], "allow", allow, "deny", deny);
}

enum net_egress net_policy_egress(const json_t *policy)
{
	enum net_egress m = NET_EGRESS_NONE;
	net_egress_parse(json_string_value(json_object_get(policy, "egress")), &m);
	return m;
}

/* How many entries of arr are addresses or blocks (not names). */
static size_t cidrs_in(const json_t *arr)
{
	size_t i, k = 0;
	json_t *v;
	json_array_foreach(arr, i, v)
		k += !net_is_name(json_string_value(v));
	return k;
}

/* Appends `{ a, b, ... }` of the addresses and blocks of arr to out at *used. */
static void set_of(const json_t *arr, char *out, size_t n, size_t *used)
{
	size_t i;
	json_t *v;
	const char *sep = "{ ";
	json_array_foreach(arr, i, v) {
		if (net_is_name(json_string_value(v)))
			continue;
		*used += (size_t)snprintf(out + *used, *used < n ? n - *used : 0, "%s%s", sep, json_string_value(v));
		sep = ", ";
	}
	*used += (size_t)snprintf(out + *used, *used < n ? n - *used : 0, " }");
}

#define ADD(...) (used += (size_t)snprintf(out + used, used < n ? n - used : 0, __VA_ARGS__))

int net_policy_rules(const json_t *policy, const char *table, const char *chain, char *out, size_t n)
{
	size_t used = 0;
	/* a refused connection is told so at once (a reset, or "administratively prohibited"),
	 * not left to time out */
	const char *refuse = "meta l4proto tcp reject with tcp reset\n";
	const char *refuse_rest = "reject with icmp type admin-prohibited\n";
	ADD("add chain inet %s %s\nflush chain inet %s %s\n", table, chain, table, chain);
	ADD("add rule inet %s %s ct state established,related accept\n", table, chain);
	ADD("add rule inet %s %s meta nfproto != ipv4 drop\n", table, chain);
	ADD("add rule inet %s %s ip daddr != @permitted ip daddr @blocked %s", table, chain, refuse);
	ADD("add rule inet %s %s ip daddr != @permitted ip daddr @blocked %s", table, chain, refuse_rest);
	const json_t *deny = json_object_get(policy, "deny"), *allow = json_object_get(policy, "allow");
	/* what the resolver answered for an allowed name, for as long as the answer lives */
	ADD("add set inet %s %s_pins { type ipv4_addr; flags timeout; }\n", table, chain);
	if (cidrs_in(deny) > 0) {
		for (int pass = 0; pass < 2; pass++) {
			ADD("add rule inet %s %s ip daddr ", table, chain);
			set_of(deny, out, n, &used);
			ADD(" %s", pass ? refuse_rest : refuse);
		}
	}
	enum net_egress m = net_policy_egress(policy);
	if (m == NET_EGRESS_OPEN) {
		ADD("add rule inet %s %s accept\n", table, chain);
	} else if (m == NET_EGRESS_ALLOW) {
		if (cidrs_in(allow) > 0) {
			ADD("add rule inet %s %s ip daddr ", table, chain);
			set_of(allow, out, n, &used);
			ADD(" accept\n");
		}
		ADD("add rule inet %s %s ip daddr @%s_pins accept\n", table, chain, chain);
	}
	ADD("add rule inet %s %s %s", table, chain, refuse);
	ADD("add rule inet %s %s %s", table, chain, refuse_rest);
	if (used >= n)
		return -ENOSPC;
	return (int)used;
}
