"""The one exception type collsim raises for bad input."""


class CollsimError(ValueError):
    """Bad input or an impossible request, with a message meant for a person."""
