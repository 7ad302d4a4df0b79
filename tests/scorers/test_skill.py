"""Skill on real procedural tasks (docs/scoring.md, "Skill"): the stay baseline's answers give exactly 0, the
oracle's exactly 1, answers worse than doing nothing a negative skill, and the noisy oracle's skill falls strictly
as its noise grows (one-shot answers, through the parser and the episode scorer; no simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from spatialact.action_space import ActionSequence, Step
from spatialact.agents import make_agent
from spatialact.scorers import null_answer, null_score, score_answer, score_episode, skill_summary
from spatialact.taskgen import builtin_suite


@pytest.fixture(scope="module")
def default_tasks():
    return builtin_suite("default")


@pytest.fixture(scope="module")
def full_tasks():
    # 40 nav, 15 manip (a manipulation scene costs the most to build), 30 hand
    return builtin_suite("nav:40") + builtin_suite("manip:15") + builtin_suite("hand:30")


def _answers(agent, tasks, profile="paper"):
    """One-shot scores of an agent's answer texts, parsed and scored as a model's are."""
    out = []
    for t in tasks:
        agent.reset(t, mode="one-shot", seed=0)
        out.append(score_answer(agent.act({"mode": "one-shot"}).text, t, profile)["score"])
    return np.array(out)


def _s0(tasks, profile="paper"):
    return np.array([null_score(t, "one-shot", profile) for t in tasks])


@pytest.mark.parametrize("profile", ["paper", "paper+rot"])
def test_stay_is_exactly_zero_and_the_oracle_exactly_one(default_tasks, profile):
    s0 = _s0(default_tasks, profile)
    assert {t.kind for t in default_tasks} == {"nav", "manip", "hand"}
    hands_on = np.array([t.kind != "nav" for t in default_tasks])
    assert (s0 < 1).all() and (s0[hands_on] > 0.3).all()  # doing nothing earns credit: the reason for skill
    stay = _answers(make_agent("stay"), default_tasks, profile)
    assert np.array_equal(stay, s0)
    r = skill_summary(stay, s0)
    assert r["skill"] == 0.0 and r["lo"] == 0.0 and r["hi"] == 0.0
    oracle = _answers(make_agent("oracle"), default_tasks, profile)
    assert (oracle == 1.0).all()
    r = skill_summary(oracle, s0)
    assert r["skill"] == 1.0 and r["lo"] == r["hi"] == 1.0
    for kind in ("nav", "manip", "hand"):
        m = np.array([t.kind == kind for t in default_tasks])
        assert skill_summary(stay[m], s0[m])["skill"] == 0.0 and skill_summary(oracle[m], s0[m])["skill"] == 1.0


def test_worse_than_nothing_is_negative(default_tasks):
    # an answer that does not parse scores 0, below doing nothing: skill −mean s0 / (1 − mean s0)
    s0 = _s0(default_tasks)
    bad = np.array([score_answer("I cannot tell.", t)["score"] for t in default_tasks])
    assert (bad == 0).all()
    r = skill_summary(bad, s0)
    assert r["skill"] == pytest.approx(-s0.mean() / (1 - s0.mean())) and r["hi"] < 0
    # per episode it would blow up: the manipulation task whose s0 is 0.743 gives −2.89 on its own
    worst = int(np.argmax(s0))
    assert s0[worst] == pytest.approx(0.743, abs=5e-4)
    assert skill_summary(bad[worst:worst + 1], s0[worst:worst + 1])["skill"] == pytest.approx(-2.89, abs=5e-3)
    # the ground truth reversed three times over, gripper states flipped: worse than nothing on manip and hand
    hands_on = [t for t in default_tasks if t.kind != "nav"]
    rev = [ActionSequence(tuple(Step.from_signed((-3 * st.signed_counts()).tolist(),
                                                 gripper=None if st.gripper is None else 1 - st.gripper)
                                for st in t.gt.steps), t.sizes, t.gt.cap) for t in hands_on]
    s = [score_episode(a, t.gt, t.kind).total for a, t in zip(rev, hands_on)]
    assert skill_summary(s, _s0(hands_on))["skill"] < 0


def test_null_score_is_the_stay_answer_per_mode(default_tasks):
    for t in default_tasks:
        assert null_score(t) == score_episode(null_answer(t), t.gt, t.kind).total
        assert null_score(t, "closed-loop") == 0.0  # nothing executed against a ground truth of steps
        assert len(null_answer(t)) == max(1, t.n_steps) and all(s.is_stay() for s in null_answer(t))
    with pytest.raises(ValueError, match="mode"):
        null_answer(default_tasks[0], "open-loop")


def test_skill_separates_noise_levels(full_tasks):
    s0 = _s0(full_tasks)
    kinds = np.array([t.kind for t in full_tasks])
    skills = {}
    for noise in (0.5, 1, 2, 4, 8):
        s = _answers(make_agent("noisy-oracle", seed=0, noise=noise), full_tasks)
        skills[noise] = {k: skill_summary(s[kinds == k], s0[kinds == k])["skill"] for k in ("nav", "manip", "hand")}
        skills[noise]["all"] = skill_summary(s, s0)
    overall = [skills[n]["all"]["skill"] for n in (0.5, 1, 2, 4, 8)]
    assert all(a > b for a, b in zip(overall, overall[1:])), overall
    for k in ("nav", "manip", "hand"):
        per = [skills[n][k] for n in (0.5, 1, 2, 4, 8)]
        assert all(a > b for a, b in zip(per, per[1:])), (k, per)
    # neighbouring noise levels are told apart: their intervals do not overlap at the low-noise end
    assert skills[0.5]["all"]["lo"] > skills[1]["all"]["hi"] > 0
    assert skills[1]["all"]["lo"] > skills[2]["all"]["hi"]
    stay = skill_summary(_answers(make_agent("stay"), full_tasks), s0)
    assert stay["skill"] == 0.0
    rnd = _answers(make_agent("random", seed=0), full_tasks)
    r = skill_summary(rnd, s0)
    assert -0.2 < r["skill"] < 0.2 and r["lo"] < 0.1  # random is about as good as doing nothing
    for k in ("nav", "manip", "hand"):
        assert -0.3 < skill_summary(rnd[kinds == k], s0[kinds == k])["skill"] < 0.3
    # the raw score does not read so: random and stay both look like partial credit
    assert rnd.mean() > 0.25 and s0.mean() > 0.25
