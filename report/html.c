/* html.c — the page itself: a growing buffer, HTML escaping, the page's
 * head (its stylesheet, screen at 1280 px and print) and tail (the small
 * scripts: an error counter the browser tests read, table sorting, the
 * mesh colourings, the rank picker), sortable tables and the device mesh.
 *
 * Everything is inline: no fonts, scripts or styles are fetched. Linear
 * in what is written; the buffer doubles as it grows.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-int.h"

/* ------------------------------------------------------------- buffer */

static bool rh_reserve(struct report_html *h, size_t more)
{
	if (h->oom)
		return false;
	if (h->len + more + 1 <= h->cap)
		return true;
	size_t cap = h->cap ? h->cap : 1 << 16;
	while (cap < h->len + more + 1)
		cap *= 2;
	char *s = realloc(h->s, cap);
	if (!s) {
		h->oom = true;
		return false;
	}
	h->s = s;
	h->cap = cap;
	return true;
}

void rh_put(struct report_html *h, const char *s)
{
	size_t n = strlen(s);
	if (!rh_reserve(h, n))
		return;
	memcpy(h->s + h->len, s, n + 1);
	h->len += n;
}

void rh_printf(struct report_html *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[512];
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		rh_put(h, small);
		return;
	}
	if (!rh_reserve(h, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(h->s + h->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	h->len += (size_t)n;
}

void rh_esc(struct report_html *h, const char *s)
{
	if (!s)
		return;
	for (const char *c = s; *c; c++) {
		const char *q = NULL;
		switch (*c) {
		case '&': q = "&amp;"; break;
		case '<': q = "&lt;"; break;
		case '>': q = "&gt;"; break;
		case '"': q = "&quot;"; break;
		case '\'': q = "&#39;"; break;
		default: break;
		}
		if (q) {
			rh_put(h, q);
		} else if (rh_reserve(h, 1)) {
			h->s[h->len++] = *c;
			h->s[h->len] = '\0';
		}
	}
}

const char *rh_si(const struct report_html *h, char *buf, size_t size, double v, const char *unit)
{
	if (h->si)
		return h->si(buf, size, v, unit);
	snprintf(buf, size, "%.3g %s", v, unit);
	return buf;
}

/* ------------------------------------------------------------ colours */

/* Twelve hues that stay apart for colour-blind readers and in print
 * (Paul Tol's "muted" and "bright" qualitative schemes). */
static const unsigned palette[] = {0x4477aa, 0xee6677, 0x228833, 0xccbb44, 0x66ccee, 0xaa3377,
                                   0x332288, 0x117733, 0x44aa99, 0x999933, 0xcc6677, 0x882255};

const char *rh_colour(char buf[8], int k)
{
	unsigned c = palette[k % (int)SL_COUNTOF(palette)];
	int round = k / (int)SL_COUNTOF(palette) % RH_COLOUR_ROUNDS;
	unsigned r = c >> 16 & 0xff, g = c >> 8 & 0xff, b = c & 0xff;
	if (round) { /* lighter, then darker */
		double f = round == 1 ? 0.45 : -0.35;
		r = (unsigned)(f > 0 ? r + (255 - r) * f : r * (1 + f));
		g = (unsigned)(f > 0 ? g + (255 - g) * f : g * (1 + f));
		b = (unsigned)(f > 0 ? b + (255 - b) * f : b * (1 + f));
	}
	snprintf(buf, 8, "#%02x%02x%02x", r & 0xff, g & 0xff, b & 0xff);
	return buf;
}

/* -------------------------------------------------------------- page */

static const char page_css[] =
	"*{box-sizing:border-box}\n"
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
	"color:#1d2330;background:#fff;margin:0 auto;padding:16px 24px;max-width:1280px}\n"
	"h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid "
	"#d8dce4;padding-bottom:4px}h3{font-size:15px;margin:18px 0 6px}\n"
	"p{margin:6px 0;max-width:1100px}.sub{color:#5a6270;margin:0 0 8px}\n"
	"code,pre{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12.5px}\n"
	"pre{background:#f5f6f8;padding:8px;overflow:auto;white-space:pre-wrap}\n"
	"table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}\n"
	"section.study table{font-size:12px}section.study th,section.study td{padding:3px 5px}\n"
	"section.study td.cfg{min-width:11em}td.cfg a.lay{font-size:11px;color:#5a6270}\n"
	"th,td{padding:3px 8px;border-bottom:1px solid #e3e6ec;text-align:left;vertical-align:top}\n"
	"td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"td code{white-space:nowrap}td button{font-size:11px;padding:0 4px;margin:1px}\n"
	"table.ops td:nth-child(7) code{white-space:normal}\n"
	"th{background:#f0f2f6;position:sticky;top:0;white-space:nowrap}\n"
	"table.sortable th{cursor:pointer}table.sortable th:after{content:' \\2195';color:#9aa}\n"
	"tr.pick{cursor:pointer}tr.pick:hover{background:#eef4ff}tr.on{background:#dde9ff}\n"
	".facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:6px 18px;"
	"margin:8px 0}\n"
	".facts div{border-left:3px solid #4477aa;padding-left:8px}.facts b{display:block;"
	"font-size:16px}\n"
	".foot{font-size:12.5px;color:#555;margin:4px 0}\n"
	".legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12.5px;margin:4px 0}\n"
	".legend span{display:inline-flex;align-items:center;gap:4px}\n"
	".legend i{display:inline-block;width:12px;height:12px;border:1px solid #0003}\n"
	"svg{display:block;max-width:100%;height:auto}svg text{font-family:inherit}\n"
	".mesh-cell{stroke:#fff;stroke-width:1}.rank-bar{cursor:pointer}.rank-bar:hover{opacity:.7}\n"
	".note{background:#fff8e5;border-left:3px solid #ccbb44;padding:6px 10px;margin:8px 0}\n"
	".scroll{max-height:420px;overflow:auto;border:1px solid #e3e6ec}\n"
	".tl-group{display:none}.tl-group.shown{display:table-row}\n"
	".controls{margin:6px 0}.controls input{font:inherit;width:260px}\n"
	"a{color:#2a5db0}\n"
	"@media print{body{max-width:none;padding:0;font-size:11px}.controls,.noprint{display:none}"
	".scroll{max-height:none;overflow:visible;border:0}th{position:static}"
	"h2{break-after:avoid}figure,svg,table{break-inside:avoid}"
	".tl-group{display:none!important}a{color:inherit;text-decoration:none}"
	"table{font-size:9.5px;max-width:100%}th,td{padding:2px 4px}"
	"td code{white-space:normal;word-break:break-all}code,pre{font-size:9px}"
	"section.study table{font-size:8.5px}section.study th,section.study td{padding:2px 3px}"
	"td.cfg{min-width:0}td.cfg a.lay{display:none}table.sortable th:after{content:none}"
	"table.ops th:nth-child(3),table.ops td:nth-child(3){display:none}}\n";

/* Runs first: counts errors into an attribute that a browser test reads
 * from the dumped DOM. */
static const char page_js_head[] =
	"(function(){var d=document.documentElement;d.setAttribute('data-errors','0');"
	"window.addEventListener('error',function(e){d.setAttribute('data-errors',"
	"String(+d.getAttribute('data-errors')+1));d.setAttribute('data-last-error',"
	"String(e.message));});})();";

/* Table sorting, mesh colourings, the rank picker. */
static const char page_js_tail[] =
	"(function(){\n"
	"function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:"
	"parseFloat(v);}\n"
	"document.querySelectorAll('table.sortable').forEach(function(t){\n"
	" t.querySelectorAll('th').forEach(function(th,c){th.addEventListener('click',function(){\n"
	"  var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),up=th.getAttribute("
	"'data-dir')!=='up';\n"
	"  t.querySelectorAll('th').forEach(function(x){x.removeAttribute('data-dir');});\n"
	"  th.setAttribute('data-dir',up?'up':'down');\n"
	"  rows.sort(function(x,y){var a=key(x.cells[c]),z=key(y.cells[c]);"
	"var r=typeof a==='number'&&typeof z==='number'?(isNaN(a)?1:isNaN(z)?-1:a-z):"
	"String(a).localeCompare(String(z));return up?r:-r;});\n"
	"  rows.forEach(function(r){b.appendChild(r);});});});});\n"
	/* colourings: rows with data-mesh and data-colour repaint that mesh */
	"var cache={};function meshData(m){if(!cache[m]){var s=document.getElementById(m+'-data');"
	"cache[m]=s?JSON.parse(s.textContent):null;}return cache[m];}\n"
	"function paint(m,k,title){var d=meshData(m);if(!d)return;var c=d.c[k],idx=c.i.split(',');\n"
	" document.querySelectorAll('#'+m+' .mesh-cell').forEach(function(e){var r=+e.getAttribute("
	"'data-rank'),v=+idx[r];e.setAttribute('fill',v>=0?d.p[v%d.p.length]:'#d5d8de');"
	"var t=e.querySelector('title');if(t)t.textContent='rank '+r+(v>=0?': '+c.l[v]:': not held');"
	"});\n"
	" var L=document.getElementById(m+'-legend');if(L){var h='<b>'+title.replace(/&/g,'&amp;')"
	".replace(/</g,'&lt;')+'</b> ';c.l.forEach(function(l,j){if(j<48)h+='<span><i style=\"background:'"
	"+d.p[j%d.p.length]+'\"></i>'+l.replace(/&/g,'&amp;').replace(/</g,'&lt;')+'</span>';});"
	"if(c.l.length>48)h+='<span>... '+(c.l.length-48)+' more</span>';L.innerHTML=h;}}\n"
	"document.querySelectorAll('[data-colour]').forEach(function(e){e.addEventListener('click',"
	"function(){var m=e.getAttribute('data-mesh');document.querySelectorAll('[data-mesh=\"'+m+"
	"'\"].on').forEach(function(x){x.classList.remove('on');});e.classList.add('on');"
	"paint(m,+e.getAttribute('data-colour'),e.getAttribute('title')||'');});});\n"
	/* the rank picker: "0,5,17-20" shows each rank's own row, else its group's */
	"function ranks(s){var o=[];s.split(/[ ,]+/).forEach(function(p){var m=p.match(/^(\\d+)"
	"(?:-(\\d+))?$/);if(m){var a=+m[1],b=m[2]?+m[2]:a;for(var i=a;i<=b&&o.length<4096;i++)"
	"o.push(i);}});return o;}\n"
	"function inList(r,l){return l.split(',').some(function(p){var q=p.split('-');"
	"return r>=+q[0]&&r<=+(q[1]||q[0]);});}\n"
	"var pick=document.getElementById('rank-pick');if(pick){var go=function(){var want=ranks("
	"pick.value),groups=document.querySelectorAll('.tl-group'),n=0;\n"
	" groups.forEach(function(g){var on=want.some(function(r){return inList(r,g.getAttribute("
	"'data-ranks'));});g.classList.toggle('shown',on);if(on)n++;});\n"
	" var s=document.getElementById('rank-pick-status');if(s)s.textContent=n+' group row'+(n==1?'':"
	"'s')+' shown';};\n"
	" document.getElementById('rank-pick-go').addEventListener('click',go);pick.addEventListener("
	"'keydown',function(e){if(e.key==='Enter')go();});\n"
	" var m=location.hash.match(/ranks=([0-9,-]+)/);if(m){pick.value=m[1];go();}\n"
	/* a click on a rank's bar adds it */
	" document.querySelectorAll('.rank-bar').forEach(function(g){g.addEventListener('click',"
	"function(){pick.value=(pick.value?pick.value+',':'')+g.getAttribute('data-rank');go();});});}\n"
	/* when the page was ready, for bench/bench_report.sh (set when opened,
	 * not written into the file) */
	"window.addEventListener('load',function(){document.documentElement.setAttribute("
	"'data-load-ms',String(Math.round(performance.now())));});\n"
	"})();\n";

struct report_html *report_html_new(const char *title, const char *subtitle, report_si_fn si)
{
	struct report_html *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->si = si;
	rh_put(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	          "<meta name=\"generator\" content=\"shardlab report\">\n<title>");
	rh_esc(h, title);
	rh_put(h, "</title>\n<style>\n");
	rh_put(h, page_css);
	rh_put(h, "</style>\n<script>");
	rh_put(h, page_js_head);
	rh_put(h, "</script>\n</head>\n<body>\n<h1>");
	rh_esc(h, title);
	rh_put(h, "</h1>\n");
	if (subtitle) {
		rh_put(h, "<p class=\"sub\">");
		rh_esc(h, subtitle);
		rh_put(h, "</p>\n");
	}
	return h;
}

char *report_html_finish(struct report_html *h, size_t *len)
{
	if (!h)
		return NULL;
	rh_put(h, "<script>\n");
	rh_put(h, page_js_tail);
	rh_put(h, "</script>\n</body>\n</html>\n");
	char *s = h->oom ? NULL : h->s;
	if (s && len)
		*len = h->len;
	if (!s)
		free(h->s);
	free(h);
	return s;
}

void report_html_free(struct report_html *h)
{
	if (!h)
		return;
	free(h->s);
	free(h);
}

void report_html_prose(struct report_html *h, const char *heading, const char *text)
{
	if (heading) {
		rh_put(h, "<h2>");
		rh_esc(h, heading);
		rh_put(h, "</h2>\n");
	}
	rh_put(h, "<p>");
	rh_esc(h, text);
	rh_put(h, "</p>\n");
}

void report_html_link(struct report_html *h, const char *text, const char *href)
{
	rh_put(h, "<p class=\"back\"><a href=\"");
	rh_esc(h, href);
	rh_put(h, "\">");
	rh_esc(h, text);
	rh_put(h, "</a></p>\n");
}

/* ------------------------------------------------------------ tables */

void rh_table_begin(struct report_html *h, const char *cls, const char *const *cols)
{
	rh_printf(h, "<table class=\"sortable %s\"><thead><tr>", cls);
	for (int i = 0; cols[i]; i++) {
		rh_put(h, "<th>");
		rh_esc(h, cols[i]);
		rh_put(h, "</th>");
	}
	rh_put(h, "</tr></thead><tbody>\n");
}

void rh_table_end(struct report_html *h)
{
	rh_put(h, "</tbody></table>\n");
}

void rh_td(struct report_html *h, const char *text)
{
	rh_put(h, "<td>");
	rh_esc(h, text);
	rh_put(h, "</td>");
}

void rh_td_num_title(struct report_html *h, double v, const char *text, const char *title)
{
	if (isfinite(v))
		rh_printf(h, "<td class=\"n\" data-v=\"%.9g\"", v);
	else
		rh_put(h, "<td class=\"n\" data-v=\"NaN\"");
	if (title) {
		rh_put(h, " title=\"");
		rh_esc(h, title);
		rh_put(h, "\"");
	}
	rh_put(h, ">");
	rh_esc(h, text);
	rh_put(h, "</td>");
}

void rh_td_num(struct report_html *h, double v, const char *text)
{
	rh_td_num_title(h, v, text, NULL);
}

/* -------------------------------------------------------------- mesh */

int rh_mesh(struct report_html *h, const struct topology *t, int64_t n_devices, const int *fill,
            const char *caption)
{
	int id = h->n_meshes++;
	int64_t dps = t->devices_per_server > 0 ? t->devices_per_server : 1;
	int64_t servers = (n_devices + dps - 1) / dps;
	/* Cells large enough to carry the rank's number on small meshes,
	 * smaller from 16 servers on: the page stays 1280 px wide. */
	int cell = servers <= 2 && dps <= 16 ? 44 : servers <= 4 && dps <= 16 ? 34 : servers <= 16 ? 22 : 12;
	int gap = cell >= 22 ? 3 : 1;
	int per_row = (int)(dps > 16 ? 16 : dps); /* devices per line inside a server */
	int lines = (int)((dps + per_row - 1) / per_row);
	int box_w = per_row * (cell + gap) + gap + 12, box_h = lines * (cell + gap) + gap + 22;
	int width = 1200;
	int cols = width / (box_w + 10);
	if (cols < 1)
		cols = 1;
	if (cols > servers)
		cols = (int)servers;
	int64_t rows = (servers + cols - 1) / cols;
	int svg_w = cols * (box_w + 10), svg_h = (int)rows * (box_h + 10);
	/* The first tier's groups (HCCS meshes of 4, NVSwitch of 8) outlined. */
	const struct topo_tier *tier = t->n_tiers > 0 ? &t->tiers[0] : NULL;
	rh_printf(h, "<figure id=\"mesh-%d\" class=\"mesh\" style=\"margin:8px 0\">\n"
	             "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
	             "aria-label=\"devices\">\n",
	          id, svg_w, svg_h, svg_w, svg_h);
	char col[8];
	for (int64_t s = 0; s < servers; s++) {
		int x0 = (int)(s % cols) * (box_w + 10), y0 = (int)(s / cols) * (box_h + 10);
		rh_printf(h, "<g class=\"server\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		             "rx=\"4\" fill=\"#f5f6f8\" stroke=\"#9aa3b2\"/>"
		             "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#5a6270\">server %lld</text>\n",
		          x0, y0, box_w, box_h, x0 + 6, y0 + 14, (long long)s);
		if (tier && tier->n_groups > 1 && tier->group_of) {
			/* each group's span on the server's lines, outlined */
			for (int g = 0; g < tier->n_groups; g++) {
				int lo = -1, hi = -1;
				for (int d = 0; d < dps; d++)
					if (tier->group_of[d] == g) {
						lo = lo < 0 ? d : lo;
						hi = d;
					}
				if (lo < 0 || lo / per_row != hi / per_row)
					continue;
				int gx = x0 + 6 + (lo % per_row) * (cell + gap) + gap - 2;
				int gy = y0 + 18 + (lo / per_row) * (cell + gap) + gap - 2;
				rh_printf(h, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\" "
				             "fill=\"none\" stroke=\"#7a8396\" stroke-dasharray=\"3 2\"/>\n",
				          gx, gy, (hi - lo + 1) * (cell + gap) - gap + 4, cell + 4);
			}
		}
		for (int64_t d = 0; d < dps; d++) {
			int64_t r = s * dps + d;
			if (r >= n_devices)
				break;
			int x = x0 + 6 + (int)(d % per_row) * (cell + gap) + gap;
			int y = y0 + 18 + (int)(d / per_row) * (cell + gap) + gap;
			int k = fill ? fill[r] : -1;
			rh_printf(h, "<rect class=\"mesh-cell\" data-rank=\"%lld\" x=\"%d\" y=\"%d\" "
			             "width=\"%d\" height=\"%d\" fill=\"%s\"><title>rank %lld</title></rect>",
			          (long long)r, x, y, cell, cell, k >= 0 ? rh_colour(col, k) : "#d5d8de",
			          (long long)r);
			if (cell >= 22)
				rh_printf(h, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\" "
				             "fill=\"#1d2330\" pointer-events=\"none\" stroke=\"#fff\" "
				             "stroke-width=\"3\" stroke-opacity=\".85\" paint-order=\"stroke\" "
				             "font-weight=\"600\">%lld</text>",
				          x + cell / 2, y + cell / 2 + 4, cell >= 40 ? 14 : cell >= 30 ? 12 : 10, (long long)r);
			rh_put(h, "\n");
		}
		rh_put(h, "</g>\n");
	}
	rh_put(h, "</svg>\n");
	if (caption) {
		rh_put(h, "<figcaption>");
		rh_esc(h, caption);
		rh_put(h, "</figcaption>\n");
	}
	rh_printf(h, "<div class=\"legend\" id=\"mesh-%d-legend\">", id);
	return id;
}

void rh_legend_item(struct report_html *h, int k, const char *label)
{
	char col[8];
	rh_printf(h, "<span><i style=\"background:%s\"></i>", rh_colour(col, k));
	rh_esc(h, label);
	rh_put(h, "</span>");
}

void rh_mesh_end(struct report_html *h)
{
	rh_put(h, "</div>\n</figure>\n");
}
