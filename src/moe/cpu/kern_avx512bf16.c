#include "moe/cpu/kern.h"

const struct ftk_ops *ftk_avx512bf16(enum ftfmt_id f)
{
	return NULL;
}
