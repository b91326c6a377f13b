/* safetensors: strict header parsing, sharded models. See safetensors.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "moe/safetensors.h"
#include "util/errmsg.h"
#include "util/fsutil.h"

static const struct {
	const char *name;
	size_t size;
} dtypes[FTST_DTYPE_COUNT] = {
	[FTST_BOOL] = {"BOOL", 1},      [FTST_U8] = {"U8", 1},          [FTST_I8] = {"I8", 1},
	[FTST_F8_E4M3] = {"F8_E4M3", 1}, [FTST_F8_E5M2] = {"F8_E5M2", 1}, [FTST_F8_E8M0] = {"F8_E8M0", 1},
	[FTST_I16] = {"I16", 2},        [FTST_U16] = {"U16", 2},        [FTST_F16] = {"F16", 2},
	[FTST_BF16] = {"BF16", 2},      [FTST_I32] = {"I32", 4},        [FTST_U32] = {"U32", 4},
	[FTST_F32] = {"F32", 4},        [FTST_I64] = {"I64", 8},        [FTST_U64] = {"U64", 8},
	[FTST_F64] = {"F64", 8},
};

size_t ftst_dtype_size(enum ftst_dtype t)
{
	return (unsigned)t < FTST_DTYPE_COUNT ? dtypes[t].size : 0;
}

const char *ftst_dtype_name(enum ftst_dtype t)
{
	return (unsigned)t < FTST_DTYPE_COUNT ? dtypes[t].name : "?";
}

const char *ftst_dtype_torch_name(enum ftst_dtype t)
{
	static const char *const torch[FTST_DTYPE_COUNT] = {
		[FTST_BOOL] = "bool",       [FTST_U8] = "uint8",          [FTST_I8] = "int8",
		[FTST_F8_E4M3] = "float8_e4m3fn", [FTST_F8_E5M2] = "float8_e5m2", [FTST_F8_E8M0] = "float8_e8m0fnu",
		[FTST_I16] = "int16",       [FTST_U16] = "uint16",        [FTST_F16] = "float16",
		[FTST_BF16] = "bfloat16",   [FTST_I32] = "int32",         [FTST_U32] = "uint32",
		[FTST_F32] = "float32",     [FTST_I64] = "int64",         [FTST_U64] = "uint64",
		[FTST_F64] = "float64",
	};
	return (unsigned)t < FTST_DTYPE_COUNT ? torch[t] : "?";
}

int ftst_dtype_lookup(const char *name, enum ftst_dtype *out)
{
	for (int i = 0; name && i < FTST_DTYPE_COUNT; i++)
		if (!strcmp(name, dtypes[i].name)) {
			*out = (enum ftst_dtype)i;
			return 0;
		}
	return -EINVAL;
}

long ftst_utf8_invalid_at(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len;
		unsigned cp, min;
		if (c >= 0xC2 && c <= 0xDF) {
			len = 2, cp = c & 0x1F, min = 0x80;
		} else if (c >= 0xE0 && c <= 0xEF) {
			len = 3, cp = c & 0x0F, min = 0x800;
		} else if (c >= 0xF0 && c <= 0xF4) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return (long)i;
		}
		if (n - i < len)
			return (long)i;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return (long)i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return (long)i;
		i += len;
	}
	return -1;
}

/* Deepest nesting of {} / [] outside strings; -1 if it passes limit (stops scanning). */
static int json_depth(const char *s, size_t n, int limit, size_t *where)
{
	int depth = 0, max = 0, in_str = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			if (++depth > limit) {
				*where = i;
				return -1;
			}
			if (depth > max)
				max = depth;
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	return max;
}

