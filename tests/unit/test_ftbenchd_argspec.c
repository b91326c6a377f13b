/* The job kinds' argument tables (src/util/jobargs.c, shared by the daemon and `ftbench submit`;
 * the daemon's with its flags' bounds, daemon/jobflags.h) against api/openapi.yaml (compiled into the daemon as ftd_openapi_json): for every kind the
 * same field names, and for every field the spec's type and limits (minimum, maximum, items,
 * enum, required). Then each field typed by `ftbench submit` from the table is accepted by the
 * daemon's validation of the same table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"
#include "../../daemon/jobflags.h"
#include "../../daemon/kinds.h"
#include "moe/formats.h"
#include "moe/models.h"

extern const char ftd_openapi_json[];
static json_t *spec;

/* The schema behind a "$ref": "#/components/schemas/X" (borrowed), or s itself. */
static json_t *deref(json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	if (!ref)
		return s;
	assert_int_equal(strncmp(ref, "#/components/schemas/", 21), 0);
	json_t *t = json_object_get(json_object_get(json_object_get(spec, "components"), "schemas"), ref + 21);
	if (!t)
		fail_msg("no schema %s", ref);
	return deref(t);
}

/* components.schemas.name (borrowed). */
static json_t *schema(const char *name)
{
	json_t *t = json_object_get(json_object_get(json_object_get(spec, "components"), "schemas"), name);
	if (!t)
		fail_msg("no schema %s", name);
	return deref(t);
}

static const char *ref_name(json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	return ref ? ref + 21 : "";
}

/* The Args schema of kind: the oneOf of StartRequest whose kind enum is [kind]. */
static json_t *args_schema(const char *kind)
{
	json_t *one = json_object_get(schema("StartRequest"), "oneOf");
	size_t i;
	json_t *alt;
	json_array_foreach(one, i, alt) {
		json_t *start = deref(alt);
		json_t *k = json_object_get(json_object_get(json_object_get(start, "properties"), "kind"), "enum");
		if (json_array_size(k) == 1 && !strcmp(json_string_value(json_array_get(k, 0)), kind))
			return deref(json_object_get(json_object_get(start, "properties"), "args"));
	}
	fail_msg("no StartRequest for kind %s", kind);
	return NULL;
}

static double num(json_t *s, const char *key)
{
	json_t *v = json_object_get(s, key);
	if (!json_is_number(v))
		fail_msg("no %s in %s", key, json_dumps(s, JSON_COMPACT));
	return json_number_value(v);
}

static void expect_type(json_t *s, const char *type, const char *what)
{
	const char *t = json_string_value(json_object_get(s, "type"));
	if (!t || strcmp(t, type))
		fail_msg("%s: the spec says type %s, the table %s", what, t ? t : "(none)", type);
}

static void expect_range(json_t *s, double lo, double hi, const char *what)
{
	if (num(s, "minimum") != lo || num(s, "maximum") != hi)
		fail_msg("%s: the spec says [%g, %g], the table [%g, %g]", what, num(s, "minimum"), num(s, "maximum"), lo,
			 hi);
}

static void expect_enum(json_t *s, const char *choices, const char *what)
{
	json_t *e = json_object_get(s, "enum");
	char joined[256] = "";
	size_t i;
	json_t *v;
	json_array_foreach(e, i, v)
		snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", i ? "|" : "", json_string_value(v));
	if (strcmp(joined, choices))
		fail_msg("%s: the spec's choices %s, the table's %s", what, joined, choices);
}

/* A bw name list's enum (items of BwDtypeList, BwFormatList, BwModelList) against the worker's
 * tables (src/moe/formats.c, models.c), which the daemon checks at submission: every name the
 * spec allows is one the worker takes, and every name of the table is in the spec. */
