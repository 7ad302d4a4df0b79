"""The local Hugging Face agent on tiny random-weight models of real architectures (LLaVA, Idefics3; Qwen2-VL where
torchvision is installed), built offline by tests/_tiny_vlm.py: the prompt and images it feeds the model, greedy
decoding, a ParseResult per episode, determinism, one-line refusals of what cannot load, and batched generation
(the batcher's policy on a stand-in generate; a batch of 8 on the tiny models answers as 8 turns one at a time;
`eval --concurrency 4` really batches)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _fabricate import make_task  # noqa: E402
from _tiny_vlm import BUILDERS  # noqa: E402
from spatialact.action_space import ParseResult  # noqa: E402
from spatialact.agents import AgentConfigError, make_agent  # noqa: E402
from spatialact.agents.hf_agent import choose_device, choose_dtype  # noqa: E402

ARCHS = ["llava", "idefics3"] + (["qwen2_vl"] if importlib.util.find_spec("torchvision") else [])
# image tokens per image: LLaVA (32/8)^2 patches (CLS dropped); Idefics3 (32/8)^2 / 2^2 after the pixel shuffle
IMAGE_TOKENS = {"llava": 16, "idefics3": 4}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_vlms")
    return {name: str(BUILDERS[name](root / name)) for name in ARCHS}


def _obs(mode="one-shot"):
    rng = np.random.default_rng(11)
    return {"rgb": rng.integers(0, 256, (40, 48, 3), dtype=np.uint8),
            "goal_rgb": rng.integers(0, 256, (40, 48, 3), dtype=np.uint8), "pose": np.eye(4), "mode": mode,
            "step_index": 0}


@pytest.mark.parametrize("arch", ARCHS)
def test_each_architecture_answers_with_a_parse_result_deterministically(models, arch):
    task = make_task()
    agent = make_agent("hf", model=models[arch], max_new_tokens=12, seed=7)
    agent.reset(task)
    turn = agent.act(_obs())
    assert isinstance(turn.parse, ParseResult) and turn.error is None and turn.cost_usd == 0.0
    assert turn.parse.ok is False and turn.parse.error  # random weights: meaningless text, a reason why
    assert 1 <= turn.usage["completion_tokens"] <= 12 and turn.usage["prompt_tokens"] > 1000
    inputs, _, n_images = agent.build_inputs(_obs())
    assert turn.usage["prompt_tokens"] == inputs["input_ids"].shape[1] and n_images == 2
    again = make_agent("hf", model=models[arch], max_new_tokens=12, seed=7)
    again.reset(task)
    assert again.act(_obs()).text == turn.text  # same seed, same answer
    d = agent.describe()
    assert d["agent"] == "hf" and d["model"] == models[arch] and d["params"]["decoding"] == "greedy"
    assert d["params"]["device"] == choose_device() and d["params"]["architecture"].endswith("ForConditionalGeneration")


@pytest.mark.parametrize("arch", ["llava", "idefics3"])
def test_the_prompt_the_images_and_the_greedy_loop(models, arch):
    from PIL import Image

    task = make_task()
    agent = make_agent("hf", model=models[arch], max_new_tokens=4, seed=0)
    agent.reset(task)
    obs = _obs()
    inputs, text, _ = agent.build_inputs(obs)
    proc, net = agent.processor, agent.network
    assert "0.0626 metres per step" in text and '"step_1"' in text and "Roll CCW" in text
    if arch == "llava":  # its template has no system role: the system text opens the user message
        assert text.startswith("USER: You are an expert embodied agent") and text.endswith("ASSISTANT:")
        assert agent.merged_system
    else:
        assert text.startswith("<|im_start|>system\nYou are an expert embodied agent")
        assert text.endswith("<|im_start|>assistant\n") and not agent.merged_system
    image_id = proc.tokenizer.convert_tokens_to_ids("<image>")
    assert int((inputs["input_ids"] == image_id).sum()) == 2 * IMAGE_TOKENS[arch]
    # the pixels are the observation's two views, preprocessed by the model's own image processor
    ref = proc.image_processor(images=[Image.fromarray(obs["rgb"]), Image.fromarray(obs["goal_rgb"])],
                               return_tensors="pt")["pixel_values"]
    assert torch.equal(inputs["pixel_values"].reshape(ref.shape), ref)
    # greedy decoding: the argmax of the next-token logits, step by step, without a cache
    ids = inputs["input_ids"]
    extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
    eos = net.generation_config.eos_token_id
    manual = []
    with torch.inference_mode():
        for _ in range(4):
            logits = net(input_ids=ids, attention_mask=torch.ones_like(ids), **extra).logits[0, -1]
            nxt = int(torch.argmax(logits))
            manual.append(nxt)
            if nxt == eos:
                break
            ids = torch.cat([ids, torch.tensor([[nxt]])], dim=1)
    turn = agent.act(obs)
    assert turn.usage["completion_tokens"] == len(manual)
    assert turn.text == proc.tokenizer.decode(manual, skip_special_tokens=True)


def test_cues_reach_the_model(models):
    task = make_task()
    agent = make_agent("hf", model=models["idefics3"], max_new_tokens=2, cues="matches")
    agent.reset(task)
    _, text, n_images = agent.build_inputs(_obs())
    assert n_images == 3 and "Cue (correspondences)" in text
    assert agent.describe()["params"]["prompt_version"].endswith("+cues=matches")


def test_eval_runs_a_local_model_end_to_end(models, tmp_path, capsys):
    pytest.importorskip("pybullet")
    from spatialact.cli.main import main

    def run(out, mode="one-shot"):
        assert main(["eval", "--suite", "nav:1", "--size", "32", "--renderer", "tiny", "--agent", "hf",
                     "--agent-arg", f"model={models['llava']}", "--agent-arg", "max_new_tokens=8", "--mode", mode,
                     "--no-progress", "--json", "--out", str(out)]) == 0
        return json.loads((out / "results.jsonl").read_text().splitlines()[0])

    a, b = run(tmp_path / "a"), run(tmp_path / "b")
    assert a["agent"] == "hf" and a["model"] == models["llava"]
    assert a["reason"] == "parse_error" and a["score"] == 0.0 and a["error"] is None  # a result, not a failure
    assert a["usage"]["prompt_tokens"] > 1000 and 1 <= a["usage"]["completion_tokens"] <= 8
    assert a["response"] == b["response"]  # deterministic across runs
    assert a["provenance"]["agent"]["params"]["dtype"] == "float32"
    c = run(tmp_path / "c", "closed-loop")
    assert c["mode"] == "closed-loop" and c["usage"]["turns"] == 1 and c["reason"] == "parse_error"


def test_what_cannot_load_is_refused_in_one_line(tmp_path, capsys, models):
    from spatialact.cli.main import main

    capsys.readouterr()
    out = tmp_path / "run"
    assert main(["eval", "--suite", "nav:1", "--agent", "hf", "--agent-arg", f"model={tmp_path / 'nope'}",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("spatialact") and "nope': no such model folder" in err
    assert not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(AgentConfigError, match="hf: cannot load the processor of"):
        make_agent("hf", model=str(empty))
    # a text-only model (a Llama without a vision tower) is not an image-text-to-text model
    from _tiny_vlm import byte_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = byte_tokenizer(["<s>", "</s>"], eos="</s>", pad="</s>", bos="<s>")
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}{% endfor %}"
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                 num_attention_heads=2)).save_pretrained(tmp_path / "llama")
    tok.save_pretrained(tmp_path / "llama")
    with pytest.raises(AgentConfigError, match="as an image-text-to-text model"):
        make_agent("hf", model=str(tmp_path / "llama"))
    with pytest.raises(AgentConfigError, match="a model is required"):
        make_agent("hf")
    with pytest.raises(AgentConfigError, match="dtype 'float8' is not one of auto"):
        make_agent("hf", model=models["llava"], dtype="float8")
    with pytest.raises(AgentConfigError, match="max_new_tokens must be a whole number"):
        make_agent("hf", model=models["llava"], max_new_tokens=0)
    with pytest.raises(AgentConfigError, match="cues: unknown cue"):
        make_agent("hf", model=models["llava"], cues="colour")


def _hub_cache(root, repo_id: str, model_dir) -> str:
    """The Hugging Face cache layout (``models--org--name/refs/main`` naming a snapshot that holds the files) with
    ``model_dir``'s files in it: what ``hf download`` leaves."""
    import shutil

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    return str(root)


