"""Shared cost primitives below every family: kernel efficiency by op, shape and dtype (dense and grouped GEMMs);
collectives on measured size curves (all-to-all included); MoE routing statistics and routing-kernel bytes; the
calibration data they read; the global framework terms."""
