"""The fuzz corpus's rows and base inputs (``fuzz_cases.py`` holds the corpus, ``fuzz_bad_files.py`` its malformed
input files): what a row is, the tiny valid workload / cluster / device / HF / plan-file texts the rows derive from.

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
