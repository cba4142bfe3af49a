#!/usr/bin/env bash
# vLLM serve: Llama 3 70B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: prefill:2x(tp=4,batch=256)+decode:1x(tp=8,batch=128)
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-meta-llama/Meta-Llama-3-70B}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

prefill_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" VLLM_NIXL_SIDE_CHANNEL_HOST="$4" VLLM_NIXL_SIDE_CHANNEL_PORT=$((5600 + ($2 - 8000) * 1)) vllm serve "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tensor-parallel-size 4 \
    --pipeline-parallel-size 1 \
    --max-num-seqs 256 \
    --no-enable-chunked-prefill \
    --max-num-batched-tokens 2304 \
    --max-model-len 2304 \
    --gpu-memory-utilization 0.9 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
}

decode_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" VLLM_NIXL_SIDE_CHANNEL_HOST="$4" VLLM_NIXL_SIDE_CHANNEL_PORT=$((5600 + ($2 - 8000) * 1)) vllm serve "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 1 \
    --max-num-seqs 128 \
    --no-enable-chunked-prefill \
    --max-num-batched-tokens 2304 \
    --max-model-len 2304 \
    --gpu-memory-utilization 0.9 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8 \
    --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
}

case "$NODE_RANK" in
  0)
    prefill_replica 0,1,2,3 8000 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:4"  # prefill0
    prefill_replica 4,5,6,7 8001 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:4"  # prefill1
    ;;
  1)
    decode_replica 0,1,2,3,4,5,6,7 8002 0 "${NODE_ADDR[1]}" "${NODE_ADDR[1]}:8"  # decode0
    ;;
  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;
esac

if [ "$NODE_RANK" = 0 ]; then
  VLLM_REPO=${VLLM_REPO:?set VLLM_REPO to a vLLM checkout (its NIXL proxy server)}
  python "$VLLM_REPO/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" \
    --port "${ROUTER_PORT:-9000}" \
    --prefiller-hosts "${NODE_ADDR[0]}" "${NODE_ADDR[0]}" --prefiller-ports 8000 8001 \
    --decoder-hosts "${NODE_ADDR[1]}" --decoder-ports 8002 &
fi
wait
