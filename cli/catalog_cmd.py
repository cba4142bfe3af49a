"""``parplan catalog list|show|add``: what the bundled and the user's catalogs hold, and adding a user entry."""
from __future__ import annotations

import os
import re
import shutil
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from parplan.cli.common import emit, gib, handle_errors, out_console
from parplan.errors import SpecError, did_you_mean
from parplan.catalogs import (ENV_VAR, SECTIONS, default_user_dir, entries, is_user, kind_of, user_dirs,
                              user_write_dir)

# the catalog loaders (pydantic schemas, numpy in the models) are imported inside the functions that use them:
# `parplan --help` loads none of them


class Kind(str, Enum):
    device = "device"
    link = "link"
    cluster = "cluster"
    workload = "workload"


class Section(str, Enum):
    hardware = "hardware"
    links = "links"
    workloads = "workloads"
    clusters = "clusters"
    frameworks = "frameworks"
    # the families' own hardware kinds (cli/catalog_families.py)
    cpus = "cpus"
    cpu_clusters = "cpu-clusters"
    dsps = "dsps"
    edge = "edge"
    networks = "networks"
    edge_clusters = "edge-clusters"
    platforms = "platforms"
    offload_nodes = "offload-nodes"
    layerchains = "layerchains"
    dit_models = "dit-models"


def _list(section: Section) -> str:
    """One catalog section as a table that fits the terminal: ids and figures never dropped, free text (names,
    groups, overlaps) wraps (``cli/tables.py``)."""
    from parplan.cli.tables import Col, render
    # each section imports only its own loader (hardware: no numpy, no workload models)

    from parplan.cli.catalog_families import SECTIONS as FAMILY_SECTIONS, list_section

    if section.value in FAMILY_SECTIONS:
        return list_section(section.value)
    rows = _Rows(section)
    if section == Section.hardware:
        from parplan.hardware.catalog import device_ids, get_device

        title = "hardware (dense peaks)"
        cols = [Col("id", "left"), Col("name", "left", wrap=True), Col("memory GiB"), Col("HBM TB/s"),
                Col("bf16 TFLOP/s"), Col("fp8 TFLOP/s")]
        for i in device_ids():
            d = get_device(i)
            pk = d.peak_flops_per_s
            rows.add(i, d.name, gib(d.memory_bytes), f"{d.memory_bandwidth_bytes_per_s / 1e12:.2f}",
                     f"{pk['bf16'] / 1e12:.1f}" if "bf16" in pk else "—",
                     f"{pk['fp8'] / 1e12:.1f}" if "fp8" in pk else "—")
    elif section == Section.links:
        from parplan.hardware.catalog import get_link, link_ids

        title = "links (bandwidth per device, per direction)"
        cols = [Col("id", "left"), Col("name", "left", wrap=True), Col("kind", "left"), Col("GB/s"),
                Col("latency µs")]
        for i in link_ids():
            ln = get_link(i)
            rows.add(i, ln.name, ln.kind, f"{ln.bandwidth_bytes_per_s / 1e9:.1f}", f"{ln.latency_s * 1e6:.1f}")
    elif section == Section.workloads:
        from parplan.workloads.loader import catalog_workload, workload_ids

        title = "workloads (MoE: active = parameters used per token, embedding table included)"
        cols = [Col("id", "left"), Col("name", "left", wrap=True), Col("family", "left", keep=9),
                Col("params (B)"), Col("active (B)", keep=2), Col("layers", keep=3), Col("hidden", keep=5),
                Col("heads/kv", keep=6), Col("ffn", "left", keep=7), Col("experts", "left", keep=1),
                Col("vocab", keep=8)]
        for i in workload_ids():
            s, _, _ = catalog_workload(i)
            rows.add(i, s.name, s.family, f"{s.total_params / 1e9:.2f}", *_moe_cells(s))
    elif section == Section.frameworks:
        from parplan.models.framework import framework_ids, get_framework

        title = "frameworks (what each can launch, and how it overlaps communication)"
        cols = [Col(c, "left", keep=k, wrap=c == "name")
                for c, k in (("id", 0), ("name", 0), ("zero", 0), ("tp / sp", 1), ("pp / vpp", 1), ("cp", 1),
                             ("ep", 1), ("hsdp", 2), ("TP overlap", 5), ("fp8 recipes", 4), ("grad reduce", 3),
                             ("attention", 6))]
        yn = {True: "yes", False: "no"}
        for i in framework_ids():
            f = get_framework(i)
            tpo = f"{f.tp_comm_overlap} ({'|'.join(f.tp_comm_overlap_options)})"
            rows.add(i, f.name, ",".join(map(str, f.zero)), f"{yn[f.tp]} / {f.sp}", f"{yn[f.pp]} / {yn[f.vpp]}",
                     yn[f.cp], yn[f.ep], yn[f.hsdp], tpo, ",".join(f.fp8_recipes) or "—", f.grad_reduce_dtype,
                     f.attention_kernel)
    else:
        from parplan.hardware.catalog import cluster_ids, load_cluster

        title = "clusters"
        cols = [Col("id", "left"), Col("devices"), Col("groups", "left", wrap=True)]
        for i in cluster_ids():
            cl = load_cluster(i)
            rows.add(i, str(cl.n_devices), "; ".join(
                f"{g.nodes}×{g.devices_per_node} {g.device.id} ({g.intra_node.id} / {g.inter_node.id})"
                for g in cl.groups))
    if rows.marked:
        cols.append(Col("from", "left"))

    def footer(dropped) -> str | None:
        return (f"not shown (terminal too narrow): {', '.join(dropped)}; `parplan catalog show ID` has every field"
                if dropped else None)

    return render(cols, rows.rows, title=title, footer=footer)


