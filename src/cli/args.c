/* args: the seed's argparse list spelling (`--batch-sizes 1 4 16 32`) turned into ours
 * (`--batch-sizes 1,4,16,32`) before getopt_long sees the command line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The option of opts that token (after "--", up to '=' or its end) names, as getopt_long
 * resolves it: an exact name, else a unique prefix (several prefixes of options that are the same
 * to getopt_long count as one). NULL: none or ambiguous. */
static const struct option *find_long(const struct option *opts, const char *tok, size_t len)
{
	const struct option *found = NULL;
	for (const struct option *o = opts; o->name; o++) {
		if (strncmp(o->name, tok, len))
			continue;
		if (strlen(o->name) == len)
			return o;
		if (found && (found->val != o->val || found->has_arg != o->has_arg || found->flag != o->flag))
			return NULL;
		if (!found)
			found = o;
	}
	return found;
}

static int is_list(int val, const int *list_vals)
{
	for (; *list_vals; list_vals++)
		if (*list_vals == val)
			return 1;
	return 0;
}

void ftcli_args_release(struct ftcli_args *a)
{
	if (!a)
		return;
	for (int i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	free(a->owned);
	free(a->argv);
	memset(a, 0, sizeof *a);
}

int ftcli_args_join_lists(struct ftcli_args *a, int argc, char **argv, const struct option *opts,
			  const int *list_vals)
{
	memset(a, 0, sizeof *a);
	a->argv = calloc((size_t)argc + 1, sizeof *a->argv);
	a->owned = calloc((size_t)argc + 1, sizeof *a->owned);
	if (!a->argv || !a->owned) {
		ftcli_args_release(a);
		return -ENOMEM;
	}
	for (int i = 0; i < argc; i++) {
		const char *t = argv[i];
		a->argv[a->argc++] = argv[i];
		if (!strcmp(t, "--")) {
			while (++i < argc)
				a->argv[a->argc++] = argv[i];
			break;
		}
		if (strncmp(t, "--", 2) || !t[2])
			continue;
		const char *eq = strchr(t + 2, '=');
		size_t len = eq ? (size_t)(eq - (t + 2)) : strlen(t + 2);
		const struct option *o = find_long(opts, t + 2, len);
		if (!o || o->has_arg != required_argument || !is_list(o->val, list_vals))
			continue;
		/* the value: after '=' or the next argument; then every following argument that is not
		 * an option is one more item */
		int first = eq ? i + 1 : i + 2;
		if (!eq && (first > argc || argv[i + 1][0] == '-'))
			continue; /* no value, or an option as the value: getopt_long's to judge */
		int last = first;
		while (last < argc && argv[last][0] != '-')
			last++;
		if (last == first)
			continue;
		size_t n = strlen(eq ? eq + 1 : argv[i + 1]) + 1;
		for (int k = first; k < last; k++)
			n += strlen(argv[k]) + 1;
		char *v = malloc(n);
		if (!v) {
			ftcli_args_release(a);
			return -ENOMEM;
		}
		strcpy(v, eq ? eq + 1 : argv[i + 1]);
		for (int k = first; k < last; k++) {
			strcat(v, ",");
			strcat(v, argv[k]);
		}
		a->owned[a->nowned++] = v;
		if (eq) {
			/* "--name=a" + "b c": rebuilt as "--name" "a,b,c" */
			char *name = strndup(t, (size_t)(eq - t));
			if (!name) {
				ftcli_args_release(a);
				return -ENOMEM;
			}
			a->owned[a->nowned++] = name;
			a->argv[a->argc - 1] = name;
		}
		a->argv[a->argc++] = v;
		i = last - 1;
	}
	a->argv[a->argc] = NULL;
	return 0;
}
