/* The CPU MoE executor's tuning knobs: one row per field of struct ftcpumoe_tune (cpumoe.h).
 * What each knob was measured to do: bench/RESULTS.md, §4 "Tuning knobs", the row of its old
 * FREETOKEN_CPU_MOE_ name (the key upper-cased). Nothing here reads the environment. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "moe/cpu/cpumoe.h"
#include "moe/cpu/kern.h"
#include "util/strutil.h"

#define OFF(f) offsetof(struct ftcpumoe_tune, f)

const struct ftcpumoe_knob ftcpumoe_knobs[] = {
	{"isa", FTCPUMOE_KNOB_ISA, 0, 0, NULL, FTCPUMOE_ISA_AUTO, OFF(isa),
	 "the tier --isa auto runs (auto: the fastest measured for the format)"},
	{"sched", FTCPUMOE_KNOB_WORD, 0, 0, "auto|static|dynamic", FTCPUMOE_SCHED_AUTO, OFF(sched),
	 "work split: dynamic work items from 8 pool workers, the static split below (auto)"},
	{"item_kb", FTCPUMOE_KNOB_INT, 16, 65536, "auto", 0, OFF(item_kb),
	 "KiB of weights per pass-1 item of the dynamic schedules (auto: 128-512 by the step, mxfp4 512)"},
	{"item2_kb", FTCPUMOE_KNOB_INT, 16, 65536, "auto", 0, OFF(item2_kb),
	 "KiB of weights per pass-2 item of the dynamic schedules (auto: item_kb if set, else 128; mxfp4 256)"},
	{"tail_div", FTCPUMOE_KNOB_INT, 1, 64, NULL, 4, OFF(tail_div),
	 "the last expert's pass-2 items are this many times smaller (dynamic schedules; mxfp4: in 16 bank rows, at least 16)"},
	{"pf_dist", FTCPUMOE_KNOB_INT, 0, 65536, NULL, FTKERN_PF_DIST, OFF(pf_dist),
	 "bytes ahead of the row kernels' software prefetch into L1 (0: none)"},
	{"pf_far", FTCPUMOE_KNOB_INT, 0, 65536, NULL, FTKERN_PF_FAR, OFF(pf_far),
	 "bytes ahead of the row kernels' second prefetch, into L2 (0: none)"},
	{"mx_pf_dist", FTCPUMOE_KNOB_INT, 64, 8192, NULL, FTKERN_MX_PF_DIST, OFF(mx_pf_dist),
	 "bytes ahead of the mxfp4 K split's row-wise prefetch (rounded down to 64)"},
	{"pf_scales", FTCPUMOE_KNOB_WORD, 0, 0, "0|1", FTKERN_PF_SCALES, OFF(pf_scales),
	 "1: the W4A8 kernels prefetch their scale streams (nvfp4, ds_fp4, mxfp4) with the weights"},
	{"mx_vbmi", FTCPUMOE_KNOB_WORD, 0, 0, "0|1", FTKERN_MX_VBMI, OFF(mx_vbmi),
	 "1: the mxfp4 K split (W4A8) decodes one token's weights with VBMI byte permutes where the CPU has them; 0: shuffles"},
	{"amx_min_nb", FTCPUMOE_KNOB_INT, 1, 33, NULL, FTKERN_AMX_I8_MIN_NB, OFF(amx_min_nb),
	 "amx tier, 4-bit formats: an expert's tokens from which its rows run on the AMX int8 tiles (33: never)"},
	{"trace", FTCPUMOE_KNOB_WORD, 0, 0, "0|1", 0, OFF(trace),
	 "1: time the parts of every dynamic step (ftcpumoe_trace; ftbench cpu-moe prints them)"},
};
const int ftcpumoe_nknobs = (int)(sizeof ftcpumoe_knobs / sizeof ftcpumoe_knobs[0]);

static long *field(struct ftcpumoe_tune *t, const struct ftcpumoe_knob *k)
{
	return (long *)((char *)t + k->off);
}

void ftcpumoe_tune_defaults(struct ftcpumoe_tune *t)
{
	for (int i = 0; i < ftcpumoe_nknobs; i++)
		*field(t, &ftcpumoe_knobs[i]) = ftcpumoe_knobs[i].def;
}

const struct ftcpumoe_knob *ftcpumoe_knob_find(const char *name, size_t len)
{
	for (int i = 0; i < ftcpumoe_nknobs; i++)
		if (strlen(ftcpumoe_knobs[i].name) == len && !strncmp(ftcpumoe_knobs[i].name, name, len))
			return &ftcpumoe_knobs[i];
	return NULL;
}

/* The index of v among words ("a|b|c"), or -1. */
static int word_index(const char *words, const char *v)
{
	int i = 0;
	for (const char *w = words; *w; i++) {
		size_t n = strcspn(w, "|");
		if (strlen(v) == n && !strncmp(v, w, n))
			return i;
		w += n + (w[n] == '|');
	}
	return -1;
}

