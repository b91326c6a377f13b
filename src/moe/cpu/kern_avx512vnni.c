#include "moe/cpu/kern.h"

const struct ftk_ops *ftk_avx512vnni(enum ftfmt_id f)
{
	return NULL;
}
