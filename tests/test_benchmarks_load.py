"""benchmarks/load.py's PostgreSQL URLs: the database it makes goes in the path, the server's query stays."""

from benchmarks.load import database_url


def test_a_tcp_server_url_gets_the_database_as_its_path():
    assert database_url("postgresql://u:p@127.0.0.1:5432", "load_1") == "postgresql://u:p@127.0.0.1:5432/load_1"
    assert database_url("postgresql://u:p@127.0.0.1:5432/", "postgres") == "postgresql://u:p@127.0.0.1:5432/postgres"


def test_a_unix_socket_url_keeps_its_host_query():
    url = database_url("postgresql://u:p@/?host=/var/run/postgresql", "load_1")
    assert url == "postgresql://u:p@/load_1?host=/var/run/postgresql"
