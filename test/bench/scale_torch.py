"""The scale bench's peer: PyTorch + transformers, eager attention, fp32, on an HF folder.

Run by test/bench/scale_bench.ts (deno task bench --only scale) on the folders it writes, with
the same batch sizes, lengths, LoRA setting and hyperparameters; prints one JSON object on the
last stdout line (progress on stderr). By hand:

    python3 test/bench/scale_torch.py --folder runs/bench_scale/smollm2-135m --batches 1,8,32

Measured like ours: prefill = one forward over every prompt token (logits of the last position
only where transformers supports it); decode = greedy steps with the KV cache, every sequence
decoding --new-tokens (no eos), timed from the first step to the last; train = forward +
cross-entropy on every position + backward + grad-norm clip + AdamW, B x T ids (--train-ids:
the bench's own batch, so the losses compare; else random), LoRA via
peft (r, alpha 2r, every projection, no dropout) or full. Medians of --rounds after a warm-up.
"""
import argparse
import inspect
import json
import sys
import time

import torch
import transformers
from transformers import AutoModelForCausalLM


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", required=True)
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--train-batch", type=int, default=8)
    ap.add_argument("--train-len", type=int, default=128)
    ap.add_argument("--modes", default="lora,full")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--max-grad-norm", type=float, default=1.0)
    ap.add_argument("--train-ids", default=None,
                    help="JSON [B][T] token ids to train on (the bench passes its own batch)")
    a = ap.parse_args()

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = dev.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def load():
        m = AutoModelForCausalLM.from_pretrained(a.folder, torch_dtype=torch.float32,
                                                 attn_implementation="eager")
        return m.to(dev)

    t0 = time.perf_counter()
    model = load().eval()
    sync()
    load_s = time.perf_counter() - t0
    V = model.config.vocab_size
    gen = torch.Generator().manual_seed(11)
    fwd_params = inspect.signature(model.forward).parameters
    last_only = ({"logits_to_keep": 1} if "logits_to_keep" in fwd_params else
                 {"num_logits_to_keep": 1} if "num_logits_to_keep" in fwd_params else {})
    med = lambda xs: sorted(xs)[len(xs) // 2]
    memory = {}

    inference = []
    for B in [int(x) for x in a.batches.split(",")]:
        ids = torch.randint(0, V, (B, a.prompt_len), generator=gen).to(dev)
        pre, dec = [], []
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for r in range(a.rounds + 1):
            with torch.no_grad():
                sync()
                t0 = time.perf_counter()
                out = model(ids, use_cache=True, **last_only)
                sync()
                t1 = time.perf_counter()
                cache = out.past_key_values
                nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                sync()
                t2 = time.perf_counter()
                for _ in range(a.new_tokens):
                    out = model(nxt, past_key_values=cache, use_cache=True)
                    cache = out.past_key_values
                    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
                sync()
                t3 = time.perf_counter()
            if r > 0:
                pre.append(B * a.prompt_len / (t1 - t0))
                dec.append(B * a.new_tokens / (t3 - t2))
        if cuda:
            memory[f"inference_b{B}_peak"] = torch.cuda.max_memory_allocated()
        row = {"batch": B, "prefill_tok_s": round(med(pre), 1), "decode_tok_s": round(med(dec), 1)}
        log(f"torch B{B}: prefill {row['prefill_tok_s']} tok/s, decode {row['decode_tok_s']} tok/s")
        inference.append(row)
    del model, out, cache
    if cuda:
        torch.cuda.empty_cache()

    train = []
    for mode in a.modes.split(","):
        if mode == "lora":
            try:
                from peft import LoraConfig, get_peft_model
            except ImportError:
                log("torch train lora: skipped (peft is not installed)")
                continue
        model = load().train()
        if mode == "lora":
            model = get_peft_model(model, LoraConfig(
                r=a.lora_rank, lora_alpha=2 * a.lora_rank, lora_dropout=0.0,
                target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                "down_proj"]))
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=a.weight_decay)
        if a.train_ids:
            ids = torch.tensor(json.load(open(a.train_ids)), dtype=torch.long).to(dev)
            assert tuple(ids.shape) == (a.train_batch, a.train_len), tuple(ids.shape)
        else:
            ids = torch.randint(0, V, (a.train_batch, a.train_len), generator=gen).to(dev)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        tok_s, losses = [], []
        for s in range(a.rounds + 1):
            sync()
            t0 = time.perf_counter()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, a.max_grad_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            dt = time.perf_counter() - t0
            losses.append(round(float(loss), 4))
            if s > 0:
                tok_s.append(a.train_batch * a.train_len / dt)
        if cuda:
            memory[f"train_{mode}_peak"] = torch.cuda.max_memory_allocated()
        row = {"mode": mode, "tok_s": round(med(tok_s), 1), "losses": losses}
        log(f"torch train {mode}: {row['tok_s']} tok/s, losses {losses}")
        train.append(row)
        del model, opt, params
        if cuda:
            torch.cuda.empty_cache()

    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    try:
        import peft
        versions["peft"] = peft.__version__
    except ImportError:
        pass
    print(json.dumps({
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "versions": versions,
        "load_s": round(load_s, 3),
        "inference": inference,
        "train": train,
        "memory_bytes": memory,
    }))


if __name__ == "__main__":
    main()
