"""Build tiny randomly initialised causal LMs locally, with a real trained tokenizer.

For tests, benchmarks and plug-in authors: no download, seconds to build, loaded back through the same
``hf:`` path as any real model. Outputs are gibberish; shapes, caches and gradients are real.

The exception is :func:`build_tiny_nli_classifier`: trained on a lexical rule, it answers a Chinese NLI
prompt with a label word that depends on the text, for classification attacks and robustness scores.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import torch

_SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]
#: A Zephyr-style chat template (role headers, BOS written by the template, every turn closed by EOS), so chat
#: code is tested against what instruction-tuned models ship: system/user/assistant roles, a generation prompt,
#: and an error for a role it does not know.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown chat role: ' + m['role']) }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


#: A reasoning model's template in Qwen3's form: earlier assistant turns keep only their reply (the text after
#: ``</think>``, so the template names its closing tag and ``--reasoning auto`` finds it), and an
#: ``enable_thinking`` switch that, when false, writes an empty think block for the model (``--thinking off``).
THINKING_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{{ m['content'] }}",
    "{% if m['role'] == 'assistant' %}{{ m['content'].split('</think>')[-1].lstrip() }}"
    "{% else %}{{ m['content'] }}{% endif %}",
).replace(
    "<|assistant|>\n{% endif %}",
    "<|assistant|>\n{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}",
)
#: The same in DeepSeek-R1-distill's form: the generation prompt opens the think block itself, so completions
#: hold only its closing tag; no switch.
R1_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{{ m['content'] }}",
    "{% if m['role'] == 'assistant' %}{{ m['content'].split('</think>')[-1].lstrip() }}"
    "{% else %}{{ m['content'] }}{% endif %}",
).replace("<|assistant|>\n{% endif %}", "<|assistant|>\n<think>\n{% endif %}")


def _training_corpus() -> list[str]:
    """Text the tokenizer learns from: the package's own samples and exemplars, plus a little arithmetic."""
    lines: list[str] = []
    samples = resources.files("robusteval.data") / "samples"
    for name in ("math.jsonl", "yesno.jsonl"):
        for line in (samples / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                lines.append(f"Q: {record['question']}\nA: The answer is {record['answer']}.")
    lines += _answer_first_blocks()
    lines += [f"{a} + {b} = {a + b}. {a} * {b} = {a * b}. {a} - {b} = {a - b}." for a in range(12) for b in range(12)]
    lines += ["yes no Yes No correct incorrect same different meaning reasoning 0 1"] * 4
    return lines


def _answer_first_blocks(sets: tuple[str, ...] = ("math", "yesno"), *, thinking: bool = False) -> list[str]:
    """The built-in exemplars as answer-first blocks (question, answer, rationale); ``thinking``: each answer after
    a trace that first states a wrong answer (``<think> The answer is 8. </think>``), so a
    reader that takes the trace for the reply reads the wrong one."""
    blocks = []
    exemplars = resources.files("robusteval.prompts") / "exemplars"
    for name in (f"{s}.json" for s in sets):
        for ex in json.loads((exemplars / name).read_text(encoding="utf-8"))["exemplars"]:
            trace = f"<think> The answer is {_wrong(ex['answer'])}. </think> " if thinking else ""
            blocks.append(f"Q: {ex['question']}\nA: {trace}The answer is {ex['answer']}. {ex['rationale']}")
    return blocks


def _wrong(answer: str) -> str:
    """A wrong answer of the same kind: the number plus one, the other yes/no."""
    if answer.lower() in ("yes", "no"):
        return "no" if answer.lower() == "yes" else "yes"
    try:
        return str(int(answer) + 1)
    except ValueError:
        return answer + "0"


def build_tokenizer(vocab_size: int = 600):  # type: ignore[no-untyped-def]
    """A byte-level BPE tokenizer trained on the package's own text (deterministic)."""
    from tokenizers import pre_tokenizers

    return _byte_level_bpe(pre_tokenizers.ByteLevel(add_prefix_space=False), _training_corpus(), vocab_size)


def _byte_level_bpe(pre_tokenizer, corpus: list[str], vocab_size: int):  # type: ignore[no-untyped-def]
    """A byte-level BPE (the tiny models' special tokens, ByteLevel alphabet and decoder) split by
    ``pre_tokenizer`` and trained on ``corpus`` (deterministic), as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


#: Tokenizer families of :func:`build_family_tokenizer`, as real checkpoints ship them.
TOKENIZER_FAMILIES = ("robusteval", "sentencepiece-prefix", "byte-level", "gemma")
_BYTE_PIECES = [f"<0x{b:02X}>" for b in range(256)]
# Llama-3's pre-tokenizer split (tokenizer.json of meta-llama/Meta-Llama-3-8B).
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def build_family_tokenizer(family: str = "robusteval", vocab_size: int = 600):  # type: ignore[no-untyped-def]
    """A tokenizer configured like one family of real checkpoints, trained on the package's own text.

    * ``robusteval``: :func:`build_tokenizer` (byte-level BPE, no BOS added; what the tests always used).
    * ``sentencepiece-prefix``: Llama-2 / Mistral-7B-v0.1: normalizer ``Prepend("▁") + Replace(" ", "▁")``,
      no pre-tokenizer, byte fallback (``<0x0A>`` for a newline, which has no piece), single-digit pieces,
      ``<s>`` added by the post-processor. Every separately encoded text gets a prefix space.
    * ``byte-level``: Llama-3: regex split + ByteLevel pre-tokenizer and decoder, ``<|begin_of_text|>``
      added by the post-processor, no unk or pad token. Encoding is additive over segments.
    * ``gemma``: Gemma: ``Replace(" ", "▁")`` but no prefix space, byte fallback, a newline piece,
      ``<pad> <eos> <bos> <unk>`` first, ``<bos>`` added by the post-processor.

    ``vocab_size`` counts the learned pieces besides the 256 byte pieces and the special tokens (for
    ``robusteval``, everything).
    """
    if family == "robusteval":
        return build_tokenizer(vocab_size)
    if family in ("sentencepiece-prefix", "gemma"):
        return _sentencepiece_tokenizer(vocab_size, prefix_space=family == "sentencepiece-prefix")
    if family == "byte-level":
        return _llama3_tokenizer(vocab_size)
    raise ValueError(f"unknown tokenizer family {family!r}; choose from {', '.join(TOKENIZER_FAMILIES)}")


def _learn_bpe(corpus: list[str], pre_tokenizer, vocab_size: int,  # type: ignore[no-untyped-def]
               alphabet: list[str] | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """(pieces in training order, merges) of a BPE trained on ``corpus`` split by ``pre_tokenizer``."""
    from tokenizers import Tokenizer, models, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=alphabet or [], show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    learned = json.loads(tok.to_str())["model"]
    pieces = sorted(learned["vocab"], key=learned["vocab"].get)
    merges = [tuple(m.split(" ") if isinstance(m, str) else m) for m in learned["merges"]]
    return pieces, merges


def _sentencepiece_tokenizer(vocab_size: int, *, prefix_space: bool):  # type: ignore[no-untyped-def]
    """Llama-2 (``prefix_space``) or Gemma, as transformers converts their SentencePiece models."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    if prefix_space:
        specials, bos, eos, pad = ["<unk>", "<s>", "</s>"], "<s>", "</s>", None
        # Llama-2 has no newline piece: train line by line, so "\n" is left to byte fallback.
        corpus = [line for text in _training_corpus() for line in text.split("\n")]
    else:
        specials, bos, eos, pad = ["<pad>", "<eos>", "<bos>", "<unk>"], "<bos>", "<eos>", "<pad>"
        corpus = _training_corpus()
    # Train pieces as SentencePiece does: "▁" starts a word and never ends a piece, digits stay single,
    # newlines never join a word.
    pieces, merges = _learn_bpe(corpus, pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always" if prefix_space else "never"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Split(Regex("\n+"), behavior="isolated"),
    ]), vocab_size)
    vocab = {piece: i for i, piece in enumerate(dict.fromkeys(specials + _BYTE_PIECES + pieces))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    replace_decoder = [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    if prefix_space:  # Llama-2's tokenizer.json: prefix space in the normalizer, no pre-tokenizer
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        tok.decoder = decoders.Sequence([*replace_decoder, decoders.Strip(content=" ", left=1, right=0)])
    else:  # Gemma's: spaces become "▁" but nothing is prepended (its split on " " then never matches)
        tok.normalizer = normalizers.Replace(" ", "\u2581")
        tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
        tok.decoder = decoders.Sequence(replace_decoder)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])]
    )
    tok.add_special_tokens(specials)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, unk_token="<unk>",
                                   pad_token=pad, add_bos_token=True, add_eos_token=False)


