"""Loss-and-backward timing against trl's DPOTrainer loss on identical batches.

trl computes DPO inside DPOTrainer._compute_loss (policy and reference forward, then the
sigmoid loss), so we build a real trainer around the same GPT-2 and time one call plus backward
next to ours: forward(policy), forward(reference), PLR at list size 2, backward.
"""

from __future__ import annotations

import copy
import os
import statistics
import tempfile
import time

import torch

from .data import Tokenizer
from .policy import Batch, encode_pairs, forward
from .tree_loss import plr_loss


def trl_trainer(model: torch.nn.Module, ref: torch.nn.Module, tok: Tokenizer, beta: float):
    """A trl DPOTrainer (sigmoid loss) around our model, with our vocabulary as a HF tokenizer."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from datasets import Dataset, disable_progress_bars
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast
    from trl import DPOConfig, DPOTrainer

    disable_progress_bars()
    raw = RawTokenizer(WordLevel(vocab=tok.stoi, unk_token="<pad>"))
    raw.pre_tokenizer = WhitespaceSplit()
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>"
    )
    data = Dataset.from_dict({"prompt": ["x 1 + 1 ? "], "chosen": ["S"], "rejected": ["A"]})
    args = DPOConfig(
        output_dir=tempfile.mkdtemp(prefix="tpo-trl-"),
        beta=beta,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_strategy="no",
        disable_tqdm=True,
    )
    return DPOTrainer(
        model=model, ref_model=ref, args=args, train_dataset=data, processing_class=hf_tok
    )


def _timed(fn, repeats: int) -> tuple[float, float]:
    """Median seconds of fn() over repeats (after one warm-up call) and its last loss value."""
    fn()
    times, value = [], 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def pair_batch(tok: Tokenizer, prompts: list[str], chosen: list[str], rejected: list[str]) -> Batch:
    """Rows [chosen..., rejected...], the layout trl's DPO collator produces."""
    return encode_pairs(tok, prompts + prompts, chosen + rejected)


def compare_with_trl(
    model: torch.nn.Module,
    tok: Tokenizer,
    batch: Batch,
    beta: float,
    repeats: int,
) -> dict[str, float]:
    """Seconds per loss+backward (ours vs trl) and both loss values on the same pairs."""
    policy, ref = copy.deepcopy(model).train(), copy.deepcopy(model).eval()
    with torch.no_grad():  # move the policy off the reference so the loss is not log 2
        for p in policy.parameters():
            p.add_(0.02 * torch.randn_like(p))
    trainer = trl_trainer(policy, ref, tok, beta)
    n = batch.input_ids.shape[0] // 2
    scores = torch.tensor([[1.0, 0.0]]).expand(n, 2)
    inputs = {
        "input_ids": batch.input_ids,
        "attention_mask": batch.attention_mask.long(),
        "completion_mask": batch.response_mask.long(),
    }

    def ours() -> float:
        policy.zero_grad()
        logps, _ = forward(policy, batch)
        with torch.no_grad():
            ref_logps, _ = forward(ref, batch)
        r = beta * (logps - ref_logps).sum(-1)
        loss = plr_loss(torch.stack([r[:n], r[n:]], 1), scores)
        loss.backward()
        return loss.item()

    def peer() -> float:
        policy.zero_grad()
        loss = trainer._compute_loss(trainer.model, inputs, False)
        loss.backward()
        return loss.item()

    ours_s, ours_loss = _timed(ours, repeats)
    peer_s, peer_loss = _timed(peer, repeats)
    return {"ours_s": ours_s, "peer_s": peer_s, "ours_loss": ours_loss, "peer_loss": peer_loss}
