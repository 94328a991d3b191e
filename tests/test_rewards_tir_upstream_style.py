"""Extraction on responses shaped like the real model outputs in TIR-Bench's own few-shot
extraction prompts (upstream demo_prompts.py), rewritten and condensed: bold answers, headings
over the answer, JSON blocks, Chinese, option text instead of letters, closing remarks.
``score(official)`` must equal ``judge`` on the answer the response states."""

from __future__ import annotations

import pytest

from bench.evalscope_baseline import evalscope_extract
from lookcloser.rewards.tir_bench import judge, score

J6 = {"task": "jigsaw", "answer": str(list(range(1, 37))), "meta_data": {"difficulty": 6}, "prompt": "6×6"}
J5 = {"task": "jigsaw", "answer": str(list(range(1, 26))), "meta_data": {"difficulty": 5}, "prompt": "5×5"}
SEQ36 = ", ".join(str(i) for i in [5, 8, 10, 2, 11, 6, 7, 17, 9, 4, 18, 12, 14, 25, 13, 22, 24, 3, 23, 16, 20, 21,
                                    31, 1, 30, 27, 26, 29, 25, 32, 36, 35, 28, 33, 34, 19])
ROWS = SEQ36.split(", ")


def ch(answer, options, fmt="{l}. {t}", task="math"):
    lines = "\n".join(fmt.format(l="ABCDEFG"[i], t=t) for i, t in enumerate(options))
    return {"task": task, "answer": answer, "prompt": "Q?\n" + lines}


