"""The inputs of the family fuzz tests (``test_family_fuzz.py``), as ``fuzz_inputs.py`` holds the transformer
corpus's: the family table (``Fam``: each scenario's workload and hardware documents, the verbs cheap enough to fuzz,
a valid plan, its --fix keys and --objective values, its public API module) and the hypothesis strategies that
break them (document mutations, bad --plan strings and tokens).
"""
from __future__ import annotations

import copy
import importlib
import math
from dataclasses import dataclass
from pathlib import Path

import yaml
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def _yaml(path: str):
    return yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))


def _seed(module: str):
    return importlib.import_module(module)  # benchmarks/ is on sys.path (tests/conftest.py)


@dataclass(frozen=True)
class Fam:
    """One family scenario: its workload and hardware documents, the verbs cheap enough to fuzz on it, a valid plan
    string, its --fix keys and --objective values, and the public API module."""
    id: str
    workload: object  # a repository path or a callable returning the document
    hardware: object
    verbs: tuple
    plan: str | None
    fix: tuple
    objectives: tuple
    api: str

    def docs(self) -> tuple:
        return tuple(x() if callable(x) else _yaml(x) for x in (self.workload, self.hardware))


CHEAP = ("estimate", "suggest", "check", "simulate", "validate")
FAMS = [
    Fam("task-graph", "examples/stencil.yaml", "examples/epyc-2s.yaml", ("estimate", "suggest", "check", "simulate"),
        "runtime=libgomp,threads=64,sockets=2,grain=32,ranks=1", ("runtime", "threads", "sockets", "grain", "ranks"),
        ("time",), "parplan.tasks"),
    Fam("dataflow-nest", "examples/cholesky-dsp.yaml", "catalogs/hardware/dsps/c6678.yaml", CHEAP,
        "cores=8,vector=on,unroll=1,sync=barrier", ("cores", "vector", "unroll", "sync"),
        ("latency", "energy", "edp"), "parplan.dataflow"),
    Fam("dataflow-mapping", "examples/dataflow-conv1d-t1.yaml", "examples/dataflow-t1-arch.yaml",
        ("estimate", "suggest", "check"), None, (), ("latency", "energy", "edp"), "parplan.dataflow"),
    Fam("layer-chain", "examples/vit-edge.yaml", "examples/edge-4pi-server.yaml", CHEAP, "stages=server:1-48", (),
        ("latency", "throughput", "energy"), "parplan.layerchain"),
    Fam("layer-chain-dag", lambda: _seed("seed_cecpa").workload(), lambda: _seed("seed_cecpa").cluster(50),
        ("estimate", "suggest", "check", "simulate"),
        "place=prior:edge-0/cls_mlp:edge-1/cls_dae:cloud/cls_tcn:cloud/fusion:edge-1", (),
        ("latency", "throughput", "availability"), "parplan.layerchain"),
    Fam("layer-chain-training", lambda: _seed("seed_pipar").workload("vgg16"),
        lambda: _seed("seed_pipar").cluster(50), ("estimate", "suggest", "check", "simulate"), None, (),
        ("latency", "throughput"), "parplan.layerchain"),
    Fam("layer-training", "examples/vgg16-splitbrain.yaml", "catalogs/clusters/v100-eth10-4.yaml", CHEAP,
        "method=hybrid,workers=4,modes=13D3M", ("method", "workers", "bits"), ("time", "memory"),
        "parplan.layertrain"),
    Fam("layer-training-admm", "examples/gamlp-admm.yaml", "catalogs/clusters/v100-pcie3-8.yaml", CHEAP,
        "method=admm,workers=8,bits=8", ("method", "workers", "bits"), ("time", "memory"), "parplan.layertrain"),
    Fam("process-network", "examples/subtitling.yaml", "catalogs/platforms/odroid-xu4.yaml", CHEAP,
        "decode=ffmpegx1@a15,speech-to-text=dnn-largex1@a15,translate=nmtx1@a15,render=overlayx1@a15",
        ("decode", "speech-to-text", "translate", "render"), ("pareto", "throughput", "energy", "quality"),
        "parplan.variants"),
    Fam("replicated-service", "examples/kv-store.yaml", "catalogs/cpu_clusters/smr-3x-16c-10gbe.yaml",
        ("estimate", "suggest", "check"), "scheme=psmr,threads=16,rings=1,batch=1",
        ("scheme", "threads", "rings", "batch"), ("throughput", "latency"), "parplan.replication"),
    Fam("offload", "examples/mandelbrot-offload.yaml", "catalogs/offload_nodes/caf-k40-phi.yaml", CHEAP,
        "place=tesla-k40,resident=true,chunks=1,api=actor,n=1e+08", ("place", "resident", "chunks", "api", "n"),
        ("time",), "parplan.offload"),
    Fam("offload-chain", "examples/offload-chain.yaml", "catalogs/offload_nodes/caf-k40-phi.yaml", CHEAP, None,
        ("place", "resident", "chunks", "api", "n"), ("time",), "parplan.offload"),
    Fam("offload-heritage", "examples/offload-heritage.yaml", "catalogs/offload_nodes/heritage-rtx4090.yaml",
        ("estimate", "suggest"), None, (), ("time",), "parplan.offload"),
]
BY_ID = {f.id: f for f in FAMS}
DOCS = {f.id: f.docs() for f in FAMS}