def _llama3_tokenizer(vocab_size: int):  # type: ignore[no-untyped-def]
    """Llama-3's byte-level BPE: regex split, ByteLevel, BOS from the post-processor, special tokens last."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    alphabet = pre_tokenizers.ByteLevel.alphabet()  # its 256 byte pieces, like the others' byte fallback
    pieces, merges = _learn_bpe(_training_corpus(), pre_tokenizer, vocab_size + len(alphabet), alphabet)
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    vocab = {piece: i for i, piece in enumerate([*pieces, bos, eos])}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                      special_tokens=[(bos, vocab[bos])]),
    ])
    tok.add_special_tokens([bos, eos])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos)


def build_tiny_llama(
    out_dir: str | Path,
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    vocab_size: int = 600,
    train_steps: int = 0,
    train_on: tuple[str, ...] = ("math",),
    tokenizer_family: str = "robusteval",
    thinking: bool = False,
) -> Path:
    """Write a tiny LlamaForCausalLM + tokenizer into ``out_dir`` and return it.

    ``train_steps > 0`` briefly trains it on answer-first text (``Q: …\nA: The answer is X. …``) so that it
    follows the format: attacks then have answers and chains of thought to work on. ``tokenizer_family``
    picks the tokenizer (:data:`TOKENIZER_FAMILIES`, see :func:`build_family_tokenizer`). ``thinking``: a
    reasoning model: trained to write a ``<think> ... </think>`` trace (stating a wrong answer) before the
    answer-first reply, with :data:`THINKING_CHAT_TEMPLATE`. Deterministic.
    """
    from transformers import LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_family_tokenizer(tokenizer_family, vocab_size)
    tokenizer.chat_template = THINKING_CHAT_TEMPLATE if thinking else CHAT_TEMPLATE
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_llama_config(tokenizer, hidden_size, num_layers))
    if train_steps > 0:
        _train(model, tokenizer, train_steps, seed, train_on, thinking=thinking)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _llama_config(tokenizer, hidden_size: int, num_layers: int):  # type: ignore[no-untyped-def]
    """The tiny Llama shape shared by every builder here (4 heads, 2 KV heads, MLP twice the width)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def _train(model, tokenizer, steps: int, seed: int, sets: tuple[str, ...],  # type: ignore[no-untyped-def]
           *, thinking: bool = False) -> None:
    """A few hundred AdamW steps on the answer-first corpus: enough for the format, not for arithmetic.

    Documents chain three exemplar blocks (answer, rationale, blank line, next ``Q:``) so the model learns
    to write a rationale and then start a new question, where generation stops.
    """
    blocks = _answer_first_blocks(sets, thinking=thinking)
    # Without special tokens: families whose post-processor adds BOS would otherwise start every block with it.
    encoded_blocks = [tokenizer(b + "\n\n", add_special_tokens=False)["input_ids"] for b in blocks]
    # Families without a pad token (Llama-2, Llama-3) pad with EOS; padded positions are masked either way.
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        picks = torch.randint(0, len(encoded_blocks), (8, 3), generator=generator).tolist()
        batch = [[tokenizer.bos_token_id, *(t for i in row for t in encoded_blocks[i])] for row in picks]
        width = max(len(b) for b in batch)
        ids = torch.tensor([b + [pad] * (width - len(b)) for b in batch])
        mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in batch])
        labels = ids.masked_fill(mask == 0, -100)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


