#!/usr/bin/env python3
"""Write a tiny random-weight llama as GGUF (for `make test-peers`: ftbench decode against a real
llama-server on the CPU).

A llama architecture with an SPM ("llama") vocabulary: <unk> <s> </s>, the 256 byte tokens
<0x00>..<0xFF> (so any text encodes), then letters and common English pieces; a small chat template.
The weights are random (seeded, so the file is the same on every run): the text is nonsense, but
every decode step runs the real kernels over the whole model, which is what a decode benchmark
times. Sizes are chosen for a few ms per token on one CPU thread.

With --experts N (and --experts-used K, default 2) every layer's FFN is a mixture of N experts
of --ff each with a router (llama.cpp's llama architecture with experts, as Mixtral is): its
ffn_{gate,up,down}_exps tensors are what llama-server's --n-cpu-moe and --override-tensor place.

usage: tiny_llama_gguf.py OUT.gguf [--embd 512] [--layers 8] [--ff 1536] [--ctx 16384]
                          [--experts N --experts-used K]
"""
import argparse
import sys

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("tiny_llama_gguf.py: the gguf package is missing (pip install gguf)")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

WORDS = ("the of and to in is that for it as with was on be by this are at from or an which but not "
         "have all one two three sum let then so we find number answer integer prime square root "
         "reason step put final within boxed please value first next if let triangle side angle").split()


def vocab(n_vocab):
    toks, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [
        gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for b in range(256):
        toks.append("<0x%02X>" % b)
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    pieces = ["\u2581"] + [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:?!()+-=*/\\{}^_'\"<>|"]
    pieces += ["\u2581" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    pieces += ["\u2581" + w for w in WORDS]
    seen = set(toks)
    for p in pieces:
        if len(toks) >= n_vocab:
            break
        if p in seen:
            continue
        seen.add(p)
        toks.append(p)
        scores.append(-float(len(toks)))  # SPM: higher score = merged first; longer pieces win below
        types.append(gguf.TokenType.NORMAL)
    # longer pieces should win: give multi-character pieces better scores
    for i, t in enumerate(toks):
        if types[i] == gguf.TokenType.NORMAL and len(t) > 1:
            scores[i] = float(len(t)) - i * 1e-4
    while len(toks) < n_vocab:  # pad with unused pieces
        toks.append("\u2581pad%d" % len(toks))
        scores.append(-1e4)
        types.append(gguf.TokenType.UNUSED)
    return toks, scores, types


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--embd", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--ff", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=16384)
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--experts-used", type=int, default=2)
    a = ap.parse_args()
    if a.embd % a.heads:
        sys.exit("tiny_llama_gguf.py: --embd must be a multiple of --heads")
    if a.experts and not 0 < a.experts_used <= a.experts:
        sys.exit("tiny_llama_gguf.py: --experts-used must be in [1, --experts]")
    rng = np.random.default_rng(a.seed)
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("ftbench-tiny-llama" + ("-moe" if a.experts else ""))
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.heads)
    w.add_rope_dimension_count(a.embd // a.heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    if a.experts:
        w.add_expert_count(a.experts)
        w.add_expert_used_count(a.experts_used)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    toks, scores, types = vocab(a.vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def mat(rows, cols, std=0.02):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * std).astype(np.float16)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    e, f = a.embd, a.ff
    w.add_tensor("token_embd.weight", mat(a.vocab, e, 1.0))
    for i in range(a.layers):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", ones(e))
        w.add_tensor(p + "attn_q.weight", mat(e, e))
        w.add_tensor(p + "attn_k.weight", mat(e, e))
        w.add_tensor(p + "attn_v.weight", mat(e, e))
        w.add_tensor(p + "attn_output.weight", mat(e, e))
        w.add_tensor(p + "ffn_norm.weight", ones(e))
        if a.experts:
            # numpy shapes are ggml's dims reversed: gate_inp {e, n}, gate/up {e, f, n}, down {f, e, n}
            w.add_tensor(p + "ffn_gate_inp.weight", rng.standard_normal((a.experts, e), dtype=np.float32))
            w.add_tensor(p + "ffn_gate_exps.weight", np.stack([mat(f, e) for _ in range(a.experts)]))
            w.add_tensor(p + "ffn_up_exps.weight", np.stack([mat(f, e) for _ in range(a.experts)]))
            w.add_tensor(p + "ffn_down_exps.weight", np.stack([mat(e, f) for _ in range(a.experts)]))
        else:
            w.add_tensor(p + "ffn_gate.weight", mat(f, e))
            w.add_tensor(p + "ffn_up.weight", mat(f, e))
            w.add_tensor(p + "ffn_down.weight", mat(e, f))
    w.add_tensor("output_norm.weight", ones(e))
    w.add_tensor("output.weight", mat(a.vocab, e, 1.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