static int cmp_off(const void *a, const void *b)
{
	const struct ftst_tensor *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

void ftst_file_release(struct ftst_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	free(f->path);
	memset(f, 0, sizeof *f);
}

static int parse_tensor(const char *name, json_t *v, uint64_t data_len, struct ftst_tensor *t,
			char *err, size_t errlen)
{
	if (!json_is_object(v))
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': entry is not an object", name);
	const char *key;
	json_t *val;
	json_object_foreach(v, key, val) {
		if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
			return fterr_set(err, errlen, -EINVAL, "tensor '%s': unknown key '%.64s'", name, key);
	}
	json_t *jd = json_object_get(v, "dtype"), *js = json_object_get(v, "shape"),
	       *jo = json_object_get(v, "data_offsets");
	if (!json_is_string(jd))
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': dtype missing or not a string", name);
	if (ftst_dtype_lookup(json_string_value(jd), &t->dtype) < 0)
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': unknown dtype '%.32s'", name,
			    json_string_value(jd));
	if (!json_is_array(js))
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': shape missing or not an array", name);
	size_t nd = json_array_size(js);
	if (nd > FTST_MAX_DIMS)
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': %zu dimensions (at most %d)", name, nd,
			    FTST_MAX_DIMS);
	t->ndim = (int)nd;
	uint64_t elems = 1;
	for (size_t i = 0; i < nd; i++) {
		json_t *d = json_array_get(js, i);
		if (!json_is_integer(d) || json_integer_value(d) < 0)
			return fterr_set(err, errlen, -EINVAL, "tensor '%s': shape[%zu] is not a non-negative integer",
				    name, i);
		uint64_t x = (uint64_t)json_integer_value(d);
		t->shape[i] = (int64_t)x;
		if (x && elems > UINT64_MAX / x)
			return fterr_set(err, errlen, -EINVAL, "tensor '%s': shape overflows", name);
		elems *= x;
	}
	if (!json_is_array(jo) || json_array_size(jo) != 2 || !json_is_integer(json_array_get(jo, 0)) ||
	    !json_is_integer(json_array_get(jo, 1)))
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': data_offsets is not [begin, end]", name);
	json_int_t b = json_integer_value(json_array_get(jo, 0)), e = json_integer_value(json_array_get(jo, 1));
	if (b < 0 || e < b)
		return fterr_set(err, errlen, -EINVAL, "tensor '%s': data_offsets [%lld, %lld] is not an increasing pair",
			    name, (long long)b, (long long)e);
	if ((uint64_t)e > data_len)
		return fterr_set(err, errlen, -EINVAL,
			    "tensor '%s': data_offsets end %lld is past the end of the data (%llu bytes)", name,
			    (long long)e, (unsigned long long)data_len);
	size_t es = ftst_dtype_size(t->dtype);
	if (elems > UINT64_MAX / es || elems * es != (uint64_t)(e - b))
		return fterr_set(err, errlen, -EINVAL,
			    "tensor '%s': %lld bytes in data_offsets but shape x %s needs %llu", name,
			    (long long)(e - b), ftst_dtype_name(t->dtype),
			    elems > UINT64_MAX / es ? 0ULL : (unsigned long long)(elems * es));
	t->offset = (uint64_t)b;
	t->nbytes = (uint64_t)(e - b);
	return 0;
}