# --- mutations of the documents -----------------------------------------------------------------------------------
def _deep(n: int):
    v: object = 1
    for _ in range(n):
        v = {"k": v}
    return v


SPECIAL = [None, True, False, 0, -1, 1, 0.5, -0.0, 10**6, 10**12, 10**30, 1e300, -1e300, math.nan, math.inf,
           -math.inf, "", "x", "模型-α 🚀 \u202eÜ", "\x1b[31mred", "1e999 GB", "-5 us", "nan s", "inf GB/s",
           "0 GB/s", "x" * 2000, [], {}, [1, 2], [[[]]], {"k": "v"}, _deep(30), _deep(80)]
VALUES = st.one_of(st.sampled_from(SPECIAL), st.integers(-10**13, 10**13),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                   st.lists(st.integers(-3, 10**6), max_size=4))


def paths(d, pre=()) -> list:
    out = [pre]
    if isinstance(d, dict):
        for k, v in d.items():
            out += paths(v, pre + (k,))
    elif isinstance(d, list):
        for i, v in enumerate(d[:4]):
            out += paths(v, pre + (i,))
    return out


def _at(d, path):
    for k in path:
        d = d[k]
    return d


@st.composite
def mutated(draw, doc):
    """``doc`` with one to three mutations at random places (every value inserted is a copy: a drawn value is
    never changed in place by a later mutation)."""
    d = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        ps = paths(d)
        p = draw(st.sampled_from(ps))
        try:
            node = _at(d, p)
        except (KeyError, IndexError, TypeError):
            continue
        op = draw(st.sampled_from(["set", "set", "set", "delete", "unknown-key", "repeat", "empty"]))
        if not p:  # the document itself
            if isinstance(node, dict):
                key = draw(st.sampled_from(["bogus", "Family", "ünïcødé", "name ", "kind2"]))
                node[key] = copy.deepcopy(draw(VALUES))
            continue
        parent, last = _at(d, p[:-1]), p[-1]
        if op == "delete":
            del parent[last]
        elif op == "unknown-key" and isinstance(node, dict):
            node[draw(st.sampled_from(["bogus", "extra_field", "🚀"]))] = copy.deepcopy(draw(VALUES))
        elif op == "repeat" and isinstance(node, list) and node:
            parent[last] = copy.deepcopy(node * draw(st.sampled_from([50, 600])))  # long lists (caps name their limit)
        elif op == "empty":
            parent[last] = [] if isinstance(node, list) else {} if isinstance(node, dict) else ""
        else:
            parent[last] = copy.deepcopy(draw(VALUES))
    return d


def dump(doc) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**6)


# --- bad --plan strings and --fix / --objective values ------------------------------------------------------------
BAD_VALUES = ["", "-1", "0", "1" + "0" * 30, "9" * 5000, "nan", "inf", "-inf", "1e999", "1.5", "0x10", "🚀",
              "\x1b[2J", " ", "true", "x" * 3000, "1e-300", "=", ",", "a=b=c"]
TOKENS = st.one_of(st.sampled_from(BAD_VALUES), st.text(max_size=10), st.integers(-10**20, 10**20).map(str))


@st.composite
def bad_plan(draw, plan: str):
    """A family's valid plan string, broken: an item dropped, duplicated, a bad value, an unknown key, a bare key,
    truncated, or noise."""
    items = [p.split("=", 1) for p in plan.split(",")]
    i = draw(st.integers(0, len(items) - 1))
    op = draw(st.sampled_from(["value", "value", "drop", "dup", "unknown", "bare", "cut", "noise"]))
    if op == "value":
        items[i][1] = draw(TOKENS)
    elif op == "drop":
        del items[i]
    elif op == "dup":
        items.append(list(items[i]))
    elif op == "unknown":
        items.append([draw(st.sampled_from(["bogus", "tp", "THREADS", "ünï"])), draw(TOKENS)])
    elif op == "bare":
        items[i] = [items[i][0]]
    text = ",".join("=".join(kv) for kv in items)
    if op == "cut":
        text = text[:draw(st.integers(0, len(text)))]
    elif op == "noise":
        text = draw(st.sampled_from([text * 200, "", ",,,", "=" * 10, draw(st.text(max_size=30))]))
    return text


ALL_OBJECTIVES = sorted({o for f in FAMS for o in f.objectives} | {"edp", "availability", "cost", "mfu"})
