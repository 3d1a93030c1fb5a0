"""``flask users``: maintainer accounts (only maintainers moderate)."""

import unicodedata

import click
import peewee
from flask.cli import AppGroup
from werkzeug.security import generate_password_hash

from ..models import Maintainer
from .names import checked_name

users_cli = AppGroup("users", help="Manage maintainer accounts.")


def reads_as(username: str) -> str:
    """A name as a reader tells it from others: without case, full-width or other compatibility forms."""
    return unicodedata.normalize("NFKC", username).casefold()


@users_cli.command("create")
@click.argument("username", callback=checked_name("a username", Maintainer.username.max_length))
@click.password_option()
def create_user(username, password):
    """Create a maintainer account."""
    from ..security import password_problem

    if Maintainer.get_or_none(Maintainer.username == username):
        raise click.ClickException(f"maintainer {username!r} already exists")
    if look_alike := next((name for name, in Maintainer.select(Maintainer.username).tuples()
                           if name != username and reads_as(name) == reads_as(username)), None):
        raise click.ClickException(f"maintainer {username!r} would read as the existing {look_alike!r} on the pages "
                                   "that name who moderated: choose another name")
    if problem := password_problem(password, username):
        raise click.ClickException(problem)
    try:
        Maintainer.create(username=username, password_hash=generate_password_hash(password))
    except peewee.IntegrityError as error:  # another `users create` of this name got in first
        raise click.ClickException(f"maintainer {username!r} already exists") from error
    click.echo(f"created maintainer {username}")