int ftst_parse_header(const char *hdr, size_t len, uint64_t file_size, struct ftst_file *out,
		      char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (len < 2)
		return fterr_set(err, errlen, -EINVAL, "header length %zu is too short for a JSON object", len);
	if (len > FTST_MAX_HEADER)
		return fterr_set(err, errlen, -EINVAL, "header length %zu is over the %u-byte cap", len, FTST_MAX_HEADER);
	if (file_size < 8 || len > file_size - 8)
		return fterr_set(err, errlen, -EINVAL, "header length %zu runs past the end of the file (%llu bytes)",
			    len, (unsigned long long)file_size);
	long bad = ftst_utf8_invalid_at(hdr, len);
	if (bad >= 0)
		return fterr_set(err, errlen, -EINVAL, "header is not valid UTF-8 (byte %ld)", bad);
	if (memchr(hdr, '\0', len))
		return fterr_set(err, errlen, -EINVAL, "header contains a NUL byte");
	size_t where = 0;
	if (json_depth(hdr, len, FTST_MAX_DEPTH, &where) < 0)
		return fterr_set(err, errlen, -EINVAL, "header JSON nests deeper than %d levels (byte %zu)",
			    FTST_MAX_DEPTH, where);
	json_error_t je;
	json_t *root = json_loadb(hdr, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return fterr_set(err, errlen, -EINVAL, "header is not valid JSON: %s (byte %d)", je.text, je.position);
	int rc = 0;
	if (!json_is_object(root)) {
		rc = fterr_set(err, errlen, -EINVAL, "header is not a JSON object");
		goto out;
	}
	uint64_t data_start = 8 + (uint64_t)len, data_len = file_size - data_start;
	size_t n = json_object_size(root);
	out->tensors = calloc(n ? n : 1, sizeof *out->tensors);
	if (!out->tensors) {
		rc = -ENOMEM;
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v) {
		if (!strcmp(key, "__metadata__")) {
			const char *mk;
			json_t *mv;
			if (!json_is_object(v)) {
				rc = fterr_set(err, errlen, -EINVAL, "__metadata__ is not an object");
				goto out;
			}
			json_object_foreach(v, mk, mv) {
				if (!json_is_string(mv)) {
					rc = fterr_set(err, errlen, -EINVAL, "__metadata__['%.64s'] is not a string", mk);
					goto out;
				}
			}
			continue;
		}
		size_t kl = strlen(key);
		if (kl == 0 || kl > FTST_MAX_NAME) {
			rc = fterr_set(err, errlen, -EINVAL, "tensor name of %zu bytes (1..%d allowed)", kl, FTST_MAX_NAME);
			goto out;
		}
		struct ftst_tensor *t = &out->tensors[out->ntensors];
		rc = parse_tensor(key, v, data_len, t, err, errlen);
		if (rc < 0)
			goto out;
		t->name = strdup(key);
		if (!t->name) {
			rc = -ENOMEM;
			goto out;
		}
		out->ntensors++;
	}
	qsort(out->tensors, out->ntensors, sizeof *out->tensors, cmp_off);
	for (size_t i = 1; i < out->ntensors; i++) {
		const struct ftst_tensor *a = &out->tensors[i - 1], *b = &out->tensors[i];
		if (b->offset < a->offset + a->nbytes) {
			rc = fterr_set(err, errlen, -EINVAL, "tensors '%s' and '%s' overlap (bytes %llu..%llu and %llu..%llu)",
				  a->name, b->name, (unsigned long long)a->offset,
				  (unsigned long long)(a->offset + a->nbytes), (unsigned long long)b->offset,
				  (unsigned long long)(b->offset + b->nbytes));
			goto out;
		}
	}
	for (size_t i = 0; i < out->ntensors; i++)
		out->tensors[i].offset += data_start;
	out->size = file_size;
	out->data_start = data_start;
out:
	json_decref(root);
	if (rc < 0)
		ftst_file_release(out);
	return rc;
}

int ftst_file_open(const char *path, struct ftst_file *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
	int rc;
	char *hdr = NULL;
	struct stat st;
	unsigned char lenb[8];
	if (fstat(fd, &st) < 0) {
		rc = fterr_set(err, errlen, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fterr_set(err, errlen, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if (st.st_size < 8) {
		rc = fterr_set(err, errlen, -EINVAL, "%s: %lld bytes, too short for a safetensors file", path,
			  (long long)st.st_size);
		goto out;
	}
	if ((rc = ftfs_pread_full(fd, lenb, 8, 0)) < 0) {
		rc = fterr_set(err, errlen, rc, "%s: reading the header length: %s", path, strerror(-rc));
		goto out;
	}
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = (hl << 8) | lenb[i];
	if (hl > FTST_MAX_HEADER || hl > (uint64_t)st.st_size - 8) {
		rc = fterr_set(err, errlen, -EINVAL, "%s: header length %llu is %s", path, (unsigned long long)hl,
			  hl > FTST_MAX_HEADER ? "over the 100 MB cap" : "past the end of the file");
		goto out;
	}
	hdr = malloc(hl ? hl : 1);
	if (!hdr) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = ftfs_pread_full(fd, hdr, hl, 8)) < 0) {
		rc = fterr_set(err, errlen, rc, "%s: reading the header: %s", path, strerror(-rc));
		goto out;
	}
	char e2[512];
	rc = ftst_parse_header(hdr, hl, (uint64_t)st.st_size, out, e2, sizeof e2);
	if (rc < 0) {
		fterr_set(err, errlen, rc, "%s: %s", path, e2);
		goto out;
	}
	out->path = strdup(path);
	if (!out->path) {
		ftst_file_release(out);
		rc = -ENOMEM;
	}
out:
	free(hdr);
	close(fd);
	return rc;
}

/* ---------------------------------------------------------------- models */

static int cmp_name(const void *a, const void *b)
{
	const struct ftst_tensor *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void ftst_model_free(struct ftst_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfiles; i++)
		ftst_file_release(&m->files[i]);
	free(m->files);
	free(m->by_name);
	free(m->dir);
	free(m);
}

const struct ftst_tensor *ftst_model_find(const struct ftst_model *m, const char *name)
{
	struct ftst_tensor key = {.name = (char *)name}, *kp = &key;
	struct ftst_tensor **r = bsearch(&kp, m->by_name, m->ntensors, sizeof *m->by_name, cmp_name);
	return r ? *r : NULL;
}

static int valid_shard_name(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* Shard names from the index (sorted, unique) into *names; the parsed weight_map in *wm. */
static int read_index(const char *dir, json_t **wm_out, char ***names, size_t *n, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	char *buf;
	size_t len;
	int rc = ftfs_read_file(path, 64u << 20, &buf, &len);
	if (rc < 0)
		return rc == -ENOENT ? rc : fterr_set(err, errlen, rc, "%s: %s", path, strerror(-rc));
	if (ftst_utf8_invalid_at(buf, len) >= 0) {
		free(buf);
		return fterr_set(err, errlen, -EINVAL, "%s: not valid UTF-8", path);
	}
	size_t where;
	if (json_depth(buf, len, 4, &where) < 0) {
		free(buf);
		return fterr_set(err, errlen, -EINVAL, "%s: JSON nests too deep (byte %zu)", path, where);
	}
	json_error_t je;
	json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	free(buf);
	if (!root)
		return fterr_set(err, errlen, -EINVAL, "%s: %s (line %d)", path, je.text, je.line);
	json_t *wm = json_object_get(root, "weight_map");
	if (!json_is_object(wm) || json_object_size(wm) == 0) {
		json_decref(root);
		return fterr_set(err, errlen, -EINVAL, "%s: no weight_map object", path);
	}
	size_t cap = json_object_size(wm), k = 0;
	char **v = calloc(cap, sizeof *v);
	if (!v) {
		json_decref(root);
		return -ENOMEM;
	}
	const char *key;
	json_t *val;
	json_object_foreach(wm, key, val) {
		if (!json_is_string(val) || !valid_shard_name(json_string_value(val))) {
			free(v);
			rc = fterr_set(err, errlen, -EINVAL, "%s: weight_map['%.128s'] is not a plain file name", path, key);
			json_decref(root);
			return rc;
		}
		v[k++] = (char *)json_string_value(val);
	}
	qsort(v, k, sizeof *v, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || strcmp(v[u - 1], v[i]))
			v[u++] = v[i];
	char **own = calloc(u, sizeof *own);
	for (size_t i = 0; own && i < u; i++)
		own[i] = strdup(v[i]);
	free(v);
	*names = own;
	*n = u;
	*wm_out = json_incref(wm);
	json_decref(root);
	return own ? 0 : -ENOMEM;
}

static int list_dir_shards(const char *dir, char ***names, size_t *n, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d)
		return fterr_set(err, errlen, -errno, "%s: %s", dir, strerror(errno));
	size_t cap = 16, k = 0;
	char **v = malloc(cap * sizeof *v);
	struct dirent *de;
	int nomem = !v;
	while (!nomem && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l <= 12 || strcmp(de->d_name + l - 12, ".safetensors"))
			continue;
		if (k == cap) {
			char **nv = realloc(v, (cap *= 2) * sizeof *v);
			if (!nv) {
				nomem = 1;
				break;
			}
			v = nv;
		}
		if (!(v[k] = strdup(de->d_name)))
			nomem = 1;
		else
			k++;
	}
	closedir(d);
	if (nomem) {
		for (size_t i = 0; i < k; i++)
			free(v[i]);
		free(v);
		return -ENOMEM;
	}
	if (k == 0) {
		free(v);
		return fterr_set(err, errlen, -ENOENT, "%s: no model.safetensors.index.json and no *.safetensors files", dir);
	}
	qsort(v, k, sizeof *v, cmp_str);
	*names = v;
	*n = k;
	return 0;
}

int ftst_model_open(const char *dir, struct ftst_model **out, char *err, size_t errlen)
{
	*out = NULL;
	struct ftst_model *m = calloc(1, sizeof *m);
	if (!m || !(m->dir = strdup(dir))) {
		free(m);
		return -ENOMEM;
	}
	json_t *wm = NULL;
	char **names = NULL;
	size_t nn = 0;
	int rc = read_index(dir, &wm, &names, &nn, err, errlen);
	if (rc == -ENOENT)
		rc = list_dir_shards(dir, &names, &nn, err, errlen);
	if (rc < 0)
		goto out;
	m->files = calloc(nn, sizeof *m->files);
	if (!m->files) {
		rc = -ENOMEM;
		goto out;
	}
	size_t total = 0;
	for (size_t i = 0; i < nn; i++) {
		char path[4096];
		if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path) {
			rc = fterr_set(err, errlen, -ENAMETOOLONG, "%s/%s: path too long", dir, names[i]);
			goto out;
		}
		rc = ftst_file_open(path, &m->files[i], err, errlen);
		if (rc < 0)
			goto out;
		m->nfiles++;
		for (size_t t = 0; t < m->files[i].ntensors; t++)
			m->files[i].tensors[t].file = (int)i;
		total += m->files[i].ntensors;
	}
	m->by_name = calloc(total ? total : 1, sizeof *m->by_name);
	if (!m->by_name) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t t = 0; t < m->files[i].ntensors; t++)
			m->by_name[m->ntensors++] = &m->files[i].tensors[t];
	qsort(m->by_name, m->ntensors, sizeof *m->by_name, cmp_name);
	for (size_t i = 1; i < m->ntensors; i++)
		if (!strcmp(m->by_name[i - 1]->name, m->by_name[i]->name)) {
			rc = fterr_set(err, errlen, -EINVAL, "tensor '%s' is in both %s and %s", m->by_name[i]->name,
				  names[m->by_name[i - 1]->file], names[m->by_name[i]->file]);
			goto out;
		}
	if (wm) {
		const char *key;
		json_t *val;
		json_object_foreach(wm, key, val) {
			const struct ftst_tensor *t = ftst_model_find(m, key);
			if (!t) {
				rc = fterr_set(err, errlen, -EINVAL, "index puts '%.200s' in %s but that shard does not hold it",
					  key, json_string_value(val));
				goto out;
			}
			if (strcmp(names[t->file], json_string_value(val))) {
				rc = fterr_set(err, errlen, -EINVAL, "index puts '%.200s' in %s but it is in %s", key,
					  json_string_value(val), names[t->file]);
				goto out;
			}
		}
	}
	*out = m;
	m = NULL;
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	json_decref(wm);
	ftst_model_free(m);
	return rc;
}

