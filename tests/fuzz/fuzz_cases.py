"""The fuzz corpus as data: malformed and extreme inputs (``BAD``: the input files' rows come from
``fuzz_bad_files.py``, the command-line and HF rows are here), edge-but-valid inputs (``GOOD``) and work-budget
inputs (``BUDGET``).  Rows and base inputs: ``fuzz_inputs.py``.
"""
from __future__ import annotations

from fuzz_inputs import (Case, case, W, MOE, C, C_INLINE_LINK, C_INLINE_DEVICE, C_TWO_GROUPS, HF, P, DEEP_FLOW,
                         ESC, BIG, HUGE_INT, EST, EST_HW, EST_HF, EST_PF, COMMANDS, wl, cl, w_sub, hf, hf_sub, pf,
                         sub)
from fuzz_bad_files import BAD as _FILE_ROWS

BAD: list[Case] = list(_FILE_ROWS)
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
    # HelixPipe / RTP knobs: bad values and plans their rules refuse
    case("plan-helix-maybe", EST[:-1] + ("helix=maybe",), wl(W), ("plan.helix", "true, false")),
    case("plan-helix-no-pipeline", EST[:-1] + ("tp=1,pp=1,helix=true",), wl(W), ("plan.pp", "pp ≥ 2")),
    case("plan-helix-with-cp", EST[:-1] + ("pp=2,cp=2,helix=true",), wl(W), ("plan.cp",)),
    case("plan-helix-selective", EST[:-1] + ("pp=2,recompute=selective,helix=true",), wl(W), ("helix=true", "recompute=selective")),
    case("plan-helix-moe", EST[:-1] + ("pp=2,helix=true",), wl(MOE), ("plan.helix", "mixture of experts")),
    case("plan-rotate-zero1", EST[:-1] + ("rotate=true,zero=1",), wl(W), ("plan.rotate", "zero=3")),
    case("plan-rotate-keep-gathered", EST[:-1] + ("rotate=true,zero=3,reshard=false",), wl(W), ("plan.reshard",)),
    case("fix-shard-unsearched", ("suggest", "w.yaml", "--hw", "c.yaml", "--fix", "shard=2"), wl(W),
         ("--fix", "not a search axis")),
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