# ---------------------------------------------------------------------------------------------------------------
# A tiny NLI "classifier": a real causal LM that answers a Chinese NLI prompt with a label word.
#
# Attacks and robustness scores on classification need a model whose answer is parseable *and* depends on the
# text, so that changing characters can flip it. The model learns a lexical rule (see ``tiny_nli_label``) from
# synthetic pairs; noise characters in training keep the answer format intact on arbitrary (e.g. OCNLI) text.

NLI_LABELS = ("entailment", "neutral", "contradiction")
NLI_PROMPT = "前提：$premise\n假设：$hypothesis\n关系："
_NEGATIONS = ("不", "没", "没有", "不会", "不是", "不想", "没去", "不能")
_HEDGES = ("可能", "也许", "可能会", "也许会", "可能是")
_MARKER_CHARS = frozenset("不没可能也许")
# Frequent characters of everyday Chinese: each becomes a single token, so character-level perturbations of
# real text usually change one token (rarer characters fall back to their three UTF-8 bytes).
_COMMON_CHARS = (
    "的一是了我人在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么"
    "心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样"
    "现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打"
    "便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总"
    "才场师书解路立早光且至车快每放马果条六活叫金白思接提通表直该八结七论认候神色更非数书九爸妈哥姐弟妹朋友"
    "王李张刘陈杨赵黄吴周今昨明晚午周末春夏秋冬雨雪风晴热冷买卖吃喝睡读写看听跑坐站住病医院店商校园馆城市村"
    "饭菜茶水酒米面包果苹香蕉鱼肉鸡蛋奶衣服鞋帽钱块元票车船飞机火站路桥河湖海山树花草猫狗鸟红黄蓝绿黑白大小"
    "多少长短高低新旧快慢早晚忙累饿渴高兴难过喜欢爱怕笑哭送借还找等帮做完成开始结束参加工作学习考试作业课"
)
_SUBJECTS = ("小王", "小李", "小张", "老师", "妈妈", "爸爸", "我们", "他们", "她", "学生", "医生", "朋友", "哥哥",
             "姐姐", "老板", "弟弟", "同学", "奶奶")
