"""The faces of collsim: the `collsim` command line and the Streamlit app."""
