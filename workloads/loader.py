"""Workload files (input contract v1, plus the v2 training keys ``framework`` and the precisions mxfp8 / nvfp4 /
int8), the workload catalog and validation."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from parplan.catalogs import entries
from parplan.errors import SpecError, did_you_mean
from parplan.spec import load_yaml_file, locate, validate
from parplan.workloads.transformer import TrainingJob, TransformerSpec, Workload


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ArchitectureEntry(_Strict):
    family: Literal["dense-transformer"] = "dense-transformer"
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: Optional[int] = Field(default=None, gt=0)
    ffn_hidden: Optional[int] = Field(default=None, gt=0)
    ffn: Literal["gelu", "swiglu"] = "gelu"
    vocab: int = Field(gt=0)
    tied_embeddings: bool = False
    head_dim: Optional[int] = Field(default=None, gt=0)
    position: Literal["rope", "alibi", "learned"] = "rope"
    max_position: Optional[int] = Field(default=None, gt=0)
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    bias: bool = False
    dropout: bool = False


class TrainingEntry(_Strict):
    seq_len: Optional[int] = Field(default=None, gt=0)
    global_batch: Optional[int] = Field(default=None, gt=0)
    precision: Literal["fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "int8"] = "bf16"
    optimizer: Literal["adam", "adamw", "sgd"] = "adam"
    attention: Literal["flash", "materialized"] = "flash"
    framework: Optional[str] = None  # a catalogs/frameworks id (checked against the catalog); default megatron-core


class WorkloadFile(_Strict):
    """A user's ``model.yaml``: a catalog id *or* an inline architecture *or* a Hugging Face config.json."""

    model: Optional[str] = None
    name: Optional[str] = None
    architecture: Optional[ArchitectureEntry] = None
    hf_config: Optional[str] = None
    training: Optional[TrainingEntry] = None


class CatalogWorkload(_Strict):
    """An entry of ``catalogs/workloads``: the architecture with its source, and the published training setup."""

    id: str
    name: str
    source: str = Field(min_length=8)
    architecture: ArchitectureEntry
    training: TrainingEntry
    training_source: Optional[str] = None
    params_published: Optional[float] = Field(default=None, strict=False, gt=0)  # as the source states it
    notes: Optional[str] = None


def workload_ids() -> list[str]:
    return list(entries("workloads"))


def spec_from_architecture(a: ArchitectureEntry, name: str, source: str, file: str | None,
                           prefix: str = "architecture") -> TransformerSpec:
    kv = a.kv_heads if a.kv_heads is not None else a.heads
    if a.heads % kv != 0:
        raise SpecError(f"kv_heads={kv} does not divide heads={a.heads}", file=file, key=f"{prefix}.kv_heads",
                        hint="kv_heads must divide heads (GQA groups of equal size)")
    if a.head_dim is None and a.hidden % a.heads != 0:
        raise SpecError(f"heads={a.heads} does not divide hidden={a.hidden}", file=file, key=f"{prefix}.heads",
                        hint="give head_dim explicitly when hidden is not heads × head_dim")
    if a.position == "learned" and a.max_position is None:
        raise SpecError("position: learned needs max_position (rows of the position table)", file=file,
                        key=f"{prefix}.max_position")
    return TransformerSpec(
        name=name, layers=a.layers, hidden=a.hidden, heads=a.heads, kv_heads=kv,
        ffn_hidden=a.ffn_hidden if a.ffn_hidden is not None else 4 * a.hidden,
        ffn=a.ffn, vocab=a.vocab, tied_embeddings=a.tied_embeddings, head_dim=a.head_dim,
        position=a.position, max_position=a.max_position or 0, norm=a.norm, bias=a.bias, dropout=a.dropout,
        source=source,
    )


def catalog_workload(ident: str) -> tuple[TransformerSpec, TrainingEntry, str]:
    files = entries("workloads")
    if ident not in files:
        raise SpecError(f"unknown workload id {ident!r}",
                        hint=did_you_mean(ident, list(files)) or "see `parplan catalog list workloads`")
    path = str(files[ident])
    e = validate(CatalogWorkload, load_yaml_file(path), file=path)
    if e.id != ident:
        raise SpecError(f"id {e.id!r} does not match the file name", file=path, key="id")
    return spec_from_architecture(e.architecture, e.name, e.source, path), e.training, path


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
        if v is not None:
            if isinstance(v, int) and not isinstance(v, bool) and v <= 0:
                raise SpecError(f"must be > 0, got {v}", key=f"training.{k}", file=file)
            fields[k] = v
    for k in ("seq_len", "global_batch"):
        if fields.get(k) is None:
            raise SpecError("required key is missing", file=file, key=f"training.{k}",
                            hint=f"add it to the file or pass --{k.replace('_', '-')}")
    _check_framework(fields, file, user)
    return TrainingJob(seq_len=fields["seq_len"], global_batch=fields["global_batch"],
                       precision=fields.get("precision", "bf16"), optimizer=fields.get("optimizer", "adam"),
                       attention=fields.get("attention", "flash"),
                       framework=fields.get("framework") or DEFAULT_FRAMEWORK)


def workload_from_dict(data: Any, file: str | None = None, base_dir: Path | None = None,
                       **overrides: Any) -> Workload:
    try:
        return _workload_from_dict(data, file, base_dir, **overrides)
    except SpecError as err:
        if err.file in (None, file):
            raise locate(err, data, file) from None
        raise


def _workload_from_dict(data: Any, file: str | None, base_dir: Path | None, **overrides: Any) -> Workload:
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
        spec = spec_from_architecture(wf.architecture, wf.name or (Path(file).stem if file else "inline"),
                                      f"user input ({file or 'inline'})", file)
    else:
        from parplan.workloads.hf import load_hf_config

        hf_path = Path(wf.hf_config)
        if not hf_path.is_absolute() and base_dir is not None:
            hf_path = base_dir / hf_path
        spec = load_hf_config(hf_path, name=wf.name)
    name = wf.name or spec.name
    return Workload(name=name, model=spec, training=_job(base_training, wf.training, file, overrides),
                    source_file=file)


def load_workload(ref: "str | Path | dict | Workload", **overrides: Any) -> Workload:
    """A workload from a YAML file, a Hugging Face ``config.json``, a catalog id, or a parsed mapping.

    ``overrides`` (``seq_len``, ``global_batch``, ``precision``, ``optimizer``, ``framework``) replace the file's
    training keys.
    """
    if isinstance(ref, Workload):
        changes = {k: v for k, v in overrides.items() if v is not None}
        if "framework" in changes:
            from parplan.models.framework import check_framework_id

            check_framework_id(changes["framework"], key="training.framework")
        return ref.with_training(**changes) if changes else ref
    if isinstance(ref, dict):
        return workload_from_dict(ref, None, None, **overrides)
    ref_s = str(ref)
    path = Path(ref_s)
    if path.suffix == ".json":
        from parplan.workloads.hf import load_hf_config

        spec = load_hf_config(path)
        return Workload(name=spec.name, model=spec, training=_job(None, None, ref_s, overrides), source_file=ref_s)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return workload_from_dict(load_yaml_file(path), ref_s, path.parent, **overrides)
    files = entries("workloads")
    if ref_s in files:
        return workload_from_dict({"model": ref_s}, None, None, **overrides)
    raise SpecError(f"no workload file or catalog id {ref_s!r}",
                    hint=did_you_mean(ref_s, list(files)) or "give a model YAML file or see `parplan catalog list workloads`")
