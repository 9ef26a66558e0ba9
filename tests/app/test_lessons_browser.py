"""Every lesson walked in Chromium as a student would: open its link, answer wrong, then right, and read the reveal.

The reveal must agree with the question: it opens with the answer worked out in tests/lesson_answers.py, a wrong
integer is echoed as typed (15, not 15.0), every rank count and size the reveal names is one the lesson set up,
and a step-through figure stops at the step the question names and counts the steps the answer says.
"""

import re

import pytest
from lesson_answers import answers

pytestmark = pytest.mark.slow  # a real Streamlit server and Chromium
ANSWERS = answers()
MAIN = "[data-testid='stMainBlockContainer']"
SIZE = re.compile(r"\b(\d+) ?([KMG]iB)\b")
RANKS = re.compile(r"\b(\d+) ranks\b")
STEP = re.compile(r"Step (\d+) of (\d+)")


def _sizes(text: str) -> set[str]:
    return {f"{n}{unit}" for n, unit in SIZE.findall(text)}


def _answer(page, value, verdict: str) -> str:
    """Give `value` as the prediction, check it, and return the alert's text once it opens with `verdict`."""
    if isinstance(value, str):
        page.get_by_role("radiogroup", name="your answer").get_by_text(value, exact=True).click()
    else:
        box = page.get_by_label(re.compile("your answer"))
        box.fill(str(value))
        box.press("Enter")
    page.get_by_role("button", name="Check my prediction").click()
    alert = page.locator("[data-testid='stAlert']").filter(has_text=re.compile("^" + re.escape(verdict))).first
    alert.wait_for(timeout=60000)
    page.get_by_text("Exercises").first.wait_for(timeout=90000)  # drawn after the live figure
    return alert.inner_text()


def _sections(page) -> tuple[str, str]:
    """(the lesson's text and question, the reveal: the check's message and the live figure's text)."""
    text = page.locator(MAIN).inner_text()
    setup = text.split("Your prediction", 1)[0] + text.split("Your prediction", 1)[1].split("your answer", 1)[0]
    reveal = text.split("Check my prediction", 1)[1].split("Exercises", 1)[0]
    return setup, reveal


def _said(alert: str) -> str:
    """The reveal's own words, after 'Right.' or 'Not quite: you said X.'."""
    return re.sub(r"^(Right\.|Not quite: you said .+?\.)\s+", "", alert)


def _agrees(setup: str, reveal: str, right) -> None:
    assert _said(_alert_of(reveal)).lower().startswith(str(right).lower()), _alert_of(reveal)
    assert set(RANKS.findall(reveal)) <= set(RANKS.findall(setup)), (RANKS.findall(setup), RANKS.findall(reveal))
    assert _sizes(_alert_of(reveal)) <= _sizes(setup), (_sizes(setup), _sizes(_alert_of(reveal)))
    steps = STEP.search(reveal)
    if steps:  # a step-through figure: it opens at the step the question names, and counts the answer's steps
        named = re.search(r"\(step (\d+)\)", setup)
        if named:
            assert steps.group(1) == named.group(1)
        if "How many steps" in setup:
            assert int(steps.group(2)) == right


def _alert_of(reveal: str) -> str:
    return next(line for line in reveal.splitlines() if line.startswith(("Right.", "Not quite")))


@pytest.mark.parametrize("key", sorted(ANSWERS))
def test_each_lesson_answered_wrong_then_right_reveals_what_it_asked(browser, server, key):  # no server without Chromium
    right, wrong = ANSWERS[key]
    page = browser.new_page(viewport={"width": 1400, "height": 3000})
    page.goto(f"{server}/?lesson={key}")
    page.get_by_text(f"Lesson ({key})").first.wait_for(timeout=90000)
    said = _answer(page, wrong, "Not quite")
    assert said.startswith(f"Not quite: you said {wrong}."), said
    page.wait_for_timeout(500)
    _agrees(*_sections(page), right)
    _answer(page, right, "Right.")
    page.wait_for_timeout(500)
    setup, reveal = _sections(page)
    assert _alert_of(reveal).startswith("Right.")
    _agrees(setup, reveal, right)
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()
