/* fuzz_loader.c — one file format's loader, chosen at build time by
 * FUZZ_KIND: 0 check (any format, what `shardlab check` does), 1 topology,
 * 2 model, 3 scenario, 4 validation, 5 calibration (applied, when it
 * loads, to a copy of the DGX A100's topology), 6 study (loaded, then
 * counted cell by cell and held to a limit, as check and sweep do), 7
 * jobs (several scenarios placed on one cluster). The
 * bytes are read as the file "scenarios/fuzz.json"
 * ("scenarios/studies/fuzz.json" for a study, "scenarios/jobs/fuzz.json"
 * for jobs) so that the paths the file
 * names resolve against the shipped files (run from the source root). */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli.h"
#include "fuzz.h"
#include "studies.h"
#include "validation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list d;
	struct json_doc doc;
	struct arena *a = arena_new();
	memset(&doc, 0, sizeof doc);
	diag_list_init(&d);
	const char *file = FUZZ_KIND == 6   ? "scenarios/studies/fuzz.json"
	                   : FUZZ_KIND == 7 ? "scenarios/jobs/fuzz.json"
	                                    : "scenarios/fuzz.json";
	if (a && json_doc_parse(&doc, file, (const char *)data, size, &d)) {
		struct jv root;
		switch (FUZZ_KIND) {
		case 0: {
			char summary[160];
			cli_check_set_max_points(100000);  /* a study's count stays short */
			cli_check_doc(a, &doc, summary, sizeof summary);
			break;
		}
		case 1:
			topo_load_doc(a, &doc);
			break;
		case 2:
			/* Past the header: the model's body whatever "format" says. */
			if (jv_root(&doc, &root)) {
				struct graph *g = graph_load_value(a, &root);
				struct graph_totals t;
				graph_totals(g, &t);
				SL_ASSERT(!g || (t.parameters >= 0 && t.parameters <= GRAPH_MAX_ELEMENTS));
			}
			break;
		case 3:
			scenario_load_doc(a, &doc);
			break;
		case 4:
			validation_load_doc(a, &doc);
			break;
		case 5: {
			struct calibration *c = cost_calibration_load_doc(a, &doc);
			struct topology *t = c ? topo_load(a, "topologies/dgx-a100.json", &d) : NULL;
			if (t && cost_calibration_apply(c, t, &d))
				for (int i = 0; i < t->n_tiers; i++)
					SL_ASSERT(t->tiers[i].bandwidth_bps > 0 && t->tiers[i].efficiency <= 1);
			if (c)
				cJSON_Delete(cost_calibration_json(c));
			break;
		}
		case 6: {
			/* A limit of 10^5 points: more cells than that are refused
			 * uncounted, so a count stays short. */
			struct study *st = study_load_doc(a, &doc);
			struct study_size sz;
			if (st && study_check_size(st, 100000, &sz, &d))
				SL_ASSERT(sz.points >= 0 && sz.points <= 100000 && sz.units >= 0 &&
				          sz.max_configs >= 1);
			break;
		}
		case 7: {
			/* Placed jobs hold disjoint devices inside the topology. */
			struct jobs_file *jf = jobs_load_doc(a, &doc);
			for (int j = 0; jf && j < jf->n_jobs; j++)
				for (int64_t r = 0; r < jf->jobs[j].scenario->devices; r++)
					SL_ASSERT(jf->jobs[j].devices[r] >= 0 &&
					          jf->jobs[j].devices[r] < jf->topo->n_devices);
			break;
		}
		}
	}
	json_doc_free(&doc);
	fuzz_diags_done(&d);
	arena_free(a);
	return 0;
}
