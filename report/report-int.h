/* report-int.h — what the page writers of report/ share: the growing
 * buffer, escaping, the colour palette and the "colourings" the mesh
 * shows (a label per rank). Private to report/. */
#ifndef SHARDLAB_REPORT_INT_H
#define SHARDLAB_REPORT_INT_H

#include "report.h"

struct report_html {
	char *s;
	size_t len, cap;
	bool oom;
	report_si_fn si;
	int n_meshes;                      /* ids of the mesh figures written */
};

#if defined(__GNUC__)
#define REPORT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define REPORT_PRINTF(a, b)
#endif

/* Appends formatted text (not escaped). */
void rh_printf(struct report_html *h, const char *fmt, ...) REPORT_PRINTF(2, 3);
/* Appends s as is. */
void rh_put(struct report_html *h, const char *s);
/* Appends s escaped for HTML text and attribute values. */
void rh_esc(struct report_html *h, const char *s);
/* A figure with its unit through the page's formatter. */
const char *rh_si(const struct report_html *h, char *buf, size_t size, double v, const char *unit);

/* The palette's length: 12 hues in 3 lightnesses. */
#define RH_COLOUR_ROUNDS 3
#define RH_COLOURS 36
/* The k-th colour of the palette (k >= 0; it repeats with another
 * lightness past its length) as "#rrggbb" into buf[8]. */
const char *rh_colour(char buf[8], int k);

/* A sortable table: <table class="sortable CLS"> with a header row of the
 * given NULL-ended column names; the rows follow, then rh_table_end. */
void rh_table_begin(struct report_html *h, const char *cls, const char *const *cols);
void rh_table_end(struct report_html *h);
/* One cell: text (escaped), or a number shown as text with its value in
 * data-v for sorting. */
void rh_td(struct report_html *h, const char *text);
void rh_td_num(struct report_html *h, double v, const char *text);
/* The same with a tooltip (NULL: none). */
void rh_td_num_title(struct report_html *h, double v, const char *text, const char *title);

/* The devices as the topology's servers and tiers: one <rect
 * class="mesh-cell" data-rank=R> per device of the first n_devices, each
 * server a box, the first tier's groups outlined; each cell filled by the
 * colouring `fill` (a colour index per rank, -1 for none; NULL: all
 * grey). Returns the mesh's number (its id is "mesh-N"); its legend
 * follows (rh_legend_item, rh_mesh_end). */
int rh_mesh(struct report_html *h, const struct topology *t, int64_t n_devices, const int *fill,
            const char *caption);
/* The mesh's legend, opened by rh_mesh: an item per colour, then the
 * end of the figure. */
void rh_legend_item(struct report_html *h, int k, const char *label);
void rh_mesh_end(struct report_html *h);

#endif
