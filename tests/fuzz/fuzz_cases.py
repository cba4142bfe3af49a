"""The fuzz corpus as data: malformed and extreme inputs, edge-but-valid inputs, and work-budget inputs.

A row is ``case(id, argv, files, culprit)``:

* ``argv`` — the arguments after ``parplan``;
* ``files`` — written into the test's working directory before the run (``str``: UTF-8 text written as is,
  ``bytes``: raw); paths in ``argv`` are relative to it, so error lines stay short and comparable;
* ``culprit`` — text (one string or a tuple) the ``error:`` line must contain: the key path, the option, or the
  ``file:line`` position at fault (BAD rows only).

``BAD``: exit 2, stderr exactly one ``error:`` line naming the culprit, no traceback.  ``GOOD``: exit 0 (JSON
output strictly finite).  ``BUDGET``: work budgets (the planner's and the executor's caps).
To extend the corpus, add a row; the inputs are tiny (a 2-layer model, one 8-GPU node) so each runs in ms.
"""
from __future__ import annotations

from typing import NamedTuple, Union

Files = dict[str, Union[str, bytes]]


class Case(NamedTuple):
    id: str
    argv: tuple
    files: dict
    culprit: tuple


def case(id: str, argv, files: Files | None = None, culprit: Union[str, tuple] = ()) -> Case:
    return Case(id, tuple(argv), dict(files or {}), (culprit,) if isinstance(culprit, str) else tuple(culprit))


# --- base inputs ------------------------------------------------------------------------------------------------
W = """\
name: tiny
architecture:
  layers: 2
  hidden: 64
  heads: 4
  vocab: 128
training:
  seq_len: 64
  global_batch: 8
"""
# line numbers of W:  1 name, 3 layers, 4 hidden, 5 heads, 6 vocab, 8 seq_len, 9 global_batch

MOE = """\
name: tiny-moe
architecture:
  family: moe-transformer
  layers: 2
  hidden: 64
  heads: 4
  vocab: 128
  ffn: swiglu
  experts: 4
  top_k: 2
  moe_ffn_hidden: 32
training:
  seq_len: 64
  global_batch: 8
"""

C = """\
name: tiny-8
groups:
  - device: a100-sxm-80gb
    nodes: 1
    devices_per_node: 8
    intra_node: nvlink3
    inter_node: ib-hdr200
"""
# line numbers of C: 1 name, 3 device, 4 nodes, 5 devices_per_node, 6 intra_node, 7 inter_node

C_INLINE_LINK = C.replace("    intra_node: nvlink3\n",
                          "    intra_node:\n      bandwidth: \"300 GB/s\"\n      latency: \"2 us\"\n")
# line numbers: 6 intra_node, 7 bandwidth, 8 latency, 9 inter_node

C_INLINE_DEVICE = C.replace("  - device: a100-sxm-80gb\n", """\
  - device:
      kind: gpu
      vendor: acme
      memory: "80 GiB"
      memory_bandwidth: "2 TB/s"
      peak_flops:
        bf16: "312 TFLOP/s"
""")
# line numbers: 3 device, 4 kind, 5 vendor, 6 memory, 7 memory_bandwidth, 8 peak_flops, 9 bf16

C_TWO_GROUPS = """\
name: two
groups:
  - {device: h100-sxm-80gb, nodes: 1, devices_per_node: 8, intra_node: nvlink4, inter_node: ib-ndr400}
  - {device: a100-sxm-80gb, nodes: 1, devices_per_node: 8, intra_node: nvlink3, inter_node: ib-hdr200}
inter_group: {bandwidth: "25 GB/s", latency: "5 us"}
"""

DEV = """\
kind: gpu
vendor: acme
memory: "80 GiB"
memory_bandwidth: "2 TB/s"
peak_flops:
  bf16: "312 TFLOP/s"
"""

C_DEV_FILE = C.replace("device: a100-sxm-80gb", "device: dev.yaml")

HF = """\
{
  "model_type": "llama",
  "num_hidden_layers": 2,
  "hidden_size": 64,
  "num_attention_heads": 4,
  "intermediate_size": 128,
  "vocab_size": 128
}
"""
# line numbers of HF: 3 num_hidden_layers, 4 hidden_size, 5 heads, 6 intermediate_size, 7 vocab_size

P = """\
tp: 1
mbs: 1
pipelines:
  - micro_batches: 8
    stages:
      - {group: 0, layers: [0, 2]}
"""
# line numbers of P: 1 tp, 2 mbs, 4 micro_batches, 6 the stage

