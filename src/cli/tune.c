/* --tune key=value: the CPU MoE executor's knobs (struct ftcpumoe_tune) on the commands that run
 * it, and FREETOKEN_CPU_MOE_ISA, the seed's variable, read here once. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define ENV_PREFIX "FREETOKEN_CPU_MOE_"

extern char **environ;

static void print_table(void)
{
	char def[64], range[160];
	printf("CPU MoE executor knobs: --tune key=value (repeatable; later ones win; what each was\n"
	       "measured to do: bench/RESULTS.md §4, \"Tuning knobs\")\n");
	for (int i = 0; i < ftcpumoe_nknobs; i++) {
		const struct ftcpumoe_knob *k = &ftcpumoe_knobs[i];
		ftcpumoe_knob_value(k, k->def, def, sizeof def);
		ftcpumoe_knob_range(k, range, sizeof range);
		printf("  %-11s default %-6s %s\n  %-11s %s\n", k->name, def, range, "", k->help);
	}
	printf("FREETOKEN_CPU_MOE_ISA=TIER sets isa too (--tune isa= wins).\n");
}

int ftcli_opt_tune(struct ftcli_tune *o, const char *arg)
{
	if (!strcmp(arg, "help")) {
		print_table();
		return 1;
	}
	if (o->n >= FTCLI_MAX_TUNE) {
		ftcli_error("--tune: more than %d given", FTCLI_MAX_TUNE);
		return -1;
	}
	o->kv[o->n++] = arg;
	return 0;
}

/* FREETOKEN_CPU_MOE_ISA onto t->isa; any other FREETOKEN_CPU_MOE_* is refused: a run that sets
 * one would otherwise measure the defaults under its name. */
static int from_env(struct ftcpumoe_tune *t)
{
	char why[512], kv[160];
	for (char **v = environ; v && *v; v++) {
		if (strncmp(*v, ENV_PREFIX, sizeof ENV_PREFIX - 1))
			continue;
		const char *name = *v + sizeof ENV_PREFIX - 1, *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		const char *val = eq ? eq + 1 : "";
		if (n == 3 && !strncmp(name, "ISA", 3)) {
			if (!*val)
				continue;
			snprintf(kv, sizeof kv, "isa=%s", val);
			if (ftcpumoe_tune_set(t, kv, why, sizeof why) < 0) {
				ftcli_error("FREETOKEN_CPU_MOE_ISA='%s': expected auto or a tier (scalar, avx2, avx512, "
					    "avx512vnni, avx512bf16, amx)", val);
				return -1;
			}
			continue;
		}
		char key[64];
		size_t kn = n < sizeof key - 1 ? n : sizeof key - 1;
		for (size_t i = 0; i < kn; i++)
			key[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
		key[kn] = 0;
		if (ftcpumoe_knob_find(key, kn))
			ftcli_error("%s%.*s is not read any more: use --tune %s=%s (--tune help lists the knobs)",
				    ENV_PREFIX, (int)n, name, key, val);
		else
			ftcli_error("%s%.*s: not a setting of this build (a typo, or a switch removed after it measured "
				    "no better; --tune help lists the knobs): unset it", ENV_PREFIX, (int)n, name);
		return -1;
	}
	return 0;
}

int ftcli_tune_build(const struct ftcli_tune *o, struct ftcpumoe_tune *t)
{
	char why[512];
	ftcpumoe_tune_defaults(t);
	if (from_env(t) < 0)
		return -1;
	for (int i = 0; o && i < o->n; i++)
		if (ftcpumoe_tune_set(t, o->kv[i], why, sizeof why) < 0) {
			ftcli_error("--tune %s", why);
			return -1;
		}
	return 0;
}
