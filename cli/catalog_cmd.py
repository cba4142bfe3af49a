"""``parplan catalog list|show``: what the bundled catalogs hold."""
from __future__ import annotations

from enum import Enum

import typer
from rich.table import Table

from parplan.cli.common import emit, gib, handle_errors, out_console
from parplan.errors import SpecError, did_you_mean
from parplan.hardware.catalog import (cluster_ids, device_entry, device_ids, get_device, get_link, link_entry,
                                      link_ids, load_cluster)
from parplan.spec import load_yaml_file
from parplan.catalogs import entries
from parplan.models.framework import framework_ids, get_framework
from parplan.workloads.loader import catalog_workload, workload_ids


class Section(str, Enum):
    hardware = "hardware"
    links = "links"
    workloads = "workloads"
    clusters = "clusters"
    frameworks = "frameworks"


def _list(section: Section) -> str:
    con = out_console(200 if section in (Section.frameworks, Section.workloads) else 160)
    with con.capture() as cap:
        if section == Section.hardware:
            t = Table(title="hardware (dense peaks)")
            for c in ("id", "name", "memory GiB", "HBM TB/s", "bf16 TFLOP/s", "fp8 TFLOP/s"):
                t.add_column(c)
            for i in device_ids():
                d = get_device(i)
                pk = d.peak_flops_per_s
                t.add_row(i, d.name, gib(d.memory_bytes), f"{d.memory_bandwidth_bytes_per_s / 1e12:.2f}",
                          f"{pk['bf16'] / 1e12:.1f}" if "bf16" in pk else "—",
                          f"{pk['fp8'] / 1e12:.1f}" if "fp8" in pk else "—")
        elif section == Section.links:
            t = Table(title="links (bandwidth per device, per direction)")
            for c in ("id", "name", "kind", "GB/s", "latency µs"):
                t.add_column(c)
            for i in link_ids():
                ln = get_link(i)
                t.add_row(i, ln.name, ln.kind, f"{ln.bandwidth_bytes_per_s / 1e9:.1f}", f"{ln.latency_s * 1e6:.1f}")
        elif section == Section.workloads:
            t = Table(title="workloads (MoE: active = parameters used per token, embedding table included)")
            for c in ("id", "name", "family", "params (B)", "active (B)", "layers", "hidden", "heads/kv", "ffn",
                      "experts", "vocab"):
                t.add_column(c)
            for i in workload_ids():
                s, _, _ = catalog_workload(i)
                t.add_row(i, s.name, s.family, f"{s.total_params / 1e9:.2f}", *_moe_cells(s))
        elif section == Section.frameworks:
            t = Table(title="frameworks (what each can launch, and how it overlaps communication)")
            for c in ("id", "name", "zero", "tp / sp", "pp / vpp", "cp", "ep", "hsdp", "TP overlap", "fp8 recipes",
                      "grad reduce", "attention"):
                t.add_column(c)
            yn = {True: "yes", False: "no"}
            for i in framework_ids():
                f = get_framework(i)
                tpo = f"{f.tp_comm_overlap} ({'|'.join(f.tp_comm_overlap_options)})"
                t.add_row(i, f.name, ",".join(map(str, f.zero)), f"{yn[f.tp]} / {f.sp}", f"{yn[f.pp]} / {yn[f.vpp]}",
                          yn[f.cp], yn[f.ep], yn[f.hsdp], tpo, ",".join(f.fp8_recipes) or "—", f.grad_reduce_dtype,
                          f.attention_kernel)
        else:
            t = Table(title="clusters")
            for c in ("id", "devices", "groups"):
                t.add_column(c)
            for i in cluster_ids():
                cl = load_cluster(i)
                t.add_row(i, str(cl.n_devices), "; ".join(
                    f"{g.nodes}×{g.devices_per_node} {g.device.id} ({g.intra_node.id} / {g.inter_node.id})"
                    for g in cl.groups))
        con.print(t)
    return cap.get()


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
            return f"# {section}/{ident}.yaml\n" + summary + path.read_text(encoding="utf-8")
    every = device_ids() + link_ids() + workload_ids() + cluster_ids() + framework_ids()
    raise SpecError(f"unknown catalog id {ident!r}", hint=did_you_mean(ident, every) or "see `parplan catalog list`")


def register(app: typer.Typer) -> None:
    cat = typer.Typer(help="List and show the bundled catalogs.", no_args_is_help=True)
    app.add_typer(cat, name="catalog")

    @cat.command("list")
    @handle_errors
    def list_cmd(section: Section = typer.Argument(Section.hardware,
                                                   help="hardware | links | workloads | clusters | frameworks"),
                 debug: bool = typer.Option(False, "--debug")) -> None:
        """List the ids of one catalog section with their key figures."""
        emit(_list(section), None)

    @cat.command("show")
    @handle_errors
    def show_cmd(ident: str = typer.Argument(..., help="any catalog id"),
                 debug: bool = typer.Option(False, "--debug")) -> None:
        """Print one catalog entry (with its sources)."""
        emit(_show(ident), None)
