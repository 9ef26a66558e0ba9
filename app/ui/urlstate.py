"""Page state in the URL: every widget of a page is bound to a query parameter, so a pasted link restores the page.

A widget's value lives in `st.session_state["<page>.<name>"]`. On a fresh session (a pasted link) it is
read from `?name=value`, checked against the widget's choices or bounds; a value that does not fit is
replaced by the default and named in one friendly note. After the page is drawn, `sync()` writes every
bound value back into the query string.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

MAX_TEXT = 200  # characters a text field (and its URL parameter) may hold


class UrlState:
    """The widgets of one page and their URL parameters."""

    def __init__(self, page: str):
        self.page = page
        self.names: dict[str, str] = {}
        self.notes: list[str] = []

    def key(self, name: str) -> str:
        """The session-state key of widget `name` on this page."""
        return f"{self.page}.{name}"

    def _seed(self, name: str, default, parse) -> str:
        key = self.key(name)
        self.names[name] = key
        if key not in st.session_state:
            raw = st.query_params.get(name)
            value = default
            if raw is not None:
                try:
                    value = parse(raw)
                except ValueError as exc:
                    self.notes.append(f"link parameter {name}={raw[:40]!r} {exc}; using {default!r}")
            st.session_state[key] = value
        return key

    def choice(self, name: str, options: Sequence[str], default: str | None = None) -> str:
        """Key for a selectbox/radio over `options`; a value no longer offered falls back to the default."""
        options = list(options)
        default = default if default in options else options[0]

        def parse(raw: str) -> str:
            if raw not in options:
                raise ValueError(f"is not one of {', '.join(options[:12])}")
            return raw

        key = self._seed(name, default, parse)
        if st.session_state[key] not in options:
            st.session_state[key] = default
        return key

    def integer(self, name: str, lo: int, hi: int, default: int) -> str:
        """Key for an integer widget bounded to lo..hi (clamped again when the bounds move)."""
        default = min(max(default, lo), hi)

        def parse(raw: str) -> int:
            try:
                value = int(raw)
            except ValueError:
                raise ValueError("is not an integer") from None
            if not lo <= value <= hi:
                raise ValueError(f"is outside {lo}..{hi}")
            return value

        key = self._seed(name, default, parse)
        value = st.session_state[key]
        if not isinstance(value, int) or not lo <= value <= hi:
            st.session_state[key] = min(max(int(value or lo), lo), hi) if isinstance(value, (int, float)) else default
        return key

    def number(self, name: str, lo: float, hi: float, default: float) -> str:
        """Key for a float widget bounded to lo..hi."""

        def parse(raw: str) -> float:
            try:
                value = float(raw)
            except ValueError:
                raise ValueError("is not a number") from None
            if not lo <= value <= hi:
                raise ValueError(f"is outside {lo:g}..{hi:g}")
            return value

        return self._seed(name, float(default), parse)

    def text(self, name: str, default: str) -> str:
        """Key for a text field (at most MAX_TEXT characters)."""

        def parse(raw: str) -> str:
            if len(raw) > MAX_TEXT:
                raise ValueError(f"is longer than {MAX_TEXT} characters")
            return raw

        return self._seed(name, default, parse)

    def flag(self, name: str, default: bool = False) -> str:
        """Key for a checkbox/toggle ('1' or '0' in the URL)."""

        def parse(raw: str) -> bool:
            if raw not in ("0", "1"):
                raise ValueError("is not 0 or 1")
            return raw == "1"

        return self._seed(name, default, parse)

    def value(self, name: str):
        """The current value of widget `name`."""
        return st.session_state[self.key(name)]

    def show_notes(self) -> None:
        """One friendly line for link parameters that could not be used."""
        if self.notes:
            st.warning("This link had values the page cannot use: " + "; ".join(self.notes) + ".")

    def sync(self, extra: dict[str, str] | None = None) -> None:
        """Write every bound widget's value (and `extra`) into the URL's query string."""
        params = {}
        for name, key in self.names.items():
            if key in st.session_state:
                value = st.session_state[key]
                params[name] = ("1" if value else "0") if isinstance(value, bool) else str(value)
        params.update(extra or {})
        if dict(st.query_params) != params:
            st.query_params.from_dict(params)