BOMB_VALUE = "[" + ", ".join(
    ['&a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]) + "]"  # ~1 KB, 9^9 nodes
DEEP_FLOW = "[" * 2000 + "]" * 2000
DEEP_BLOCK = "".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "v: 1\n"
ESC = "\\e[31m"  # YAML double-quoted escape for ESC: an ANSI colour sequence
BIG = "x" * 1_000_000  # a 1 MB value on the command line
HUGE_INT = "9" * 5000

EST = ("estimate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1")
EST_HW = ("estimate", "llama2-7b", "--hw", "c.yaml", "--plan", "tp=1", "--global-batch", "16")
EST_HF = ("estimate", "cfg.json", "--hw", "c.yaml", "--plan", "tp=1", "--seq-len", "64", "--global-batch", "8")
EST_PF = ("estimate", "w.yaml", "--hw", "c.yaml", "--plan-file", "p.yaml")
COMMANDS = {
    "estimate": EST,
    "suggest": ("suggest", "w.yaml", "--hw", "c.yaml"),
    "check": ("check", "w.yaml", "--hw", "c.yaml", "--min-tokens-per-s", "1"),
    "simulate": ("simulate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1"),
    "validate": ("validate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1"),
}


def wl(text: str) -> Files:
    return {"w.yaml": text, "c.yaml": C}


def cl(text: str) -> Files:
    return {"w.yaml": W, "c.yaml": text}


def w_sub(old: str, new: str) -> Files:
    assert old in W, old
    return wl(W.replace(old, new, 1))


def hf(text: str) -> Files:
    return {"cfg.json": text, "c.yaml": C}


def hf_sub(old: str, new: str) -> Files:
    assert old in HF, old
    return hf(HF.replace(old, new, 1))


def pf(text: str) -> Files:
    return {"w.yaml": W, "c.yaml": C, "p.yaml": text}


def sub(base: str, old: str, new: str) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


# --- BAD: exit 2, one error line naming the culprit ---------------------------------------------------------------
BAD: list[Case] = []

# YAML structure (the bounded loader), in the workload file unless the id says otherwise
BAD += [case(f"yaml-alias-bomb-{cmd}", argv, wl(f"model: {BOMB_VALUE}\n"), ("w.yaml:1:", "200,000 nodes"))
        for cmd, argv in COMMANDS.items()]
BAD += [
    case("yaml-alias-bomb-cluster", EST, cl(f"name: {BOMB_VALUE}\n"), ("c.yaml:1:", "200,000 nodes")),
    case("yaml-alias-bomb-plan-file", EST_PF, pf(f"label: {BOMB_VALUE}\n"), ("p.yaml:1:", "200,000 nodes")),
    case("yaml-alias-bomb-device-file", EST, {"w.yaml": W, "c.yaml": C_DEV_FILE, "dev.yaml": f"name: {BOMB_VALUE}\n"},
         ("dev.yaml:1:", "200,000 nodes")),
    case("yaml-alias-bomb-block-style", EST, wl(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"),
        ("w.yaml:6:", "200,000 nodes")),
    case("yaml-recursive-alias-seq", EST, wl("model: &a [1, *a]\n"), ("w.yaml:1:", "recursive")),
    case("yaml-recursive-alias-map", EST, wl("training: &t {seq_len: 64, again: *t}\n"), ("w.yaml:1:", "recursive")),
    case("yaml-deep-flow-nesting", EST, wl(f"model: {DEEP_FLOW}\n"), ("w.yaml:1:", "deeper than 64")),
    case("yaml-deep-block-nesting", EST, wl(DEEP_BLOCK), ("w.yaml:", "deeper than 64")),
    case("yaml-deep-nesting-cluster", EST, cl(f"name: x\ngroups: {DEEP_FLOW}\n"), ("c.yaml:2:", "deeper than 64")),
    case("yaml-unhashable-seq-key", EST, wl("? [a, b]\n: 1\n" + W), ("w.yaml:1:3", "not a sequence")),
    case("yaml-unhashable-map-key", EST, wl("? {a: 1}\n: 1\n" + W), ("w.yaml:1:3", "not a mapping")),
    case("yaml-unhashable-set-key", EST, wl("? !!set {a, b}\n: 1\n" + W), ("w.yaml:1:3", "not a mapping")),
    case("yaml-unhashable-key-nested", EST, w_sub("  layers: 2\n", "  layers: 2\n  ? [x]\n  : 1\n"),
         ("w.yaml:4:5", "not a sequence")),
    case("yaml-unhashable-key-cluster", EST, cl(C + "? [a]\n: 1\n"), ("c.yaml:8:3", "not a sequence")),
    case("yaml-duplicate-key", EST, wl(W + "name: again\n"), ("w.yaml:10:1", "duplicate key 'name'")),
    case("yaml-duplicate-key-nested", EST, w_sub("  hidden: 64\n", "  hidden: 64\n  hidden: 128\n"),
         ("w.yaml:5:3", "duplicate key 'hidden'")),
    case("yaml-anchor-holder-key-unknown", EST, wl(
        "name: x\nbase: &b {seq_len: 64}\n"), ("w.yaml:2:1", "unknown key 'base'")),
    case("yaml-duplicate-explicit-key-with-merge", EST, wl(
        W.replace("training:\n  seq_len: 64\n", "training:\n  <<: {seq_len: 32}\n  seq_len: 64\n  seq_len: 128\n")),
        ("w.yaml:10:3", "duplicate key 'seq_len'")),
    case("yaml-two-merge-keys", EST, wl(W.replace("training:\n", "training:\n  <<: {seq_len: 1}\n  <<: {seq_len: 2}\n")),
         ("w.yaml:9:3", "duplicate key '<<'")),
    case("yaml-merge-scalar", EST, wl(W.replace("training:\n", "training:\n  <<: 5\n")), ("w.yaml:8:7", "merge key")),
    case("yaml-merge-list-with-scalar", EST, wl(W.replace("training:\n", "training:\n  <<: [{seq_len: 1}, 3]\n")),
         ("w.yaml:8:22", "merge key")),
    case("yaml-duplicate-anchor", EST, wl("name: &n a\nmodel: &n b\n"), ("w.yaml:2:8", "duplicate anchor &n")),
    case("yaml-undefined-alias", EST, wl("name: *nope\n"), ("w.yaml:1:7", "undefined alias 'nope'")),
    case("yaml-tab-indent", EST, wl("name: x\narchitecture:\n\tlayers: 2\n"), ("w.yaml:3:1", "malformed YAML")),
    case("yaml-unclosed-flow", EST, wl("name: x\ntraining: {seq_len: [1\n"), ("w.yaml:", "malformed YAML")),
    case("yaml-two-documents", EST, wl(W + "---\nname: b\n"), ("w.yaml:10:1", "another document")),
    case("yaml-empty-file", EST, wl(""), ("w.yaml:", "empty document")),
    case("yaml-only-comment", EST, wl("# nothing here\n"), ("w.yaml:", "empty document")),
    case("yaml-top-level-list", EST, wl("- a\n- b\n"), ("w.yaml:", "got a list")),
    case("yaml-top-level-scalar", EST, wl("llama2-7b\n"), ("w.yaml:", "got a str")),
    case("yaml-top-level-scalar-cluster", EST, cl("42\n"), ("c.yaml:", "got a int")),
    case("yaml-not-utf8", EST, wl(b"name: \xff\xfe\xfa\n"), ("w.yaml:", "not a UTF-8")),
    case("yaml-raw-control-char", EST, wl("name: a\x07b\n"), ("w.yaml:1:8", "malformed YAML")),
    case("yaml-python-tag", EST, wl("name: !!python/object/apply:os.system [ls]\n"), ("w.yaml:1:7", "constructor")),
    case("yaml-bad-timestamp", EST, w_sub("seq_len: 64", "seq_len: 2024-13-45"), ("w.yaml:8:12", "month")),
    case("yaml-bad-explicit-float", EST, w_sub("hidden: 64", "hidden: !!float abc"), ("w.yaml:4:11", "abc")),
    case("yaml-binary-name", EST, w_sub("name: tiny", "name: !!binary aGVsbG8="), ("w.yaml:1:1", "name: bad value b'hello'")),
    case("yaml-huge-scalar", EST, w_sub("name: tiny", "name: " + "x" * 70_000), ("w.yaml:1:7", "65,536")),
    case("yaml-huge-key", EST, w_sub("  layers: 2", "  " + "k" * 70_000 + ": 2"), ("w.yaml:3:3", "65,536")),
    case("yaml-long-number", EST, w_sub("layers: 2", "layers: " + "1" * 200), ("w.yaml:3:11", "at most 100")),
    case("yaml-huge-int-digits", EST, w_sub("layers: 2", "layers: " + HUGE_INT), ("w.yaml:3:11", "at most 100")),
    case("yaml-sexagesimal-huge", EST, w_sub("layers: 2", "layers: " + ":".join(["59"] * 40)), ("w.yaml:3:11",)),
    case("yaml-file-too-large", EST, wl(W + "#" * (9 * 2**20) + "\n"), ("w.yaml", "8 MiB")),
    case("yaml-int-key", EST, w_sub("  layers: 2\n", "  layers: 2\n  7: 1\n"), ("w.yaml:4:3", "architecture: unknown key 7")),
    case("yaml-null-key", EST, wl("~: 1\n" + W), ("w.yaml:1:1", "unknown key None")),
    case("yaml-bool-key", EST, wl("yes: 1\n" + W), ("w.yaml:1:1", "unknown key True")),
    case("yaml-directory", ("estimate", "adir.yaml", "--hw", "c.yaml", "--plan", "tp=1"),
         {"adir.yaml/x": "", "c.yaml": C}, ("adir.yaml:", "directory")),
    case("yaml-missing-file", ("estimate", "missing.yaml", "--hw", "c.yaml", "--plan", "tp=1"), {"c.yaml": C},
         ("missing.yaml:", "file not found")),
    case("yaml-nul-in-path", ("estimate", "w\x00.yaml", "--hw", "c.yaml", "--plan", "tp=1"), {"c.yaml": C},
         ("'w\\x00.yaml'",)),
    case("yaml-cluster-missing-file", EST[:3] + ("nope.yaml",) + EST[4:], {"w.yaml": W}, ("nope.yaml:", "not found")),
]

# workload numbers, ranges and names
BAD += [
    case("workload-layers-1e30", EST, w_sub("layers: 2", "layers: " + "1" + "0" * 30),
         ("w.yaml:3:3", "architecture.layers", "4096")),
    case("workload-layers-nan", EST, w_sub("layers: 2", "layers: .nan"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-inf", EST, w_sub("layers: 2", "layers: .inf"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-negative", EST, w_sub("layers: 2", "layers: -1"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-float", EST, w_sub("layers: 2", "layers: 2.5"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-bool", EST, w_sub("layers: 2", "layers: true"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-string", EST, w_sub("layers: 2", "layers: '2'"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-layers-list", EST, w_sub("layers: 2", "layers: [2]"), ("w.yaml:3:3", "architecture.layers")),
    case("workload-hidden-huge", EST, w_sub("hidden: 64", "hidden: 1048576"), ("w.yaml:4:3", "architecture.hidden", "262144")),
    case("workload-heads-huge", EST, w_sub("heads: 4", "heads: 100000"), ("w.yaml:5:3", "architecture.heads", "65536")),
    case("workload-vocab-huge", EST, w_sub("vocab: 128", "vocab: 1000000000"), ("w.yaml:6:3", "architecture.vocab")),
    case("workload-ffn-huge", EST, w_sub("  vocab: 128\n", "  vocab: 128\n  ffn_hidden: 10000000\n"),
         ("w.yaml:7:3", "architecture.ffn_hidden")),
    case("workload-head-dim-huge", EST, w_sub("  vocab: 128\n", "  vocab: 128\n  head_dim: 1000000\n"),
         ("w.yaml:7:3", "architecture.head_dim")),
    case("workload-kv-heads-1e30", EST, w_sub("  vocab: 128\n", "  vocab: 128\n  kv_heads: " + "1" + "0" * 30 + "\n"),
         ("w.yaml:7:3", "architecture.kv_heads")),
    case("workload-max-position-1e30", EST, w_sub("  vocab: 128\n", "  vocab: 128\n  position: learned\n  max_position: "
                                                   + "1" + "0" * 30 + "\n"), ("w.yaml:8:3", "architecture.max_position")),
    case("workload-seq-len-over-2-24", EST, w_sub("seq_len: 64", "seq_len: 16777217"),
         ("w.yaml:8:3", "training.seq_len", "16777216")),
    case("workload-global-batch-1e30", EST, w_sub("global_batch: 8", "global_batch: " + "1" + "0" * 30),
         ("w.yaml:9:3", "training.global_batch")),
    case("workload-seq-len-nan", EST, w_sub("seq_len: 64", "seq_len: .nan"), ("w.yaml:8:3", "training.seq_len")),
    case("workload-global-batch-negative", EST, w_sub("global_batch: 8", "global_batch: -8"),
         ("w.yaml:9:3", "training.global_batch")),
    case("workload-expert-imbalance-nan", EST, w_sub("global_batch: 8", "global_batch: 8\n  expert_imbalance: .nan"),
         ("w.yaml:10:3", "training.expert_imbalance", "finite")),
    case("workload-expert-imbalance-inf", EST, w_sub("global_batch: 8", "global_batch: 8\n  expert_imbalance: .inf"),
         ("w.yaml:10:3", "training.expert_imbalance")),
    case("workload-mtp-layers-1e30", EST, w_sub("global_batch: 8", "global_batch: 8\n  mtp_layers: " + "1" + "0" * 30),
         ("w.yaml:10:3", "training.mtp_layers")),
    case("workload-name-ansi", EST, w_sub("name: tiny", f'name: "tiny{ESC}"'), ("w.yaml:1:1", "name:", "U+001B")),
    case("workload-name-c1-csi", EST, w_sub("name: tiny", 'name: "tiny\\x9b2J"'), ("w.yaml:1:1", "name:", "U+009B")),
    case("workload-name-bidi-override", EST, w_sub("name: tiny", 'name: "tiny\\u202egnp"'), ("w.yaml:1:1", "U+202E")),
    case("workload-name-newline", EST, w_sub("name: tiny", 'name: "ti\\nny"'), ("w.yaml:1:1", "U+000A")),
    case("workload-name-osc-title", EST, w_sub("name: tiny", 'name: "\\e]0;pwned\\a"'), ("w.yaml:1:1", "U+001B")),
    case("workload-name-too-long", EST, w_sub("name: tiny", "name: " + "n" * 300), ("w.yaml:1:1", "name:", "200")),
    case("workload-model-id-ansi", EST, wl(f'model: "llama2-7b{ESC}"\ntraining: {{global_batch: 16}}\n'),
         ("w.yaml:1:1", "model:", "U+001B")),
    case("workload-framework-ansi", EST, w_sub("global_batch: 8", f'global_batch: 8\n  framework: "nemo{ESC}"'),
         ("w.yaml:10:3", "training.framework")),
    case("workload-arch-value-1mb-like", EST, w_sub("heads: 4", "heads: '" + "h" * 60_000 + "'"),
         ("w.yaml:5:3", "architecture.heads", "…")),
    case("workload-arch-unknown-long-key", EST, w_sub("  layers: 2\n", "  layers: 2\n  " + "q" * 1000 + ": 1\n"),
         ("w.yaml:4:3", "architecture: unknown key", "…")),
    case("moe-experts-1e30", EST, {"w.yaml": sub(MOE, "experts: 4", "experts: " + "1" + "0" * 30), "c.yaml": C},
         ("w.yaml:9:3", "architecture.experts")),
    case("moe-top-k-nan", EST, {"w.yaml": sub(MOE, "top_k: 2", "top_k: .nan"), "c.yaml": C},
         ("w.yaml:10:3", "architecture.top_k")),
    case("moe-sliding-window-1e30", EST, {"w.yaml": sub(MOE, "  top_k: 2\n", "  top_k: 2\n  sliding_window: 1"
                                                         + "0" * 30 + "\n"), "c.yaml": C},
         ("w.yaml:11:3", "architecture.sliding_window")),
    case("moe-mtp-layers-100", EST, {"w.yaml": sub(MOE, "  top_k: 2\n", "  top_k: 2\n  mtp_layers: 100\n"), "c.yaml": C},
         ("w.yaml:11:3", "architecture.mtp_layers")),
    case("moe-shared-experts-huge", EST, {"w.yaml": sub(MOE, "  top_k: 2\n", "  top_k: 2\n  shared_experts: 100000\n"),
                                          "c.yaml": C}, ("w.yaml:11:3", "architecture.shared_experts")),
    case("cli-seq-len-1e30", EST + ("--seq-len", "1" + "0" * 30), wl(W), ("training.seq_len", "16,777,216")),
    case("cli-global-batch-1e30", EST + ("--global-batch", "1" + "0" * 30), wl(W), ("training.global_batch",)),
    case("cli-global-batch-zero", EST + ("--global-batch", "0"), wl(W), ("training.global_batch",)),
    case("cli-seq-len-negative", EST + ("--seq-len=-1",), wl(W), ("training.seq_len",)),
    case("cli-global-batch-5000-digits", EST + ("--global-batch", HUGE_INT), wl(W), ("--global-batch", "…")),
]

# cluster files: counts, inline links, inline devices, names
G = "groups[0]"
BAD += [
    case("cluster-nodes-1e18", EST_HW, cl(sub(C, "nodes: 1", "nodes: 1000000000000000000")),
         ("c.yaml:4:5", f"{G}.nodes", "1048576")),
    case("cluster-nodes-over-max", EST_HW, cl(sub(C, "nodes: 1", "nodes: 1048577")), ("c.yaml:4:5", f"{G}.nodes")),
    case("cluster-devices-per-node-huge", EST_HW, cl(sub(C, "devices_per_node: 8", "devices_per_node: 1000000")),
         ("c.yaml:5:5", f"{G}.devices_per_node", "1024")),
    case("cluster-total-devices-over-max", EST_HW, cl(sub(C, "nodes: 1", "nodes: 262144")),
         ("c.yaml:2:1", "groups:", "2,097,152 devices", "1,048,576")),
    case("cluster-nics-huge", EST_HW, cl(C + "    nics_per_node: 1000000000\n"), ("c.yaml:8:5", f"{G}.nics_per_node")),
    case("cluster-scale-up-domain-1e30", EST_HW, cl(C + "    scale_up_domain: 1" + "0" * 30 + "\n"),
         ("c.yaml:8:5", f"{G}.scale_up_domain")),
    case("cluster-too-many-groups", EST_HW, cl("name: many\ngroups:\n" + "".join(
        "  - {device: a100-sxm-80gb, nodes: 1, devices_per_node: 8, intra_node: nvlink3, inter_node: ib-hdr200}\n"
        for _ in range(17))), ("c.yaml:2:1", "groups", "16")),
    case("cluster-no-groups", EST_HW, cl("name: none\ngroups: []\n"), ("c.yaml:2:1", "groups")),
    case("cluster-nodes-nan", EST_HW, cl(sub(C, "nodes: 1", "nodes: .nan")), ("c.yaml:4:5", f"{G}.nodes")),
    case("cluster-nodes-float", EST_HW, cl(sub(C, "nodes: 1", "nodes: 1.5")), ("c.yaml:4:5", f"{G}.nodes")),
    case("cluster-nodes-string", EST_HW, cl(sub(C, "nodes: 1", "nodes: '8'")), ("c.yaml:4:5", f"{G}.nodes")),
    case("cluster-nodes-zero", EST_HW, cl(sub(C, "nodes: 1", "nodes: 0")), ("c.yaml:4:5", f"{G}.nodes")),
    case("cluster-name-ansi", EST_HW, cl(sub(C, "name: tiny-8", f'name: "tiny{ESC}"')), ("c.yaml:1:1", "name:", "U+001B")),
    case("cluster-name-bell", EST_HW, cl(sub(C, "name: tiny-8", 'name: "tiny\\a"')), ("c.yaml:1:1", "U+0007")),
    case("cluster-name-too-long", EST_HW, cl(sub(C, "name: tiny-8", "name: " + "c" * 1000)), ("c.yaml:1:1", "name:")),
    case("cluster-device-list", EST_HW, cl(sub(C, "device: a100-sxm-80gb", "device: [1, 2]")),
         ("c.yaml:3:5", f"{G}.device", "bad value [1, 2]")),
    case("cluster-device-empty", EST_HW, cl(sub(C, "device: a100-sxm-80gb", "device: ''")), ("c.yaml:3:5", f"{G}.device")),
    case("cluster-device-unknown-id-ansi", EST_HW, cl(sub(C, "device: a100-sxm-80gb", f'device: "a100{ESC}"')),
         ("c.yaml:3:5", f"{G}.device", "\\x1b")),
    case("cluster-device-file-missing", EST_HW, cl(sub(C, "device: a100-sxm-80gb", "device: nodir/dev.yaml")),
         ("c.yaml:3:5", f"{G}.device", "not found")),
    case("cluster-device-nul", EST_HW, cl(sub(C, "device: a100-sxm-80gb", 'device: "a\\0b.yaml"')),
         ("c.yaml:3:5", f"{G}.device")),
    case("cluster-device-unknown-user-home", EST_HW, cl(sub(C, "device: a100-sxm-80gb", "device: ~nosuchuser42/dev.yaml")),
         ("c.yaml:3:5", f"{G}.device", "not found")),
    case("cluster-hw-1mb-arg", ("estimate", "llama2-7b", "--hw", BIG, "--plan", "tp=1"), {}, ("no cluster file", "…")),
    case("cluster-hw-nul-arg", ("estimate", "llama2-7b", "--hw", "c\x00.yaml", "--plan", "tp=1"), {}, ("c\\x00.yaml",)),
    case("cluster-hw-ansi-arg", ("estimate", "llama2-7b", "--hw", "dgx\x1b[2J", "--plan", "tp=1"), {}, ("'dgx\\x1b[2J'",)),
]
IL, ID = f"{G}.intra_node", f"{G}.device"
BAD += [
    case("link-latency-negative", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', "latency: -1")),
         ("c.yaml:8:7", f"{IL}.latency", "≥ 0")),
    case("link-latency-negative-unit", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "-2 us"')),
         ("c.yaml:8:7", f"{IL}.latency")),
    case("link-latency-nan", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', "latency: .nan")),
         ("c.yaml:8:7", f"{IL}.latency", "finite")),
    case("link-latency-inf", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', "latency: .inf")),
         ("c.yaml:8:7", f"{IL}.latency", "finite")),
    case("link-latency-too-long", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "2 s"')),
         ("c.yaml:8:7", f"{IL}.latency", "≤ 1 s")),
    case("link-latency-nan-string", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "nan us"')),
         ("c.yaml:8:7", f"{IL}.latency")),
    case("link-latency-inf-string", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "1e999 us"')),
         ("c.yaml:8:7", f"{IL}.latency", "finite")),
    case("link-latency-unit-typo", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "2 uss"')),
         ("c.yaml:8:7", f"{IL}.latency", "unknown unit")),
    case("link-bandwidth-zero", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: 0")),
         ("c.yaml:7:7", f"{IL}.bandwidth", "> 0")),
    case("link-bandwidth-negative", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', 'bandwidth: "-300 GB/s"')),
         ("c.yaml:7:7", f"{IL}.bandwidth")),
    case("link-bandwidth-nan", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: .nan")),
         ("c.yaml:7:7", f"{IL}.bandwidth", "finite")),
    case("link-bandwidth-inf", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: .inf")),
         ("c.yaml:7:7", f"{IL}.bandwidth", "finite")),
    case("link-bandwidth-absurd", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', 'bandwidth: "1e20 B/s"')),
         ("c.yaml:7:7", f"{IL}.bandwidth", "1e15")),
    case("link-bandwidth-huge-int", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: 1" + "0" * 90)),
         ("c.yaml:7:7", f"{IL}.bandwidth")),
    case("link-bandwidth-unit-typo", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', 'bandwidth: "300 GB/sec"')),
         ("c.yaml:7:7", f"{IL}.bandwidth", "unknown unit")),
    case("link-bandwidth-list", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: [300]")),
         ("c.yaml:7:7", f"{IL}.bandwidth")),
    case("link-bandwidth-bool", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: true")),
         ("c.yaml:7:7", f"{IL}.bandwidth")),
    case("link-bandwidth-long-string", EST_HW, cl(sub(C_INLINE_LINK, 'bandwidth: "300 GB/s"', "bandwidth: '" + "9" * 5000
                                                      + " GB/s'")), ("c.yaml:7:7", f"{IL}.bandwidth", "…")),
    case("link-name-ansi", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', f'latency: "2 us"\n      name: "nv{ESC}"')),
         ("c.yaml:9:7", f"{IL}.name", "U+001B")),
    case("link-unknown-key", EST_HW, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "2 us"\n      jitter: 1')),
         ("c.yaml:9:7", f"{IL}: unknown key 'jitter'")),
    case("link-inter-group-latency-nan", EST_HW, cl(sub(C_TWO_GROUPS, 'latency: "5 us"', "latency: .nan")),
         ("c.yaml:5:", "inter_group.latency")),
    case("device-memory-nan", EST_HW, cl(sub(C_INLINE_DEVICE, 'memory: "80 GiB"', "memory: .nan")),
         ("c.yaml:6:7", f"{ID}.memory", "finite")),
    case("device-memory-negative", EST_HW, cl(sub(C_INLINE_DEVICE, 'memory: "80 GiB"', 'memory: "-80 GiB"')),
         ("c.yaml:6:7", f"{ID}.memory")),
    case("device-memory-absurd", EST_HW, cl(sub(C_INLINE_DEVICE, 'memory: "80 GiB"', 'memory: "1e20 B"')),
         ("c.yaml:6:7", f"{ID}.memory", "1e15")),
    case("device-memory-bandwidth-inf", EST_HW, cl(sub(C_INLINE_DEVICE, 'memory_bandwidth: "2 TB/s"', "memory_bandwidth: .inf")),
         ("c.yaml:7:7", f"{ID}.memory_bandwidth")),
    case("device-flops-absurd", EST_HW, cl(sub(C_INLINE_DEVICE, 'bf16: "312 TFLOP/s"', 'bf16: "1e30 FLOP/s"')),
         ("c.yaml:9:9", f"{ID}.peak_flops.bf16", "1e18")),
    case("device-flops-nan", EST_HW, cl(sub(C_INLINE_DEVICE, 'bf16: "312 TFLOP/s"', "bf16: .nan")),
         ("c.yaml:9:9", f"{ID}.peak_flops.bf16")),
    case("device-flops-negative", EST_HW, cl(sub(C_INLINE_DEVICE, 'bf16: "312 TFLOP/s"', "bf16: -1")),
         ("c.yaml:9:9", f"{ID}.peak_flops.bf16")),
    case("device-flops-empty", EST_HW, cl(sub(C_INLINE_DEVICE, '        bf16: "312 TFLOP/s"\n', "").replace(
        "peak_flops:\n", "peak_flops: {}\n")), ("c.yaml:8:7", f"{ID}.peak_flops", "no peak")),
    case("device-tdp-nan", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", "vendor: acme\n      tdp: .nan")),
         ("c.yaml:6:7", f"{ID}.tdp")),
    case("device-price-inf", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", "vendor: acme\n      price_per_hour: .inf")),
         ("c.yaml:6:7", f"{ID}.price_per_hour")),
    case("device-compute-units-huge", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", "vendor: acme\n      compute_units: "
                                                     "1000000000000")), ("c.yaml:6:7", f"{ID}.compute_units")),
    case("device-name-ansi", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", f'vendor: acme\n      name: "gpu{ESC}"')),
         ("c.yaml:6:7", f"{ID}.name", "U+001B")),
    case("device-id-c1", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", 'vendor: acme\n      id: "gpu\\x85"')),
         ("c.yaml:6:7", f"{ID}.id", "U+0085")),
    case("device-vendor-newline", EST_HW, cl(sub(C_INLINE_DEVICE, "vendor: acme", 'vendor: "ac\\nme"')),
         ("c.yaml:5:7", f"{ID}.vendor", "U+000A")),
    case("device-kind-unknown", EST_HW, cl(sub(C_INLINE_DEVICE, "kind: gpu", "kind: qpu")), ("c.yaml:4:7", f"{ID}.kind")),
    case("device-file-memory-nan", EST_HW, {"c.yaml": C_DEV_FILE, "dev.yaml": sub(DEV, 'memory: "80 GiB"', "memory: .nan")},
         ("dev.yaml:3:1", "memory")),
    case("device-file-deep", EST_HW, {"c.yaml": C_DEV_FILE, "dev.yaml": f"kind: {DEEP_FLOW}\n"}, ("dev.yaml:1:", "64")),
    case("device-file-name-ansi", EST_HW, {"c.yaml": C_DEV_FILE, "dev.yaml": DEV + f'name: "x{ESC}"\n'},
         ("dev.yaml:7:1", "name:", "U+001B")),
]

# Hugging Face config.json (direct, and through a workload YAML's hf_config)
BAD += [
    case("hf-deep-nesting", EST_HF, hf("[" * 100_000 + "]" * 100_000), ("cfg.json:1:65", "deeper than 64")),
    case("hf-deep-nesting-in-object", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 128, "rope_scaling": '
                                                     + "{\"a\": " * 70 + "1" + "}" * 70), ("cfg.json:7:", "64")),
    case("hf-huge-int-digits", EST_HF, hf_sub('"num_hidden_layers": 2', '"num_hidden_layers": ' + HUGE_INT),
         ("cfg.json:3:24", "at most 100")),
    case("hf-layers-1e30", EST_HF, hf_sub('"num_hidden_layers": 2', '"num_hidden_layers": 1' + "0" * 30),
         ("cfg.json: num_hidden_layers:", "4,096")),
    case("hf-layers-1e6", EST_HF, hf_sub('"num_hidden_layers": 2', '"num_hidden_layers": 1000000'),
         ("num_hidden_layers", "4,096")),
    case("hf-hidden-nan", EST_HF, hf_sub('"hidden_size": 64', '"hidden_size": NaN'), ("hidden_size", "nan")),
    case("hf-vocab-infinity", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": Infinity'), ("vocab_size", "inf")),
    case("hf-vocab-huge", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 10000000000'), ("vocab_size", "16,777,216")),
    case("hf-intermediate-float", EST_HF, hf_sub('"intermediate_size": 128', '"intermediate_size": 1.5'),
         ("intermediate_size",)),
    case("hf-kv-heads-negative", EST_HF, hf_sub('"num_attention_heads": 4', '"num_attention_heads": 4, '
                                                '"num_key_value_heads": -1'), ("num_key_value_heads",)),
    case("hf-dropout-nan", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 128, "attention_dropout": NaN'),
         ("attention_dropout", "nan")),
    case("hf-name-ansi", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 128, "_name_or_path": "\\u001b[31mred"'),
         ("cfg.json: _name_or_path:", "U+001B")),
    case("hf-name-too-long", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 128, "_name_or_path": "' + "n" * 1000 + '"'),
         ("_name_or_path", "200")),
    case("hf-model-type-ansi", EST_HF, hf_sub('"llama"', '"lla\\u001bma"'), ("model_type", "\\x1b")),
    case("hf-model-type-list", EST_HF, hf_sub('"llama"', "[1, 2]"), ("model_type",)),
    case("hf-huge-string", EST_HF, hf_sub('"llama"', '"' + "l" * 70_000 + '"'), ("cfg.json:2:", "65,536")),
    case("hf-malformed", EST_HF, hf(HF.replace('"vocab_size": 128', '"vocab_size": 128,')), ("cfg.json:8:1", "malformed JSON")),
    case("hf-top-level-list", EST_HF, hf("[1, 2, 3]"), ("cfg.json", "JSON object")),
    case("hf-empty", EST_HF, hf(""), ("cfg.json:1:1", "malformed JSON")),
    case("hf-not-utf8", EST_HF, hf(b'{"model_type": "\xff"}'), ("cfg.json", "UTF-8")),
    case("hf-too-large", EST_HF, hf(HF + " " * (9 * 2**20)), ("cfg.json", "8 MiB")),
    case("hf-unknown-key", EST_HF, hf_sub('"vocab_size": 128', '"vocab_size": 128, "\\u001b[2J": 1'), ("cfg.json", "\\x1b")),
    case("hf-via-workload-deep", EST, {"w.yaml": "hf_config: cfg.json\ntraining: {seq_len: 64, global_batch: 8}\n",
                                       "cfg.json": "[" * 1000 + "]" * 1000, "c.yaml": C}, ("cfg.json:1:65", "64")),
    case("hf-via-workload-missing", EST, {"w.yaml": "hf_config: nope.json\ntraining: {seq_len: 64, global_batch: 8}\n",
                                          "c.yaml": C}, ("nope.json", "not found")),
    case("hf-via-workload-layers-nan", EST, {"w.yaml": "hf_config: cfg.json\ntraining: {seq_len: 64, global_batch: 8}\n",
                                             "cfg.json": HF.replace('"num_hidden_layers": 2', '"num_hidden_layers": NaN'),
                                             "c.yaml": C}, ("cfg.json", "num_hidden_layers")),
]

# heterogeneous plan files
PS = "pipelines[0]"
BAD += [
    case("planfile-replicas-1e18", EST_PF, pf(sub(P, "micro_batches: 8", "micro_batches: 8\n    replicas: 1000000000000000000")),
         ("p.yaml:5:5", f"{PS}.replicas", "1048576")),
    case("planfile-total-replicas", EST_PF, pf("pipelines:\n" + "  - {micro_batches: 1, replicas: 600000, stages: "
                                                "[{group: 0, layers: [0, 2]}]}\n" * 2), ("p.yaml:1:1", "pipelines", "1,048,576")),
    case("planfile-micro-batches-nan", EST_PF, pf(sub(P, "micro_batches: 8", "micro_batches: .nan")),
         ("p.yaml:4:5", f"{PS}.micro_batches")),
    case("planfile-micro-batches-1e30", EST_PF, pf(sub(P, "micro_batches: 8", "micro_batches: 1" + "0" * 30)),
         ("p.yaml:4:5", f"{PS}.micro_batches")),
    case("planfile-tp-huge", EST_PF, pf(sub(P, "tp: 1", "tp: 1000000000")), ("p.yaml:1:1", "tp:", "1024")),
    case("planfile-mbs-inf", EST_PF, pf(sub(P, "mbs: 1", "mbs: .inf")), ("p.yaml:2:1", "mbs:")),
    case("planfile-zero-nan", EST_PF, pf(sub(P, "mbs: 1", "mbs: 1\nzero: .nan")), ("p.yaml:3:1", "zero:")),
    case("planfile-layers-negative", EST_PF, pf(sub(P, "layers: [0, 2]", "layers: [-1, 2]")),
         ("p.yaml:6:", f"{PS}.stages[0].layers[0]")),
    case("planfile-layers-1e30", EST_PF, pf(sub(P, "layers: [0, 2]", "layers: [0, 1" + "0" * 30 + "]")),
         ("p.yaml:6:", f"{PS}.stages[0].layers[1]")),
    case("planfile-layers-short", EST_PF, pf(sub(P, "layers: [0, 2]", "layers: [0]")), ("p.yaml:6:", f"{PS}.stages[0].layers")),
    case("planfile-group-huge", EST_PF, pf(sub(P, "group: 0", "group: 99999999999999999999")),
         ("p.yaml:6:", f"{PS}.stages[0].group", "does not exist")),
    case("planfile-group-ansi", EST_PF, pf(sub(P, "group: 0", f'group: "g{ESC}"')), ("p.yaml:6:", f"{PS}.stages[0].group")),
    case("planfile-device-ansi", EST_PF, pf(sub(P, "group: 0", f'device: "a100{ESC}"')), ("p.yaml:6:", f"{PS}.stages[0].device")),
    case("planfile-label-ansi", EST_PF, pf(f'label: "best{ESC}"\n' + P), ("p.yaml:1:1", "label:", "U+001B")),
    case("planfile-label-too-long", EST_PF, pf("label: " + "l" * 300 + "\n" + P), ("p.yaml:1:1", "label:")),
    case("planfile-no-pipelines", EST_PF, pf("tp: 1\npipelines: []\n"), ("p.yaml:2:1", "pipelines")),
    case("planfile-unknown-key", EST_PF, pf(P + "schedule: 1f1b\n"), ("p.yaml:7:1", "unknown key 'schedule'")),
    case("planfile-deep", EST_PF, pf(f"pipelines: {DEEP_FLOW}\n"), ("p.yaml:1:", "64")),
    case("planfile-missing", EST_PF, {"w.yaml": W, "c.yaml": C}, ("p.yaml", "not found")),
    case("planfile-and-plan", EST_PF + ("--plan", "tp=1"), pf(P), ("--plan", "exactly one")),
]

# plan strings
BAD += [
    case("plan-tp-1e30", EST[:-1] + ("tp=1e30",), wl(W), ("plan.tp",)),
    case("plan-tp-nan", EST[:-1] + ("tp=nan",), wl(W), ("plan.tp",)),
    case("plan-tp-inf", EST[:-1] + ("tp=inf",), wl(W), ("plan.tp",)),
    case("plan-tp-negative", EST[:-1] + ("tp=-1",), wl(W), ("plan.tp",)),
    case("plan-tp-empty", EST[:-1] + ("tp=",), wl(W), ("plan.tp",)),
    case("plan-tp-5000-digits", EST[:-1] + ("tp=" + HUGE_INT,), wl(W), ("plan", "…")),
    case("plan-mbs-1e30", EST[:-1] + ("mbs=1" + "0" * 30,), wl(W), ("training.global_batch",)),
    case("plan-recompute-ansi", EST[:-1] + ("recompute=\x1b[31m",), wl(W), ("plan.recompute", "\\x1b")),
    case("plan-key-ansi", EST[:-1] + ("\x1b[31m=1",), wl(W), ("plan", "\\x1b")),
    case("plan-1mb", EST[:-1] + ("tp=" + BIG,), wl(W), ("plan.tp", "…")),
    case("plan-zero-9", EST[:-1] + ("zero=9",), wl(W), ("plan.zero",)),
    case("plan-only-commas", EST[:-1] + (",,,",), wl(W), ("plan",)),
    case("plan-simulate-tp-nan", COMMANDS["simulate"][:-1] + ("tp=nan",), wl(W), ("plan.tp",)),
    case("plan-validate-tp-inf", COMMANDS["validate"][:-1] + ("tp=inf",), wl(W), ("plan.tp",)),
    case("plan-check-tp-1e30", ("check", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1e30"), wl(W), ("plan.tp",)),
]

# usage errors from typer/click: exactly one line, exit 2
BAD += [
    case(f"usage-bad-format-{cmd}", argv + ("--format", "xml"), wl(W), ("--format: bad value 'xml'",
                                                                          "(allowed: table, json, csv)"))
    for cmd, argv in COMMANDS.items()
]
BAD += [
    case("usage-bad-format-eq", EST + ("--format=jsn",), wl(W), ("--format", "did you mean 'json'")),
    case("usage-unknown-option-estimate", EST + ("--bogus",), wl(W), ("--bogus: no such option",)),
    case("usage-unknown-option-suggest", COMMANDS["suggest"] + ("--tpo", "3"), wl(W), ("--tpo", "did you mean '--top'")),
    case("usage-unknown-option-catalog", ("catalog", "list", "--all"), {}, ("--all", "no such option")),
    case("usage-missing-argument", ("estimate",), {}, ("MODEL: required argument is missing",)),
    case("usage-missing-option", ("estimate", "w.yaml"), wl(W), ("--hw: required option is missing",)),
    case("usage-option-needs-value", ("estimate", "w.yaml", "--hw"), wl(W), ("--hw: needs a value",)),
    case("usage-bad-int", EST + ("--global-batch", "abc"), wl(W), ("--global-batch: bad value 'abc'", "whole number")),
    case("usage-bad-int-float", EST + ("--seq-len", "1.5"), wl(W), ("--seq-len: bad value '1.5'",)),
    case("usage-bad-int-top", COMMANDS["suggest"] + ("--top", "ten"), wl(W), ("--top: bad value 'ten'",)),
    case("usage-bad-int-max-mbs", COMMANDS["suggest"] + ("--max-mbs", "1e3"), wl(W), ("--max-mbs",)),
    case("usage-bad-float", COMMANDS["validate"] + ("--tolerance", "abc"), wl(W), ("--tolerance: bad value 'abc'", "number")),
    case("usage-bad-float-check", COMMANDS["check"] + ("--max-step-time-s", "fast"), wl(W), ("--max-step-time-s",)),
    case("usage-unknown-command", ("nosuch",), {}, ("nosuch: no such command", "estimate")),
    case("usage-unknown-command-ansi", ("\x1b[2J",), {}, ("\\x1b[2J: no such command",)),
    case("usage-catalog-typo", ("catalog", "lst"), {}, ("lst: no such command", "did you mean 'list'")),
    case("usage-catalog-bad-section", ("catalog", "list", "foo"), {}, ("SECTION: bad value 'foo'", "hardware")),
    case("usage-catalog-show-missing", ("catalog", "show"), {}, ("IDENT: required argument is missing",)),
    case("usage-extra-argument", ("estimate", "w.yaml", "extra", "--hw", "c.yaml", "--plan", "tp=1"), wl(W),
         ("unexpected extra argument 'extra'",)),
    case("catalog-show-unknown", ("catalog", "show", "h100-sxm-81gb"), {}, ("unknown catalog id 'h100-sxm-81gb'",)),
    case("catalog-show-1mb", ("catalog", "show", BIG), {}, ("unknown catalog id", "…")),
    case("catalog-show-ansi", ("catalog", "show", "\x1b]0;x\x07"), {}, ("unknown catalog id", "\\x1b")),
    case("usage-precision-typo", EST + ("--precision", "fp7"), wl(W), ("--precision: bad value 'fp7'",)),
    case("usage-precision-ansi", EST + ("--precision", "\x1b[31m"), wl(W), ("--precision", "\\x1b")),
    case("usage-framework-1mb", EST + ("--framework", BIG), wl(W), ("--framework", "…")),
    case("usage-objective-typo", COMMANDS["suggest"] + ("--objective", "speed"), wl(W), ("--objective",)),
    case("usage-output-nul", EST + ("-o", "a\x00b.json"), wl(W), ("--output",)),
    case("usage-1mb-model-id", ("estimate", BIG, "--hw", "c.yaml", "--plan", "tp=1"), {"c.yaml": C},
         ("no workload file or catalog id", "…")),
]

# non-finite numbers given to float options
BAD += [
    case("cli-memory-headroom-nan", COMMANDS["suggest"] + ("--memory-headroom", "nan"), wl(W), ("--memory-headroom", "finite")),
    case("cli-price-per-hour-inf", COMMANDS["suggest"] + ("--price-per-hour", "inf"), wl(W), ("--price-per-hour", "finite")),
    case("cli-min-mfu-nan", COMMANDS["check"] + ("--min-mfu", "nan"), wl(W), ("--min-mfu", "finite")),
    case("cli-max-step-time-inf", COMMANDS["check"] + ("--max-step-time-s", "inf"), wl(W), ("--max-step-time-s", "finite")),
    case("cli-tolerance-nan", COMMANDS["validate"] + ("--tolerance", "nan"), wl(W), ("--tolerance",)),
    case("cli-memory-fraction-nan", COMMANDS["check"] + ("--max-memory-fraction", "nan"), wl(W), ("--max-memory-fraction",)),
]

# --fix pins and executor options
BAD += [
    case("fix-not-a-number", COMMANDS["suggest"] + ("--fix", "tp=abc"), wl(W), ("--fix", "tp")),
    case("fix-ansi-key", COMMANDS["suggest"] + ("--fix", "\x1b[31m=1"), wl(W), ("--fix", "\\x1b")),
    case("fix-5000-digits", COMMANDS["suggest"] + ("--fix", "tp=" + HUGE_INT), wl(W), ("…",)),
    case("fix-no-equals", COMMANDS["suggest"] + ("--fix", "tp"), wl(W), ("--fix",)),
    case("fix-check-with-plan", COMMANDS["check"] + ("--plan", "tp=1", "--fix", "tp=1"), wl(W), ("--fix",)),
    case("simulate-slowdown-nan", COMMANDS["simulate"] + ("--slowdown", "0=nan"), wl(W), ("--slowdown",)),
    case("simulate-slowdown-rank-huge", COMMANDS["simulate"] + ("--slowdown", "99999999999=2"), wl(W), ("--slowdown",)),
    case("simulate-schedule-typo", COMMANDS["simulate"] + ("--schedule", "1f2b"), wl(W), ("--schedule",)),
    case("simulate-mode-typo", COMMANDS["simulate"] + ("--mode", "fast"), wl(W), ("--mode",)),
    case("validate-top-zero", ("validate", "w.yaml", "--hw", "c.yaml", "--top", "0"), wl(W), ("--top",)),
]


# --- GOOD: edge-but-valid inputs, exit 0 -----------------------------------------------------------------------
GOOD: list[Case] = []
JSON = ("--format", "json")
GOOD += [
    case("merge-key-with-override", EST + JSON, wl(sub(W, "training:\n  seq_len: 64\n  global_batch: 8\n",
                                                       "training:\n  <<: {seq_len: 64, global_batch: 4}\n"
                                                       "  global_batch: 8\n"))),
    case("merge-key-from-anchor", EST + JSON, wl(
        "name: &n tiny\narchitecture: &a {layers: 2, hidden: 64, heads: 4, vocab: 128}\n"
        "training:\n  <<: &t {seq_len: 64, global_batch: 4}\n  global_batch: 8\n")),
    case("merge-list-in-cluster", EST_HW + JSON, cl(
        "name: merged\ngroups:\n  - <<: [{device: a100-sxm-80gb, nodes: 9}, {nodes: 7, devices_per_node: 8}]\n"
        "    nodes: 1\n    intra_node: nvlink3\n    inter_node: ib-hdr200\n")),
    case("alias-reused-link", EST_HW + JSON, cl(
        "name: aliased\ngroups:\n  - device: a100-sxm-80gb\n    nodes: 2\n    devices_per_node: 8\n"
        "    intra_node: &l {bandwidth: \"300 GB/s\", latency: \"2 us\"}\n    inter_node: *l\n")),
    case("alias-reused-scalar", EST_HW + JSON, cl(
        "name: aliased\ngroups:\n  - device: a100-sxm-80gb\n    nodes: 2\n    devices_per_node: 8\n"
        "    intra_node: {bandwidth: &bw \"300 GB/s\", latency: &lat \"2 us\"}\n"
        "    inter_node: {bandwidth: *bw, latency: *lat}\n")),
    case("alias-in-plan-file", EST_PF + JSON, pf(
        "tp: 1\nmbs: 1\npipelines:\n  - micro_batches: 4\n    stages: &s [{group: 0, layers: [0, 2]}]\n"
        "  - micro_batches: 4\n    stages: *s\n")),
    case("unicode-workload-name", EST + JSON, w_sub("name: tiny", "name: \"模型-α 🚀 Ünïcødé\"")),
    case("unicode-cluster-name", EST + JSON, {"w.yaml": W, "c.yaml": sub(C, "name: tiny-8", "name: クラスタ-β")}),
    case("unicode-device-name", EST_HW + JSON, cl(sub(C_INLINE_DEVICE, "vendor: acme", "vendor: acmé\n      name: Ünïcødé GPU"))),
    case("name-of-200-characters", EST + JSON, w_sub("name: tiny", "name: " + "n" * 200)),
    case("one-device-cluster", ("estimate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1") + JSON,
         wl(W) | {"c.yaml": sub(C, "devices_per_node: 8", "devices_per_node: 1")}),
    case("inline-links-zero-latency", EST_HW + JSON, cl(sub(C_INLINE_LINK, 'latency: "2 us"', "latency: 0"))),
    case("inline-link-negative-zero-latency", EST_HW + JSON, cl(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "-0 us"'))),
    case("inline-link-limits", EST_HW + JSON, cl(sub(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "1 s"'),
                                                     'bandwidth: "300 GB/s"', 'bandwidth: "1 PB/s"'))),
    case("inline-device-limits", EST_HW + JSON, cl(sub(sub(sub(C_INLINE_DEVICE, 'memory: "80 GiB"', "memory: 1e15"),
                                                           'memory_bandwidth: "2 TB/s"', 'memory_bandwidth: "1 PB/s"'),
                                                       'bf16: "312 TFLOP/s"', 'bf16: "1 EFLOP/s"'))),
    case("units-variety", EST_HW + JSON, cl(sub(sub(C_INLINE_LINK, 'latency: "2 us"', 'latency: "2 µs"'),
                                                'bandwidth: "300 GB/s"', 'bandwidth: "2400 Gb/s"'))),
    case("tiny-model", EST + JSON, wl("name: t\narchitecture: {layers: 1, hidden: 1, heads: 1, vocab: 1}\n"
                                      "training: {seq_len: 1, global_batch: 8}\n")),
    case("tiny-moe-model", EST + JSON, {"w.yaml": MOE, "c.yaml": C}),
    case("maximum-architecture", ("estimate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=8") + JSON, wl(
        "name: max\narchitecture: {layers: 4096, hidden: 262144, heads: 65536, kv_heads: 65536, ffn_hidden: 1048576, "
        "vocab: 16777216, head_dim: 65536, position: learned, max_position: 16777216}\n"
        "training: {seq_len: 16777216, global_batch: 16777216}\n")),
    case("maximum-cluster", ("estimate", "llama2-7b", "--hw", "c.yaml", "--plan", "tp=8", "--global-batch", "1048576")
         + JSON, {"c.yaml": "name: max\ngroups:\n  - {device: h100-sxm-80gb, nodes: 1024, devices_per_node: 1024, "
                  "intra_node: nvlink4, inter_node: ib-ndr400, nics_per_node: 1024}\n"}),
    case("maximum-seq-len-override", EST + JSON + ("--seq-len", "16777216"), wl(W)),
    case("crlf-line-endings", EST + JSON, wl(W.replace("\n", "\r\n"))),
    case("utf8-bom", EST + JSON, wl("\ufeff" + W)),
    case("document-markers-and-comments", EST + JSON, wl("%YAML 1.1\n---\n# a comment\n" + W + "...\n")),
    case("flow-style-one-line", EST + JSON, wl("{name: t, architecture: {layers: 2, hidden: 64, heads: 4, vocab: 128}, "
                                               "training: {seq_len: 64, global_batch: 8}}\n")),
    case("hf-config", EST_HF + JSON, hf(HF)),
    case("hf-config-nested-known-key", EST_HF + JSON, hf_sub('"vocab_size": 128', '"vocab_size": 128, "rope_scaling": '
                                                             + "{\"a\": " * 20 + "1" + "}" * 20)),
    case("hf-config-via-workload", EST + JSON, {"w.yaml": "hf_config: cfg.json\nname: via-yaml\n"
                                                          "training: {seq_len: 64, global_batch: 8}\n",
                                                "cfg.json": HF, "c.yaml": C}),
    case("plan-file", EST_PF + JSON, pf(P)),
    case("plan-file-two-groups", ("estimate", "w.yaml", "--hw", "c.yaml", "--plan-file", "p.yaml") + JSON,
         {"w.yaml": W, "c.yaml": C_TWO_GROUPS, "p.yaml": "tp: 1\npipelines:\n  - micro_batches: 8\n    stages:\n"
                                                      "      - {group: 0, layers: [0, 1]}\n      - {group: 1, layers: [1, 2]}\n"}),
    case("suggest-tiny", COMMANDS["suggest"] + JSON, wl(W)),
    case("check-tiny", COMMANDS["check"] + JSON, wl(W)),
    case("simulate-tiny", COMMANDS["simulate"] + JSON, wl(W)),
    case("validate-tiny", COMMANDS["validate"] + ("--tolerance", "0.9") + JSON, wl(W)),
    case("finite-float-options", COMMANDS["suggest"] + ("--memory-headroom", "0.1", "--top", "2") + JSON, wl(W)),
    case("catalog-list-hardware", ("catalog", "list", "hardware")),
    case("catalog-list-clusters", ("catalog", "list", "clusters")),
    case("catalog-show", ("catalog", "show", "nvlink4")),
    case("root-help", ("--help",)),
    case("estimate-help", ("estimate", "--help")),
]

# --- BUDGET: work budgets (the planner's and the executor's caps) -----------------------------------------------
BUDGET: list[Case] = [
    case("budget-max-mbs-1e9", COMMANDS["suggest"] + ("--max-mbs", "1000000000"), wl(W), ("--max-mbs",)),
    case("budget-simulate-1e7-micro-batches", ("simulate", "w.yaml", "--hw", "c.yaml", "--plan", "tp=1,dp=1",
                                               "--global-batch", "16777216"),
         {"w.yaml": W, "c.yaml": sub(C, "devices_per_node: 8", "devices_per_node: 1")}, ("micro",)),
    case("budget-validate-top-1e30", ("validate", "w.yaml", "--hw", "c.yaml", "--top", "1" + "0" * 30), wl(W), ("--top",)),
    case("budget-time-limit-nan", ("suggest", "w.yaml", "--hw", "c.yaml", "--time-limit", "nan"),
         {"w.yaml": W, "c.yaml": C_TWO_GROUPS}, ("--time-limit",)),
    case("budget-target-tokens-inf", COMMANDS["suggest"] + ("--target-tokens-per-s", "inf"), wl(W),
         ("--target-tokens-per-s",)),
    case("budget-token-budget-1e999", COMMANDS["suggest"] + ("--token-budget", "1e999T"), wl(W), ("--token-budget",)),
    case("budget-check-min-tokens-inf", ("check", "w.yaml", "--hw", "c.yaml", "--min-tokens-per-s", "inf"), wl(W),
         ("--min-tokens-per-s",)),
    case("budget-check-memory-fraction-2", ("check", "w.yaml", "--hw", "c.yaml", "--max-memory-fraction", "2"), wl(W),
         ("--max-memory-fraction",)),
]