/* ---------------------------------------------------------------- writer */

int ftst_build_header(const struct ftst_wtensor *t, size_t n, const char *metadata, char **hdr,
		      size_t *hdr_len, uint64_t *off, uint64_t *file_size)
{
	size_t cap = 256 + n * 320 + (metadata ? strlen(metadata) : 0), len = 8;
	for (size_t i = 0; i < n; i++)
		cap += strlen(t[i].name);
	char *b = malloc(cap);
	if (!b)
		return -ENOMEM;
#define PUT(...) do { if (len < cap) len += (size_t)snprintf(b + len, cap - len, __VA_ARGS__); } while (0)
	PUT("{");
	if (metadata)
		PUT("\"__metadata__\":%s%s", metadata, n ? "," : "");
	uint64_t pos = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t nb = ftst_dtype_size(t[i].dtype);
		PUT("\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name, ftst_dtype_name(t[i].dtype));
		for (int d = 0; d < t[i].ndim; d++) {
			PUT("%s%lld", d ? "," : "", (long long)t[i].shape[d]);
			nb *= (uint64_t)t[i].shape[d];
		}
		PUT("],\"data_offsets\":[%llu,%llu]}%s", (unsigned long long)pos,
		    (unsigned long long)(pos + nb), i + 1 < n ? "," : "");
		off[i] = pos;
		pos += nb;
	}
	PUT("}");
#undef PUT
	if (len + 8 >= cap) {
		free(b);
		return -EOVERFLOW;
	}
	while ((len - 8) % 8)
		b[len++] = ' ';
	uint64_t hl = len - 8;
	for (int i = 0; i < 8; i++)
		b[i] = (char)((hl >> (8 * i)) & 0xFF);
	for (size_t i = 0; i < n; i++)
		off[i] += len;
	*hdr = b;
	*hdr_len = len;
	*file_size = len + pos;
	return 0;
}
