"""What a model family is made of: its spec type, the schema of its ``architecture:`` mapping, how to build the spec,
and the module paths (strings only, never imported here) of its cost model, search space and executor schedule.

A family lives in one module of ``parplan.workloads`` that defines a module-level ``FAMILY: FamilyInfo``;
:mod:`parplan.workloads.registry` finds it, so a new family adds a file and touches nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class FamilyInfo:
    name: str  # the value of architecture.family, e.g. "dense-transformer"
    summary: str  # one line for docs / catalog listing
    spec_type: type  # TransformerSpec / MoESpec
    architecture_schema: type  # pydantic model validating the `architecture:` mapping (extra="forbid", strict)
    # build_spec(entry, name, source, file, prefix) -> spec: entry is a validated architecture_schema instance,
    # prefix the key path of the mapping in the file (errors are reported at f"{prefix}.<key>")
    build_spec: Callable
    model: str  # module path of the family's cost model, e.g. "parplan.models.training"
    space: str  # module path of its search space, e.g. "parplan.planner.spaces.dense"
    executor: str  # module path of its executor schedule, e.g. "parplan.executor.dense"
    training_keys: tuple = ()  # family-specific training keys it reads (others are errors on its workloads)
    # plans over several device groups (heterogeneous clusters): the cost model and the planner, "" = none yet
    hetero_model: str = ""  # e.g. "parplan.models.hetero"
    hetero_planner: str = ""  # e.g. "parplan.planner.hetero"
    # a family whose workloads are not transformer jobs brings its own verb handlers: the module path of functions
    # estimate/suggest/check/simulate/validate(model, hw, **opts) that print like the other verbs ("" = the shared
    # transformer verbs); workload files of such a family carry a top-level ``family:`` key (registry.verbs_for)
    verbs: str = ""  # e.g. "parplan.cli.tasks_out"
    # such a family's workload loader: load(ref) -> spec_type, ref a path or a mapping (None: transformer families,
    # read through workloads.loader.load_workload)
    load: Optional[Callable] = None
