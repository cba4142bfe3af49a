#!/usr/bin/env bash
# Megatron-LM pretrain_gpt.py: Llama 3 70B on dgx-h100-64 (64 devices)
# parplan plan: dp=2,tp=8,pp=4,cp=1,ep=1,mbs=1,vpp=5,zero=1,recompute=selective,sp=true
# 1024 micro-batches of 1 per pipeline per step
set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
MEGATRON_LM=${MEGATRON_LM:-.}  # a Megatron-LM checkout
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
TRAIN_ITERS=${TRAIN_ITERS:-100}
DATA_ARGS=${DATA_ARGS:---mock-data --tokenizer-type NullTokenizer --vocab-size 128256}

torchrun --nnodes 8 --nproc-per-node 8 --node-rank "$NODE_RANK" \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" \
  "$MEGATRON_LM/pretrain_gpt.py" \
  --num-layers 80 \
  --hidden-size 8192 \
  --ffn-hidden-size 28672 \
  --num-attention-heads 64 \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --group-query-attention \
  --num-query-groups 8 \
  --swiglu \
  --normalization RMSNorm \
  --position-embedding-type rope \
  --untie-embeddings-and-output-weights \
  --disable-bias-linear \
  --attention-dropout 0 \
  --hidden-dropout 0 \
  --tensor-model-parallel-size 8 \
  --pipeline-model-parallel-size 4 \
  --context-parallel-size 1 \
  --num-layers-per-virtual-pipeline-stage 4 \
  --sequence-parallel \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --recompute-granularity selective \
  --bf16 \
  --micro-batch-size 1 \
  --global-batch-size 2048 \
  --train-iters "$TRAIN_ITERS" \
  $DATA_ARGS
