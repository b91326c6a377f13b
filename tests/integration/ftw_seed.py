#!/usr/bin/env python3
"""FTW as the seed system reads and writes it (reference FREETOKEN.md §1, §7), written from the
reference alone, sharing no code with ftbench:

  ftw_seed.py check CKPT FTW            an FTW that ftbench wrote follows §7's rules (torch dtype
                                        names, MoE layers 0..n-1, expert_bank_num_layers, flat
                                        alphas, counts, copied metadata with sub-folders, dense
                                        tensors under their checkpoint names) and each bank entry
                                        equals an independent reading of the checkpoint
  ftw_seed.py write CKPT OUT LAYOUT KIB  write an FTW the way the seed's converter does, from an
                                        independent reading of the checkpoint: LAYOUT per-layer
                                        ("<bank>#L<5 digits>" entries) or flat (one [n*E, ...] entry
                                        per bank, plus flat alphas), shards of KIB KiB with tensors
                                        larger than a shard split across shards
  ftw_seed.py synth FMT OUT LAYOUT KIB  an FTW of any §1 format FMT as the seed writes it, random
                                        banks; prints the §7 checksums they must give, as JSON
  ftw_seed.py banks CKPT                print the independent reading's bank sizes (debugging)

Exit status 0 when all is well; reasons on stderr. Python 3 standard library only.
"""
import array
import hashlib
import json
import os
import re
import struct
import sys

ALIGN = 4096
# torch dtypes (the names str(torch.<dtype>) gives without "torch.") and their element sizes
TORCH = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "uint32": 4,
         "uint64": 8, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8,
         "complex128": 16, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
         "float8_e8m0fnu": 1}
# safetensors dtype -> torch name
ST2TORCH = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "I32": "int32",
            "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
            "F32": "float32", "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
            "F8_E8M0": "float8_e8m0fnu"}
