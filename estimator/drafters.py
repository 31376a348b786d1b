"""Draft models the target's config does not hold but fixes: Gemma 4's assistant checkpoints.

Why: vLLM's Gemma 4 MTP (vllm/v1/spec_decode/gemma4.py Gemma4Proposer, vllm/model_executor/models/
gemma4_mtp.py; vLLM 0.21+) loads a separate `google/gemma-4-*-it-assistant` checkpoint — Gemma 4 has no
MTP layers of its own — and wires every one of its attention layers to the target's KV cache
(`_setup_gemma4_kv_sharing`: Q-only attention, no KV of their own). Its memory is its weights, and the
target's hidden size names it: each assistant's `backbone_hidden_size` is its target's hidden size.

The dimensions are the four published assistant configs (model_type gemma4_assistant, text_config
gemma4_text; google/gemma-4-{E2B,E4B,26B-A4B,31B}-it-assistant, released 2026-05-05): four layers
(three sliding, one full attention), tied 262,144-token embeddings, q/o projections only. The parameter
count below reproduces the model cards' 78 M (E2B), 78.8 M (E4B), ~0.4 B (26B-A4B) and ~0.5 B (31B).
Evidence that the weights are the cost: three pairs of vLLM 0.22 runs on one A10G (E4B, eager, one
sequence; morganmcg1/gemma-challenge-senpai's committed logs) with and without the assistant print
0.15–0.16 GiB more "Model loading took" and 0.15–0.16 GiB less available KV cache — the 78.5 M bf16
parameters here are 0.146 GiB.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Assistant:
    repo: str
    backbone: int           # the target's hidden size (backbone_hidden_size)
    hidden: int
    intermediate: int
    heads: int
    centroids: int          # the E2B/E4B centroid LM head's scorer (num_centroids × hidden); 0 = dense tied head
    layers: int = 4
    full_layers: int = 1    # layer_types [sliding, sliding, sliding, full]
    head_dim: int = 256
    global_head_dim: int = 512
    vocab: int = 262144

    @property
    def replicated_params(self) -> int:
        """pre_projection ([target embedding, last hidden] 2T → d), post_projection (d → T) and the
        centroid scorer: small layers every tensor-parallel rank holds whole."""
        return 2 * self.backbone * self.hidden + self.hidden * self.backbone + self.centroids * self.hidden

    @property
    def params(self) -> int:
        embed = self.vocab * self.hidden                          # tied with the LM head
        mlp = self.layers * 3 * self.hidden * self.intermediate   # gate, up, down
        sliding = self.layers - self.full_layers
        attn = 2 * self.hidden * self.heads * (sliding * self.head_dim + self.full_layers * self.global_head_dim)
        return embed + mlp + attn + self.replicated_params

    def bytes_per_rank(self, dtype_bytes: int, tp: int) -> int:
        """The checkpoint is 16-bit and has no quantization config of its own, so it loads in the model
        dtype; its embedding, MLP and heads split over the target's tensor-parallel ranks."""
        split = self.params - self.replicated_params
        return dtype_bytes * (split // max(1, tp) + self.replicated_params)


GEMMA4_ASSISTANTS = {a.backbone: a for a in (
    Assistant("google/gemma-4-E2B-it-assistant", backbone=1536, hidden=256, intermediate=2048, heads=4,
              centroids=2048),
    Assistant("google/gemma-4-E4B-it-assistant", backbone=2560, hidden=256, intermediate=2048, heads=4,
              centroids=2048),
    Assistant("google/gemma-4-26B-A4B-it-assistant", backbone=2816, hidden=1024, intermediate=8192, heads=16,
              centroids=0),
    Assistant("google/gemma-4-31B-it-assistant", backbone=5376, hidden=1024, intermediate=8192, heads=32,
              centroids=0),
)}


def gemma4_assistant(model_type: str, hidden_size: int, method: str | None, draft_model: str | None) -> Assistant | None:
    """The assistant a Gemma 4 target drafts with: speculative decoding by MTP (the method vLLM runs the
    assistant with) or with an assistant checkpoint named as the draft model."""
    if not str(model_type or "").lower().startswith("gemma4"):
        return None
    named = "assistant" in str(draft_model or "").lower()
    if not named and not str(method or "").lower().endswith("mtp"):
        return None
    return GEMMA4_ASSISTANTS.get(int(hidden_size or 0))
