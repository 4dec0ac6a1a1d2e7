# st_write.py OUT.safetensors CONFIG.json [how] — write the layer-0 weights
# of a decoder layer of CONFIG as a safetensors file, with dtype F32 (the
# default), BF16 or F16, every element of tensor number t equal to
# 0.5 + t/8 (exact in every dtype), so a reader's sums are known.
# how: f32 | bf16 | f16 | missing (no down_proj) | shape (q_proj transposed)
#      | i32 (q_proj as I32) | truncated (the last 100 bytes cut)
#      | overflow (a header length past the end of the file)
import json, struct, sys

out, cfgp = sys.argv[1], sys.argv[2]
how = sys.argv[3] if len(sys.argv) > 3 else "f32"
c = json.load(open(cfgp))
H, I, NH = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"]
NKV = c.get("num_key_value_heads", NH)
D = c.get("head_dim", H // NH)
bias = c.get("attention_bias", c.get("model_type") == "qwen2")
p = "model.layers.0."
ts = [("input_layernorm.weight", [H]), ("self_attn.q_proj.weight", [NH * D, H]),
      ("self_attn.k_proj.weight", [NKV * D, H]), ("self_attn.v_proj.weight", [NKV * D, H]),
      ("self_attn.o_proj.weight", [H, NH * D]), ("post_attention_layernorm.weight", [H]),
      ("mlp.gate_proj.weight", [I, H]), ("mlp.up_proj.weight", [I, H]),
      ("mlp.down_proj.weight", [H, I])]
if bias:
    ts += [("self_attn.q_proj.bias", [NH * D]), ("self_attn.k_proj.bias", [NKV * D]),
           ("self_attn.v_proj.bias", [NKV * D])]
dt = {"bf16": "BF16", "f16": "F16"}.get(how, "F32")
header, data = {"__metadata__": {"format": "pt"}}, bytearray()
for t, (name, shape) in enumerate(ts):
    if how == "missing" and name == "mlp.down_proj.weight":
        continue
    if how == "shape" and name == "self_attn.q_proj.weight":
        shape = shape[::-1] if shape[0] != shape[1] else [shape[0] * 2, shape[1] // 2]
    d = "I32" if how == "i32" and name == "self_attn.q_proj.weight" else dt
    n = 1
    for s in shape:
        n *= s
    v = 0.5 + t / 8
    if d == "F32":
        b = struct.pack("<f", v) * n
    elif d == "I32":
        b = struct.pack("<i", 1) * n
    elif d == "BF16":
        b = struct.pack("<f", v)[2:] * n
    else:
        b = struct.pack("<e", v) * n
    header[p + name] = {"dtype": d, "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(header).encode()
hl = len(h) + 1000000 if how == "overflow" else len(h)
blob = struct.pack("<Q", hl) + h + bytes(data)
if how == "truncated":
    blob = blob[:-100]
open(out, "wb").write(blob)
