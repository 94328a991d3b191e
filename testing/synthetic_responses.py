"""Seeded generator of realistic model responses, for measuring extraction and for the bench.

A response is reasoning that mentions other options, letters, numbers, pairs and lists, then a
final answer in one of the styles models use (``<answer>``, ``\\boxed{}``, ``Answer:``, ``the
answer is``, ``答案是``, ``X is correct``, ``(X)``, a bare last line…), sometimes inside or after
``<think>``, sometimes followed by a closing remark. Each response comes with the answer it
states (right or wrong), in the form an ideal extractor would return, so that
``judge(item, stated, response)`` is the reference an extractor is measured against.
"""

from __future__ import annotations

import random

_LETTERS = "ABCDEFGHIJ"
_OPTION_FORMATS = ("{l}. {t}", "{l}: {t}", "({l}) {t}", "{l} {t}")
_FILLER = (
    "Let me look at the image carefully.",
    "I will zoom into the relevant region first.",
    "The image is 640x480 pixels, so I crop the top-left quarter.",
    "After cropping the region at (120, 45) to (380, 260), the details are clearer.",
    "I count 3 rows and 4 columns in this part of the image.",
    "At first glance it looks like 12, but that reading is off by a tick.",
    "Rotating the crop by 90 degrees makes the text readable.",
    "Step 2: compare the two candidates.",
    "There are 2 objects partially hidden behind the fence.",
    ("The lighting is uneven, which makes the colours in the lower half harder to judge, so I rely on the "
     "upper half where the contrast is better."),
    ("Looking again at the original image rather than the crop, the overall layout is consistent with my "
     "first impression."),
    "The scale bar in the corner suggests that each grid square is roughly 10 units wide.",
    "I also checked the second image: the same structure appears there, shifted slightly to the right.",
    "Zooming in by a factor of 2 on the central region reveals finer detail that was not visible before.",
    "The question asks for a precise answer, so I should avoid guessing and verify each candidate.",
)
_CLOSERS = (
    "I hope this helps.", "This is consistent with what the image shows.",
    "Let me know if you need more detail.", "I am fairly confident in this.",
    "Note: option A was the closest alternative.", "Confidence: 90%.",
    "(Checked twice, 2 crops were enough.)",
)
_PREAMBLES = (
    "To answer this, I need to inspect the image.", "The question asks which answer fits the image.",
    "1. Locate the object.\n2. Measure it.\n3. Compare with the options.",
    "First, I will crop the image into 4 quadrants.",
)
_CHOICE_TEXTS = (
    ["65%", "73%", "81%", "89%", "49%", "57%"], ["10°", "355°", "40°", "5°", "25°", "55°"],
    ["red", "dark blue", "green", "yellow", "purple", "orange"],
    ["top left", "top right", "bottom left", "bottom right", "center"],
    ["3", "5", "7", "9", "11", "13"], ["the cat", "the dog", "the bird", "the horse"],
)
_TASKS_CHOICE = ("refcoco", "rotation_game", "color", "visual_search", "maze", "contrast", "instrument", "math")


def make_items(rng: random.Random, count: int = 200) -> list[dict]:
    """A pool of TIR-Bench-shaped items covering every answer kind.

    >>> items = make_items(random.Random(0), 40)
    >>> sorted({it["task"] for it in items}) == sorted(set(it["task"] for it in items))
    True
    """
    makers = (_choice_item, _choice_item, _multi_item, _int_item, _float_item, _pair_item,
              _set_item, _jigsaw_item, _ocr_item)
    return [makers[i % len(makers)](rng, i) for i in range(count)]


def _choice_item(rng, i):
    texts = list(rng.choice(_CHOICE_TEXTS))
    k = rng.randint(min(3, len(texts)), len(texts))
    fmt = rng.choice(_OPTION_FORMATS)
    options = "\n".join(fmt.format(l=_LETTERS[j], t=texts[j]) for j in range(k))
    return {"id": i, "task": rng.choice(_TASKS_CHOICE), "answer": _LETTERS[rng.randrange(k)],
            "prompt": f"Which option matches the highlighted region?\n{options}", "image_1": f"data/x/{i}.jpg",
            "image_2": None, "meta_data": {}, "_options": texts[:k]}


def _multi_item(rng, i):
    k = rng.randint(4, 5)
    answer = "".join(sorted(rng.sample(_LETTERS[:k], rng.randint(2, 3))))
    options = "\n".join(f"{_LETTERS[j]}. Statement {j + 1} about the figure." for j in range(k))
    return {"id": i, "task": "symbolic", "answer": answer, "image_1": f"data/symbolic/{i}.png",
            "prompt": "Which statements are true? Select more than one option, e.g. ABC.\n" + options,
            "meta_data": {}}