# §1: the banks of the formats a checkpoint here gives, per expert: (name, shape(H, I), torch dtype)
SCHEMA = {
    "bf16": [("gate_up", lambda H, I: [2 * I, H], "bfloat16"), ("down", lambda H, I: [H, I], "bfloat16")],
    "mxfp4_triton": [("gate_up_blocks", lambda H, I: [H // 2, 2 * I], "uint8"),
                     ("gate_up_scales", lambda H, I: [H // 32, 2 * I], "uint8"),
                     ("gate_up_bias", lambda H, I: [2 * I], "bfloat16"),
                     ("down_blocks", lambda H, I: [I // 2, H], "uint8"),
                     ("down_scales", lambda H, I: [I // 32, H], "uint8"),
                     ("down_bias", lambda H, I: [H], "bfloat16")],
}
# the other formats of §1, for FTW files the seed writes from checkpoints ftbench does not read
SCHEMA.update({
    "fp8_block": [("gate_up", lambda H, I: [2 * I, H], "float8_e4m3fn"),
                  ("gate_up_scale", lambda H, I: [2 * I // 128, H // 128], "bfloat16"),
                  ("down", lambda H, I: [H, I], "float8_e4m3fn"),
                  ("down_scale", lambda H, I: [H // 128, I // 128], "bfloat16")],
    "q4_0": [("gate_up", lambda H, I: [2 * I, H // 32 * 18], "uint8"), ("down", lambda H, I: [H, I // 32 * 18], "uint8")],
    "nvfp4": [("gate_up_packed", lambda H, I: [2 * I, H // 2], "uint8"),
              ("gate_up_scale", lambda H, I: [2 * I, H // 16], "float8_e4m3fn"),
              ("gate_up_global", lambda H, I: [2 * I], "float16"),
              ("down_packed", lambda H, I: [H, I // 2], "uint8"),
              ("down_scale", lambda H, I: [H, I // 16], "float8_e4m3fn"),
              ("down_global", lambda H, I: [H], "float16")],
    # Marlin-tiled: the same bytes per expert as nvfp4's, in the kernel's own shape
    "nvfp4_marlin": [("gate_up_packed", lambda H, I: [H // 16, 2 * I * 8], "uint8"),
                     ("gate_up_scale", lambda H, I: [H // 16, 2 * I], "float8_e4m3fn"),
                     ("down_packed", lambda H, I: [I // 16, H * 8], "uint8"),
                     ("down_scale", lambda H, I: [I // 16, H], "float8_e4m3fn")],
    "ds_fp4": [("gate_up_packed", lambda H, I: [2 * I, H // 2], "uint8"),
               ("gate_up_scale", lambda H, I: [2 * I, H // 32], "float8_e8m0fnu"),
               ("down_packed", lambda H, I: [H, I // 2], "uint8"),
               ("down_scale", lambda H, I: [H, I // 32], "float8_e8m0fnu")],
})
ALPHAS = ("gate_up_alpha", "down_alpha")
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".ftw")
SKIP_DIRS = (".git", ".cache", ".freetoken_expert_cache")


def fail(msg):
    sys.stderr.write("ftw_seed: " + msg + "\n")
    sys.exit(1)


def prod(v):
    n = 1
    for x in v:
        n *= x
    return n


def round_up(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


# ---------------------------------------------------------------- the checkpoint, read independently

class Checkpoint:
    def __init__(self, d):
        self.dir = d
        self.tensors = {}  # name -> (path, absolute offset, nbytes, st dtype, shape)
        files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                n = struct.unpack("<Q", fh.read(8))[0]
                hdr = json.loads(fh.read(n))
            for name, t in hdr.items():
                if name == "__metadata__":
                    continue
                a, b = t["data_offsets"]
                self.tensors[name] = (p, 8 + n + a, b - a, t["dtype"], list(t["shape"]))
        with open(os.path.join(d, "config.json")) as fh:
            c = json.load(fh)
        self.cfg = c.get("text_config", c) if "hidden_size" not in c else c
        self.H = self.cfg["hidden_size"]
        self.I = self.cfg.get("moe_intermediate_size") or self.cfg["intermediate_size"]
        self.E = self.cfg.get("num_experts") or self.cfg.get("n_routed_experts") or self.cfg["num_local_experts"]

    def raw(self, name):
        p, off, n, _, _ = self.tensors[name]
        with open(p, "rb") as fh:
            fh.seek(off)
            b = fh.read(n)
        if len(b) != n:
            fail("%s: short read" % name)
        return b

    def moe_layers(self):
        ls = set()
        for name in self.tensors:
            m = re.search(r"layers\.(\d+)\.(mlp|block_sparse_moe)\.experts\.", name)
            if m:
                ls.add(int(m.group(1)))
        return sorted(ls)

    def banks(self):
        """(format, {bank: [bytes of layer 0..n-1]}, model layer ids) from §1's rules."""
        H, I, E = self.H, self.I, self.E
        layers = self.moe_layers()
        t = self.tensors
        out = {}
        l0 = layers[0]
        if "model.layers.%d.mlp.experts.gate_up_proj_blocks" % l0 in t:
            fmt = "mxfp4_triton"
            for l in layers:
                p = "model.layers.%d.mlp.experts." % l
                for proj, N, K in (("gate_up", 2 * I, H), ("down", H, I)):
                    blocks, scales = self.raw(p + proj + "_proj_blocks"), self.raw(p + proj + "_proj_scales")
                    # [E, N, K/32, 16] -> [E][K/2][N] and [E, N, K/32] -> [E][K/32][N]
                    for name, src, cols in ((proj + "_blocks", blocks, K // 2), (proj + "_scales", scales, K // 32)):
                        per = N * cols
                        out.setdefault(name, []).append(b"".join(
                            src[e * per + c:(e + 1) * per:cols] for e in range(E) for c in range(cols)))
                    out.setdefault(proj + "_bias", []).append(self.raw(p + proj + "_proj_bias"))
        elif "model.layers.%d.mlp.experts.gate_up_proj" % l0 in t and t["model.layers.%d.mlp.experts.gate_up_proj" % l0][4] == [E, H, 2 * I]:
            fmt = "bf16"  # gpt-oss as transformers saves it
            for l in layers:
                p = "model.layers.%d.mlp.experts." % l
                gu, dn = array.array("H"), array.array("H")
                gu.frombytes(self.raw(p + "gate_up_proj"))
                dn.frombytes(self.raw(p + "down_proj"))
                g, d = array.array("H"), array.array("H")
                for e in range(E):
                    x = gu[e * H * 2 * I:(e + 1) * H * 2 * I]  # [H][2I]: gate = even columns, up = odd
                    for r in range(I):
                        g.extend(x[2 * r::2 * I])
                    for r in range(I):
                        g.extend(x[2 * r + 1::2 * I])
                    y = dn[e * I * H:(e + 1) * I * H]  # [I][H] -> [H][I]
                    for c in range(H):
                        d.extend(y[c::H])
                out.setdefault("gate_up", []).append(g.tobytes())
                out.setdefault("down", []).append(d.tobytes())
        else:
            fmt = "bf16"
            for l in layers:
                mix = "model.layers.%d.block_sparse_moe.experts.0.w1.weight" % l in t
                names = ("w1", "w3", "w2") if mix else ("gate_proj", "up_proj", "down_proj")
                blk = "block_sparse_moe" if mix else "mlp"
                gu, dn = [], []
                for e in range(E):
                    p = "model.layers.%d.%s.experts.%d." % (l, blk, e)
                    gu.append(self.raw(p + names[0] + ".weight"))
                    gu.append(self.raw(p + names[1] + ".weight"))
                    dn.append(self.raw(p + names[2] + ".weight"))
                out.setdefault("gate_up", []).append(b"".join(gu))
                out.setdefault("down", []).append(b"".join(dn))
        return fmt, out, layers

    def expert_tensors(self):
        return {n for n in self.tensors if re.search(r"\.experts\.", n)}


def metadata_files(d):
    """Relative paths of the files the seed's converter copies (everything that is not weights)."""
    out = []
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            if f.endswith(WEIGHT_SUFFIXES) or f == "model.safetensors.index.json":
                continue
            out.append(os.path.relpath(os.path.join(root, f), d))
    return sorted(out)


def read_ftw(d, e, idx):
    """An entry's bytes, read across shards."""
    out = b""
    pos, left = e["global_off"], e["nbytes"]
    for s in idx["shards"]:
        s0, s1 = s["global_off"], s["global_off"] + s["nbytes"]
        if left == 0 or pos >= s1:
            continue
        take = min(left, s1 - pos)
        with open(os.path.join(d, s["file"]), "rb") as fh:
            fh.seek(pos - s0)
            out += fh.read(take)
        pos += take
        left -= take
    return out


# ---------------------------------------------------------------- check

def check(ckpt_dir, d):
    ck = Checkpoint(ckpt_dir)
    fmt, banks, layer_ids = ck.banks()
    n = len(layer_ids)
    with open(os.path.join(d, "freetoken_weight.json")) as fh:
        idx = json.load(fh)
    errs = []
    for k, v in (("format", "freetoken_weight"), ("version", 1), ("align", ALIGN), ("quant_format", fmt),
                 ("expert_bank_num_layers", n), ("weight_names", "checkpoint")):
        if idx.get(k) != v:
            errs.append("index %s is %r, want %r" % (k, idx.get(k), v))
    # shards: contiguous, files as long as the index says
    g = 0
    for s in idx["shards"]:
        if s["global_off"] != g or not re.fullmatch(r"freetoken-\d{5}\.ftw", s["file"]):
            errs.append("shard %r out of place" % s)
        if os.path.getsize(os.path.join(d, s["file"])) != s["nbytes"]:
            errs.append("shard %s is not %d bytes" % (s["file"], s["nbytes"]))
        g += s["nbytes"]
    if idx["total_bytes"] != g:
        errs.append("total_bytes %d, shards %d" % (idx["total_bytes"], g))
    # every tensor: torch dtype, aligned, nbytes from shape, zero padding
    nweight = nbank = 0
    per_layer, dense = {}, set()
    for e in idx["tensors"]:
        if e["dtype"] not in TORCH:
            errs.append("%s: dtype %r is not a torch dtype name" % (e["name"], e["dtype"]))
            continue
        if e["global_off"] % ALIGN or prod(e["shape"]) * TORCH[e["dtype"]] != e["nbytes"]:
            errs.append("%s: offset %d / nbytes %d do not fit" % (e["name"], e["global_off"], e["nbytes"]))
        pad = read_ftw(d, {"global_off": e["global_off"] + e["nbytes"],
                           "nbytes": round_up(e["nbytes"]) - e["nbytes"]}, idx)
        if pad.strip(b"\0"):
            errs.append("%s: padding is not zero" % e["name"])
        if e["kind"] == "weight":
            nweight += 1
            t = ck.tensors.get(e["name"])
            if not t:
                errs.append("dense tensor %s is not a checkpoint name" % e["name"])
            elif ST2TORCH[t[3]] != e["dtype"] or t[4] != e["shape"] or ck.raw(e["name"]) != read_ftw(d, e, idx):
                errs.append("dense tensor %s differs from the checkpoint" % e["name"])
            elif e["name"] in ck.expert_tensors() and not (fmt == "bf16" and e["name"].endswith("_proj_bias")):
                errs.append("expert tensor %s stored as dense, not in a bank" % e["name"])
            dense.add(e["name"])
            continue
        if e["kind"] != "experts_bank":
            errs.append("%s: kind %r" % (e["name"], e["kind"]))
            continue
        nbank += 1
        if e["name"] in ALPHAS:
            if len(e["shape"]) != 1 or e["shape"][0] != n * ck.E:
                errs.append("alpha %s is not flat [n*E]" % e["name"])
            continue
        m = re.fullmatch(r"(.+)#L(\d{5})", e["name"])
        if not m:
            errs.append("bank entry %s is not <bank>#L<5 digits>" % e["name"])
            continue
        per_layer.setdefault(m.group(1), {})[int(m.group(2))] = e
    want = [b[0] for b in SCHEMA[fmt]]
    if sorted(per_layer) != sorted(want):
        errs.append("banks %s, want %s" % (sorted(per_layer), want))
    for name, shp, dt in SCHEMA[fmt]:
        by = per_layer.get(name, {})
        if sorted(by) != list(range(n)):  # the seed's reader: exactly range(n)
            errs.append("bank %s has layers %s, expected exactly range(%d)" % (name, sorted(by), n))
            continue
        for l in range(n):
            e = by[l]
            if e["dtype"] != dt or e["shape"] != [ck.E] + shp(ck.H, ck.I):
                errs.append("%s: %s %s, want %s %s" % (e["name"], e["dtype"], e["shape"], dt, [ck.E] + shp(ck.H, ck.I)))
            elif read_ftw(d, e, idx) != banks[name][l]:
                errs.append("%s differs from the checkpoint's experts (layer %d)" % (e["name"], layer_ids[l]))
    # every tensor that is not a bank is there (gpt-oss bf16's biases: §1's bf16 has no bias bank)
    for name in ck.tensors:
        if name not in dense and (name not in ck.expert_tensors() or (fmt == "bf16" and name.endswith("_proj_bias"))):
            errs.append("checkpoint tensor %s missing from the FTW" % name)
    c = idx.get("counts", {})
    if c.get("weight") != nweight or c.get("experts_bank") != nbank:
        errs.append("counts %r, entries: %d weight, %d experts_bank" % (c, nweight, nbank))
    meta = metadata_files(ckpt_dir)
    if sorted(idx.get("copied_metadata", [])) != meta:
        errs.append("copied_metadata %r, want %r" % (idx.get("copied_metadata"), meta))
    for rel in meta:
        p = os.path.join(d, rel)
        if not os.path.isfile(p) or open(p, "rb").read() != open(os.path.join(ckpt_dir, rel), "rb").read():
            errs.append("metadata %s not copied" % rel)
    if errs:
        fail("; ".join(errs[:12]) + (" (+%d more)" % (len(errs) - 12) if len(errs) > 12 else ""))
    print("ok: %s follows §7 (%s, %d MoE layers, %d bank entries, %d dense, %d metadata files)"
          % (d, fmt, n, nbank, nweight, len(meta)))


# ---------------------------------------------------------------- write, as the seed's converter

class Writer:
    """The seed's FTWWriter: one byte stream sliced into shards of at most `limit` bytes; a
    tensor that fits a shard never splits (roll early), a larger one spans shards; every tensor
    padded to 4096."""

    def __init__(self, d, limit):
        self.d, self.limit = d, limit
        self.tensors, self.shards = [], []
        self.f, self.idx, self.start, self.cur, self.g = None, -1, 0, 0, 0

    def roll(self):
        if self.f:
            self.shards.append({"file": "freetoken-%05d.ftw" % self.idx, "global_off": self.start, "nbytes": self.cur})
            self.f.close()
        self.idx += 1
        self.start, self.cur = self.g, 0
        self.f = open(os.path.join(self.d, "freetoken-%05d.ftw" % self.idx), "wb")

    def raw(self, b):
        if not self.f:
            self.roll()
        off = 0
        while off < len(b):
            if self.cur == self.limit:
                self.roll()
            take = min(len(b) - off, self.limit - self.cur)
            self.f.write(b[off:off + take])
            off += take
            self.cur += take
            self.g += take

    def add(self, name, data, dtype, shape, kind):
        if not self.f or (len(data) <= self.limit and self.cur + len(data) > self.limit):
            self.roll()
        self.tensors.append({"name": name, "kind": kind, "dtype": dtype, "shape": shape, "global_off": self.g,
                             "nbytes": len(data)})
        self.raw(data)
        pad = round_up(self.g) - self.g
        if pad:
            self.raw(bytes(pad))

    def finish(self, meta):
        if self.f:
            self.shards.append({"file": "freetoken-%05d.ftw" % self.idx, "global_off": self.start, "nbytes": self.cur})
            self.f.close()
        idx = {"format": "freetoken_weight", "version": 1, "align": ALIGN, "shard_limit": self.limit,
               "total_bytes": self.g, "tensors": self.tensors, "shards": self.shards}
        idx.update(meta)
        with open(os.path.join(self.d, "freetoken_weight.json"), "w") as fh:
            json.dump(idx, fh)


def write(ckpt_dir, d, layout, kib):
    ck = Checkpoint(ckpt_dir)
    fmt, banks, layer_ids = ck.banks()
    n = len(layer_ids)
    os.makedirs(d, exist_ok=True)
    w = Writer(d, kib * 1024)
    experts = ck.expert_tensors()
    nw = 0
    for name in sorted(ck.tensors):  # dense weights first, under the engine's (here: fused-looking) names
        if name in experts:
            continue
        t = ck.tensors[name]
        w.add(name.replace("self_attn.q_proj", "self_attn.qkv_proj.q"), ck.raw(name), ST2TORCH[t[3]], t[4], "weight")
        nw += 1
    nb = 0
    shapes = {b[0]: (b[1](ck.H, ck.I), b[2]) for b in SCHEMA[fmt]}
    if layout == "per-layer":
        for l in range(n):  # the converter's sink: each completed layer's banks
            for name, _, _ in SCHEMA[fmt]:
                w.add("%s#L%05d" % (name, l), banks[name][l], shapes[name][1], [ck.E] + shapes[name][0], "experts_bank")
                nb += 1
    else:
        for name, _, _ in SCHEMA[fmt]:
            w.add(name, b"".join(banks[name]), shapes[name][1], [n * ck.E] + shapes[name][0], "experts_bank")
            nb += 1
        for a in ALPHAS:  # flat [n*E] float32, as nvfp4_marlin's; not a bank
            w.add(a, struct.pack("<%df" % (n * ck.E), *[1.0 + i / 64 for i in range(n * ck.E)]), "float32",
                  [n * ck.E], "experts_bank")
            nb += 1
    copied = []
    for rel in metadata_files(ckpt_dir):
        os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
        with open(os.path.join(ckpt_dir, rel), "rb") as src, open(os.path.join(d, rel), "wb") as dst:
            dst.write(src.read())
        copied.append(rel)
    w.finish({"source_model_path": os.path.abspath(ckpt_dir),
              "fingerprint": hashlib.sha256(ckpt_dir.encode()).hexdigest()[:16], "quant_format": fmt,
              "expert_bank_num_layers": n, "counts": {"weight": nw, "experts_bank": nb}, "copied_metadata": copied})
    print("wrote %s: %s %s, %d layers, %d shards" % (d, fmt, layout, n, len(w.shards)))


def checksum(layers):
    """§7: the bank's per-layer arrays as one byte string, sampled every max(1, total // 1e6)
    bytes, each byte weighted by (pos mod 1,000,000,007) + 1; a 64-bit sum."""
    data = b"".join(layers)
    step = max(1, len(data) // 1000000)
    return sum(data[pos] * (pos % 1000000007 + 1) for pos in range(0, len(data), step)) & (2 ** 64 - 1)


def synth(fmt, d, layout, kib):
    """An FTW of format fmt as the seed writes it, random banks (H 256, I 128, E 4, 3 MoE layers
    after one dense layer); prints the §7 checksums its banks must give, as JSON."""
    H, I, E, n = 256, 128, 4, 3
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as fh:
        json.dump({"model_type": "deepseek_v3", "hidden_size": H, "moe_intermediate_size": I, "n_routed_experts": E,
                   "num_hidden_layers": n + 1, "first_k_dense_replace": 1}, fh)
    w = Writer(d, kib * 1024)
    w.add("model.embed_tokens.weight", bytes(range(256)) * 8, "bfloat16", [4, 256], "weight")
    seed = hashlib.sha256(fmt.encode()).digest()
    banks = {}
    for name, shp, dt in SCHEMA[fmt]:
        per = prod(shp(H, I)) * TORCH[dt] * E
        for l in range(n):
            x, blob = hashlib.sha256(seed + name.encode() + bytes([l])).digest(), bytearray()
            while len(blob) < per:
                x = hashlib.sha256(x).digest()
                blob += x
            banks.setdefault(name, []).append(bytes(blob[:per]))
    nb = 0
    if layout == "per-layer":
        for l in range(n):
            for name, shp, dt in SCHEMA[fmt]:
                w.add("%s#L%05d" % (name, l), banks[name][l], dt, [E] + shp(H, I), "experts_bank")
                nb += 1
    else:
        for name, shp, dt in SCHEMA[fmt]:
            w.add(name, b"".join(banks[name]), dt, [n * E] + shp(H, I), "experts_bank")
            nb += 1
    if fmt == "nvfp4_marlin":  # the folded globals: flat [n*E] alphas
        for a in ALPHAS:
            w.add(a, struct.pack("<%df" % (n * E), *[0.5] * (n * E)), "float32", [n * E], "experts_bank")
            nb += 1
    # a flat file without expert_bank_num_layers takes n from config.json
    w.finish({"source_model_path": d, "fingerprint": None, "quant_format": fmt,
              "expert_bank_num_layers": n if layout == "per-layer" else None,
              "counts": {"weight": 1, "experts_bank": nb}, "copied_metadata": ["config.json"]})
    print(json.dumps({name: checksum(v) for name, v in banks.items()}, sort_keys=True))


def main(argv):
    if len(argv) >= 3 and argv[0] == "check":
        check(argv[1], argv[2])
    elif len(argv) == 5 and argv[0] == "write" and argv[3] in ("per-layer", "flat"):
        write(argv[1], argv[2], argv[3], int(argv[4]))
    elif len(argv) == 5 and argv[0] == "synth" and argv[1] in SCHEMA and argv[3] in ("per-layer", "flat"):
        synth(argv[1], argv[2], argv[3], int(argv[4]))
    elif len(argv) == 2 and argv[0] == "banks":
        fmt, banks, layers = Checkpoint(argv[1]).banks()
        print(fmt, layers, {k: [len(x) for x in v] for k, v in banks.items()})
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
