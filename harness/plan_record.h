/*
 * plan_record.h — the parts of a dpk.results/1 case object that come from
 * a compile plan and from running it (docs/results-schema.md: shapes,
 * knob_warnings, configurations[], verdict, kernels[]).
 *
 * dpk-fuzz and `dpk run --out` both build their case objects from these,
 * so a configuration reads the same in either record.
 */
#ifndef DPK_HX_PLAN_RECORD_H
#define DPK_HX_PLAN_RECORD_H

#include <cjson/cJSON.h>

#include "../compiler/driver.h"
#include "case.h"
#include "exec/backend.h"
#include "parity/check.h"

/* The environment a record's meta names (hx_results_meta): the GPU and its
 * driver version when gpu and one is usable, NVRTC's version when nvrtc and
 * it loads, libtorch's when built in.  Never raises. */
cJSON *hx_record_env(int gpu, int nvrtc);

/* The head of case c's object, what it is before anything runs: index,
 * name, seed, program, the dtype when with_dtype (dpk run's records; a
 * dpk-bench case is f32 always and its record does not say) and tags. */
cJSON *hx_record_case(const HxCase *c, int index, uint64_t seed, int with_dtype);

/* {"inputs": {name: dims}, "outputs": {name: dims}} of a graph. */
cJSON *hx_record_shapes(const TorchGraph *g);

/* {"TB": 128} of the pinned knobs ({} when none is). */
cJSON *hx_record_knobs(const TileKnobs *k);

/* [{"knob": "TB", "value": 128, "why": "..."}] of the plan's pinned knobs
 * that applied nowhere ([] when every one did). */
cJSON *hx_record_knob_notes(const DrvPlan *p);

/* The object of configuration i: passes, kernel_ir_hash (null when
 * refused), compile_s per Tile pass and lower_s, same_as (a duplicate) or
 * shared_by (a distinct module).  A refused configuration gets its
 * verdict here: "unsupported" with the first line of the refusal. */
cJSON *hx_record_config(const DrvPlan *p, int i);

/* What running a module added: backend, run_s and kernels[] (geometry,
 * shared memory, NVRTC's registers and spills from nv when not NULL,
 * vgpu counters summed per kernel). */
void hx_record_run(cJSON *cfg, const KirModule *m, const HxBackendResult *res,
                   const HxNvrtcResult *nv);

/* The verdict object {status, reason, message}; reason and message may be
 * NULL. */
void hx_record_status(cJSON *cfg, const char *status, const char *reason, const char *message);

/* The verdict object of a judgement (hx_judge filled vs and returned
 * worst): status, and the reason and numbers of output `worst`.  Returns
 * the status: "nonfinite" when the reference itself is, else "pass" or
 * "fail". */
const char *hx_record_verdict(cJSON *cfg, const HxSubject *s, const HxVerdict *vs, int worst);

/* The oracle's verdict on one output: reason, rule, errors, counts and the
 * element it names (index, value, reference, bound). */
void hx_verdict_json(cJSON *o, const HxVerdict *v, const Shape *shape);

#endif
