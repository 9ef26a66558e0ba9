"""Lessons: nine guided pages, each a prediction to make, a live figure and two exercises; ?lesson=a..i links to one."""

from __future__ import annotations

import streamlit as st

from app.lessons import BY_KEY, LESSONS, check, said
from app.ui import lesson_figures
from app.ui.common import friendly
from app.ui.urlstate import UrlState

url = UrlState("lesson")
keys = [lesson.key for lesson in LESSONS]
key = st.radio("lesson", keys, horizontal=True, key=url.choice("lesson", keys, "a"),
               format_func=lambda k: f"({k}) {BY_KEY[k].title}")
lesson = BY_KEY[key]
st.header(f"Lesson ({lesson.key}): {lesson.title}")
st.markdown(lesson.text)

st.subheader("Your prediction")
st.markdown(lesson.question)
guess_key = f"lesson.guess.{lesson.key}"
if lesson.kind == "choice":
    guess = st.radio("your answer", lesson.options, index=None, key=guess_key, horizontal=True)
else:
    guess = st.number_input(f"your answer ({lesson.unit})", value=None, min_value=0.0, max_value=1e9, step=1.0, format="%g",
                            key=guess_key)
checked_key = f"lesson.checked.{lesson.key}"
if st.button("Check my prediction", key=f"lesson.check.{lesson.key}", disabled=guess is None):
    st.session_state[checked_key] = guess
url.show_notes()
with friendly():
    if checked_key in st.session_state:
        if check(lesson, st.session_state[checked_key]):
            st.success(f"Right. {lesson.reveal()}")
        else:
            st.warning(f"Not quite: you said {said(st.session_state[checked_key])}. {lesson.reveal()}")
    reveal = checked_key in st.session_state or st.toggle("show the figure before predicting", key=f"lesson.peek.{key}")
    if reveal:
        st.subheader("See it")
        lesson_figures.show(lesson.key, url)
    else:
        st.info("Make your prediction and check it to see the live figure.")

st.subheader("Exercises")
for n, (question, answer) in enumerate(lesson.exercises, 1):
    st.markdown(f"**{n}.** {question}")
    with st.expander("answer"):
        st.markdown(answer)
url.sync()
