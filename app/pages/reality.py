import streamlit as st
st.header("todo")
