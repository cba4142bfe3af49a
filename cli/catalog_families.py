"""`parplan catalog list` sections of the families with their own hardware kinds (task graphs, dataflow kernels,
layer chains, process networks, replicated services, offload, DiT models): id, name, kind and the family that reads each
entry, straight from the shipped YAML (no family is imported); ``show_entry`` prints one of them for ``catalog show``."""
from __future__ import annotations

# section → (catalog folder parts, the family that reads its entries, the --hw it is for)
SECTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "cpus": (("hardware", "cpus"), "task-graph (a socket; a one-node machine)"),
    "cpu-clusters": (("cpu_clusters",), "task-graph, replicated-service"),
    "dsps": (("hardware", "dsps"), "dataflow"),
    "edge": (("hardware", "edge"), "layer-chain (devices of an edge cluster)"),
    "networks": (("hardware", "networks"), "layer-chain (links of an edge cluster)"),
    "edge-clusters": (("edge_clusters",), "layer-chain"),
    "platforms": (("platforms",), "process-network"),
    "offload-nodes": (("offload_nodes",), "offload"),
    "layerchains": (("layerchains",), "layer-chain (published per-layer profiles: a workload's `chain:`)"),
    "dit-models": (("workloads", "dit"), "dit-inference (a workload's `model:`)"),
}


def _describe(data: dict, ident: str) -> str:
    """The entry's name, or its description where the name is only the id (cluster-like files)."""
    for key in ("name", "description"):
        v = data.get(key)
        if isinstance(v, str) and v.strip() and v.strip() != ident:
            return v.strip()
    return ""


def list_section(section: str) -> str:
    """One family-hardware section as a table (ids never dropped, names wrap)."""
    from parplan.catalogs import catalog_dir
    from parplan.cli.tables import Col, render
    from parplan.reading import load_yaml_file

    parts, family = SECTIONS[section]
    folder = catalog_dir(*parts)
    rows = []
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        data = load_yaml_file(path)
        if not isinstance(data, dict):
            continue
        ident = str(data.get("id") or data.get("name") or path.stem)
        rows.append([ident, _describe(data, ident), str(data.get("kind", ""))])
    return render([Col("id", "left"), Col("name", "left", wrap=True), Col("kind", "left", keep=3)], rows,
                  title=f"{section} ({len(rows)}; read by {family})", footer=lambda dropped: None)


def show_entry(ident: str) -> "str | None":
    """The file of the family-hardware entry ``ident`` (as ``list_section`` names it), or None when no section has
    it: ``catalog show`` refused every id these sections list."""
    from parplan.catalogs import catalog_dir
    from parplan.reading import load_yaml_file

    for section, (parts, family) in SECTIONS.items():
        folder = catalog_dir(*parts)
        for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            data = load_yaml_file(path)
            if isinstance(data, dict) and str(data.get("id") or data.get("name") or path.stem) == ident:
                return f"# {'/'.join(parts)}/{path.name} (catalog list {section}; read by {family})\n" + \
                    path.read_text(encoding="utf-8")
    return None