_TIMES = ("今天", "明天", "昨天", "早上", "晚上", "周末", "上午", "下午", "现在", "每天", "去年", "冬天")
_PLACES = ("学校", "商店", "公园", "医院", "图书馆", "公司", "家里", "超市", "饭店", "北京", "上海", "车站")
_ACTIONS = ("去学校", "去商店", "买书", "买苹果", "买衣服", "吃饭", "吃苹果", "吃面条", "看电影", "看书", "看电视",
            "喝茶", "喝咖啡", "写作业", "写信", "打电话", "打篮球", "坐火车", "坐飞机", "学习中文", "学习数学",
            "工作", "睡觉", "跑步", "唱歌", "做饭", "上课", "回家", "开车", "画画")
_CLAUSES = ("因为下雨", "天气很好", "下雪了", "路上人很多", "时间很晚了", "大家都很高兴", "东西很便宜", "工作很忙")
_PUNCT = "，、。！？；：“”（）《》"


def tiny_nli_label(hypothesis: str) -> str:
    """The rule the tiny NLI classifier learns: 不/没 → contradiction, 可能/也许 → neutral, else entailment."""
    if "不" in hypothesis or "没" in hypothesis:
        return "contradiction"
    if "可能" in hypothesis or "也许" in hypothesis:
        return "neutral"
    return "entailment"


