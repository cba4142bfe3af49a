#!/usr/bin/env bash
# SGLang launch_server: Llama 3 405B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: tp=8,pp=2,batch=64,replicas=1
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# note: serving.engine vllm → sglang (the export's engine)
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-meta-llama/Llama-3.1-405B}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

mixed_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" python -m sglang.launch_server \
    --model-path "$MODEL" \
    --host "$HOST" \
    --port "$2" \
    --tp 8 \
    --pp-size 2 \
    --max-running-requests 64 \
    --chunked-prefill-size -1 \
    --context-length 2304 \
    --mem-fraction-static 0.88 \
    --dtype bfloat16 \
    --kv-cache-dtype fp8_e4m3 \
    --nnodes 2 \
    --node-rank "$3" \
    --dist-init-addr "$4:$((50000 + $2 - 30000))" &
}

case "$NODE_RANK" in
  0)
    mixed_replica 0,1,2,3,4,5,6,7 30000 0 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:8,${NODE_ADDR[1]}:8"  # mixed0
    ;;
  1)
    mixed_replica 0,1,2,3,4,5,6,7 30000 1 "${NODE_ADDR[0]}" "${NODE_ADDR[0]}:8,${NODE_ADDR[1]}:8"  # mixed0
    ;;
  *) echo "node $NODE_RANK runs no replica of this deployment" >&2 ;;
esac

# one replica: clients talk to its port directly
wait
