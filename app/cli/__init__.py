"""The ``flask`` command line, one module per verb group.

The app is the harness's host: ``flask rerun`` looks runs up here, calls
``runners.rerun`` and records what it returns; ``runners`` itself has no commands.
"""

from .db import database_problems_explained, db_cli
from .imports import import_cli
from .invalidate import invalidate_command, reinstate_command
from .plugins import plugins_command
from .rejudge import rejudge_command
from .rerun import rerun_command
from .tokens import tokens_cli
from .users import users_cli
from .worker import worker_command


COMMANDS = (db_cli, import_cli, rerun_command, rejudge_command, invalidate_command, reinstate_command, plugins_command,
            users_cli, tokens_cli, worker_command)


def commands_in(commands):
    """Every command of ``commands``, those of a group included."""
    for command in commands:
        yield command
        yield from commands_in(getattr(command, "commands", {}).values())


for command in commands_in(COMMANDS):  # once, as the commands are made once
    if command.callback:  # a group has none
        command.callback = database_problems_explained(command.callback)


def register_commands(app):
    for command in COMMANDS:
        app.cli.add_command(command)