_SECTION_PARTS = {"hardware": ("hardware", "devices"), "links": ("hardware", "links"), "workloads": ("workloads",),
                  "clusters": ("clusters",), "frameworks": ("frameworks",)}


class _Rows:
    """Rows of a ``catalog list`` table, with a last cell "from" (shipped | user) when the section holds user
    catalog entries (the shipped-only listing has no such column).  Cells are plain text (markup escaped)."""

    def __init__(self, section: Section) -> None:
        self.files = entries(*_SECTION_PARTS[section.value])
        self.marked = any(is_user(p) for p in self.files.values())
        self.rows: list[list[str]] = []

    def add(self, ident: str, *cells: str) -> None:
        from parplan.cli.tables import escape

        origin = ("user" if is_user(self.files[ident]) else "shipped",) if self.marked else ()
        self.rows.append([escape(str(c)) for c in (ident, *cells, *origin)])


def _moe_cells(s) -> tuple[str, ...]:
    """active, layers, hidden, heads/kv, ffn, experts and vocab cells of a workload row (dense or MoE)."""
    if s.family != "moe-transformer":
        return ("—", str(s.layers), str(s.hidden), f"{s.heads}/{s.kv_heads}", f"{s.ffn} {s.ffn_hidden}", "—",
                str(s.vocab))
    layers = str(s.layers) if not s.n_dense_layers else f"{s.layers} ({s.n_moe_layers} MoE)"
    experts = f"{s.experts} top-{s.top_k}" + (f" +{s.shared_experts} shared" if s.shared_experts else "")
    heads = f"{s.heads} MLA" if s.is_mla else f"{s.heads}/{s.kv_heads}"
    return (f"{s.active_params / 1e9:.2f}", layers, str(s.hidden), heads, f"{s.ffn} {s.moe_ffn_hidden}/expert",
            experts, str(s.vocab))


def _workload_summary(ident: str) -> str:
    """Computed figures of a workload entry, as comment lines above its YAML."""
    from parplan.workloads.loader import catalog_workload

    s, _, _ = catalog_workload(ident)
    lines = [f"# family: {s.family}", f"# params: {s.total_params / 1e9:.2f} B total"]
    if s.family == "moe-transformer":
        if s.mtp_layers:
            lines[-1] += f" ({s.total_params_with_mtp / 1e9:.2f} B with the {s.mtp_layers} MTP module(s))"
        lines += [f"# active per token: {s.active_params / 1e9:.2f} B with the embedding table, "
                  f"{s.active_params_no_embedding / 1e9:.2f} B without",
                  f"# layers: {s.n_moe_layers} MoE + {s.n_dense_layers} dense; experts: {s.experts} routed "
                  f"(top-{s.top_k}) + {s.shared_experts} shared; routed-expert params "
                  f"{s.expert_layer_params_total / 1e9:.2f} B"]
    return "\n".join(lines) + "\n"


def _show(ident: str) -> str:
    from parplan.hardware.catalog import (cluster_ids, device_entry, device_ids, link_entry, link_ids,
                                          load_cluster)
    from parplan.models.framework import framework_ids, get_framework
    from parplan.spec import load_yaml_file
    from parplan.workloads.loader import catalog_workload, workload_ids

    for section, ids in (("hardware/devices", device_ids()), ("hardware/links", link_ids()),
                         ("workloads", workload_ids()), ("clusters", cluster_ids()), ("frameworks", framework_ids())):
        if ident in ids:
            path = entries(*section.split("/"))[ident]
            if section == "hardware/devices":
                device_entry(ident)  # validates
            elif section == "hardware/links":
                link_entry(ident)
            elif section == "workloads":
                catalog_workload(ident)
            elif section == "frameworks":
                get_framework(ident)
            else:
                load_cluster(ident)
            load_yaml_file(path)
            summary = _workload_summary(ident) if section == "workloads" else ""
            where = f"user catalog: {path}" if is_user(path) else f"{section}/{ident}.yaml"
            return f"# {where}\n" + summary + path.read_text(encoding="utf-8")
    from parplan.cli.catalog_families import show_entry

    family_file = show_entry(ident)
    if family_file is not None:
        return family_file
    every = device_ids() + link_ids() + workload_ids() + cluster_ids() + framework_ids()
    raise SpecError(f"unknown catalog id {ident!r}", hint=did_you_mean(ident, every) or "see `parplan catalog list`")


# a catalog id is also a file name in the user's folder: no path separators, no leading dot (shipped ids all match)
_FILE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,79}$")


