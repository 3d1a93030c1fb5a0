"""Names given on the command line, held to the rule of what they name (``runners.names``) before any query.

An argument the terminal gave in bytes that are not UTF-8 reaches Python as lone
surrogates, which neither database can take (a traceback from the driver); the rule
refuses them as it refuses any name that could not be stored, so the command stops with a
usage error instead.
"""

import click

from runners.names import name_problem


def checked_name(what: str, most: int, rule=name_problem):
    """A click callback refusing (exit 2) a value, or any of several, that ``rule`` says cannot name ``what``."""
    def check(context, parameter, value):
        for text in value if isinstance(value, tuple) else (value,):
            if text is not None and (problem := rule(what, text, most)):
                raise click.BadParameter(problem)
        return value
    return check
