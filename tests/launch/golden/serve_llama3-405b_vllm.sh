#!/usr/bin/env bash
# vLLM serve: Llama 3 405B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: tp=8,pp=2,batch=64,replicas=1
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-meta-llama/Llama-3.1-405B}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

mixed_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  if [ "$3" -eq 0 ]; then
    ray start --head --port 6379
    sleep 30  # the other 1 node(s) join the Ray cluster
    CUDA_VISIBLE_DEVICES="$1" vllm serve "$MODEL" \
      --host "$HOST" \
      --port "$2" \
      --tensor-parallel-size 8 \
      --pipeline-parallel-size 2 \
      --max-num-seqs 64 \
      --no-enable-chunked-prefill \
      --max-num-batched-tokens 2304 \
      --max-model-len 2304 \
      --gpu-memory-utilization 0.9 \
      --dtype bfloat16 \
      --kv-cache-dtype fp8 \
      --distributed-executor-backend ray &
  else
    ray start --address "$4:6379" --block &
  fi
}

case "$NODE_RANK" in
  0)
    mixed_replica 0,1,2,3,4,5,6,7 8000 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:8,${NODE_ADDR[1]}:8"  # mixed0
    ;;
  1)
    mixed_replica 0,1,2,3,4,5,6,7 8000 1 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:8,${NODE_ADDR[1]}:8"  # mixed0
    ;;
  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;
esac

# one replica
wait
