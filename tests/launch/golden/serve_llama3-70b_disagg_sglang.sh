#!/usr/bin/env bash
# SGLang launch_server: Llama 3 70B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: prefill:2x(tp=4,batch=256)+decode:1x(tp=8,batch=128)
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# note: serving.engine vllm → sglang (the export's engine)
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-meta-llama/Meta-Llama-3-70B}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

prefill_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" python -m sglang.launch_server \
    --model-path "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tp 4 \
    --max-running-requests 256 \
    --chunked-prefill-size -1 \
    --context-length 2304 \
    --mem-fraction-static 0.88 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8_e4m3 \
    --disaggregation-mode prefill \
    --disaggregation-transfer-backend mooncake \
    --disaggregation-bootstrap-port $((8998 + $2 - 30000)) &
}

decode_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" python -m sglang.launch_server \
    --model-path "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tp 8 \
    --max-running-requests 128 \
    --chunked-prefill-size -1 \
    --context-length 2304 \
    --mem-fraction-static 0.88 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8_e4m3 \
    --disaggregation-mode decode \
    --disaggregation-transfer-backend mooncake &
}

case "$NODE_RANK" in
  0)
    prefill_replica 0,1,2,3 30000 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:4"  # prefill0
    prefill_replica 4,5,6,7 30001 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:4"  # prefill1
    ;;
  1)
    decode_replica 0,1,2,3,4,5,6,7 30002 0 "${NODE_ADDR[1]}" "${NODE_ADDR[1]}:8"  # decode0
    ;;
  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;
esac

if [ "$NODE_RANK" = 0 ]; then
  python -m sglang_router.launch_router --pd-disaggregation --prefill "http://${NODE_ADDR[0]}:30000" 8998 --prefill "http://${NODE_ADDR[0]}:30001" 8999 --decode "http://${NODE_ADDR[1]}:30002" \
    --host "$HOST" --port "${ROUTER_PORT:-9000}" &
fi
wait