def _entry_id(kind: str, path: Path, data) -> str:
    """The id of the catalog entry in ``path``, after validating it exactly as the catalog loader does."""
    from parplan.hardware.catalog import (ClusterFile, DeviceEntry, LinkEntry, check_entry_file, cluster_from_dict,
                                          device_ids)
    from parplan.spec import validate
    from parplan.workloads.loader import CatalogWorkload, catalog_workload_at

    file = str(path)
    if kind == "device":
        ident = validate(DeviceEntry, data, file=file).id
        check_entry_file("device", path, ident)
    elif kind == "link":
        ident = validate(LinkEntry, data, file=file).id
        check_entry_file("link", path, ident)
    elif kind == "workload":
        ident = validate(CatalogWorkload, data, file=file).id
        catalog_workload_at(path, ident)
    else:
        ident = validate(ClusterFile, data, file=file).name
        if not data.get("source"):
            raise SpecError("required key is missing: a user catalog cluster cites its source", file=file,
                            key="source", hint='add source: "where the figures come from"')
        known = device_ids()
        for i, g in enumerate(data["groups"]):
            if isinstance(g.get("device"), str) and g["device"] not in known:
                raise SpecError(f"unknown device id {g['device']!r}: a catalog cluster names its devices by catalog "
                                "id or inline", file=file, key=f"groups[{i}].device",
                                hint="add the device first (parplan catalog add DEVICE.yaml)")
        cluster_from_dict(data, file=file)
    if not _FILE_ID.match(ident):
        raise SpecError(f"bad id {ident!r} for a catalog file name: letters, digits and . _ + - only", file=file,
                        key="name" if kind == "cluster" else "id")
    return ident


def add_entry(file: Path, kind: Optional[str], force: bool) -> str:
    """Validate ``file`` as a catalog entry, copy it into the user catalog as ``<id>.yaml``; what was written."""
    from parplan.spec import load_yaml_file

    if not file.is_file():
        raise SpecError(f"no such file {str(file)!r}")
    data = load_yaml_file(file)
    kind = kind or kind_of(data)
    if kind is None:
        raise SpecError("cannot tell which kind of catalog entry this is", file=str(file),
                        hint="give --kind device|link|cluster|workload")
    if os.environ.get(ENV_VAR) is not None and not user_dirs():
        raise SpecError(f"{ENV_VAR} is set but empty: no user catalog folder to write to",
                        hint=f"unset it (default {default_user_dir()}) or name a folder")
    ident = _entry_id(kind, file, data)
    parts = SECTIONS[kind]
    dest = user_write_dir().joinpath(*parts) / f"{ident}.yaml"
    existing = entries(*parts).get(ident)
    if existing is not None:
        if not is_user(existing):
            raise SpecError(f"id {ident!r} is a shipped catalog entry ({existing}): user entries may not replace it",
                            file=str(file), hint="choose another id")
        if existing.resolve() != dest.resolve():
            raise SpecError(f"id {ident!r} is already a user catalog entry in {existing}", file=str(file),
                            hint="remove that file first, or choose another id")
        if not force:
            raise SpecError(f"id {ident!r} is already in the user catalog ({existing})", file=str(file),
                            hint="add --force to replace it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{ident}.yaml.tmp")
    shutil.copyfile(file, tmp)
    os.replace(tmp, dest)
    verb = "replaced" if existing is not None else "added"
    return f"{verb} {kind} {ident!r}: wrote {dest}"


def register(app: typer.Typer) -> None:
    cat = typer.Typer(help="List, show and add catalog entries (bundled and user: PARPLAN_CATALOG_PATH).",
                      no_args_is_help=True)
    app.add_typer(cat, name="catalog")

    @cat.command("list")
    @handle_errors
    def list_cmd(section: Section = typer.Argument(Section.hardware,
                                                   help="hardware | links | workloads | clusters | frameworks; the families' hardware: "
                                                        "cpus | cpu-clusters | dsps | edge | networks | "
                                                        "edge-clusters | platforms | offload-nodes | layerchains | dit-models"),
                 debug: bool = typer.Option(False, "--debug")) -> None:
        """List the ids of one catalog section with their key figures."""
        emit(_list(section), None)

    @cat.command("show")
    @handle_errors
    def show_cmd(ident: str = typer.Argument(..., help="any catalog id"),
                 debug: bool = typer.Option(False, "--debug")) -> None:
        """Print one catalog entry (with its sources)."""
        emit(_show(ident), None)

    @cat.command("add")
    @handle_errors
    def add_cmd(file: Path = typer.Argument(..., help="a device, link, cluster or workload catalog YAML"),
                kind: Optional[Kind] = typer.Option(None, "--kind", help="device | link | cluster | workload "
                                                    "(default: told by the file's keys)"),
                force: bool = typer.Option(False, "--force", help="replace a user entry of the same id"),
                debug: bool = typer.Option(False, "--debug")) -> None:
        """Validate FILE as a catalog entry and copy it into the user catalog (see PARPLAN_CATALOG_PATH)."""
        emit(add_entry(file, kind.value if kind else None, force), None)