static void check_bw_names(json_t *items, const char *which, const char *what)
{
	json_t *en = json_object_get(items, "enum");
	int models = !strcmp(which, "BwModelList"), dtypes = !strcmp(which, "BwDtypeList");
	size_t i;
	json_t *v;
	if (!json_is_array(en) || !json_array_size(en))
		fail_msg("%s: %s has no enum of names", what, which);
	json_array_foreach(en, i, v) {
		const char *n = json_string_value(v);
		const struct ftfmt *f = models ? NULL : ftfmt_lookup(n);
		int ok = !strcmp(n, "all") ? !!(models || dtypes)
			 : models ? !!ftmodel_find(ftmodel_bw_models, ftmodel_bw_models_count, n)
				  : f && (!dtypes || ftmodel_bw_dtype(f->id));
		if (!ok)
			fail_msg("%s: the spec allows '%s', the worker refuses it", what, n);
	}
	int n = models ? ftmodel_bw_models_count : dtypes ? ftmodel_bw_dtypes_count : FTFMT_COUNT;
	for (int j = 0; j < n; j++) {
		const char *name = models ? ftmodel_bw_models[j].name
				   : dtypes ? ftfmt_get(ftmodel_bw_dtypes[j].format)->name : ftfmt_get((enum ftfmt_id)j)->name;
		int found = 0;
		json_array_foreach(en, i, v)
			found |= !strcmp(json_string_value(v), name);
		if (!found)
			fail_msg("%s: the worker's '%s' is not in the spec's %s", what, name, which);
	}
}

static void check_field(const struct ftd_kind *k, const struct ftargs_spec *a, json_t *prop, int required)
{
	char what[96];
	snprintf(what, sizeof what, "%s args.%s", k->name, a->name);
	json_t *s = deref(prop);
	size_t max_items = a->max_items > 0 ? (size_t)a->max_items : a->type == FTARGS_T_ENUMLIST && a->hi > 0 ? (size_t)a->hi : 64;
	if (a->required != required)
		fail_msg("%s: required in the spec %d, in the table %d", what, required, a->required);
	switch (a->type) {
	case FTARGS_T_INT:
		expect_type(s, "integer", what);
		expect_range(s, a->lo, a->hi, what);
		break;
	case FTARGS_T_NUM:
		expect_type(s, "number", what);
		expect_range(s, a->lo, a->hi, what);
		break;
	case FTARGS_T_BOOL:
		expect_type(s, "boolean", what);
		break;
	case FTARGS_T_INTLIST:
	case FTARGS_T_NUMLIST:
	case FTARGS_T_ENUMLIST:
		expect_type(s, "array", what);
		if (num(s, "minItems") != 1 || num(s, "maxItems") != (double)max_items)
			fail_msg("%s: the spec's items [%g, %g], the table's [1, %zu]", what, num(s, "minItems"),
				 num(s, "maxItems"), max_items);
		if (a->type == FTARGS_T_ENUMLIST) {
			expect_type(json_object_get(s, "items"), "string", what);
			expect_enum(json_object_get(s, "items"), a->choices, what);
		} else {
			expect_type(json_object_get(s, "items"), a->type == FTARGS_T_INTLIST ? "integer" : "number", what);
			expect_range(json_object_get(s, "items"), a->lo, a->hi, what);
		}
		break;
	case FTARGS_T_ENUM:
		expect_type(s, "string", what);
		expect_enum(s, a->choices, what);
		break;
	case FTARGS_T_NAMES:
		if (!strcmp(ref_name(prop), "StrList"))
			break;
		if (strcmp(k->name, "bw") || (strcmp(ref_name(prop), "BwDtypeList") && strcmp(ref_name(prop), "BwFormatList") &&
					      strcmp(ref_name(prop), "BwModelList")))
			fail_msg("%s: the table's name list is neither the spec's StrList nor a bw name list", what);
		check_bw_names(json_object_get(json_array_get(json_object_get(s, "oneOf"), 1), "items"), ref_name(prop), what);
		break;
	case FTARGS_T_COMPARE: {
		if (strcmp(ref_name(prop), "CompareList"))
			fail_msg("%s: the table's comparisons are not the spec's CompareList", what);
		json_t *arr = json_array_get(json_object_get(s, "oneOf"), 1);
		if (num(arr, "maxItems") != (double)max_items)
			fail_msg("%s: the spec's CompareList has %g items at most, the table %zu", what,
				 num(arr, "maxItems"), max_items);
		break;
	}
	case FTARGS_T_PATH:
		expect_type(s, "string", what);
		assert_true(num(s, "maxLength") == 4096);
		break;
	case FTARGS_T_SERVER:
		expect_type(s, "string", what);
		assert_true(num(s, "maxLength") == FTD_CONFIG_SERVER_NAME_MAX);
		break;
	case FTARGS_T_URL:
		expect_type(s, "string", what);
		assert_true(num(s, "maxLength") == FTD_CONFIG_URL_MAX);
		break;
	case FTARGS_T_GPU: {
		/* the Gpu schema; a kind that takes every GPU also "all" */
		json_t *any = json_object_get(prop, "anyOf");
		int all = 0, gpu = !strcmp(ref_name(prop), "Gpu");
		size_t i;
		json_t *alt;
		json_array_foreach(any, i, alt) {
			gpu |= !strcmp(ref_name(alt), "Gpu");
			json_t *e = json_object_get(alt, "enum");
			all |= json_array_size(e) == 1 && !strcmp(json_string_value(json_array_get(e, 0)), "all");
		}
		if (!gpu || all != k->gpu_all)
			fail_msg("%s: the spec's gpu (Gpu %d, \"all\" %d) is not the table's (all %d)", what, gpu, all,
				 k->gpu_all);
		break;
	}
	}
}