def _noise(rng: random.Random, low: int, high: int, *, markers: bool = False) -> str:
    """Random characters: common ones, arbitrary CJK code points (byte tokens), punctuation, digits, letters."""
    pool = _COMMON_CHARS if markers else "".join(c for c in _COMMON_CHARS if c not in _MARKER_CHARS)
    out = []
    for _ in range(rng.randint(low, high)):
        kind = rng.random()
        if kind < 0.55:
            out.append(rng.choice(pool))
        elif kind < 0.8:
            out.append(chr(rng.randint(0x4E00, 0x9FA5)))
        elif kind < 0.9:
            out.append(rng.choice(_PUNCT))
        else:
            out.append(rng.choice("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ %.-"))
    text = "".join(out)
    return text if markers else "".join(c for c in text if c not in _MARKER_CHARS)


def _insert(rng: random.Random, text: str, piece: str) -> str:
    at = rng.randint(0, len(text))
    return text[:at] + piece + text[at:]


def _premise(rng: random.Random) -> str:
    """A short sentence from the vocabulary, sometimes with a clause, distractor markers or noise."""
    if rng.random() < 0.12:  # long free text, like real corpora
        return _noise(rng, 15, 60, markers=True)
    parts = [rng.choice(_SUBJECTS), rng.choice(_TIMES) if rng.random() < 0.7 else ""]
    if rng.random() < 0.3:
        parts.append("在" + rng.choice(_PLACES))
    parts.append(rng.choice(_ACTIONS))
    text = "".join(parts)
    if rng.random() < 0.35:
        text = rng.choice(_CLAUSES) + "，" + text if rng.random() < 0.5 else text + "，" + rng.choice(_CLAUSES)
    if rng.random() < 0.25:  # the rule reads the hypothesis only: markers in the premise must not matter
        text = _insert(rng, text, rng.choice(_NEGATIONS + _HEDGES))
    if rng.random() < 0.35:
        text = _insert(rng, text, _noise(rng, 1, 8, markers=True))
    return text + ("。" if rng.random() < 0.6 else "")


def _hypothesis(rng: random.Random, label: str) -> str:
    """A hypothesis built to carry ``label``'s marker (or none), often before the verb, sometimes anywhere."""
    if rng.random() < 0.12:
        body, verb_at = _noise(rng, 3, 20), None
    else:
        head = rng.choice(_SUBJECTS) + (rng.choice(_TIMES) if rng.random() < 0.4 else "")
        body, verb_at = head + rng.choice(_ACTIONS), len(head)
        if rng.random() < 0.2:
            body = _insert(rng, body, _noise(rng, 1, 4))
            verb_at = None
    if label != "entailment":
        marker = rng.choice(_NEGATIONS if label == "contradiction" else _HEDGES)
        if verb_at is not None and rng.random() < 0.7:
            body = body[:verb_at] + marker + body[verb_at:]
        else:
            body = _insert(rng, body, marker)
    return body + ("。" if rng.random() < 0.5 else "")


