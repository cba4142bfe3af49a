#!/usr/bin/env bash
# vLLM serve: Mixtral 8x7B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: tp=1,ep=8,dp=8,batch=256,chunk=4096,replicas=2
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-mistralai/Mixtral-8x7B-v0.1}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

mixed_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" vllm serve "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tensor-parallel-size 1 \
    --pipeline-parallel-size 1 \
    --data-parallel-size 8 \
    --enable-expert-parallel \
    --max-num-seqs 32 \
    --enable-chunked-prefill \
    --max-num-batched-tokens 512 \
    --max-model-len 2304 \
    --gpu-memory-utilization 0.9 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8 &
}

case "$NODE_RANK" in
  0)
    mixed_replica 0,1,2,3,4,5,6,7 8000 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:8"  # mixed0
    ;;
  1)
    mixed_replica 0,1,2,3,4,5,6,7 8001 0 "${NODE_ADDR[1]}" "${NODE_ADDR[1]}:8"  # mixed1
    ;;
  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;
esac

# 2 replicas: put a load balancer in front of their ports
wait
