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
    con = out_console(200 if section == Section.frameworks else 160)
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
            t = Table(title="workloads")
            for c in ("id", "name", "params (B)", "layers", "hidden", "heads/kv", "ffn", "vocab"):
                t.add_column(c)
            for i in workload_ids():
                s, _, _ = catalog_workload(i)
                t.add_row(i, s.name, f"{s.total_params / 1e9:.2f}", str(s.layers), str(s.hidden),
                          f"{s.heads}/{s.kv_heads}", f"{s.ffn} {s.ffn_hidden}", str(s.vocab))
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
            return f"# {section}/{ident}.yaml\n" + path.read_text(encoding="utf-8")
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