int ftcpumoe_knob_range(const struct ftcpumoe_knob *k, char *buf, size_t n)
{
	switch (k->type) {
	case FTCPUMOE_KNOB_INT:
		if (k->words)
			return snprintf(buf, n, "%s, or an integer from %ld to %ld", k->words, k->lo, k->hi);
		return snprintf(buf, n, "an integer from %ld to %ld", k->lo, k->hi);
	case FTCPUMOE_KNOB_WORD:
		return snprintf(buf, n, "one of %s", k->words);
	case FTCPUMOE_KNOB_ISA:
		return snprintf(buf, n, "auto or a tier (scalar, avx2, avx512, avx512vnni, avx512bf16, amx)");
	}
	return snprintf(buf, n, "?");
}

int ftcpumoe_knob_value(const struct ftcpumoe_knob *k, long v, char *buf, size_t n)
{
	switch (k->type) {
	case FTCPUMOE_KNOB_INT:
		if (k->words && v == 0)
			return snprintf(buf, n, "%s", k->words);
		return snprintf(buf, n, "%ld", v);
	case FTCPUMOE_KNOB_WORD: {
		const char *w = k->words;
		for (long i = 0; i < v && *w; i++)
			w += strcspn(w, "|") + (w[strcspn(w, "|")] == '|');
		return snprintf(buf, n, "%.*s", (int)strcspn(w, "|"), w);
	}
	case FTCPUMOE_KNOB_ISA:
		return snprintf(buf, n, "%s", ftcpumoe_isa_name((enum ftcpumoe_isa)v));
	}
	return snprintf(buf, n, "?");
}

/* v as a value of knob k: 0 and *out, or -EINVAL. */
static int parse_value(const struct ftcpumoe_knob *k, const char *v, long *out)
{
	switch (k->type) {
	case FTCPUMOE_KNOB_INT:
		if (k->words && !strcmp(v, k->words)) {
			*out = 0;
			return 0;
		}
		return ftstr_parse_long(v, k->lo, k->hi, out) < 0 ? -EINVAL : 0;
	case FTCPUMOE_KNOB_WORD: {
		int i = word_index(k->words, v);
		if (i < 0)
			return -EINVAL;
		*out = i;
		return 0;
	}
	case FTCPUMOE_KNOB_ISA: {
		enum ftcpumoe_isa isa;
		if (ftcpumoe_isa_lookup(v, &isa) < 0)
			return -EINVAL;
		*out = isa;
		return 0;
	}
	}
	return -EINVAL;
}

static void knob_names(char *buf, size_t n)
{
	size_t u = 0;
	buf[0] = 0;
	for (int i = 0; i < ftcpumoe_nknobs && u < n; i++)
		u += (size_t)snprintf(buf + u, n - u, "%s%s", i ? ", " : "", ftcpumoe_knobs[i].name);
}

int ftcpumoe_tune_set(struct ftcpumoe_tune *t, const char *kv, char *why, size_t whylen)
{
	char names[256], range[160];
	const char *eq = kv ? strchr(kv, '=') : NULL;
	if (!eq || eq == kv) {
		knob_names(names, sizeof names);
		if (why)
			snprintf(why, whylen, "'%s': expected key=value (keys: %s)", kv ? kv : "", names);
		return -EINVAL;
	}
	const struct ftcpumoe_knob *k = ftcpumoe_knob_find(kv, (size_t)(eq - kv));
	if (!k) {
		knob_names(names, sizeof names);
		if (why)
			snprintf(why, whylen, "unknown key '%.*s' (keys: %s)", (int)(eq - kv), kv, names);
		return -EINVAL;
	}
	long v;
	if (parse_value(k, eq + 1, &v) < 0) {
		ftcpumoe_knob_range(k, range, sizeof range);
		if (why)
			snprintf(why, whylen, "%s='%s': expected %s", k->name, eq + 1, range);
		return -EINVAL;
	}
	*field(t, k) = v;
	return 0;
}

int ftcpumoe_tune_check(const struct ftcpumoe_tune *t, char *why, size_t whylen)
{
	char range[160];
	for (int i = 0; i < ftcpumoe_nknobs; i++) {
		const struct ftcpumoe_knob *k = &ftcpumoe_knobs[i];
		long v = *field((struct ftcpumoe_tune *)t, k);
		int ok;
		switch (k->type) {
		case FTCPUMOE_KNOB_INT:
			ok = (k->words && v == 0) || (v >= k->lo && v <= k->hi);
			break;
		case FTCPUMOE_KNOB_WORD: {
			long nw = 1;
			for (const char *w = k->words; *w; w++)
				nw += *w == '|';
			ok = v >= 0 && v < nw;
			break;
		}
		default:
			ok = v == FTCPUMOE_ISA_AUTO || (v >= 0 && v < FTCPUMOE_ISA_COUNT);
			break;
		}
		if (!ok) {
			ftcpumoe_knob_range(k, range, sizeof range);
			if (why)
				snprintf(why, whylen, "%s=%ld: expected %s", k->name, v, range);
			return -EINVAL;
		}
	}
	return 0;
}
