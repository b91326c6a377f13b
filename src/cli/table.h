/* table: a table command's row described once. A row is a list of fields {JSON name, header,
 * unit, printf format, value} (like llama-bench's `test` record); the human table, CSV and
 * Markdown are all printed from the same columns and cells, so a column is added, renamed or
 * reformatted in one place.
 *
 *	static const struct ftcol cols[] = {
 *		{"index", "idx", .width = -3, .fmt = "%.0f"},
 *		{"mem_gib", "mem GiB", "GiB", 8, "%.1f"},
 *	};
 *	struct fttable t = {cols, FTCOL_COUNT(cols), fmt};
 *	fttable_head(&t);
 *	fttable_row(&t, (struct ftcell[]){FTCELL_N(g->index), FTCELL_N(g->mem_total / 1073741824.0)});
 *
 * CSV (RFC 4180) and Markdown rows carry every column under its name, numbers in fmt (csv_fmt when
 * set), a missing cell empty. The human table carries the columns with a head, each in its width
 * (negative: left-aligned, 0: as it is; prec: text cut to that many bytes), separated by sep
 * (one space unless set), a missing cell "-". json and any other format print nothing: JSON is the command's own document. */
#ifndef FT_CLI_TABLE_H
#define FT_CLI_TABLE_H
#include "cli/cli.h"

struct ftcol {
	const char *name;    /* CSV/Markdown header, the field's JSON name ("mem_gib") */
	const char *head;    /* the human table's header ("mem GiB"); NULL: not in the human table */
	const char *unit;    /* the unit of the figure ("GiB", "GB/s", "ms"), or NULL */
	int width;           /* the human table's width; negative: left-aligned */
	const char *fmt;     /* a number's printf format (one double conversion); NULL: text */
	const char *csv_fmt; /* CSV/Markdown's format when it differs from the table's, or NULL */
	int prec;            /* the human table: text cut to prec bytes (0: whole) */
	int csv_only;        /* not in the human table even with a head */
	int gap;             /* the human table: this many more spaces before the column */
};

struct ftcell {
	const char *s; /* text (NULL with is_num 0: missing) */
	double v;
	int is_num;
	const char *h; /* the human table's text when it differs (a short time), or NULL */
};
#define FTCELL_S(str) ((struct ftcell){.s = (str)})
#define FTCELL_N(x) ((struct ftcell){.v = (x), .is_num = 1})
#define FTCELL_SH(str, human) ((struct ftcell){.s = (str), .h = (human)})
#define FTCELL_NONE ((struct ftcell){0})
#define FTCOL_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct fttable {
	const struct ftcol *cols;
	int n;
	enum ftcli_format fmt;
	const char *indent; /* the human table's lines start with it, or NULL */
	const char *sep;    /* between the human table's columns (NULL: one space) */
	FILE *out;          /* where it goes (NULL: stdout) */
};

/* The header: the human table's header line, or the CSV header, or the Markdown header and its
 * |---| line. */
void fttable_head(const struct fttable *t);
/* One row of t->n cells. */
void fttable_row(const struct fttable *t, const struct ftcell *cells);
/* A number cell from JSON: FTCELL_N of v, or missing when v is not a number. */
struct ftcell ftcell_json(const json_t *v);
#endif
