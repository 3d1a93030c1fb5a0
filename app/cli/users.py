"""``flask users``: maintainer accounts (only maintainers moderate)."""

import click
from flask.cli import AppGroup
from werkzeug.security import generate_password_hash

users_cli = AppGroup("users", help="Manage maintainer accounts.")


@users_cli.command("create")
@click.argument("username")
@click.password_option()
def create_user(username, password):
    """Create a maintainer account."""
    from runners.names import name_problem

    from ..models import Maintainer
    from ..security import password_problem

    if problem := name_problem("a username", username, Maintainer.username.max_length):
        raise click.BadParameter(problem, param_hint="USERNAME")
    if Maintainer.get_or_none(Maintainer.username == username):
        raise click.ClickException(f"maintainer {username!r} already exists")
    if problem := password_problem(password, username):
        raise click.ClickException(problem)
    Maintainer.create(username=username, password_hash=generate_password_hash(password))
    click.echo(f"created maintainer {username}")