static void test_tables_match_spec(void **st)
{
	(void)st;
	int nk = 0;
	for (const char *const *name = ftargs_kind_names; *name; name++, nk++) {
		const struct ftd_kind *k = ftd_kind_find(*name);
		if (!k)
			fail_msg("kind %s has an argument table but no row in daemon/kinds.c", *name);
		json_t *as = args_schema(*name), *props = json_object_get(as, "properties");
		assert_true(json_is_false(json_object_get(as, "additionalProperties")));
		size_t rows = 0;
		for (const struct ftargs_spec *a = ftd_job_args(*name); a->name; a++, rows++) {
			json_t *p = json_object_get(props, a->name);
			if (!p)
				fail_msg("%s args.%s is in the table, not in api/openapi.yaml", *name, a->name);
			int required = 0;
			size_t i;
			json_t *r;
			json_array_foreach(json_object_get(as, "required"), i, r)
				required |= !strcmp(json_string_value(r), a->name);
			check_field(k, a, p, required);
		}
		if (json_object_size(props) != rows) {
			const char *key;
			json_t *v;
			json_object_foreach(props, key, v) {
				const struct ftargs_spec *a = ftargs_kind_spec(*name);
				while (a->name && strcmp(a->name, key))
					a++;
				if (!a->name)
					fail_msg("%s args.%s is in api/openapi.yaml, not in the table", *name, key);
			}
		}
	}
	/* every kind of the daemon has a table and a StartRequest */
	assert_int_equal(nk, ftd_kind_count());
	assert_int_equal(json_array_size(json_object_get(schema("StartRequest"), "oneOf")), (size_t)nk);
}

/* Every argument's flag is a row of its kind's command (the generated ftd_job_flags), and the
 * daemon's table has that row's bounds, choices and most items; only a flag without choices or
 * items of its own leaves the row's (a free list the daemon holds to known names). */
static void test_bounds_are_the_flags(void **st)
{
	(void)st;
	for (const char *const *name = ftargs_kind_names; *name; name++) {
		const struct ftargs_spec *raw = ftargs_kind_spec(*name), *a = ftd_job_args(*name);
		assert_non_null(a);
		assert_ptr_equal(a, ftd_job_args(*name)); /* built once */
		for (; raw->name; raw++, a++) {
			const struct ftd_job_flag *f = ftd_job_flag_find(*name, raw->flag);
			if (!f)
				fail_msg("%s args.%s: %s is not a flag of `ftbench %s`", *name, raw->name, raw->flag, *name);
			assert_string_equal(a->name, raw->name);
			if (raw->lo != 0 || raw->hi != 0)
				fail_msg("%s args.%s: a bound written in jobargs.c (the flag's row holds it)", *name, raw->name);
			if (f->bounded && (a->lo != f->lo || a->hi != f->hi))
				fail_msg("%s args.%s: [%g, %g], the flag's [%g, %g]", *name, a->name, a->lo, a->hi, f->lo, f->hi);
			if (f->choices && (raw->choices || strcmp(a->choices, f->choices)))
				fail_msg("%s args.%s: choices %s, the flag's %s", *name, a->name, a->choices, f->choices);
			if (f->max_items && (raw->max_items || a->max_items != f->max_items))
				fail_msg("%s args.%s: %d items, the flag's %d", *name, a->name, a->max_items, f->max_items);
		}
		assert_null(a->name);
	}
	assert_null(ftd_job_args("nope"));
	assert_null(ftd_job_flag_find("bw", "pcie-iters")); /* a flag is spelled with its dashes */
	assert_non_null(ftd_job_flag_find("bw", "--pcie-iters"));
}