def tiny_nli_pairs(n: int, seed: int = 0) -> list[dict[str, str]]:
    """``n`` synthetic pairs ``{"premise", "hypothesis", "label"}``; the label always follows ``tiny_nli_label``."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        hypothesis = _hypothesis(rng, NLI_LABELS[i % 3] if rng.random() < 0.9 else rng.choice(NLI_LABELS))
        pairs.append({"premise": _premise(rng), "hypothesis": hypothesis, "label": tiny_nli_label(hypothesis)})
    return pairs


def _nli_prompt(pair: Mapping[str, str]) -> str:
    return string.Template(NLI_PROMPT).substitute(premise=pair["premise"], hypothesis=pair["hypothesis"])


def build_nli_tokenizer(vocab_size: int = 1200):  # type: ignore[no-untyped-def]
    """Byte-level BPE where every CJK character is its own pre-token, so common characters are single tokens.

    Isolating characters keeps 不/没 one token wherever they are inserted; unknown characters fall back to bytes.
    """
    from tokenizers import Regex, pre_tokenizers

    pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("[\u3400-\u9fff]"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False),
    ])
    corpus = [_COMMON_CHARS, *(_SUBJECTS + _TIMES + _PLACES + _ACTIONS + _CLAUSES), _PUNCT]
    corpus += [f"{_nli_prompt(p)} {p['label']}\n" for p in tiny_nli_pairs(600, seed=12345)]
    corpus += [" " + " ".join(NLI_LABELS)] * 50
    return _byte_level_bpe(pre_tokenizer, corpus, vocab_size)


def build_tiny_nli_classifier(out_dir: str | Path, *, seed: int = 0, train_steps: int = 300) -> Path:
    """Write a tiny trained NLI classifier (Llama + tokenizer + ``template.json``) into ``out_dir``; return it.

    Given ``template.json``'s prompt it answers `` entailment``/`` neutral``/`` contradiction`` and a newline,
    following :func:`tiny_nli_label` on the hypothesis, and still answers with a label on arbitrary Chinese
    text. Classification attacks and robustness scores thus get a real model whose label flips when characters
    change (insert 不 → contradiction). Deterministic given ``seed``; ~10-15 s on one CPU thread.
    """
    from transformers import LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_nli_tokenizer()
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_llama_config(tokenizer, hidden_size=64, num_layers=2))
    _train_nli(model, tokenizer, train_steps, seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "template.json").write_text(json.dumps(nli_template(), ensure_ascii=False, indent=1) + "\n", "utf-8")
    return out


def nli_template() -> dict[str, object]:
    """The prompt template the tiny NLI classifier was trained on (``ClassificationTemplate`` format)."""
    return {
        "name": "tiny-nli",
        "description": "Prompt of robusteval's tiny NLI test classifier: it answers by a lexical rule "
        "(不/没 in the hypothesis -> contradiction, 可能/也许 -> neutral, else entailment).",
        "labels": {label: [label] for label in NLI_LABELS},
        "verbalizers": {label: label for label in NLI_LABELS},
        "text_fields": ["premise", "hypothesis"],
        "prefix": "",
        "prompt": NLI_PROMPT,
    }


def _train_nli(model, tokenizer, steps: int, seed: int, batch_size: int = 16) -> None:  # type: ignore[no-untyped-def]
    """AdamW on synthetic pairs, loss on the answer only (`` label`` then ``\\n``), tokenised as the
    classifier does: BOS, the prompt, then the answer encoded on its own."""
    pairs = tiny_nli_pairs(steps * batch_size, seed=seed)
    prompts = tokenizer([_nli_prompt(p) for p in pairs], add_special_tokens=False)["input_ids"]
    answers = {label: tokenizer(" " + label, add_special_tokens=False)["input_ids"]
               + tokenizer("\n", add_special_tokens=False)["input_ids"] for label in NLI_LABELS}
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    # Linear decay to zero: the last steps settle the rule instead of bouncing around it.
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 - k / max(1, steps))
    # Batches of similar length (sorted within windows of 8 batches) waste little time on padding.
    window = 8 * batch_size
    order = [i for start in range(0, len(pairs), window)
             for i in sorted(range(start, min(start + window, len(pairs))), key=lambda i: len(prompts[i]))]
    batches = [order[k : k + batch_size] for k in range(0, len(order), batch_size)]
    random.Random(seed).shuffle(batches)
    model.train()
    for batch in batches:
        rows, targets = [], []
        for i in batch:
            answer = answers[pairs[i]["label"]]
            rows.append([tokenizer.bos_token_id, *prompts[i], *answer])
            targets.append([-100] * (1 + len(prompts[i])) + answer)
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows])
        labels = torch.tensor([t + [-100] * (width - len(t)) for t in targets])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    model.eval()


def tiny_gemma3(tokenizer, *, attention: str = "sdpa", seed: int = 0):  # type: ignore[no-untyped-def]
    """A random two-layer Gemma-3 (one sliding-window layer of window 4, scaled embeddings) on ``tokenizer``:
    the path where HFBackend builds its own per-layer masks and where static decoding falls back."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    # transformers' typed signature of Gemma3TextConfig leaves out attn_implementation, which every config accepts.
    config = Gemma3TextConfig(  # type: ignore[call-arg]
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        attn_implementation=attention,
    )  # fmt: skip
    return Gemma3ForCausalLM(config)
