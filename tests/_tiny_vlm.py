"""Tiny random-weight vision-language models of real architectures, built offline for the HF agent's tests.

Nothing is downloaded: the configs are the real ``transformers`` classes (LLaVA: a CLIP vision tower and a Llama
language model; Idefics3: a SigLIP-style vision tower, the pixel-shuffle connector and a Llama language model;
Qwen2-VL when torchvision is present, its processor needs a video processor) shrunk to one or two layers of
width 32; the tokenizer is a byte-level BPE over the 256 byte symbols (so any text encodes) plus the special
tokens each processor expects; the chat templates are short ones of our own in each model family's layout.
Each builder writes a folder that ``AutoProcessor`` / ``AutoModelForImageTextToText.from_pretrained`` load.
"""

from __future__ import annotations

from pathlib import Path

# A chat template in the ChatML layout (Qwen2-VL, SmolVLM/Idefics3 use variants of it); {image} is the
# architecture's image placeholder.
_CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
           "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}{image}{% else %}{{ c['text'] }}"
           "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
           "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# LLaVA-1.5's layout: "USER: <image>\n... ASSISTANT:"; this one has no system role (the agent merges it).
_LLAVA = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
          "{{ m['role'].upper() }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}"
          "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}"
          "{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")


def byte_tokenizer(specials: list[str], eos: str, pad: str, bos: str | None = None):
    """A fast tokenizer: byte-level BPE without merges (one token per byte) plus ``specials``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(specials))
    kw = {"eos_token": eos, "pad_token": pad}
    if bos is not None:
        kw["bos_token"] = bos
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kw)


def _llama_text(vocab: int, ids: dict, bos: str, eos: str, pad: str) -> dict:
    return dict(model_type="llama", vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384,
                bos_token_id=ids[bos], eos_token_id=ids[eos], pad_token_id=ids[pad])


def build_llava(out: str | Path, seed: int = 0) -> Path:
    """LLaVA (CLIP ViT 32 px, patch 8 → 16 image tokens; Llama 2 layers) in ``out``."""
    import torch
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    out = Path(out)
    specials = ["<s>", "</s>", "<pad>", "<image>"]
    tok = byte_tokenizer(specials, eos="</s>", pad="<pad>", bos="<s>")
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    ip = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    proc = LlavaProcessor(image_processor=ip, tokenizer=tok, patch_size=8, vision_feature_select_strategy="default",
                          chat_template=_LLAVA, num_additional_image_tokens=1)
    cfg = LlavaConfig(
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, image_size=32, patch_size=8, projection_dim=32),
        text_config=_llama_text(len(tok), ids, "<s>", "</s>", "<pad>"),
        image_token_index=ids["<image>"], image_seq_length=16, vision_feature_select_strategy="default",
        vision_feature_layer=-1)
    torch.manual_seed(seed)
    LlavaForConditionalGeneration(cfg).save_pretrained(out)
    proc.save_pretrained(out)
    return out


def build_idefics3(out: str | Path, seed: int = 0) -> Path:
    """Idefics3 (vision 32 px, patch 8, scale factor 2 → 4 image tokens per image; Llama 2 layers) in ``out``."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessorPil, \
        Idefics3Processor

    out = Path(out)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<fake_token_around_image>", "<image>",
                "<end_of_utterance>", "<global-img>"] + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    tok = byte_tokenizer(specials, eos="<|im_end|>", pad="<|endoftext|>", bos="<|im_start|>")
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    ip = Idefics3ImageProcessorPil(size={"longest_edge": 32}, max_image_size={"longest_edge": 32},
                                   do_image_splitting=False)
    proc = Idefics3Processor(image_processor=ip, tokenizer=tok, image_seq_len=4,
                             chat_template=_CHATML.replace("{image}", "<image>"))
    cfg = Idefics3Config(
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8),
        text_config=_llama_text(len(tok), ids, "<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        image_token_id=ids["<image>"], scale_factor=2)
    torch.manual_seed(seed)
    Idefics3ForConditionalGeneration(cfg).save_pretrained(out)
    proc.save_pretrained(out)
    return out


def build_qwen2_vl(out: str | Path, seed: int = 0) -> Path:
    """Qwen2-VL (vision 1 layer, patch 14, merge 2; language model 2 layers with M-RoPE). Its processor needs a
    video processor, which needs torchvision."""
    import torch
    from transformers import (Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessorPil,
                              Qwen2VLProcessor, Qwen2VLVideoProcessor)

    out = Path(out)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    tok = byte_tokenizer(specials, eos="<|im_end|>", pad="<|endoftext|>")
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    ip = Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 56, patch_size=14, merge_size=2,
                                  temporal_patch_size=2)
    proc = Qwen2VLProcessor(image_processor=ip, tokenizer=tok, video_processor=Qwen2VLVideoProcessor(),
                            chat_template=_CHATML.replace("{image}", "<|vision_start|><|image_pad|><|vision_end|>"))
    cfg = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]},
                         bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                         pad_token_id=ids["<|endoftext|>"]),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(seed)
    Qwen2VLForConditionalGeneration(cfg).save_pretrained(out)
    proc.save_pretrained(out)
    return out


BUILDERS = {"llava": build_llava, "idefics3": build_idefics3, "qwen2_vl": build_qwen2_vl}