def _int_item(rng, i):
    answer = rng.choice([rng.randint(0, 20), rng.randint(20, 200), rng.randint(1000, 99999)])
    return {"id": i, "task": rng.choice(("instrument", "math", "maze", "color")), "answer": rng.choice(
        [answer, str(answer)]), "prompt": "How many? Answer as an integer.", "image_1": f"data/i/{i}.jpg",
        "meta_data": {}}


def _float_item(rng, i):
    return {"id": i, "task": rng.choice(("instrument", "math")), "answer": str(rng.randint(1, 400) / 4 + 0.5),
            "prompt": "What is the reading? Answer with one decimal.", "image_1": f"data/f/{i}.jpg",
            "meta_data": {}}


def _pair_item(rng, i):
    if rng.random() < 0.1:
        return {"id": i, "task": "word_search", "answer": str(rng.randint(1, 9)), "meta_data": {},
                "prompt": "How many times does the character appear?", "image_1": f"data/w/{i}.png"}
    return {"id": i, "task": "word_search", "answer": f"[{rng.randint(1, 12)}, {rng.randint(1, 12)}]",
            "prompt": "In which row and column does the character appear? Answer as [row, column].",
            "image_1": f"data/word_search/{i}.png", "meta_data": {}}


def _set_item(rng, i):
    n, m = rng.randint(3, 5), rng.randint(3, 5)
    gold = sorted(rng.sample(range(1, n * m + 1), rng.randint(2, 7)))
    return {"id": i, "task": "spot_difference", "answer": ", ".join(map(str, gold)),
            "prompt": f"Output the list of patch indices where the two images differ. Note that in this "
                      f"image, n is {n} and m is {m}", "image_1": f"data/s/{i}_left.png",
            "image_2": f"data/s/{i}_right.png", "meta_data": {}}


def _jigsaw_item(rng, i):
    n = rng.choice((2, 3, 3, 4))
    order = list(range(1, n * n + 1))
    rng.shuffle(order)
    return {"id": i, "task": "jigsaw", "answer": str(order), "meta_data": {"difficulty": n},
            "prompt": f"The original image has been divided into {n}×{n} pieces and scrambled. Output the "
                      "correct order of the pieces, row by row.", "image_1": f"data/jigsaw/{i}.jpg"}


def _ocr_item(rng, i):
    word = rng.choice(["Sunset Boulevard", "EXIT", "Main St", "Café Luna", "OPEN 24H"])
    return {"id": i, "task": "ocr", "answer": word, "prompt": "What is the text on the sign?",
            "image_1": f"data/ocr/{rng.choice([i, 60, 62, 160])}.jpg", "meta_data": {}}


# ---- responses -----------------------------------------------------------------------------

def _kind(item: dict) -> str:
    from lookcloser.rewards.tir_extract import answer_kind
    return answer_kind(item["task"], str(item["answer"]))


def _stated(item: dict, rng: random.Random) -> str:
    """Canonical stated answer: right 60% of the time, else a plausible wrong one."""
    kind, answer = _kind(item), str(item["answer"])
    right = rng.random() < 0.6
    if kind == "choice":
        letters = _LETTERS[:len(item.get("_options") or "ABCD")]
        return answer if right else rng.choice([x for x in letters if x != answer] or ["A"])
    if kind == "multi":
        return answer if right else "".join(sorted(rng.sample("ABCD", rng.randint(1, 3))))
    if kind in ("int", "float"):
        return answer if right else str(int(float(answer)) + rng.randint(1, 9))
    if kind == "pair":
        return answer if right else f"[{rng.randint(1, 12)}, {rng.randint(1, 12)}]"
    if kind in ("set", "jigsaw"):
        numbers = [int(x) for x in answer.strip("[]").split(",")]
        if not right and kind == "jigsaw":
            rng.shuffle(numbers)
        elif not right:
            numbers.append(rng.randint(1, 25))
        return ", ".join(map(str, numbers))
    return answer if right else "Sunrise Avenue"