CASES = [
 (J6, "One consistent way to put the 6 × 6 puzzle together, reading row by row from the top left, gives this piece order:\n\n**" + SEQ36 + "**", SEQ36),
 (J6, "Below is a plausible 6 × 6 reconstruction, listed row by row:\n\n**" + ",\n".join(", ".join(ROWS[i*6:i*6+6]) for i in range(6)) + "**\n\nThis keeps the jerseys on the left and the trees along the right edge, so the scene is coherent.", SEQ36),
 (J5, "A plausible order that lines up the donut and the coffee cup:\n\n**1, 2, 4, 5, 9, 6, 7, 8, 10, 20, 11, 3, 12, 13, 15, 21, 14, 17, 18, 19, 16, 22, 23, 24, 25**\n\nRead it left to right, top to bottom:\n\n* Row 1 → 1 2 4 5 9\n* Row 2 → 6 7 8 10 20\n* Row 3 → 11 3 12 13 15\n* Row 4 → 21 14 17 18 19\n* Row 5 → 16 22 23 24 25\n\nIn that order the picture shows the donut on the napkin and the cup on the right.", "1, 2, 4, 5, 9, 6, 7, 8, 10, 20, 11, 3, 12, 13, 15, 21, 14, 17, 18, 19, 16, 22, 23, 24, 25"),
 (J6, "#### Top row (1–6):\n- 1: face\n- 2: eye\nSo, likely:\n**1, 2, 3, 4, 5, 6**\n\n## Final Answer\n\n**Order:**\n\n" + ",  \n".join(", ".join(str(6*r+c+1) for c in range(6)) for r in range(6)) + "\n\n**This is the order that rebuilds the image.**", ", ".join(str(i) for i in range(1, 37))),
 (ch("B", ["9%", "13%", "17%", "21%"], "({l}) {t}"), "Green covers a noticeable but not dominant share. **the closest answer is (B) 13%.**", "B"),
 (ch("B", ["55%", "65%", "75%", "45%"], "({l}) {t}"), "Grass dominates. The share closest to green would likely be **(B) 65%**.", "B"),
 (ch("A", ["#E50444", "#040D44"], "({l}) {t}"), "The HEX value of the colour is **(A) #E50444**.", "A"),
 ({"task": "color", "answer": "0.6", "prompt": "fraction?"}, "The fraction of women facing the camera is 0.6, i.e. six in ten.", "0.6"),
 (ch("F", ["DLDR", "ULUL", "DDLD", "LDRU", "LRUU", "No answer"]), "You must start by going Down.\n\nA. D L  <- hits a wall\nB. U L  <- leaves the maze\n\nEvery path fails.\n\nCorrect choice:  \nF. No answer", "F"),
 (ch("A", ["DDRR", "LUDR", "LLRU"]), "Only option A reaches the goal.\n\nA.  DDRRRRUURRDDDD\n\nAll other strings walk into a wall at some point, so they cannot succeed.", "A"),
 (ch("C", ["UDLD", "RRLL", "DDDD"]), "Only option C works; the others crash early.\n\nCorrect choice: C.", "C"),
 (ch("A", ["point C", "point D", "point E"]), "Point C lies on the same line at the same distance.\n\nAnswer: A. point C", "A"),
 ({"task": "math", "answer": "13", "prompt": "minutes?"}, "13", "13"),
 ({"task": "math", "answer": "8", "prompt": "多少条？"}, "总路径数为 **20**，经过医院的有 2 × 6 = 12 条。\n\n### 结论：\n从家到学校的最短路径有 **8** 条（在医院禁止通行的情况下）。", "8"),
 (ch("C", ["3km", "4km", "5km", "6km"]), "用反射法求解。\n\n通过计算，最短距离大约为：**5km**。\n\n### 答案：\n**C. 5km**", "C"),
 ({"task": "math", "answer": "10", "prompt": "how many?"}, "The extended line \\( EF \\) crosses the curve several times.\n\n- The line crosses \\( f \\) at a total of **10 points**.", "10"),
 (ch("CD", ["ab and cd", "ef and gh", "ab and gh", "ef and cd"], "{l}.{t}", "symbolic"), "CD", "CD"),
 ({"task": "symbolic", "answer": "3", "prompt": "How many shapes?"}, "There are 3 kinds of shapes:\n1. Circles\n2. Triangles\n3. Squares\n\nThus, the final answer is **3**.", "3"),
 (ch("E", ["12", "14", "13", "15", "16"], "{l}.{t}", "symbolic"), "Counting from the centre there are **16 nested squares**.\n\nThe correct answer is:\n\n**E. 16**", "E"),
 ({"task": "word_search", "answer": "[3, 6]", "prompt": "第几行第几列"}, "我们逐个对比。\n\n答案是：\n\n第 **3** 行，第 **6** 列。  \n答案为：[3, 6]", "[3, 6]"),
 ({"task": "word_search", "answer": "1", "prompt": "多少个犬字"}, "图中有一个“犬”字", "1"),
 ({"task": "word_search", "answer": "0", "prompt": "How many 5s?"}, "There is no 5; the image repeats 8 with a few 3s. Therefore, the answer is **0**.", "0"),
 ({"task": "word_search", "answer": "[36, 69]", "prompt": "row and column"}, "The letter Z is in **row 36** and **column 69**.\n\nSo, the answer is:\n\n**[36, 69]**.", "[36, 69]"),
 (ch("C", ["10°", "355°", "40°", "5°"]), "It is tilted **40° COUNTERCLOCKWISE**, so rotate **40° CLOCKWISE**.\n\nThus, the correct answer is:  \n**C. 40°**", "C"),
 (ch("D", ["205°", "220°", "175°", "185°"]), "It looks about **175° counterclockwise**, so rotate **185° clockwise**.\n\nThe correct answer is:  \n**D. 185°**.", "D"),
 (ch("D", ["25°", "60°", "30°", "45°"]), "A quarter of a right angle, i.e. 45°.\n\nAnswer: D. 45°", "D"),
 (ch("C", ["285°", "240°", "255°", "270°"]), "It leans 105° counter-clockwise, so rotate 360° – 105° ≈ 255°.\n\nAnswer: 255°", "C"),
 ({"task": "spot_difference", "answer": "2, 6, 7, 11", "prompt": "n is 4 and m is 3"}, "### Step-by-Step\n1. **Grid**: 4 rows and 3 columns, \\( 4 \\times 3 = 12 \\) patches.\n   - Row 1: Patches \\( [1, 2, 3] \\)\n   - Row 2: Patches \\( [4, 5, 6] \\)\n2. **Differences**: Patch 2, Patch 6, Patch 7, Patch 11.\n\n### **Output**\n\nThe final deduplicated and sorted result is:\n\n```json\n{\n  \"different_patches\": [2, 6, 7, 11]\n}\n```\n\nThis output lists every patch where the images differ.", "2, 6, 7, 11"),
 ({"task": "spot_difference", "answer": "2, 3", "prompt": "n is 4 and m is 3"}, "12 patches, numbered 1 to 12.\n\n### Output\nSorted indexes:\n\n```json\n{\n  \"different_patches\": [2, 3]\n}\n```", "2, 3"),
 ({"task": "spot_difference", "answer": "6", "prompt": "How many places differ?"}, "The number of differences between the two images is **6**.", "6"),
 ({"task": "visual_search", "answer": "970", "prompt": "price?"}, "The price of 空芯菜炒め in the picture is **970 yen**.", "970"),
 ({"task": "visual_search", "answer": "168", "prompt": "价格"}, "从照片中可以看到菜单上的价格是 **168** 元", "168"),
 ({"task": "visual_search", "answer": "4.45", "prompt": "price?"}, "The price of a latte is **4.45**.", "4.45"),
 (ch("D", ["02-3539-2322", "03-3534-2322", "02-3534-2322", "03-3539-2322"], "{l}) {t}", "visual_search"), "The truck shows **03-3539-2322**.\n\nCorrect answer: **D) 03-3539-2322**.", "D"),
 (ch("E", ["Red", "Blue", "Yellow", "Green", "Black"], "{l}) {t}", "visual_search"), "The person with a cane wears a **black hat**.\n\nCorrect answer: **Black**.", "E"),
 (ch("C", ["23%", "39%", "31%", "15%"], "{l}: {t}", "refcoco"), "She takes up roughly 31% of the frame.\n\nAnswer: **C: 31%**", "C"),
 (ch("F", ["39%", "55%", "31%", "15%", "23%", "47%"], "{l}: {t}", "refcoco"), "The left side is about half, close to **47%**.\n\nThus, the closest value is:\n\n**F: 47%.**", "F"),
 ({"task": "contrast", "answer": "4", "prompt": "How many vehicles?"}, "The image shows four vehicles parked.", "4"),
 (ch("B", ["1 2 3", "2 3 4", "11 12 13"], "{l} {t}", "contrast"), "The platforms read **2, 3, and 4**, corresponding to option **B 2 3 4**.", "B"),
 ({"task": "instrument", "answer": "11.1", "prompt": "kg/cm²"}, "The needle is slightly past the 11 mark; the unit is kg/cm².\n\nThe reading is **11.1** kg/cm².", "11.1"),
 (ch("D", ["5-6", "6-7", "7-8", "8-9"], "{l} {t}", "instrument"), "1. **Second hand:** the long blue one.\n2. It is past 8 and before 9.\n\nLooking at the options:\nA) 5-6\nB) 6-7\nC) 7-8\nD) 8-9\n\nThe reading falls within **8-9**.\n\nThe correct option is **D**.", "D"),
 (ch("B", ["6.6", "6.7", "6.8", "6.9"], "{l} {t}", "instrument"), "Each small line is 0.1, the meniscus is at the seventh line above 6.\n\nTherefore, the reading is 6.7.\n\nThe final answer is $\\boxed{\\text{6.7}}$.", "B"),
 (ch("D", ["3.2", "3.21", "3.22", "3.23"], "{l} {t}", "instrument"), "The main scale shows **3.2 cm** and the Vernier line **3** aligns.\n\nSo the correct answer is:\n**D 3.23**", "D"),
 ({"task": "instrument", "answer": "2.39", "prompt": "cm?"}, "The reading is approximately **2.39 cm (or 23.9 mm)**.\n\n- Main scale: 2 cm\n- Vernier scale: 0.09 cm  \n**Total = 2.39 cm**", "2.39"),
]


@pytest.mark.parametrize(("item", "response", "stated"), CASES)
def test_upstream_style_response(item, response, stated):
    assert score(item, response, "official") == judge(item, stated, response)


def test_baseline_misses_some_of_them():
    baseline = sum(judge(i, evalscope_extract(i, r), r) == judge(i, s, r) for i, r, s in CASES)
    assert baseline < len(CASES)
