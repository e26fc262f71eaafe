"""Write a header-only GGUF of a catalogue model, extended (sparse) to its full size, for
llama.cpp's `llama-fit-params -v`, which then reports the compute buffer it would reserve.

    python scripts/fit_params_header.py MODEL QUANT OUT.gguf ARCH
    llama-fit-params -m OUT.gguf -c 4096 -ub 512 -v 2>&1 | grep "compute buffer"

The metadata carries what llama.cpp needs to build the graph (ARCH: llama, qwen3, qwen3moe,
deepseek2, qwen35, qwen35moe, qwen3next, granitehybrid, gpt-oss, glm4moe, lfm2, lfm2moe, gemma4,
phi2, phi3); the tokenizer is n_vocab placeholder tokens and one merge; the tensor table is the
one tokenwalk synthesises for QUANT. Results: tests/data/fit_params.md.
"""

import sys

from gguf import GGUFWriter
from sparse_gguf import add_tensor, finish

from tokenwalk.model.resolve import load_model

slug, quant, out, arch = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
SSM_ARCHS = ("granitehybrid", "qwen3next", "qwen35", "qwen35moe")  # ssm.* keys
m = load_model(slug, quant).model
s = m.spec
w = GGUFWriter(out, arch)
w.add_block_count(s.n_layer_all)
w.add_context_length(s.n_ctx_train)
w.add_embedding_length(s.n_embd)
w.add_feed_forward_length(max(s.n_ff) if max(s.n_ff) else s.n_ff_exp)
w.add_head_count(s.n_head[0])
if arch in ("granitehybrid", "lfm2", "lfm2moe", "gemma4"):  # per layer; 0 marks a recurrent layer
    w.add_head_count_kv(list(s.n_head_kv))
else:
    w.add_head_count_kv(1 if arch == "deepseek2" else max(s.n_head_kv))
w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(1e6)
if s.n_expert:
    w.add_expert_count(s.n_expert)
    w.add_expert_used_count(s.n_expert_used)
    if arch != "llama":
        w.add_expert_feed_forward_length(s.n_ff_exp)
if arch == "deepseek2":
    w.add_uint32("deepseek2.attention.kv_lora_rank", s.kv_lora_rank)
    if s.q_lora_rank:
        w.add_uint32("deepseek2.attention.q_lora_rank", s.q_lora_rank)
    w.add_uint32("deepseek2.rope.dimension_count", s.n_rot)
    w.add_uint32("deepseek2.leading_dense_block_count", s.n_layer_dense_lead)
    w.add_uint32("deepseek2.expert_shared_count", s.n_expert_shared)
    w.add_float32("deepseek2.expert_weights_scale", 1.0)
    w.add_uint32("deepseek2.expert_gating_func", 2 if s.expert_probs_bias else 1)
    w.add_key_length(s.kv_lora_rank + s.n_rot)
    w.add_value_length(s.kv_lora_rank)
    w.add_uint32("deepseek2.attention.key_length_mla", s.head_k_mla)
    w.add_uint32("deepseek2.attention.value_length_mla", s.head_v_mla)
elif arch != "llama":
    w.add_key_length(s.head_k)
    w.add_value_length(s.head_v)
if arch in SSM_ARCHS:
    w.add_uint32(f"{arch}.ssm.conv_kernel", s.ssm_d_conv)
    w.add_uint32(f"{arch}.ssm.inner_size", s.ssm_d_inner)
    w.add_uint32(f"{arch}.ssm.state_size", s.ssm_d_state)
    w.add_uint32(f"{arch}.ssm.group_count", s.ssm_n_group)
    w.add_uint32(f"{arch}.ssm.time_step_rank", s.ssm_dt_rank)
if arch == "granitehybrid":
    w.add_uint32(f"{arch}.rope.dimension_count", s.head_k)
    if s.n_ff_shexp:
        w.add_uint32(f"{arch}.expert_shared_feed_forward_length", s.n_ff_shexp)
if arch == "phi2":
    w.add_layer_norm_eps(1e-5)
    w.add_uint32(f"{arch}.rope.dimension_count", s.head_k // 2)
if arch == "gpt-oss":
    w.add_uint32(f"{arch}.attention.sliding_window", s.n_swa)
if arch == "gemma4":
    w.add_uint32(f"{arch}.attention.sliding_window", s.n_swa)
    w.add_array(f"{arch}.attention.sliding_window_pattern", [bool(x) for x in s.is_swa])
    w.add_uint32(f"{arch}.embedding_length_per_layer_input", 0)
    w.add_uint32(f"{arch}.attention.key_length_swa", s.head_k_swa)
    w.add_uint32(f"{arch}.attention.value_length_swa", s.head_v_swa)
if arch == "glm4moe":
    w.add_uint32(f"{arch}.expert_shared_count", s.n_expert_shared)
    w.add_uint32(f"{arch}.leading_dense_block_count", s.n_layer_dense_lead)
    w.add_uint32(f"{arch}.expert_gating_func", 2)
    w.add_uint32(f"{arch}.nextn_predict_layers", s.n_nextn)
    w.add_uint32(f"{arch}.rope.dimension_count", s.head_k // 2)
if arch in ("lfm2", "lfm2moe"):
    w.add_uint32(f"{arch}.shortconv.l_cache", s.shortconv_l_cache)
    w.add_uint32(f"{arch}.leading_dense_block_count", s.n_layer_dense_lead)
    w.add_uint32(f"{arch}.expert_gating_func", 2)
if arch == "qwen3next":
    w.add_uint32(f"{arch}.full_attention_interval", 4)
    w.add_uint32(f"{arch}.rope.dimension_count", s.head_k // 4)
    w.add_uint32(f"{arch}.expert_shared_feed_forward_length", s.n_ff_shexp)
if arch in ("qwen35moe", "qwen35"):
    w.add_uint32(f"{arch}.full_attention_interval", 4)
    w.add_uint32(f"{arch}.rope.dimension_count", s.n_rot or 64)
    w.add_array(f"{arch}.rope.dimension_sections", [11, 11, 10, 0])
    if s.n_nextn:
        w.add_uint32(f"{arch}.nextn_predict_layers", s.n_nextn)
    if s.n_ff_shexp:
        w.add_uint32(f"{arch}.expert_shared_feed_forward_length", s.n_ff_shexp)
w.add_tokenizer_model("gpt2")
w.add_token_list([f"t{i}" for i in range(s.n_vocab)])
w.add_token_types([1] * s.n_vocab)
w.add_token_merges(["t 1"])
total_data = 0
for t in m.tensors:
    info = t.info
    total_data += add_tensor(w, info.name, tuple(reversed(info.shape)), info.ggml_type)
print(out, finish(w, out, total_data))
