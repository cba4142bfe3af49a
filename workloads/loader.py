"""Workload files (input contract v1, plus the v2 training keys ``framework`` and the precisions mxfp8 / nvfp4 /
int8), the workload catalog and validation."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Mapping, Optional

from pydantic import Field

from parplan.catalogs import entries
from parplan.errors import SpecError, did_you_mean, short
from parplan.spec import Name, load_yaml_file, locate, validate
from parplan.workloads.registry import family_info
# ArchitectureEntry / spec_from_architecture live with the dense family; re-exported here for back-compat
from parplan.workloads.transformer import (MAX_GLOBAL_BATCH, MAX_MTP_LAYERS, MAX_SEQ_LEN,  # noqa: F401
                                           ArchitectureEntry, SequencesEntry, TrainingJob, TransformerSpec,
                                           Workload, _Strict, sequence_spec, spec_from_architecture)

DEFAULT_FAMILY = "dense-transformer"


class TrainingEntry(_Strict):
    seq_len: Optional[int] = Field(default=None, gt=0, le=MAX_SEQ_LEN)
    global_batch: Optional[int] = Field(default=None, gt=0, le=MAX_GLOBAL_BATCH)
    precision: Literal["fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8"] = "bf16"
    optimizer: Literal["adam", "adamw", "sgd"] = "adam"
    attention: Literal["flash", "materialized"] = "flash"
    framework: Optional[Name] = None  # a catalogs/frameworks id (checked against the catalog); default megatron-core
    # family-specific keys (a family lists the ones it reads in FamilyInfo.training_keys)
    expert_imbalance: Optional[float] = Field(default=None, ge=1.0, le=64.0, strict=False)  # max/mean tokens per EP rank
    mtp_layers: Optional[int] = Field(default=None, ge=0, le=MAX_MTP_LAYERS)  # multi-token-prediction modules trained (0 = off)
    # the run's own expert all-to-all overlap (None = the framework profile's): none | 1f1b | dualpipe
    ep_a2a_overlap: Optional[Literal["none", "1f1b", "dualpipe"]] = None
    sequences: Optional[SequencesEntry] = None  # document lengths / packs and the attention mask (long context)


class WorkloadFile(_Strict):
    """A user's ``model.yaml``: a catalog id *or* an inline architecture *or* a Hugging Face config.json."""

    model: Optional[Name] = None
    name: Optional[Name] = None
    # validated by the schema of its family (architecture.family, default dense-transformer): spec_from_mapping
    architecture: Optional[dict[str, Any]] = None
    hf_config: Optional[str] = None
    training: Optional[TrainingEntry] = None


class CatalogWorkload(_Strict):
    """An entry of ``catalogs/workloads``: the architecture with its source, and the published training setup."""

    id: Name
    name: Name
    source: str = Field(min_length=8)
    architecture: dict[str, Any]  # validated by its family's schema (spec_from_mapping)
    training: TrainingEntry
    training_source: Optional[str] = None
    params_published: Optional[float] = Field(default=None, strict=False, gt=0)  # as the source states it
    # mixture-of-experts entries: parameters used per token, as the source states it, and whether the source
    # counts the input embedding table in it (Mistral, Qwen, Meta do; DeepSeek and OpenAI's gpt-oss card do not)
    active_params_published: Optional[float] = Field(default=None, strict=False, gt=0)
    active_params_convention: Literal["with-embedding", "without-embedding"] = "with-embedding"
    notes: Optional[str] = None


def workload_ids() -> list[str]:
    return list(entries("workloads"))


def spec_from_mapping(data: Any, name: str, source: str, file: str | None,
                      prefix: str = "architecture") -> TransformerSpec:
    """The spec of an ``architecture:`` mapping, validated by the schema of the family its ``family`` key names
    (default dense-transformer); errors carry ``prefix.<key>`` and, for YAML input, the key's line."""
    if not isinstance(data, Mapping):
        got = "an empty value" if data is None else f"a {type(data).__name__}"
        raise SpecError(f"expected a mapping of architecture keys, got {got}", file=file, key=prefix)
    info = family_info(data.get("family", DEFAULT_FAMILY), file=file, key=f"{prefix}.family")
    entry = validate(info.architecture_schema, data, file=file, prefix=prefix)
    return info.build_spec(entry, name, source, file, prefix)


def catalog_workload(ident: str) -> tuple[TransformerSpec, TrainingEntry, str]:
    files = entries("workloads")
    if ident not in files:
        raise SpecError(f"unknown workload id {short(ident)}",
                        hint=did_you_mean(ident, list(files)) or "see `parplan catalog list workloads`")
    return catalog_workload_at(files[ident], ident)