def _reasoning(item: dict, rng: random.Random) -> str:
    kind, sentences = _kind(item), list(rng.sample(_FILLER, rng.randint(3, 10)))
    if rng.random() < 0.3:
        sentences.append(rng.choice(_PREAMBLES))
    if kind == "choice" and rng.random() < 0.3:  # a recap of every option, the way models list them
        sentences.append("\n".join(f"- {_LETTERS[j]}. {t}: {rng.choice(['too large', 'possible', 'too small'])}"
                                    for j, t in enumerate(item["_options"])))
    if kind in ("choice", "multi"):
        letters = _LETTERS[:len(item.get("_options") or "ABCD")]
        for letter in rng.sample(letters, min(len(letters), rng.randint(1, 3))):
            sentences.append(rng.choice((
                f"Option {letter} seems unlikely.", f"{letter} does not match the scale.",
                f"Comparing {letter} with the others, it is too large.", f"({letter}) is a distractor.",
                f"Statement {letter} needs a closer look.")))
    elif kind == "pair":
        sentences.append(f"The character near ({rng.randint(1, 9)}, {rng.randint(1, 9)}) looks similar.")
    elif kind == "set":
        sentences.append(f"Patches {rng.randint(1, 5)}, {rng.randint(6, 9)} and 10 look identical.")
    elif kind == "jigsaw":
        sentences.append(f"Piece {rng.randint(1, 9)} has the sky, so it goes in the first row: 1, 2, 3 maybe.")
    elif kind in ("int", "float"):
        sentences.append(f"Each tick is {rng.randint(1, 5)} units and the needle is past {rng.randint(10, 90)}.")
    rng.shuffle(sentences)
    return " ".join(sentences)


def _choice_final(item, stated, rng):
    options = item.get("_options") or []
    text = options[_LETTERS.index(stated)] if stated in _LETTERS[:len(options)] else ""
    styles = [f"<answer>{stated}</answer>", f"\\boxed{{{stated}}}", f"The final answer is $\\boxed{{{stated}}}$.",
              f"Answer: {stated}", f"**Answer:** {stated}", f"Final Answer: {stated}. {text}",
              f"The answer is {stated}.", f"Therefore, the correct option is ({stated}) {text}.",
              f"答案是{stated}", f"所以答案为：{stated}。", f"{stated} is correct.", f"So {stated} is the answer.",
              f"This corresponds to ({stated}).", f"\n{stated}", f"Your option: {stated}\nReason: it fits best.",
              f"**{stated}. {text}**", f"The correct answer is **{stated}**.",
              f"**Final Answer**\n\n{stated}", f"Answer: {stated}, because the other options do not fit.",
              f"Answer: ({stated.lower()})", f"经过分析，选项A不对。答案：{stated}",
              f"I choose {stated}.", f"Answer: {stated} ({text})",
              f"Looking at all options, **{stated}** is the best match.", f"The correct choice is {stated}) {text}",
              f"Option {stated}.", f"So my final answer: option **{stated}**", f"I'd go with {stated}.",
              f"The best answer is ({stated}) {text}. Options A and C are too small.", f"【答案】{stated}",
              f"Answer: {stated}\n\nExplanation: A is too small and C is too large."]
    if text and rng.random() < 0.08:  # the option's text instead of its letter
        return rng.choice([f"The answer is {text}.", f"<answer>{text}</answer>", f"Answer: {text}"])
    return rng.choice(styles)


