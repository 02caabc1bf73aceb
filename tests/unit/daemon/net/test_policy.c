/*
 * tests/unit/daemon/net/test_policy.c - egress policies (daemon/net/policy.c): CIDRs in normal
 * form, every malformed entry refused with its place named, the limit of entries at its edge,
 * changes merged onto the current policy, and the nftables rules each mode renders.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/net/policy.h"

static json_t *parse(const char *text, const json_t *base, struct err *e)
{
	json_t *in = json_loads(text, 0, NULL);
	assert_non_null(in);
	memset(e, 0, sizeof(*e));
	json_t *out = net_policy_parse(in, base, NET_EGRESS_OPEN, e);
	json_decref(in);
	return out;
}

static void cidrs_take_their_normal_form(void **state)
{
	(void)state;
	char out[32];
	assert_int_equal(net_cidr_normal("192.0.2.7", out, sizeof(out)), 0);
	assert_string_equal(out, "192.0.2.7");
	assert_int_equal(net_cidr_normal("192.0.2.7/24", out, sizeof(out)), 0);
	assert_string_equal(out, "192.0.2.0/24");
	assert_int_equal(net_cidr_normal("198.51.100.9/32", out, sizeof(out)), 0);
	assert_string_equal(out, "198.51.100.9");
	assert_int_equal(net_cidr_normal("10.1.2.3/0", out, sizeof(out)), 0);
	assert_string_equal(out, "0.0.0.0/0");
	static const char *const bad[] = { "", "/8", "192.0.2.1/", "192.0.2.1/33", "192.0.2.1/-1", "192.0.2.1/+8",
					   "192.0.2.1/008", "192.0.2", "256.0.0.1", "example.com", "2001:db8::/32",
					   "192.0.2.1/8x", "192.0.2.1 /8" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(net_cidr_normal(bad[i], out, sizeof(out)), -EINVAL);
}

static void modes_and_lists_parse(void **state)
{
	(void)state;
	struct err e;
	json_t *p = parse("{}", NULL, &e);
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(p, "egress")), "open"); /* the default given */
	assert_int_equal(json_array_size(json_object_get(p, "allow")), 0);
	json_decref(p);

	p = parse("{\"egress\": \"allow\", \"allow\": [\"192.0.2.9/24\", \"192.0.2.0/24\", \"203.0.113.5\"]}", NULL, &e);
	assert_non_null(p);
	assert_int_equal(net_policy_egress(p), NET_EGRESS_ALLOW);
	json_t *allow = json_object_get(p, "allow");
	assert_int_equal(json_array_size(allow), 2); /* the duplicate after normal form goes */
	assert_string_equal(json_string_value(json_array_get(allow, 0)), "192.0.2.0/24");
	json_decref(p);
}

static void bad_policies_are_refused_with_their_place(void **state)
{
	(void)state;
	struct err e;
	assert_null(parse("{\"egress\": \"everything\"}", NULL, &e));
	assert_int_equal(e.kind, ERR_INVALID);
	assert_non_null(strstr(e.msg, "network.egress"));
	assert_null(parse("{\"egress\": \"allow\", \"allow\": [\"192.0.2.0/24\", \"no_pe\"]}", NULL, &e));
	assert_non_null(strstr(e.msg, "network.allow[1]"));
	assert_null(parse("{\"deny\": \"192.0.2.0/24\"}", NULL, &e));
	assert_non_null(strstr(e.msg, "network.deny"));
	assert_null(parse("{\"egress\": \"open\", \"allow\": [\"192.0.2.0/24\"]}", NULL, &e));
	assert_non_null(strstr(e.msg, "needs egress \"allow\""));
	assert_null(parse("{\"egres\": \"open\"}", NULL, &e));
	assert_non_null(strstr(e.msg, "network.egres"));
	json_t *notobj = json_string("open");
	assert_null(net_policy_parse(notobj, NULL, NET_EGRESS_OPEN, &e));
	json_decref(notobj);
}

