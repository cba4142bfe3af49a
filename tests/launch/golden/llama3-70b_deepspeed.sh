#!/usr/bin/env bash
# DeepSpeed (Megatron-DeepSpeed pretrain_gpt.py): Llama 3 70B on dgx-h100-64 (64 devices)
# parplan plan: dp=2,tp=8,pp=4,cp=1,ep=1,mbs=1,vpp=1,zero=1,recompute=full,sp=false
# 1024 micro-batches of 1 per pipeline per step
set -euo pipefail

MEGATRON_DEEPSPEED=${MEGATRON_DEEPSPEED:-.}  # a Megatron-DeepSpeed checkout
HOSTFILE=${HOSTFILE:-hostfile}  # one line per node: "<host> slots=8"
TRAIN_ITERS=${TRAIN_ITERS:-100}
DATA_ARGS=${DATA_ARGS:?set DATA_ARGS to --data-path … and the tokenizer}

cat > ds_config.json <<'EOF'
{
  "train_batch_size": 2048,
  "train_micro_batch_size_per_gpu": 1,
  "gradient_accumulation_steps": 1024,
  "zero_optimization": {
    "stage": 1
  },
  "bf16": {
    "enabled": true
  },
  "fp16": {
    "enabled": false
  },
  "activation_checkpointing": {
    "partition_activations": false,
    "contiguous_memory_optimization": false,
    "cpu_checkpointing": false
  }
}
EOF

deepspeed --hostfile "$HOSTFILE" --num_nodes 8 --num_gpus 8 \
  "$MEGATRON_DEEPSPEED/pretrain_gpt.py" \
  --num-layers 80 \
  --hidden-size 8192 \
  --ffn-hidden-size 28672 \
  --num-attention-heads 64 \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --num-key-value-heads 8 \
  --swiglu \
  --normalization rmsnorm \
  --untie-embeddings-and-output-weights \
  --disable-bias-linear \
  --tensor-model-parallel-size 8 \
  --pipeline-model-parallel-size 4 \
  --bf16 \
  --checkpoint-activations \
  --deepspeed-activation-checkpointing \
  --micro-batch-size 1 \
  --global-batch-size 2048 \
  --deepspeed \
  --deepspeed_config ds_config.json \
  --zero-stage 1 \
  --train-iters "$TRAIN_ITERS" \
  $DATA_ARGS
