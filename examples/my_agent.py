"""A worked plug-in agent (docs/agents.md, "Write your own agent"): it walks straight ahead.

From the repository root, with no change to the package:

    spatialact agents examples/my_agent.py:DollyAgent
    spatialact eval --suite nav:4 --agent examples/my_agent.py:DollyAgent --out scratch/runs/dolly
    spatialact eval --suite nav:4 --agent examples/my_agent.py:DollyAgent --mode closed-loop --out scratch/runs/dolly-cl
    spatialact questions score QUESTIONS.jsonl --agent examples/my_agent.py:DollyAgent --out scratch/runs/dolly-q

or as a module (``PYTHONPATH=examples``, then ``--agent my_agent:DollyAgent``), or installed with an entry point in
the group ``spatialact.agents`` (then ``--agent dolly``).
"""

import json


class DollyAgent:
    """Dolly In, ``count`` units a step. One-shot: the whole answer at once, one step per ground-truth step.
    Closed-loop: one step a turn, as many turns as the ground truth has steps, then Stay (which ends the episode).
    Questions: always the first option, or 1.0.

    ``count`` — units moved forward per step (1…10)."""

    name = "dolly"  # its name in records and reports

    def __init__(self, count: int = 1):
        if not 1 <= int(count) <= 10:
            raise ValueError(f"count must be 1…10, got {count}")
        self.count = int(count)

    def reset(self, task, mode="one-shot", seed=0):
        self.mode, self.n, self.taken = mode, max(1, task.n_steps), 0

    def act(self, observation):
        step = {"Dolly In": self.count}
        if self.mode == "one-shot":
            return json.dumps([step] * self.n)  # text, parsed as a model's answer is
        self.taken += 1
        return json.dumps(step if self.taken <= self.n else {"Stay": 1})

    def answer(self, question):
        return "(A)" if question["options"] else "1.0"