/* What `ftbench submit KIND --name value` sends is what the daemon takes. */
static void test_submit_types_are_the_daemons(void **st)
{
	(void)st;
	struct ftd_config cfg = {0};
	struct ftgpu_info gpus[1] = {{.index = 0}};
	snprintf(gpus[0].uuid, sizeof gpus[0].uuid, "GPU-0000");
	for (const char *const *name = ftargs_kind_names; *name; name++) {
		for (const struct ftargs_spec *a = ftd_job_args(*name); a->name; a++) {
			char value[64];
			switch (a->type) {
			case FTARGS_T_INT: snprintf(value, sizeof value, "%.0f", a->hi); break;
			case FTARGS_T_NUM: snprintf(value, sizeof value, "%g", a->hi); break;
			case FTARGS_T_BOOL: snprintf(value, sizeof value, "true"); break;
			case FTARGS_T_INTLIST: snprintf(value, sizeof value, "%.0f,%.0f", a->lo, a->hi); break;
			case FTARGS_T_NUMLIST: snprintf(value, sizeof value, "%g,%g", a->lo, a->hi); break;
			case FTARGS_T_ENUM:
			case FTARGS_T_ENUMLIST: snprintf(value, sizeof value, "%.*s", (int)strcspn(a->choices, "|"), a->choices); break;
			case FTARGS_T_NAMES:
				/* all digits stays a name; bw's names are checked against the worker's tables */
				snprintf(value, sizeof value, "%s",
					 strcmp(*name, "bw") ? "007,bf16" : !strcmp(a->name, "model") ? "qwen3-30b,gpt-oss-20b"
					 : !strcmp(a->name, "isa") ? "007,avx2" : "bf16,nvfp4");
				break;
			case FTARGS_T_GPU: snprintf(value, sizeof value, "0"); break;
			case FTARGS_T_COMPARE: snprintf(value, sizeof value, "moe-backend=offload,hybrid"); break;
			default: continue; /* paths, servers, URLs need a configuration: tests/unit/test_ftbenchd_kinds.c */
			}
			char opt[80];
			snprintf(opt, sizeof opt, "--%s", a->name);
			char *argv[] = {opt, value};
			json_t *args = json_object();
			char err[256];
			assert_int_equal(ftargs_kind_to_json(2, argv, *name, args, err, sizeof err), 0);
			char **wargv;
			int gpu;
			struct ftd_err e;
			const struct ftd_kind *k = ftd_kind_find(*name);
			int r = ftd_kind_build(k, args, &cfg, "/w/ftbench", gpus, 1, &gpu, &wargv, &e);
			/* a kind's own rules (decode needs a server or url) may refuse it, but never the field */
			if (r < 0 && strncmp(e.field, "args.", 5) == 0 && !strcmp(e.field + 5, a->name))
				fail_msg("%s %s %s: %s", *name, opt, value, e.message);
			if (r == 0)
				ftd_kind_argv_free(wargv);
			json_decref(args);
		}
	}
}

int main(void)
{
	json_error_t jerr;
	spec = json_loads(ftd_openapi_json, 0, &jerr);
	if (!spec)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables_match_spec),
		cmocka_unit_test(test_bounds_are_the_flags),
		cmocka_unit_test(test_submit_types_are_the_daemons),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	json_decref(spec);
	return r;
}
