#include "bw_fake.h"

#include <stdlib.h>
#include <string.h>

double *samples(double v, int n)
{
	double *a = malloc((size_t)n * sizeof *a);
	for (int i = 0; i < n; i++)
		a[i] = v * (1.0 + 0.01 * (i % 3) - 0.01); /* v*0.99, v, v*1.01 */
	return a;
}

void set_part(struct ftbw_part *p, double v, int n)
{
	p->rc = 0;
	p->n = n;
	p->gbs = samples(v, n);
}

void config_small_base(struct ftbw_config *c)
{
	ftbw_config_default(c);
	c->cpu_iters = 3;
	c->pcie_iters = 3;
	c->kernel_cpu_iters = 5;
	c->kernel_pcie_iters = 3;
}

json_t *entry_of(json_t *p, const char *fmt)
{
	return json_object_get(json_object_get(p, "dtype_kernels"), fmt);
}

bool has_warning(json_t *p, const char *needle)
{
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(p, "warnings"), i, w)
		if (strstr(json_string_value(w), needle))
			return true;
	return false;
}