def catalog_workload_at(file: Path, ident: str) -> tuple[TransformerSpec, TrainingEntry, str]:
    """The workload catalog entry in ``file``, validated as entry ``ident`` (shipped, user, or `catalog add`)."""
    path = str(file)
    raw = load_yaml_file(path)
    e = validate(CatalogWorkload, raw, file=path)
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=path, key="id")
    return spec_from_mapping(raw["architecture"], e.name, e.source, path), e.training, path


def _check_framework(fields: dict[str, Any], file: str | None, user: TrainingEntry | None) -> None:
    """``training.framework`` must name a framework catalog entry (the error carries the file and its line)."""
    from parplan.models.framework import check_framework_id

    fw = fields.get("framework")
    if fw is not None:
        in_file = user is not None and "framework" in user.model_fields_set and user.framework == fw
        check_framework_id(fw, key="training.framework", file=file if in_file else None)


def _job(base: TrainingEntry | None, user: TrainingEntry | None, file: str | None,
         overrides: dict[str, Any]) -> TrainingJob:
    from parplan.models.framework import DEFAULT_FRAMEWORK

    fields: dict[str, Any] = {}
    for src in (base, user):
        if src is not None:
            for k in src.model_fields_set | ({"precision", "optimizer", "attention"} if src is base else set()):
                fields[k] = getattr(src, k)
    for k, v in overrides.items():
        if v is not None:  # an override is the option the user typed, not the file's key or line (which was valid)
            opt = _option(k)
            if k in _RANGES:
                v = _in_range(k, v)
            elif k in _CHOICES and v not in _CHOICES[k]:
                raise SpecError(f"bad value {short(v)}", key=opt, allowed=list(_CHOICES[k]))
            elif isinstance(v, int) and not isinstance(v, bool) and v <= 0:
                raise SpecError(f"must be > 0, got {short(v)}", key=opt)
            elif k in _MAXIMA and isinstance(v, int) and v > _MAXIMA[k]:
                raise SpecError(f"bad value {short(v)}: must be ≤ {_MAXIMA[k]:,}", key=opt)
            fields[k] = v
    for k in ("seq_len", "global_batch"):
        if fields.get(k) is None:
            raise SpecError("required key is missing", file=file, key=f"training.{k}",
                            hint=f"add it to the file or pass --{k.replace('_', '-')}")
    _check_framework(fields, file, user)
    seqs = fields.get("sequences")
    return TrainingJob(seq_len=fields["seq_len"], global_batch=fields["global_batch"],
                       precision=fields.get("precision", "bf16"), optimizer=fields.get("optimizer", "adam"),
                       attention=fields.get("attention", "flash"),
                       framework=fields.get("framework") or DEFAULT_FRAMEWORK,
                       expert_imbalance=fields.get("expert_imbalance"), mtp_layers=fields.get("mtp_layers"),
                       ep_a2a_overlap=fields.get("ep_a2a_overlap"),
                       sequences=None if seqs is None else sequence_spec(seqs, int(fields["seq_len"]), file))


# range of the family-specific training keys given as overrides (the file schema checks the same)
_RANGES = {"expert_imbalance": (float, 1.0, 64.0), "mtp_layers": (int, 0, MAX_MTP_LAYERS)}
# the family-specific training keys that take one of a few names
_CHOICES = {"ep_a2a_overlap": ("none", "1f1b", "dualpipe")}
# largest seq_len / global_batch given as overrides (the file schema checks the same)
_MAXIMA = {"seq_len": MAX_SEQ_LEN, "global_batch": MAX_GLOBAL_BATCH}


def _option(k: str) -> str:
    """The option that overrides training key ``k`` (``--seq-len``)."""
    return "--" + k.replace("_", "-")


def _in_range(k: str, v: Any):
    """An override of training key ``k`` within its range, reported as the option that set it."""
    kind, lo, hi = _RANGES[k]
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (kind is float or float(v).is_integer())
    if not ok or not (lo <= v <= hi):
        raise SpecError(f"bad value {short(v)}: must be {'a number' if kind is float else 'a whole number'} from {lo:g} "
                        f"to {hi:g}", key=_option(k))
    return kind(v)


def check_family_keys(spec, job: TrainingJob, file: str | None) -> None:
    """A family-specific training key on a workload of another family is an error (never silently ignored)."""
    from parplan.workloads.registry import family_names, family_info, family_of

    fam = family_of(spec)
    for k in (*_RANGES, *_CHOICES):
        if getattr(job, k, None) is not None and k not in fam.training_keys:
            takers = [n for n in family_names() if k in family_info(n).training_keys]
            raise SpecError(f"{k} applies to {' / '.join(takers) or 'no'} workloads; {spec.name} is {fam.name}",
                            key=f"training.{k}", file=file, hint="remove the key")