static void host_names_take_their_normal_form_and_decide_questions(void **state)
{
	(void)state;
	char out[300];
	assert_int_equal(net_name_normal("Example.COM.", out, sizeof(out)), 0);
	assert_string_equal(out, "example.com");
	assert_int_equal(net_name_normal("*.web.test", out, sizeof(out)), 0);
	assert_string_equal(out, "*.web.test");
	static const char *const bad[] = { "", ".", "a..b", "-a.b", "a-.b", "a_b.c", "*.", "**.a", "a.*.b", "1.2.3.4",
					   "a b", "192.0.2.1/24" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(net_name_normal(bad[i], out, sizeof(out)), -EINVAL);
	char longname[300];
	memset(longname, 'a', 254);
	longname[254] = '\0';
	assert_int_equal(net_name_normal(longname, out, sizeof(out)), -EINVAL);

	struct err e;
	json_t *p = parse("{\"egress\": \"allow\", \"allow\": [\"Web.Test\", \"*.cdn.test\", \"192.0.2.0/24\"],"
			  " \"deny\": [\"bad.cdn.test\"]}", NULL, &e);
	assert_non_null(p);
	assert_string_equal(json_string_value(json_array_get(json_object_get(p, "allow"), 0)), "web.test");
	assert_int_equal(net_policy_name(p, "web.test"), NET_NAME_PIN);
	assert_int_equal(net_policy_name(p, "a.cdn.test"), NET_NAME_PIN);
	assert_int_equal(net_policy_name(p, "cdn.test"), NET_NAME_REFUSE); /* the wildcard is what is under it */
	assert_int_equal(net_policy_name(p, "bad.cdn.test"), NET_NAME_REFUSE);
	assert_int_equal(net_policy_name(p, "other.test"), NET_NAME_REFUSE);
	char rules[4096];
	assert_true(net_policy_rules(p, "space_t", "sb3", rules, sizeof(rules)) > 0);
	assert_non_null(strstr(rules, "ip daddr { 192.0.2.0/24 } accept\n")); /* names are not addresses */
	assert_null(strstr(rules, "web.test"));
	assert_non_null(strstr(rules, "ip daddr @sb3_pins accept\n"));
	json_decref(p);
	p = parse("{\"egress\": \"open\", \"deny\": [\"bad.test\"]}", NULL, &e);
	assert_int_equal(net_policy_name(p, "good.test"), NET_NAME_RESOLVE);
	assert_int_equal(net_policy_name(p, "bad.test"), NET_NAME_REFUSE);
	json_decref(p);
	p = parse("{\"egress\": \"none\"}", NULL, &e);
	assert_int_equal(net_policy_name(p, "good.test"), NET_NAME_REFUSE);
	json_decref(p);
}

static void the_limit_of_entries_holds_at_its_edge(void **state)
{
	(void)state;
	char text[8192];
	for (int n = NET_RULES_MAX; n <= NET_RULES_MAX + 1; n++) {
		size_t used = (size_t)snprintf(text, sizeof(text), "{\"egress\": \"allow\", \"allow\": [");
		for (int i = 0; i < n - 1; i++)
			used += (size_t)snprintf(text + used, sizeof(text) - used, "%s\"198.51.100.%d\"", i ? ", " : "", i);
		snprintf(text + used, sizeof(text) - used, "], \"deny\": [\"203.0.113.1\"]}");
		struct err e;
		json_t *p = parse(text, NULL, &e);
		if (n == NET_RULES_MAX) {
			assert_non_null(p);
			char rules[16384];
			assert_true(net_policy_rules(p, "space_t", "sb1", rules, sizeof(rules)) > 0);
			json_decref(p);
		} else {
			assert_null(p);
			assert_non_null(strstr(e.msg, "at most"));
		}
	}
}

static void a_change_merges_onto_the_current_policy(void **state)
{
	(void)state;
	struct err e;
	json_t *cur = parse("{\"egress\": \"allow\", \"allow\": [\"192.0.2.0/24\"], \"deny\": [\"192.0.2.66\"]}", NULL, &e);
	assert_non_null(cur);
	json_t *p = parse("{\"deny\": []}", cur, &e); /* the mode and allow list stay */
	assert_non_null(p);
	assert_int_equal(net_policy_egress(p), NET_EGRESS_ALLOW);
	assert_int_equal(json_array_size(json_object_get(p, "allow")), 1);
	assert_int_equal(json_array_size(json_object_get(p, "deny")), 0);
	json_decref(p);
	p = parse("{\"egress\": \"none\"}", cur, &e); /* leaving allow drops its list, keeps deny */
	assert_non_null(p);
	assert_int_equal(net_policy_egress(p), NET_EGRESS_NONE);
	assert_int_equal(json_array_size(json_object_get(p, "allow")), 0);
	assert_int_equal(json_array_size(json_object_get(p, "deny")), 1);
	json_decref(p);
	json_decref(cur);
}

static void each_mode_renders_its_rules(void **state)
{
	(void)state;
	struct err e;
	char rules[4096];
	json_t *p = parse("{\"egress\": \"open\", \"deny\": [\"203.0.113.0/24\"]}", NULL, &e);
	assert_true(net_policy_rules(p, "space_t", "sb7", rules, sizeof(rules)) > 0);
	assert_non_null(strstr(rules, "flush chain inet space_t sb7\n"));
	assert_non_null(strstr(rules, "ip daddr != @permitted ip daddr @blocked"));
	assert_non_null(strstr(rules, "ip daddr { 203.0.113.0/24 } meta l4proto tcp reject"));
	assert_non_null(strstr(rules, "add rule inet space_t sb7 accept\n"));
	/* the deny comes before the accept of open */
	assert_true(strstr(rules, "203.0.113.0/24") < strstr(rules, "sb7 accept\n"));
	json_decref(p);

	p = parse("{\"egress\": \"none\"}", NULL, &e);
	assert_true(net_policy_rules(p, "space_t", "sb7", rules, sizeof(rules)) > 0);
	assert_null(strstr(rules, "sb7 accept\n"));
	assert_null(strstr(rules, "} accept\n"));
	json_decref(p);

	p = parse("{\"egress\": \"allow\", \"allow\": [\"192.0.2.10\"]}", NULL, &e);
	assert_true(net_policy_rules(p, "space_t", "sb7", rules, sizeof(rules)) > 0);
	assert_non_null(strstr(rules, "ip daddr { 192.0.2.10 } accept\n"));
	assert_int_equal(net_policy_rules(p, "space_t", "sb7", rules, 64), -ENOSPC);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cidrs_take_their_normal_form),
		cmocka_unit_test(modes_and_lists_parse),
		cmocka_unit_test(bad_policies_are_refused_with_their_place),
		cmocka_unit_test(host_names_take_their_normal_form_and_decide_questions),
		cmocka_unit_test(the_limit_of_entries_holds_at_its_edge),
		cmocka_unit_test(a_change_merges_onto_the_current_policy),
		cmocka_unit_test(each_mode_renders_its_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
