"""Public API of the dataflow family (kernels on DSPs and spatial arrays): estimate one plan or mapping, search
cores × vectorization × unroll × sync (inductive loop nests) or Timeloop-style mappings (convolutions / GEMM on a
storage hierarchy), simulate a nest plan on the event engine.

    >>> from parplan.dataflow import suggest
    >>> best = suggest("examples/cholesky-dsp.yaml", "c6678").rows[0]
"""
from __future__ import annotations

from parplan.hardware.dsp import load_dsp
from parplan.models.dataflow import DataflowEstimate, estimate_plan, mapping_estimate, parse_plan
from parplan.planner.spaces.dataflow import DataflowPlans, search_mappings, search_nest
from parplan.workloads.dataflow import load_dataflow

__all__ = ["estimate", "suggest", "simulate", "view_of", "DataflowEstimate", "DataflowPlans"]


def view_of(spec, dsp) -> str:
    """"nest" when the kernel is priced as an inductive loop nest on the device's cores, "mapping" when as a tensor
    problem on its storage hierarchy: a problem: workload, or a GEMM/FIR/conv kernel on a device without the
    vector-core view, is mapped; every other kernel is a nest."""
    if spec.kernel is None:
        return "mapping"
    if spec.problem is not None and (not dsp.has_cores or spec.mapping is not None):
        return "mapping"
    return "nest"


def estimate(model, hw, plan: "str | None" = None, *, max_mappings: "int | None" = None) -> DataflowEstimate:
    """One plan (nest: ``cores=…,vector=…,unroll=…,sync=…``) or mapping (the workload's ``mapping:``, else the
    best the mapper finds)."""
    spec, dsp = load_dataflow(model), load_dsp(hw)
    if view_of(spec, dsp) == "nest":
        return estimate_plan(spec, dsp, parse_plan(plan, spec, dsp))
    if plan:
        from parplan.errors import SpecError

        raise SpecError("--plan applies to loop-nest kernels; a problem's mapping is the workload's mapping: block",
                        key="--plan", hint="omit --plan to price the workload's mapping (or the best one found)")
    if spec.mapping is not None:
        from parplan.models.dataflow import mapping_doc
        from parplan.models.dataflow_energy import mapping_arrays, storage_view

        levels, _, _ = storage_view(dsp, spec.problem.dtype)
        T, S, perm = mapping_arrays(spec.problem, levels, spec.mapping)
        return mapping_estimate(spec, dsp, T, S, perm, plan_doc={"mapping": mapping_doc(levels, T, S, perm)})
    best = search_mappings(spec, dsp, top=1, **({"max_mappings": max_mappings} if max_mappings else {})).rows[0]
    from parplan.models.dataflow_energy import mapping_arrays, storage_view
    from parplan.workloads.dataflow import MappingLevel

    levels, _, _ = storage_view(dsp, spec.problem.dtype)
    entries = [MappingLevel(**m) for m in best["mapping"]]
    T, S, perm = mapping_arrays(spec.problem, levels, entries)
    e = mapping_estimate(spec, dsp, T, S, perm, plan_doc={"mapping": best["mapping"]})
    return DataflowEstimate(**{**e.__dict__, "notes": e.notes + ["mapping: the best the mapper found"]})


def suggest(model, hw, *, fix: "dict | None" = None, top: int = 10, objective: str = "latency",
            max_mappings: "int | None" = None, seed: int = 0) -> DataflowPlans:
    spec, dsp = load_dataflow(model), load_dsp(hw)
    if view_of(spec, dsp) == "nest":
        return search_nest(spec, dsp, fix=fix, top=top, objective=objective)
    if fix:
        from parplan.errors import SpecError

        raise SpecError("--fix applies to loop-nest plans (cores, vector, unroll, sync)", key="--fix")
    return search_mappings(spec, dsp, top=top, objective=objective, seed=seed,
                           **({"max_mappings": max_mappings} if max_mappings else {}))


def simulate(model, hw, plan: "str | None" = None):
    from parplan.executor.dataflow import simulate_plan

    spec, dsp = load_dataflow(model), load_dsp(hw)
    if view_of(spec, dsp) != "nest":
        from parplan.errors import SpecError

        raise SpecError("the executor plays loop-nest plans; a tensor mapping is priced by the access-count model",
                        key="--hw", hint="simulate a kernel (cholesky, qr, trsv, fft, …) on a DSP")
    return simulate_plan(spec, dsp, parse_plan(plan, spec, dsp))