def test_a_hub_id_offline_loads_from_the_cache_or_is_refused_at_once(models, tmp_path):
    """Offline (the endpoint refuses connections, as on this machine), a cached Hub id loads from the cache and an
    uncached one is refused in one line naming the cache, instead of minutes of from_pretrained's retries. Run in a
    fresh process: huggingface_hub reads HF_HUB_CACHE and HF_ENDPOINT when it is imported."""
    import os
    import socket
    import subprocess
    import sys

    cache = _hub_cache(tmp_path / "hub", "tiny-org/tiny-llava", models["llava"])
    with socket.socket() as s:  # a port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        "from spatialact.agents import AgentConfigError, make_agent\n"
        "a = make_agent('hf', model='tiny-org/tiny-llava', dtype='float32')\n"
        "print('loaded', type(a.network).__name__, a.describe()['params']['local_files_only'])\n"
        "for kw in ({}, {'local_files_only': True}):\n"
        "    try:\n"
        "        make_agent('hf', model='tiny-org/not-cached', **kw)\n"
        "    except AgentConfigError as e:\n"
        "        print('refused', e)\n")
    env = dict(os.environ, HF_HUB_CACHE=cache, HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HUB_OFFLINE="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "loaded LlavaForConditionalGeneration False"  # the user's setting is what is recorded
    assert lines[1] == (f"refused hf: 'tiny-org/not-cached' is not in the Hugging Face cache ({cache}) and "
                        f"http://127.0.0.1:{port} cannot be reached: download it on a machine with a network "
                        "(hf download tiny-org/not-cached) or name a local folder")
    assert lines[2] == (f"refused hf: 'tiny-org/not-cached' is not in the Hugging Face cache ({cache}) and "
                        "local_files_only=true forbids downloading it")
    # HF_HUB_OFFLINE=1: the same, without trying the network
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(env, HF_HUB_OFFLINE="1"), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines()[0].startswith("loaded") and "HF_HUB_OFFLINE is set" in out.stdout


def test_device_and_dtype_for_the_machine():
    if torch.cuda.is_available():
        assert choose_device() == "cuda" and choose_dtype("auto", "cuda") in (torch.bfloat16, torch.float16)
    else:
        assert choose_device() in ("cpu", "mps")
        with pytest.raises(AgentConfigError, match="no CUDA GPU is visible"):
            choose_device("cuda")
    assert choose_dtype("auto", "cpu") == torch.float32 and choose_dtype("auto", "mps") == torch.float16
    assert choose_dtype("bf16", "cpu") == torch.bfloat16 and choose_device("cpu") == "cpu"
    with pytest.raises(AgentConfigError, match="is not a torch device"):
        choose_device("gpu please")


# ----- batched generation -------------------------------------------------------------------------------------------
def _echo_batcher(window_s: float, log: list):
    """A Batcher whose generate stands in for a model: each request's answer is its own text; ``log`` gets each
    batch's texts."""
    from spatialact.agents.hf_batch import Batcher, Generated

    def run(requests):
        log.append([r.text for r in requests])
        if any(r.text == "boom" for r in requests):
            raise RuntimeError("generate failed")
        return [Generated(r.text, len(r.text), r.max_new_tokens, len(requests)) for r in requests]

    return Batcher(run, window_s=window_s)


def _at_once(batcher, requests: list, barrier: bool = True) -> list:
    """Each request submitted from a thread of its own, all of them being prepared at the same time (a barrier in
    prepare); what each caller got back (an answer or the exception), in order."""
    import threading

    gate = threading.Barrier(len(requests)) if barrier else None
    got = [None] * len(requests)

    def lane(i):
        def prepare():
            if gate is not None:
                gate.wait(timeout=30)
            return requests[i]

        try:
            got[i] = batcher.generate(prepare)
        except Exception as e:  # noqa: BLE001
            got[i] = e

    threads = [threading.Thread(target=lane, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return got


def test_the_batcher_gathers_what_is_in_flight_up_to_batch_size():
    import time

    from spatialact.agents.hf_batch import HFRequest

    log: list = []
    b = _echo_batcher(5.0, log)
    # one caller at a time never waits for the window (5 s here) and gets a batch of one
    t0 = time.perf_counter()
    for i in range(3):
        a = b.generate(lambda i=i: HFRequest(f"q{i}", [], 8, batch_size=4))
        assert (a.text, a.batch, a.completion_tokens) == (f"q{i}", 1, 8)
    assert time.perf_counter() - t0 < 2.0 and b.calls == 3 and b.peak == 1
    # five callers at once with batch_size 2: batches of 2, 2 and the last one alone (after the window)
    log.clear()
    b = _echo_batcher(0.3, log)
    got = _at_once(b, [HFRequest(f"r{i}", [], 8, batch_size=2) for i in range(5)])
    assert [g.text for g in got] == [f"r{i}" for i in range(5)]  # each caller its own answer
    assert sorted(len(x) for x in log) == [1, 2, 2] and b.sizes == {2: 2, 1: 1} and b.peak == 5
    assert sorted(t for x in log for t in x) == [f"r{i}" for i in range(5)]  # each asked once
    # eight at once with batch_size 8: one generate
    log.clear()
    got = _at_once(b, [HFRequest(f"s{i}", [], 8, batch_size=8) for i in range(8)])
    assert len(log) == 1 and [g.batch for g in got] == [8] * 8 and [g.text for g in got] == [f"s{i}" for i in range(8)]


def test_only_requests_with_the_same_settings_share_a_batch_and_errors_reach_each_caller():
    from spatialact.agents.hf_batch import HFRequest

    log: list = []
    b = _echo_batcher(0.2, log)
    reqs = [HFRequest(f"n{i}", [], 4 if i % 2 else 16, batch_size=8) for i in range(6)]
    got = _at_once(b, reqs)
    assert [g.completion_tokens for g in got] == [16, 4, 16, 4, 16, 4]
    assert sorted(sorted(x) for x in log) == [["n0", "n2", "n4"], ["n1", "n3", "n5"]]
    log.clear()
    got = _at_once(b, [HFRequest("ok", [], 4, batch_size=8), HFRequest("boom", [], 4, batch_size=8)])
    assert len(log) == 1 and all(isinstance(g, RuntimeError) and str(g) == "generate failed" for g in got)
    # a prepare that fails is the caller's exception, and the batcher goes on serving
    with pytest.raises(ValueError, match="no prompt"):
        b.generate(lambda: (_ for _ in ()).throw(ValueError("no prompt")))
    assert b.generate(lambda: HFRequest("after", [], 4)).text == "after"


def _turn_cases(model: str) -> list:
    """Eight (agent, observation) pairs whose prompts differ in length (nav and manip tasks in three answer
    formats) and in image count (two agents with the correspondence cue: three images), each observation its own
    pixels. Agents are built with batch_size=8."""
    cases = []
    layouts = [(k, f) for k in ("nav", "manip") for f in ("stepped", "flat", "vector")] + [("nav", "stepped"),
                                                                                          ("manip", "vector")]
    for i, (kind, fmt) in enumerate(layouts):
        agent = make_agent("hf", model=model, max_new_tokens=12, batch_size=8, seed=3,
                           cues="matches" if i >= 6 else None)
        agent.reset(make_task(f"t{i}", kind=kind, answer_format=fmt))
        rng = np.random.default_rng(100 + i)
        obs = _obs() if i >= 6 else {  # _obs's two views have correspondences enough for the cue image
            "rgb": rng.integers(0, 256, (40, 48, 3), dtype=np.uint8),
            "goal_rgb": rng.integers(0, 256, (40, 48, 3), dtype=np.uint8), "pose": np.eye(4), "mode": "one-shot",
            "step_index": 0}
        cases.append((agent, obs))
    return cases


@pytest.mark.parametrize("arch", ["llava", "idefics3"])
def test_a_greedy_batch_of_8_answers_as_8_turns_one_at_a_time(models, arch):
    """Left padding, the attention mask and the position ids it gives: each row of one generate over 8 prompts of
    different lengths and image counts decodes the tokens it decodes alone (float32, CPU), and records the same
    usage."""
    from spatialact.agents.hf_batch import HFRequest

    cases = _turn_cases(models[arch])
    alone = [agent.act(obs) for agent, obs in cases]  # one at a time: batches of one
    assert all(t.info["batch"] == 1 for t in alone)
    prepared = [agent.prepare(obs) for agent, obs in cases]
    assert len({len(text) for text, _ in prepared}) >= 6 and {len(im) for _, im in prepared} == {2, 3}
    batcher = cases[0][0].batcher
    assert all(agent.batcher is batcher for agent, _ in cases)  # one model, one batcher, per process
    calls = batcher.calls
    got = _at_once(batcher, [HFRequest(text, im, 12, 8, 3) for text, im in prepared])
    assert batcher.calls == calls + 1 and [g.batch for g in got] == [8] * 8
    assert [g.text for g in got] == [t.text for t in alone]
    assert [(g.prompt_tokens, g.completion_tokens) for g in got] == \
        [(t.usage["prompt_tokens"], t.usage["completion_tokens"]) for t in alone]
    # the rows differ (prompt lengths; LLaVA's texts too — the tiny Idefics3 answers these eight alike): an answer
    # handed to the wrong caller would show
    assert len({t.usage["prompt_tokens"] for t in alone}) >= 6
    assert arch != "llava" or len({t.text for t in alone}) > 1
    # the prompt lengths are the unpadded ones: what the processor makes of each prompt alone
    for (agent, obs), t in zip(cases, alone):
        assert t.usage["prompt_tokens"] == agent.build_inputs(obs)[0]["input_ids"].shape[1]


def test_batch_size_is_checked_and_recorded(models):
    with pytest.raises(AgentConfigError, match="batch_size must be a whole number from 1 to 1024"):
        make_agent("hf", model=models["llava"], batch_size=0)
    with pytest.raises(AgentConfigError, match="batch_size must be a whole number"):
        make_agent("hf", model=models["llava"], batch_size=True)
    assert make_agent("hf", model=models["llava"], batch_size=8).describe()["params"]["batch_size"] == 8
    assert make_agent("hf", model=models["llava"]).describe()["params"]["batch_size"] == 1


def test_eval_with_concurrency_batches_the_turns_of_episodes_in_flight(models, tmp_path):
    """`eval --concurrency 4 --agent-arg batch_size=4`: the episodes' turns share generate calls (fewer calls than
    turns, some batch above one), and every answer is the one the same episode gets at --concurrency 1."""
    pytest.importorskip("pybullet")
    from spatialact.cli.main import main

    batcher = make_agent("hf", model=models["llava"], max_new_tokens=8).batcher  # the one the run's agents share

    def run(out, *extra):
        calls, sizes = batcher.calls, sum(batcher.sizes.values(), 0)
        assert main(["eval", "--suite", "nav:8", "--size", "32", "--renderer", "tiny", "--agent", "hf",
                     "--agent-arg", f"model={models['llava']}", "--agent-arg", "max_new_tokens=8", "--workers", "1",
                     "--no-progress", "--json", "--out", str(out), *extra]) == 0
        records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        return {r["task_id"]: r for r in records}, batcher.calls - calls

    before = dict(batcher.sizes)
    batched, calls = run(tmp_path / "b", "--concurrency", "4", "--agent-arg", "batch_size=4")
    new_sizes = {k: v - before.get(k, 0) for k, v in batcher.sizes.items() if v - before.get(k, 0)}
    assert len(batched) == 8 and calls < 8 and max(new_sizes) > 1, new_sizes
    assert sum(k * v for k, v in new_sizes.items()) == 8  # every turn asked once
    alone, calls1 = run(tmp_path / "a", "--concurrency", "1")
    assert calls1 == 8
    assert {k: (r["response"], r["usage"]) for k, r in batched.items()} == \
        {k: (r["response"], r["usage"]) for k, r in alone.items()}
    assert all(r["provenance"]["agent"]["params"]["batch_size"] == 4 for r in batched.values())
