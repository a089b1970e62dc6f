"""One exception type for bad input, so the CLI can print one line instead of a traceback."""


class UserError(Exception):
    """Bad input from the user (file, field, option). The message is the whole story."""
