#!/usr/bin/env python3
"""A config-only model directory for the seed engine's server with its dummy weights
(`python -m freetoken.cli serve --model DIR --dummy-weight`): Qwen3-30B-A3B's geometry
(qwen3_moe: H 2048, moe I 768, 128 experts, top-8) with --layers layers, a
generation_config.json, and a word-level tokenizer built here with the `tokenizers`
package (no hub access: the device machine reaches nothing), with a chat template.

usage: freetoken_model.py DIR [--layers 16] [--vocab 32000] [--experts 128] [--top-k 8]
"""

from __future__ import annotations

import argparse
import json
import os


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--experts", type=int, default=128, help="routed experts per layer (Qwen3-30B-A3B: 128)")
    p.add_argument("--top-k", type=int, default=8, help="experts per token (8)")
    a = p.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    specials = ["<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    cfg = {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_experts": a.experts, "num_experts_per_tok": a.top_k, "norm_topk_prob": True,
        "num_hidden_layers": a.layers, "num_attention_heads": 32, "num_key_value_heads": 4,
        "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 40960,
        "max_window_layers": a.layers, "rms_norm_eps": 1e-6, "rope_scaling": None,
        "rope_theta": 1000000.0, "sliding_window": None, "use_sliding_window": False,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": a.vocab,
        "attention_bias": False, "attention_dropout": 0.0, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "output_router_logits": False, "router_aux_loss_coef": 0.001,
        "bos_token_id": 1, "eos_token_id": 3, "initializer_range": 0.02, "use_cache": True,
    }
    with open(os.path.join(a.dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    with open(os.path.join(a.dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": [3, 1], "do_sample": True,
                   "temperature": 0.6, "top_p": 0.95, "top_k": 20}, f, indent=1)

    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    vocab = {t: i for i, t in enumerate(specials)}
    for i in range(len(specials), a.vocab):
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    tok.add_special_tokens(specials)
    tok.save(os.path.join(a.dir, "tokenizer.json"))
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
                "{% endif %}")
    with open(os.path.join(a.dir, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 40960,
                   "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                   "unk_token": "<unk>", "chat_template": template}, f, indent=1)
    print(a.dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
