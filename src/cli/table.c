/* table: the human table, CSV and Markdown of a table command from one column list (table.h). */
#include "cli/table.h"

#include <stdio.h>
#include <string.h>

/* The text of a cell for the human table (human) or CSV/Markdown. */
static const char *cell_text(const struct ftcol *c, const struct ftcell *v, int human, char *buf, size_t n)
{
	if (human && v->h)
		return v->h;
	if (v->is_num) {
		const char *fmt = !human && c->csv_fmt ? c->csv_fmt : c->fmt ? c->fmt : "%g";
		snprintf(buf, n, fmt, v->v);
		return buf;
	}
	if (!v->s)
		return human ? "-" : "";
	return v->s;
}

static int human(const struct fttable *t)
{
	return t->fmt == FTCLI_FMT_TABLE;
}

static int in_human(const struct ftcol *c)
{
	return c->head && !c->csv_only;
}

/* One line of the human table: texts[i] for the columns in it. */
static FILE *out(const struct fttable *t)
{
	return t->out ? t->out : stdout;
}

static void human_line(const struct fttable *t, const char *const *texts)
{
	FILE *o = out(t);
	int first = 1;
	fputs(t->indent ? t->indent : "", o);
	for (int i = 0; i < t->n; i++) {
		const struct ftcol *c = &t->cols[i];
		if (!in_human(c))
			continue;
		if (!first)
			fprintf(o, "%s%*s", t->sep ? t->sep : " ", c->gap, "");
		first = 0;
		int w = c->width < 0 ? -c->width : c->width;
		if (c->prec > 0)
			fprintf(o, c->width < 0 ? "%-*.*s" : "%*.*s", w, c->prec, texts[i]);
		else
			fprintf(o, c->width < 0 ? "%-*s" : "%*s", w, texts[i]);
	}
	fputc('\n', o);
}

void fttable_head(const struct fttable *t)
{
	const char *texts[64];
	int n = t->n < 64 ? t->n : 64;
	for (int i = 0; i < n; i++)
		texts[i] = human(t) ? t->cols[i].head : t->cols[i].name;
	if (human(t)) {
		struct fttable h = *t;
		h.n = n;
		human_line(&h, texts);
	} else {
		ftcli_fprint_row(out(t), t->fmt, texts, n, 1);
	}
}

void fttable_row(const struct fttable *t, const struct ftcell *cells)
{
	char buf[64][64];
	const char *texts[64];
	int n = t->n < 64 ? t->n : 64;
	for (int i = 0; i < n; i++)
		texts[i] = cell_text(&t->cols[i], &cells[i], human(t), buf[i], sizeof buf[i]);
	if (human(t)) {
		struct fttable h = *t;
		h.n = n;
		human_line(&h, texts);
	} else {
		ftcli_fprint_row(out(t), t->fmt, texts, n, 0);
	}
}

struct ftcell ftcell_json(const json_t *v)
{
	if (json_is_number(v))
		return FTCELL_N(json_number_value(v));
	if (json_is_string(v))
		return FTCELL_S(json_string_value(v));
	return FTCELL_NONE;
}
