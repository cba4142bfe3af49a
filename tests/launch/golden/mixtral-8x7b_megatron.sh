#!/usr/bin/env bash
# Megatron-LM pretrain_gpt.py: Mixtral 8x7B on dgx-h100-64 (64 devices)
# parplan plan: dp=16,tp=2,pp=2,cp=1,ep=8,mbs=1,vpp=1,zero=1,recompute=modules,sp=true
# 8 micro-batches of 1 per pipeline per step
set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
MEGATRON_LM=${MEGATRON_LM:-.}  # a Megatron-LM checkout
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
TRAIN_ITERS=${TRAIN_ITERS:-100}
DATA_ARGS=${DATA_ARGS:---mock-data --tokenizer-type NullTokenizer --vocab-size 32000}

torchrun --nnodes 8 --nproc-per-node 8 --node-rank "$NODE_RANK" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" \
  "$MEGATRON_LM/pretrain_gpt.py" \
  --num-layers 32 \
  --hidden-size 4096 \
  --ffn-hidden-size 14336 \
  --num-attention-heads 32 \
  --seq-length 32768 \
  --max-position-embeddings 32768 \
  --group-query-attention \
  --num-query-groups 8 \
  --swiglu \
  --normalization RMSNorm \
  --position-embedding-type rope \
  --untie-embeddings-and-output-weights \
  --disable-bias-linear \
  --attention-dropout 0 \
  --hidden-dropout 0 \
  --num-experts 8 \
  --moe-router-topk 2 \
  --moe-ffn-hidden-size 14336 \
  --moe-grouped-gemm \
  --moe-token-dispatcher-type flex \
  --moe-flex-dispatcher-backend deepep \
  --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 2 \
  --context-parallel-size 1 \
  --sequence-parallel \
  --expert-model-parallel-size 8 \
  --expert-tensor-parallel-size 1 \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --recompute-granularity selective \
  --recompute-modules core_attn layernorm moe_act \
  --bf16 \
  --micro-batch-size 1 \
  --global-batch-size 128 \
  --train-iters "$TRAIN_ITERS" \
  $DATA_ARGS