def workload_from_dict(data: Any, file: str | None = None, base_dir: Path | None = None,
                       **overrides: Any) -> Workload:
    try:
        return _workload_from_dict(data, file, base_dir, **overrides)
    except SpecError as err:
        if err.file in (None, file) and not str(err.key or "").startswith("--"):  # (an option has no line here)
            raise locate(err, data, file) from None
        raise


def _workload_from_dict(data: Any, file: str | None, base_dir: Path | None, **overrides: Any) -> Workload:
    fam = data.get("family") if isinstance(data, dict) else None
    if fam is not None:  # another family's own file reached a transformer command ("unknown key 'family'")
        from parplan.workloads.registry import family_names

        names = family_names()
        if isinstance(fam, str) and fam in ("dense-transformer", "moe-transformer"):
            pass  # the transformer families' own key: the schema below says what else is needed
        elif isinstance(fam, str) and fam in names:
            raise SpecError(f"a {fam} workload: this command plans transformer workloads (model / architecture / "
                            "hf_config)", file=file, key="family",
                            hint=f"the {fam} family's verbs: parplan estimate|suggest|check|simulate|validate")
        else:
            raise SpecError(f"bad value {fam!r}: family is one name", file=file, key="family", allowed=names)
    wf = validate(WorkloadFile, data, file=file)
    given = [k for k in ("model", "architecture", "hf_config") if getattr(wf, k) is not None]
    if len(given) != 1:
        raise SpecError("give exactly one of 'model' (catalog id), 'architecture' (inline) or 'hf_config'"
                        f" (got {', '.join(given) or 'none'})", file=file,
                        allowed=["model", "architecture", "hf_config"])
    base_training = None
    if wf.model is not None:
        try:
            spec, base_training, _ = catalog_workload(wf.model)
        except SpecError as err:
            if err.file is None:
                raise SpecError(err.message, file=file, key="model", hint=err.hint) from None
            raise
    elif wf.architecture is not None:
        spec = spec_from_mapping(data["architecture"], wf.name or (Path(file).stem if file else "inline"),
                                 f"user input ({file or 'inline'})", file)
    else:
        from parplan.workloads.hf import load_hf_config

        hf_path = Path(wf.hf_config)
        if not hf_path.is_absolute() and base_dir is not None:
            hf_path = base_dir / hf_path
        spec = load_hf_config(hf_path, name=wf.name)
    name = wf.name or spec.name
    job = _job(base_training, wf.training, file, overrides)
    check_family_keys(spec, job, file)
    return Workload(name=name, model=spec, training=job, source_file=file)


def load_workload(ref: "str | Path | dict | Workload", **overrides: Any) -> Workload:
    """A workload from a YAML file, a Hugging Face ``config.json``, a catalog id, or a parsed mapping.

    ``overrides`` (``seq_len``, ``global_batch``, ``precision``, ``optimizer``, ``framework``, and the MoE keys
    ``expert_imbalance`` / ``mtp_layers`` / ``ep_a2a_overlap``) replace the file's training keys.
    """
    if isinstance(ref, Workload):
        changes = {k: v for k, v in overrides.items() if v is not None}
        if "framework" in changes:
            from parplan.models.framework import check_framework_id

            check_framework_id(changes["framework"], key="training.framework")
        changes = {k: (_in_range(k, v) if k in _RANGES else v) for k, v in changes.items()}
        out = ref.with_training(**changes) if changes else ref
        check_family_keys(out.model, out.training, None)
        return out
    if isinstance(ref, dict):
        return workload_from_dict(ref, None, None, **overrides)
    ref_s = str(ref)
    path = Path(ref_s)
    if "\x00" in ref_s:  # no file has that name; Path.exists() would raise
        raise SpecError(f"no workload file or catalog id {short(ref_s)}", hint="a name holds no NUL character")
    if path.suffix == ".json":
        from parplan.workloads.hf import load_hf_config

        spec = load_hf_config(path)
        job = _job(None, None, ref_s, overrides)
        check_family_keys(spec, job, ref_s)
        return Workload(name=spec.name, model=spec, training=job, source_file=ref_s)
    if path.suffix in (".yaml", ".yml") or _exists(path):
        return workload_from_dict(load_yaml_file(path), ref_s, path.parent, **overrides)
    files = entries("workloads")
    if ref_s in files:
        return workload_from_dict({"model": ref_s}, None, None, **overrides)
    raise SpecError(f"no workload file or catalog id {short(ref_s)}",
                    hint=did_you_mean(ref_s, list(files)) or "give a model YAML file or see `parplan catalog list workloads`")


def _exists(p: Path) -> bool:
    """``p.exists()``, False for a path the OS cannot even look up (too long, a NUL byte)."""
    try:
        return p.exists()
    except (OSError, ValueError):
        return False