def _final(item: dict, stated: str, rng: random.Random) -> str:
    kind = _kind(item)
    if kind == "choice":
        return _choice_final(item, stated, rng)
    if kind == "multi":
        spaced = rng.choice([stated, ", ".join(stated), " ".join(stated),
                             ", ".join(stated[:-1]) + " and " + stated[-1] if len(stated) > 1 else stated])
        return rng.choice([f"<answer>{spaced}</answer>", f"\\boxed{{{stated}}}", f"Answer: {spaced}",
                           f"The answer is {spaced}.", f"答案是{stated}", f"The true statements are {spaced}.",
                           f"Final answer: {spaced}; the others are false.", f"**Answer:** {spaced}"])
    if kind in ("int", "float"):
        return rng.choice([f"<answer>{stated}</answer>", f"\\boxed{{{stated}}}", f"Answer: {stated}",
                           f"The reading is approximately {stated} degrees.", f"答案为{stated}",
                           f"So the final answer is **{stated}**.", f"There are {stated} in total.",
                           f"Answer: {stated} (the needle is just past the {rng.randint(1, 9)}th tick)",
                           f"The final answer is ${stated}$.", f"**Final Answer:** {stated} units",
                           f"Therefore, the value is **{stated}**.", f"{stated}",
                           f"Answer: {stated}\n\nExplanation: the needle is between 10 and 15 small ticks."])
    if kind == "pair":
        r, c = stated.strip("[]").split(", ")
        spelled = rng.choice([stated, f"({r}, {c})", f"row {r}, column {c}", f"{r}, {c}", f"第{r}行第{c}列"])
        return rng.choice([f"<answer>{spelled}</answer>", f"Answer: {spelled}", f"The character is at {spelled}.",
                           f"\\boxed{{{r}, {c}}}", f"Final answer: {spelled}",
                           f"Scanning row by row from (1, 1), I found it.\nAnswer: {spelled}",
                           f"It appears at (row={r}, col={c}).", f"Position: [{r}, {c}] (row, column)",
                           f"The character is located in row {r} and column {c}."])
    if kind == "set":
        parts = stated.split(", ")
        spelled = rng.choice([stated, f"[{stated}]", ", ".join(parts[:-1]) + " and " + parts[-1]
                              if len(parts) > 1 else stated])
        return rng.choice([f"<answer>{spelled}</answer>", f"Answer: {spelled}",
                           f"The differing patches are {spelled}.", f"\\boxed{{{spelled}}}",
                           f"Answer: patches {spelled} ({len(parts)} in total)",
                           "Differences found in patches " + ", ".join("#" + p for p in parts) + "."])
    if kind == "jigsaw":
        numbers, n = stated.split(", "), item["meta_data"]["difficulty"]
        rows = [numbers[i * n:(i + 1) * n] for i in range(n)]
        spelled = rng.choice([f"[{stated}]", " ".join(numbers), "[" + ", ".join(
            "[" + ", ".join(r) + "]" for r in rows) + "]", "\n".join(" ".join(r) for r in rows),
            "\n".join(f"Row {i + 1}: {', '.join(r)}" for i, r in enumerate(rows))])
        return rng.choice([f"<answer>{spelled}</answer>", f"Answer:\n{spelled}", f"Final order: {spelled}",
                           f"The correct order is:\n{spelled}",
                           f"Final answer: the order is {' '.join(numbers)} ({n}×{n} grid).",
                           "\n".join("| " + " | ".join(r) + " |" for r in rows),
                           f"The correct arrangement (row by row) is: {stated}."])
    return rng.choice([f"The text reads \"{stated}\".", f"<answer>{stated}</answer>", f"Answer: {stated}"])


def realistic_response(item: dict, rng: random.Random) -> tuple[str, str]:
    """``(response, stated_answer)`` for an item.

    >>> rng = random.Random(1)
    >>> item = make_items(rng, 1)[0]
    >>> response, stated = realistic_response(item, rng)
    >>> isinstance(response, str) and stated in "ABCDEF"
    True
    """
    stated = _stated(item, rng)
    reasoning, final = _reasoning(item, rng), _final(item, stated, rng)
    roll = rng.random()
    if roll < 0.3:
        body = f"<think>{reasoning}</think>\n{final}"
    elif roll < 0.4:
        body = f"<think>\n{reasoning}\n</think>\n\n{_reasoning(item, rng)}\n\n{final}"
    else:
        body = f"{reasoning}\n\n{final}"
    if rng.random() < 0.25 and not final.startswith("\n"):
        body += "\n" + rng.choice(_CLOSERS)
    return body, stated


def mir_response(rng: random.Random) -> tuple[str, str]:
    """A MIR-style response and its gold letter.

    >>> text, gold = mir_response(random.Random(0)); gold in "ABCD"
    True
    """
    gold = rng.choice("ABCD")
    final = rng.choice([f"Your option: {gold}\nReason: the tower is larger.", f"\\boxed{{{gold}}}",
                        f"Based on the above, the correct answer is {gold}",
                        f"<conclusion>{gold}</conclusion>", f"Answer: ({gold.lower()})"])
    return f"{rng.choice(_FILLER)} Option A is unlikely. {final}", gold


def disbench_response(rng: random.Random) -> tuple[str, list[str]]:
    """A DISBench agent answer and its gold ids.

    >>> text, gold = disbench_response(random.Random(0)); len(gold) >= 1
    True
    """
    gold = [str(rng.randint(10**9, 10**10)) for _ in range(rng.randint(1, 6))]
    chosen = gold[: rng.randint(1, len(gold))] + ([str(rng.randint(10**9, 10**10))] if rng.random() < 0.5 else [])
    final = rng.choice(['<answer>["' + '", "'.join(chosen) + '"]</answer>', "Photo ids: " + ", ".join(chosen),
                        "```json\n" + str(chosen).replace("'", '"') + "\n```"])
    return f"I searched for the event and filtered by date. {final}", gold


def imagemining_response(rng: random.Random, answer: str) -> str:
    """An ImageMining-style response stating ``answer`` (or a wrong one).

    >>> imagemining_response(random.Random(1), "Red")
    'I searched the image online. <answer>Red</answer>'
    """
    said = answer if rng.random() < 0.6 else "Blue"
    return rng.choice([f"I searched the image online. <answer>{said}</answer>",
                       f"After reading the page, the answer is:\n{said}", f"Final answer: {said}"])
