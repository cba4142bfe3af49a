#!/usr/bin/env bash
# TensorRT-LLM trtllm-serve: Llama 3 70B on dgx-h100-64 (16 of 64 devices, 2 node(s))
# parplan deployment: prefill:2x(tp=4,batch=256)+decode:1x(tp=8,batch=128)
# serving: ISL fixed mean 2048 / OSL fixed mean 256; max model length 2304; precision weights bf16, activations bf16, kv cache fp8
# note: serving.engine vllm → trtllm (the export's engine)
# usage: NODE_RANK=<this node> NODE_ADDRS="<address of node 0> <node 1> …" bash <this script>
set -euo pipefail

MODEL=${MODEL:-meta-llama/Meta-Llama-3-70B}  # Hugging Face id or local path of the weights
NODE_RANK=${NODE_RANK:-0}
HOST=${HOST:-0.0.0.0}
read -r -a NODE_ADDR <<< "${NODE_ADDRS:-localhost}"
[ "${#NODE_ADDR[@]}" -ge 2 ] || { echo "set NODE_ADDRS to the 2 node addresses" >&2; exit 2; }

cat > extra_llm_api_options_prefill.yaml <<'EOF'
tensor_parallel_size: 4
pipeline_parallel_size: 1
enable_attention_dp: false
max_batch_size: 256
max_num_tokens: 2304
max_seq_len: 2304
enable_chunked_prefill: false
dtype: bfloat16
kv_cache_config:
  free_gpu_memory_fraction: 0.9
  dtype: fp8
disable_overlap_scheduler: true
cache_transceiver_config:
  backend: DEFAULT
  max_tokens_in_buffer: 2048
EOF
cat > extra_llm_api_options_decode.yaml <<'EOF'
tensor_parallel_size: 8
pipeline_parallel_size: 1
enable_attention_dp: false
max_batch_size: 128
max_num_tokens: 2304
max_seq_len: 2304
enable_chunked_prefill: false
dtype: bfloat16
kv_cache_config:
  free_gpu_memory_fraction: 0.9
  dtype: fp8
cache_transceiver_config:
  backend: DEFAULT
  max_tokens_in_buffer: 2048
EOF
# offline throughput with the same options: trtllm-bench --model "$MODEL" throughput --dataset DATASET --backend pytorch --extra_llm_api_options extra_llm_api_options_prefill.yaml

prefill_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" trtllm-serve "$MODEL" \
      --host "$HOST" \
      --port "$2" \
      --backend pytorch \
      --extra_llm_api_options extra_llm_api_options_prefill.yaml &
}

decode_replica() {  # $1 GPUs, $2 port, $3 rank of this node in the replica, $4 first node, $5 hosts
  CUDA_VISIBLE_DEVICES="$1" trtllm-serve "$MODEL" \
      --host "$HOST" \
      --port "$2" \
      --backend pytorch \
      --extra_llm_api_options extra_llm_api_options_decode.yaml &
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
  ROUTER_PORT=${ROUTER_PORT:-9000}
  cat > disagg_config.yaml <<EOF
  hostname: ${NODE_ADDR[0]}
  port: ${ROUTER_PORT}
  backend: pytorch
  context_servers:
    num_instances: 2
    urls:
    - ${NODE_ADDR[0]}:8000
    - ${NODE_ADDR[0]}:8001
  generation_servers:
    num_instances: 1
    urls:
    - ${NODE_ADDR[1]}:8002
EOF
  trtllm-serve disaggregated -c disagg_config.yaml &
fi
wait
